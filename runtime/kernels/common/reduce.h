// Shared shape rule and loops of the reductions `sum`, `mean` (float32), `amax` and `amin` (float32, int64): attribute
// axes is[] (negative entries are normalized; absent = all dimensions; an empty list reduces nothing, as dtorch
// eager does) and keepdim i. Sums are in double: every output accumulates its inputs in row-major order, in one
// thread. Max and min are exact whatever the order.
#pragma once

#include <cstdint>
#include <limits>

#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

struct ReducePlan {
  Shape out;
  bool reduced[kMaxDims] = {};
  int64_t count = 1;  // inputs per output
};

inline Status reduce_plan(const char* op, const Attrs& attrs, const TensorView* in, int n_in, int n_out, ReducePlan* p) {
  DTORCH_RETURN_IF_ERROR(check_num_inputs(op, n_in, 1, 1));
  DTORCH_RETURN_IF_ERROR(check_num_outputs(op, n_out, 1));
  const Shape& s = in[0].shape;
  int64_t axes[kMaxDims];
  int na = 0;
  const bool all = !attrs.has("axes");
  if (!all) DTORCH_RETURN_IF_ERROR(get_ints_list(op, attrs, "axes", kMaxDims, axes, &na, true));
  const bool keep = attrs.get_int("keepdim") != 0;
  for (int d = 0; d < s.ndim; ++d) p->reduced[d] = all;
  for (int i = 0; i < na; ++i) {
    int a = 0;
    DTORCH_RETURN_IF_ERROR(normalize_axis(op, "axis", axes[i], s.ndim, &a));
    if (s.ndim == 0) continue;
    if (p->reduced[a]) return op_error(StatusCode::kInvalidModel, op, "axis %d appears more than once", a);
    p->reduced[a] = true;
  }
  p->out.ndim = 0;
  p->count = 1;
  for (int d = 0; d < s.ndim; ++d) {
    if (p->reduced[d]) {
      p->count *= s.dims[d];
      if (keep) p->out.dims[p->out.ndim++] = 1;
    } else {
      p->out.dims[p->out.ndim++] = s.dims[d];
    }
  }
  return Status::Ok();
}

// f(o, i) for every input element i in row-major order, o the output it reduces to.
template <typename F>
inline void reduce_walk(const ReducePlan& p, const Shape& s, F f) {
  // output strides over the input's dims (0 for reduced dims)
  int64_t ost[kMaxDims];
  int64_t st = 1;
  for (int d = s.ndim - 1; d >= 0; --d) {
    ost[d] = p.reduced[d] ? 0 : st;
    if (!p.reduced[d]) st *= s.dims[d];
  }
  const int64_t n = s.numel();
  if (n == 0) return;
  int64_t idx[kMaxDims] = {};
  int64_t o = 0;
  for (int64_t i = 0; i < n; ++i) {
    f(o, i);
    for (int d = s.ndim - 1; d >= 0; --d) {  // advance the multi-index
      ++idx[d];
      o += ost[d];
      if (idx[d] < s.dims[d]) break;
      o -= ost[d] * idx[d];
      idx[d] = 0;
    }
  }
}

// Whether the reduced dims are the trailing ones (and at least one): each output then sums a contiguous run of
// p.count inputs (a global average pool over (H, W), a mean over the last axis).
inline bool reduce_is_trailing(const ReducePlan& p, const Shape& s) {
  int d = s.ndim;
  while (d > 0 && p.reduced[d - 1]) --d;
  if (d == s.ndim) return false;
  for (int e = 0; e < d; ++e)
    if (p.reduced[e]) return false;
  return true;
}

// Whether the node is the mean over dims 2 and 3 of a 4-D input (any keepdim): global average pooling, which the
// x86 and avx512 sets' mean kernels take on a blocked input (N x C/16 x H x W x 16).
inline bool spatial_mean(const Attrs& attrs, const TensorView* in, int n_in, int n_out) {
  ReducePlan p;
  if (n_in != 1 || in[0].shape.ndim != 4 || !reduce_plan("mean", attrs, in, n_in, n_out, &p).ok()) return false;
  return !p.reduced[0] && !p.reduced[1] && p.reduced[2] && p.reduced[3];
}

// Those kernels' LayoutFn (core/kernel.h): the input blocked for a spatial mean, nothing otherwise.
inline LayoutCaps spatial_mean_layouts(const Attrs& attrs, const TensorView* in, int n_in, const TensorView*,
                                       int n_out) {
  LayoutCaps caps;
  if (spatial_mean(attrs, in, n_in, n_out)) caps.inputs = 1;
  return caps;
}

// acc[o] = sum of the inputs that reduce to output o (acc: numel(out) doubles of scratch), each output's inputs
// added in row-major order. Trailing reductions sum four outputs side by side (four independent chains of adds
// instead of one; every output keeps its own order, so the bits are those of the element-by-element walk).
inline void reduce_sum(const ReducePlan& p, const Shape& s, const float* x, double* acc, int64_t out_numel) {
  if (reduce_is_trailing(p, s) && s.numel() > 0) {
    const int64_t m = p.count;
    int64_t o = 0;
    for (; o + 4 <= out_numel; o += 4) {
      const float* r0 = x + o * m;
      const float *r1 = r0 + m, *r2 = r1 + m, *r3 = r2 + m;
      double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
      for (int64_t i = 0; i < m; ++i) {
        a0 += r0[i];
        a1 += r1[i];
        a2 += r2[i];
        a3 += r3[i];
      }
      acc[o] = a0;
      acc[o + 1] = a1;
      acc[o + 2] = a2;
      acc[o + 3] = a3;
    }
    for (; o < out_numel; ++o) {
      double a = 0.0;
      for (int64_t i = 0; i < m; ++i) a += x[o * m + i];
      acc[o] = a;
    }
    return;
  }
  for (int64_t i = 0; i < out_numel; ++i) acc[i] = 0.0;
  reduce_walk(p, s, [&](int64_t o, int64_t i) { acc[o] += x[i]; });
}

template <typename T>
inline bool is_nan(T v) {
  if constexpr (std::numeric_limits<T>::has_quiet_NaN)
    return v != v;
  else
    return false;
}

// The kernels amax (largest) and amin: float32 or int64 in and out, no scratch. A float NaN wins (torch.amax); a
// reduced dimension of size 0 is an error (there is no identity to return), even when the output is empty.
inline Status extreme_infer(const char* op, const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out,
                            size_t* scratch_bytes) {
  ReducePlan p;
  DTORCH_RETURN_IF_ERROR(reduce_plan(op, attrs, in, n_in, n_out, &p));
  if (in[0].dtype != DType::kFloat32 && in[0].dtype != DType::kInt64)
    return op_error(StatusCode::kInvalidArgument, op, "input must be float32 or int64, got %s", dtype_name(in[0].dtype));
  for (int d = 0; d < in[0].shape.ndim; ++d)
    if (p.reduced[d] && in[0].shape.dims[d] == 0)
      return op_error(StatusCode::kInvalidArgument, op,
                      "dimension %d of input %s has size 0, which cannot be reduced (there is no identity)", d,
                      shape_str(in[0].shape).c_str());
  out[0] = p.out;
  *scratch_bytes = 0;
  return Status::Ok();
}

inline Status extreme_run(const char* op, const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out,
                          int n_out, bool largest) {
  Shape shape;
  size_t scratch = 0;
  DTORCH_RETURN_IF_ERROR(extreme_infer(op, *ctx.attrs, in, n_in, &shape, n_out, &scratch));
  if (out[0].dtype != in[0].dtype)
    return op_error(StatusCode::kInvalidArgument, op, "output must be %s (the input's dtype), got %s",
                    dtype_name(in[0].dtype), dtype_name(out[0].dtype));
  ReducePlan p;
  DTORCH_RETURN_IF_ERROR(reduce_plan(op, *ctx.attrs, in, n_in, n_out, &p));
  const int64_t n = p.out.numel();
  auto go = [&](auto tag) {
    using T = decltype(tag);
    using Lim = std::numeric_limits<T>;
    const T* x = in[0].as<const T>();
    T* y = out[0].as<T>();
    // Start from the identity (every output has at least one input, so it is replaced or is the answer).
    const T init = Lim::has_infinity ? (largest ? -Lim::infinity() : Lim::infinity()) : (largest ? Lim::min() : Lim::max());
    for (int64_t i = 0; i < n; ++i) y[i] = init;
    if (largest)
      reduce_walk(p, in[0].shape, [&](int64_t o, int64_t i) {
        if (is_nan(x[i]) || x[i] > y[o]) y[o] = x[i];
      });
    else
      reduce_walk(p, in[0].shape, [&](int64_t o, int64_t i) {
        if (is_nan(x[i]) || x[i] < y[o]) y[o] = x[i];
      });
    return Status::Ok();
  };
  if (in[0].dtype == DType::kInt64) return go(int64_t{});
  return go(float{});
}

// The kernels' infer: the reduced shape, and one double accumulator per output element as scratch.
inline Status reduce_infer(const char* op, const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out,
                           size_t* scratch_bytes) {
  ReducePlan p;
  DTORCH_RETURN_IF_ERROR(reduce_plan(op, attrs, in, n_in, n_out, &p));
  DTORCH_RETURN_IF_ERROR(check_dtype(op, "input", in[0], DType::kFloat32));
  out[0] = p.out;
  *scratch_bytes = static_cast<size_t>(p.out.numel()) * sizeof(double);
  return Status::Ok();
}

// The kernels' run: the sums in the scratch, each output their sum (`mean`: divided once by the count).
inline Status reduce_run(const char* op, const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out,
                         int n_out, bool mean) {
  ReducePlan p;
  DTORCH_RETURN_IF_ERROR(reduce_plan(op, *ctx.attrs, in, n_in, n_out, &p));
  DTORCH_RETURN_IF_ERROR(check_dtype(op, "input", in[0], DType::kFloat32));
  const int64_t n = p.out.numel();
  if (ctx.scratch_bytes < static_cast<size_t>(n) * sizeof(double))
    return op_error(StatusCode::kInternal, op, "scratch of %zu bytes is smaller than the %zu bytes infer asked for",
                    ctx.scratch_bytes, static_cast<size_t>(n) * sizeof(double));
  double* acc = static_cast<double*>(ctx.scratch);
  reduce_sum(p, in[0].shape, in[0].as<const float>(), acc, n);
  float* y = out[0].as<float>();
  if (mean)
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(acc[i] / static_cast<double>(p.count));
  else
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(acc[i]);
  return Status::Ok();
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
