// reshape: x -> the same elements with a new shape (runtime/OPS.md). Attribute: shape is[] where 0 copies
// the input dimension at that position and -1 (at most one) is inferred. The output may be the input's
// memory (the planner may run reshape in place); then nothing is copied. float32, int64, int32 or bool: the bytes
// are moved, whatever they hold. Entries may come from the optional input `like` (like_dims).
#include <cstring>

#include "kernels/common/like.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "reshape";

Status target(const Attrs& attrs, const TensorView* in, int n_in, const TensorView* outs, int n_out, Shape* out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_signature(DTORCH_OP_SCHEMA(reshape), attrs, in, n_in, outs, n_out));
  int64_t spec[kMaxDims];
  int n = 0;
  DTORCH_RETURN_IF_ERROR(kernels::get_ints_list(kOp, attrs, "shape", kMaxDims, spec, &n, true));
  DTORCH_RETURN_IF_ERROR(kernels::apply_like_dims(kOp, attrs, in, n_in, spec, n));
  const Shape& s = in[0].shape;
  Shape o;
  o.ndim = n;
  int infer_at = -1;
  int64_t known = 1;
  for (int i = 0; i < n; ++i) {
    int64_t d = spec[i];
    if (d == 0) {
      if (i >= s.ndim)
        return op_error(StatusCode::kInvalidArgument, kOp, "shape %s copies dimension %d (0) but the input %s has %d",
                        kernels::ints_str(spec, n).c_str(), i, ::dtorch::shape_str(s).c_str(), s.ndim);
      d = s.dims[i];
    } else if (d == -1) {
      if (infer_at >= 0)
        return op_error(StatusCode::kInvalidModel, kOp, "shape %s has more than one -1",
                        kernels::ints_str(spec, n).c_str());
      infer_at = i;
      continue;
    } else if (d < -1) {
      return op_error(StatusCode::kInvalidModel, kOp, "shape %s has an invalid size %lld",
                      kernels::ints_str(spec, n).c_str(), (long long)d);
    }
    o.dims[i] = d;
    if (!kernels::checked_mul(known, d, &known))
      return op_error(StatusCode::kInvalidArgument, kOp, "shape %s has too many elements",
                      kernels::ints_str(spec, n).c_str());
  }
  int64_t total = 0;
  DTORCH_RETURN_IF_ERROR(kernels::checked_numel(kOp, s, &total));
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0)
      return op_error(StatusCode::kInvalidArgument, kOp, "cannot reshape input %s (%lld elements) into %s",
                      ::dtorch::shape_str(s).c_str(), (long long)total, kernels::ints_str(spec, n).c_str());
    o.dims[infer_at] = total / known;
  } else if (known != total) {
    return op_error(StatusCode::kInvalidArgument, kOp, "cannot reshape input %s (%lld elements) into %s",
                    ::dtorch::shape_str(s).c_str(), (long long)total, ::dtorch::shape_str(o).c_str());
  }
  *out = o;
  return Status::Ok();
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  return target(attrs, in, n_in, nullptr, n_out, &out[0]);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  Shape o;
  DTORCH_RETURN_IF_ERROR(target(*ctx.attrs, in, n_in, out, n_out, &o));
  if (out[0].data != in[0].data && in[0].nbytes() > 0) std::memmove(out[0].data, in[0].data, in[0].nbytes());
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(reshape, DType::kFloat32, infer, run);
DTORCH_REGISTER_KERNEL(reshape, DType::kInt64, infer, run);
DTORCH_REGISTER_KERNEL(reshape, DType::kInt32, infer, run);
DTORCH_REGISTER_KERNEL(reshape, DType::kBool, infer, run);
DTORCH_REGISTER_KERNEL(reshape, DType::kInt8, infer, run);
}  // namespace dtorch
