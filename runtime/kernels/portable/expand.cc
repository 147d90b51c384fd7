// expand: x -> x broadcast to `shape` (runtime/OPS.md). Attribute: shape is[] (rank >= the input's; the
// input aligns to the right; 0 or -1 keeps the input dimension; an input dimension must be 1 or equal). float32,
// int64, int32 or bool: elements are copied. Entries may come from the optional input `like` (like_dims).
#include "kernels/common/like.h"
#include "kernels/common/strided.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "expand";

Status plan(const Attrs& attrs, const TensorView* in, int n_in, const TensorView* outs, int n_out, Shape* out,
            int64_t* strides) {
  DTORCH_RETURN_IF_ERROR(kernels::check_signature(DTORCH_OP_SCHEMA(expand), attrs, in, n_in, outs, n_out));
  const Shape& s = in[0].shape;
  int64_t spec[kMaxDims];
  int n = 0;
  DTORCH_RETURN_IF_ERROR(kernels::get_ints_list(kOp, attrs, "shape", kMaxDims, spec, &n, true));
  DTORCH_RETURN_IF_ERROR(kernels::apply_like_dims(kOp, attrs, in, n_in, spec, n));
  if (n < s.ndim)
    return op_error(StatusCode::kInvalidArgument, kOp, "shape %s has fewer dimensions than the input %s",
                    kernels::ints_str(spec, n).c_str(), ::dtorch::shape_str(s).c_str());
  int64_t in_strides[kMaxDims];
  kernels::contiguous_strides(s, in_strides);
  out->ndim = n;
  for (int i = 0; i < n; ++i) {
    const int k = i - (n - s.ndim);
    const int64_t din = k >= 0 ? s.dims[k] : 1;
    int64_t d = spec[i];
    if (d == 0 || d == -1) {
      if (k < 0)
        return op_error(StatusCode::kInvalidArgument, kOp, "shape %s keeps (%lld) dimension %d, which the input %s lacks",
                        kernels::ints_str(spec, n).c_str(), (long long)d, i, ::dtorch::shape_str(s).c_str());
      d = din;
    }
    if (d < 0 || (din != 1 && din != d))
      return op_error(StatusCode::kInvalidArgument, kOp, "cannot expand input %s to shape %s (dimension %d)",
                      ::dtorch::shape_str(s).c_str(), kernels::ints_str(spec, n).c_str(), i);
    out->dims[i] = d;
    strides[i] = (k < 0 || din == 1) ? 0 : in_strides[k];
  }
  return Status::Ok();
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  int64_t strides[kMaxDims];
  *scratch_bytes = 0;
  return plan(attrs, in, n_in, nullptr, n_out, &out[0], strides);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  Shape o;
  int64_t strides[kMaxDims];
  DTORCH_RETURN_IF_ERROR(plan(*ctx.attrs, in, n_in, out, n_out, &o, strides));
  return kernels::visit_dtype(kOp, in[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    kernels::strided_copy(ctx.pool, o, in[0].as<const T>(), 0, strides, out[0].as<T>());
    return Status::Ok();
  });
}

}  // namespace
DTORCH_REGISTER_KERNEL(expand, DType::kFloat32, infer, run);
DTORCH_REGISTER_KERNEL(expand, DType::kInt64, infer, run);
DTORCH_REGISTER_KERNEL(expand, DType::kInt32, infer, run);
DTORCH_REGISTER_KERNEL(expand, DType::kBool, infer, run);
DTORCH_REGISTER_KERNEL(expand, DType::kInt8, infer, run);
}  // namespace dtorch
