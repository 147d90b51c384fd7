// permute: x -> x with its dimensions reordered, output dim i = input dim perm[i] (runtime/OPS.md).
// Attribute: perm is[] (a permutation of 0..ndim-1; negative entries are normalized). float32, int64, int32 or bool:
// elements are copied.
#include "kernels/common/strided.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "permute";

Status check(const Attrs& attrs, const TensorView* in, int n_in, const TensorView* outs, int n_out, int* perm,
             Shape* out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_signature(DTORCH_OP_SCHEMA(permute), attrs, in, n_in, outs, n_out));
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
  int perm[kMaxDims];
  *scratch_bytes = 0;
  return check(attrs, in, n_in, nullptr, n_out, perm, &out[0]);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  int perm[kMaxDims];
  Shape o;
  DTORCH_RETURN_IF_ERROR(check(*ctx.attrs, in, n_in, out, n_out, perm, &o));
  if (o.numel() == 0) return Status::Ok();
  int64_t in_strides[kMaxDims], st[kMaxDims];
  kernels::contiguous_strides(in[0].shape, in_strides);
  for (int i = 0; i < o.ndim; ++i) st[i] = in_strides[perm[i]];
  // A permutation is a strided gather: output element (i0, ..., in) is x[sum_d i_d * st[d]].
  return kernels::visit_dtype(kOp, in[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    kernels::strided_copy(ctx.pool, o, in[0].as<const T>(), 0, st, out[0].as<T>());
    return Status::Ok();
  });
}

}  // namespace
DTORCH_REGISTER_KERNEL(permute, DType::kFloat32, infer, run);
DTORCH_REGISTER_KERNEL(permute, DType::kInt64, infer, run);
DTORCH_REGISTER_KERNEL(permute, DType::kInt32, infer, run);
DTORCH_REGISTER_KERNEL(permute, DType::kBool, infer, run);
DTORCH_REGISTER_KERNEL(permute, DType::kInt8, infer, run);
}  // namespace dtorch
