// NumPy broadcasting for the elementwise kernels of several operands (add, sub, mul, div, pow, maximum, minimum, of
// float32, int64 and int32; the comparisons and where, of any dtype): the output shape rule, a plan of per-operand
// strides with size-1 dimensions dropped and contiguous dimensions merged, and the loops that apply a scalar function
// over the plan.
//
// Aliasing: the output may be the same memory as input a (in place) when a has the output's shape; each
// output element is written after the inputs it depends on are read, so that is safe.
#pragma once

#include <cstdint>

#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

// out = broadcast(a, b) with NumPy's rule (align on the right; each pair equal or one of them 1).
inline Status broadcast_shape(const char* op, const Shape& a, const Shape& b, Shape* out) {
  const int nd = a.ndim > b.ndim ? a.ndim : b.ndim;
  Shape s;
  s.ndim = nd;
  for (int i = 0; i < nd; ++i) {
    const int ia = i - (nd - a.ndim), ib = i - (nd - b.ndim);
    const int64_t da = ia >= 0 ? a.dims[ia] : 1, db = ib >= 0 ? b.dims[ib] : 1;
    if (da != db && da != 1 && db != 1)
      return op_error(StatusCode::kInvalidArgument, op,
                      "shapes %s and %s cannot be broadcast together (dimension %d: %lld vs %lld)",
                      shape_str(a).c_str(), shape_str(b).c_str(), i, static_cast<long long>(da),
                      static_cast<long long>(db));
    s.dims[i] = da == 1 ? db : da;
  }
  *out = s;
  return Status::Ok();
}

// A broadcast plan of N operands over the output: size-1 dimensions dropped, neighbouring dimensions merged where every
// operand is contiguous across them, and each operand's element strides (0 where it is broadcast).
template <int N>
struct BroadcastPlanN {
  int ndim = 0;                    // after dropping size-1 dims and merging; 0 means one element
  int64_t dims[kMaxDims] = {};
  int64_t st[N][kMaxDims] = {};    // element strides of operand k (0 where it is broadcast)
  int64_t rows = 1;                // product of all dims but the last
  int64_t cols = 1;                // the last dim
};

template <int N>
inline BroadcastPlanN<N> make_broadcast_plan_n(const Shape* const* in, const Shape& out) {
  BroadcastPlanN<N> p;
  int64_t full[N][kMaxDims];  // each operand's strides aligned to out
  for (int k = 0; k < N; ++k) {
    int64_t st = 1;
    for (int i = out.ndim - 1; i >= 0; --i) {
      const int ia = i - (out.ndim - in[k]->ndim);
      const int64_t d = ia >= 0 ? in[k]->dims[ia] : 1;
      full[k][i] = (d == 1) ? 0 : st;
      st *= d;
    }
  }
  int n = 0;
  for (int i = 0; i < out.ndim; ++i) {
    if (out.dims[i] == 1) continue;
    bool merge = n > 0;
    for (int k = 0; k < N && merge; ++k) merge = p.st[k][n - 1] == full[k][i] * out.dims[i];
    if (merge) {  // with the previous kept dim
      p.dims[n - 1] *= out.dims[i];
      for (int k = 0; k < N; ++k) p.st[k][n - 1] = full[k][i];
      continue;
    }
    p.dims[n] = out.dims[i];
    for (int k = 0; k < N; ++k) p.st[k][n] = full[k][i];
    ++n;
  }
  p.ndim = n;
  p.cols = n > 0 ? p.dims[n - 1] : 1;
  p.rows = 1;
  for (int i = 0; i + 1 < n; ++i) p.rows *= p.dims[i];
  return p;
}

// The offset of row r's first element in each operand.
template <int N>
inline void broadcast_row_offsets(const BroadcastPlanN<N>& p, int64_t r, int64_t* off) {
  for (int k = 0; k < N; ++k) off[k] = 0;
  int64_t rem = r;
  for (int d = p.ndim - 2; d >= 0; --d) {
    const int64_t idx = rem % p.dims[d];
    rem /= p.dims[d];
    for (int k = 0; k < N; ++k) off[k] += idx * p.st[k][d];
  }
}

using BroadcastPlan = BroadcastPlanN<2>;

inline BroadcastPlan make_broadcast_plan(const Shape& a, const Shape& b, const Shape& out) {
  const Shape* in[2] = {&a, &b};
  return make_broadcast_plan_n<2>(in, out);
}

// o[...] = f(a[...], b[...]) for the plan's rows [r0, r1).
template <typename F>
inline void broadcast_rows(const BroadcastPlan& p, const float* a, const float* b, float* o, int64_t r0, int64_t r1,
                           F f) {
  const int64_t cols = p.cols;
  const int64_t ca = p.ndim > 0 ? p.st[0][p.ndim - 1] : 0, cb = p.ndim > 0 ? p.st[1][p.ndim - 1] : 0;
  for (int64_t r = r0; r < r1; ++r) {
    int64_t off[2];
    broadcast_row_offsets(p, r, off);
    const float* ar = a + off[0];
    const float* br = b + off[1];
    float* orow = o + r * cols;
    if (ca == 1 && cb == 1) {
      for (int64_t j = 0; j < cols; ++j) orow[j] = f(ar[j], br[j]);
    } else if (ca == 1) {
      const float bv = br[0];
      for (int64_t j = 0; j < cols; ++j) orow[j] = f(ar[j], bv);
    } else if (cb == 1) {
      const float av = ar[0];
      for (int64_t j = 0; j < cols; ++j) orow[j] = f(av, br[j]);
    } else {
      const float v = f(ar[0], br[0]);
      for (int64_t j = 0; j < cols; ++j) orow[j] = v;
    }
  }
}

// y[i] = f(i0, ..., i{N-1}) for every output element i, ik its element index in operand k, split over the pool by rows
// (each element computed once, the same way whatever the thread count). For kernels of any dtype (where, the
// comparisons); `in` has the N operand shapes, broadcast to `out`.
template <int N, typename Out, typename F>
inline void broadcast_apply(ThreadPool* pool, const Shape* const* in, const Shape& out, Out* y, F f) {
  if (out.numel() == 0) return;
  const BroadcastPlanN<N> p = make_broadcast_plan_n<N>(in, out);
  int64_t cs[N];
  for (int k = 0; k < N; ++k) cs[k] = p.ndim > 0 ? p.st[k][p.ndim - 1] : 0;
  const int64_t cols = p.cols, grain = cols >= 4096 ? 1 : ceil_div(4096, cols);
  parallel_chunks(pool, p.rows, grain, [&](int64_t r0, int64_t r1) {
    int64_t off[N];
    for (int64_t r = r0; r < r1; ++r) {
      broadcast_row_offsets(p, r, off);
      Out* yr = y + r * cols;
      for (int64_t j = 0; j < cols; ++j) {
        int64_t idx[N];
        for (int k = 0; k < N; ++k) idx[k] = off[k] + j * cs[k];
        yr[j] = f(static_cast<const int64_t*>(idx));
      }
    }
  });
}

// Checks and output shape shared by every binary elementwise kernel's infer.
// a and b of one dtype (float32, int64 or int32); with `float_exponent` (pow) an integer a may take a float32 b.
inline Status binary_infer(const char* op, const TensorView* in, int n_in, Shape* out, int n_out,
                           bool float_exponent = false) {
  DTORCH_RETURN_IF_ERROR(check_num_inputs(op, n_in, 2, 2));
  DTORCH_RETURN_IF_ERROR(check_num_outputs(op, n_out, 1));
  const DType da = in[0].dtype, db = in[1].dtype;
  if (da != DType::kFloat32 && da != DType::kInt64 && da != DType::kInt32)
    return op_error(StatusCode::kInvalidArgument, op, "input a must be float32, int64 or int32, got %s", dtype_name(da));
  if (db != da && !(float_exponent && db == DType::kFloat32))
    return op_error(StatusCode::kInvalidArgument, op, "input b must be %s%s, got %s", dtype_name(da),
                    float_exponent && da != DType::kFloat32 ? " or float32" : "", dtype_name(db));
  return broadcast_shape(op, in[0].shape, in[1].shape, &out[0]);
}

// Runs o = f(a, b) with broadcasting, split over the pool by rows (each element computed once). float32 only.
template <typename F>
inline Status binary_run(const char* op, const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out,
                         int n_out, F f) {
  Shape expect;
  DTORCH_RETURN_IF_ERROR(binary_infer(op, in, n_in, &expect, n_out));
  if (in[0].dtype != DType::kFloat32)
    return op_error(StatusCode::kInternal, op, "the float32 loop was given %s inputs", dtype_name(in[0].dtype));
  if (out[0].shape != expect)
    return op_error(StatusCode::kInternal, op, "output has shape %s, expected %s", shape_str(out[0].shape).c_str(),
                    shape_str(expect).c_str());
  const BroadcastPlan p = make_broadcast_plan(in[0].shape, in[1].shape, out[0].shape);
  const float* a = in[0].as<const float>();
  const float* b = in[1].as<const float>();
  float* o = out[0].as<float>();
  if (out[0].shape.numel() == 0) return Status::Ok();
  const int64_t grain = p.cols >= 4096 ? 1 : ceil_div(4096, p.cols);
  parallel_chunks(ctx.pool, p.rows, grain, [&](int64_t r0, int64_t r1) { broadcast_rows(p, a, b, o, r0, r1, f); });
  return Status::Ok();
}

// The integer path of the arithmetic kernels: a int64 or int32, b of a's dtype (or float32 with kFloatExponent: pow),
// o = f(a, b) in a's dtype on every broadcast pair. f is total: the kernels define every result (a division by zero
// gives 0, as NumPy's), so a run never fails on the data.
template <bool kFloatExponent = false, typename F>
inline Status int_binary_run(const char* op, const KernelContext& ctx, const TensorView* in, int n_in,
                             TensorView* out, int n_out, F f) {
  Shape expect;
  DTORCH_RETURN_IF_ERROR(binary_infer(op, in, n_in, &expect, n_out, kFloatExponent));
  if (out[0].shape != expect)
    return op_error(StatusCode::kInternal, op, "output has shape %s, expected %s", shape_str(out[0].shape).c_str(),
                    shape_str(expect).c_str());
  const Shape* shapes[2] = {&in[0].shape, &in[1].shape};
  const auto go = [&](auto ta, auto tb) {
    using T = decltype(ta);
    using B = decltype(tb);
    const T* a = in[0].as<const T>();
    const B* b = in[1].as<const B>();
    broadcast_apply<2>(ctx.pool, shapes, out[0].shape, out[0].as<T>(),
                       [&](const int64_t* i) { return static_cast<T>(f(a[i[0]], b[i[1]])); });
    return Status::Ok();
  };
  const auto by_base = [&](auto ta) {
    if constexpr (kFloatExponent) {
      if (in[1].dtype == DType::kFloat32) return go(ta, float{});
    }
    return go(ta, ta);
  };
  if (in[0].dtype == DType::kInt64) return by_base(int64_t{});
  if (in[0].dtype == DType::kInt32) return by_base(int32_t{});
  return op_error(StatusCode::kInternal, op, "the integer loop was given %s inputs", dtype_name(in[0].dtype));
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
