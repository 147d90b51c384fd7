// permute: x -> x with its dimensions reordered, output dim i = input dim perm[i] (runtime/OPS.md).
// Attribute: perm is[] (a permutation of 0..ndim-1; negative entries are normalized).
#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "permute";

Status check(const Attrs& attrs, const TensorView* in, int n_in, int* perm, Shape* out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 1, 1));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "input", in[0], DType::kFloat32));
  const Shape& s = in[0].shape;
  int64_t p[kMaxDims];
  int n = 0;
  DTORCH_RETURN_IF_ERROR(kernels::get_ints_list(kOp, attrs, "perm", kMaxDims, p, &n, true));
  if (n != s.ndim)
    return op_error(StatusCode::kInvalidArgument, kOp, "perm %s has %d entries but the input %s has %d dimensions",
                    kernels::ints_str(p, n).c_str(), n, ::dtorch::shape_str(s).c_str(), s.ndim);
  bool seen[kMaxDims] = {};
  out->ndim = n;
  for (int i = 0; i < n; ++i) {
    int a = 0;
    DTORCH_RETURN_IF_ERROR(kernels::normalize_axis(kOp, "perm entry", p[i], s.ndim, &a));
    if (seen[a])
      return op_error(StatusCode::kInvalidModel, kOp, "perm %s repeats dimension %d", kernels::ints_str(p, n).c_str(), a);
    seen[a] = true;
    perm[i] = a;
    out->dims[i] = s.dims[a];
  }
  return Status::Ok();
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  int perm[kMaxDims];
  *scratch_bytes = 0;
  return check(attrs, in, n_in, perm, &out[0]);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  int perm[kMaxDims];
  Shape o;
  DTORCH_RETURN_IF_ERROR(check(*ctx.attrs, in, n_in, perm, &o));
  if (o.numel() == 0) return Status::Ok();
  int64_t in_strides[kMaxDims], st[kMaxDims];
  kernels::contiguous_strides(in[0].shape, in_strides);
  for (int i = 0; i < o.ndim; ++i) st[i] = in_strides[perm[i]];
  const float* x = in[0].as<const float>();
  float* y = out[0].as<float>();
  if (o.ndim == 0) {
    y[0] = x[0];
    return Status::Ok();
  }
  const int last = o.ndim - 1;
  const int64_t cols = o.dims[last], cs = st[last];
  const int64_t rows = o.numel() / cols;
  kernels::parallel_chunks(ctx.pool, rows, 64, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t off = 0, rem = r;
      for (int d = last - 1; d >= 0; --d) {
        off += (rem % o.dims[d]) * st[d];
        rem /= o.dims[d];
      }
      float* yr = y + r * cols;
      for (int64_t j = 0; j < cols; ++j) yr[j] = x[off + j * cs];
    }
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(permute, DType::kFloat32, infer, run);
}  // namespace dtorch
