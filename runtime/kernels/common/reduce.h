// Shared shape rule and loop of the reductions `sum` and `mean`: attribute axes is[] (negative entries are
// normalized; absent = all dimensions; an empty list reduces nothing, as dtorch eager does) and keepdim i.
// Sums are in double: every output accumulates its inputs in row-major order, in one thread.
#pragma once

#include <cstdint>

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
  DTORCH_RETURN_IF_ERROR(check_dtype(op, "input", in[0], DType::kFloat32));
  const Shape& s = in[0].shape;
  int64_t axes[kMaxDims];
  int na = 0;
  const bool all = !attrs.has("axes");
  if (!all) DTORCH_RETURN_IF_ERROR(get_ints_list(op, attrs, "axes", kMaxDims, axes, &na, true));
  const bool keep = attrs.get_int("keepdim", 0) != 0;
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

// acc[o] = sum of the inputs that reduce to output o (acc: numel(out) doubles of scratch).
inline void reduce_sum(const ReducePlan& p, const Shape& s, const float* x, double* acc, int64_t out_numel) {
  for (int64_t i = 0; i < out_numel; ++i) acc[i] = 0.0;
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
    acc[o] += x[i];
    for (int d = s.ndim - 1; d >= 0; --d) {  // advance the multi-index
      ++idx[d];
      o += ost[d];
      if (idx[d] < s.dims[d]) break;
      o -= ost[d] * idx[d];
      idx[d] = 0;
    }
  }
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
