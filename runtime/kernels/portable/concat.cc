// concat: x0, x1, ... -> one tensor, sizes adding up along `axis` (runtime/OPS.md). Attribute: axis i
// (>= 0; a negative axis is normalized). All inputs share the dtype (float32, int64, int32 or bool: the bytes are
// copied) and every other dimension.
#include <cstring>

#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "concat";

Status check(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int* axis) {
  if (n_in < 1) return op_error(StatusCode::kInvalidModel, kOp, "needs at least one input");
  const Shape& s0 = in[0].shape;
  if (s0.ndim < 1) return op_error(StatusCode::kInvalidArgument, kOp, "inputs must have at least 1 dimension");
  DTORCH_RETURN_IF_ERROR(kernels::normalize_axis(kOp, "axis", attrs.get_int("axis"), s0.ndim, axis));
  Shape o = s0;
  for (int i = 1; i < n_in; ++i) {
    const Shape& s = in[i].shape;
    if (in[i].dtype != in[0].dtype)
      return op_error(StatusCode::kInvalidArgument, kOp, "input %d has dtype %s but input 0 has %s", i,
                      dtype_name(in[i].dtype), dtype_name(in[0].dtype));
    bool ok = s.ndim == s0.ndim;
    for (int d = 0; ok && d < s.ndim; ++d) ok = d == *axis || s.dims[d] == s0.dims[d];
    if (!ok)
      return op_error(StatusCode::kInvalidArgument, kOp,
                      "input %d has shape %s, which does not match input 0's shape %s outside axis %d", i,
                      ::dtorch::shape_str(s).c_str(), ::dtorch::shape_str(s0).c_str(), *axis);
    if (!kernels::checked_add(o.dims[*axis], s.dims[*axis], &o.dims[*axis]))
      return op_error(StatusCode::kInvalidArgument, kOp, "the concatenated size along axis %d overflows", *axis);
  }
  *out = o;
  return Status::Ok();
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  int axis = 0;
  *scratch_bytes = 0;
  return check(attrs, in, n_in, &out[0], &axis);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  Shape o;
  int axis = 0;
  DTORCH_RETURN_IF_ERROR(check(*ctx.attrs, in, n_in, &o, &axis));
  if (out[0].dtype != in[0].dtype)
    return op_error(StatusCode::kInvalidArgument, kOp, "output is %s but the inputs are %s", dtype_name(out[0].dtype),
                    dtype_name(in[0].dtype));
  const size_t es = dtype_size(in[0].dtype);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= o.dims[d];
  for (int d = axis + 1; d < o.ndim; ++d) inner *= o.dims[d];
  const size_t out_row = static_cast<size_t>(o.dims[axis] * inner) * es;
  char* dst = static_cast<char*>(out[0].data);
  size_t offset = 0;
  for (int i = 0; i < n_in; ++i) {
    const size_t row = static_cast<size_t>(in[i].shape.dims[axis] * inner) * es;
    const char* src = static_cast<const char*>(in[i].data);
    if (row > 0)
      for (int64_t r = 0; r < outer; ++r) std::memcpy(dst + r * out_row + offset, src + r * row, row);
    offset += row;
  }
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(concat, DType::kFloat32, infer, run);
DTORCH_REGISTER_KERNEL(concat, DType::kInt64, infer, run);
DTORCH_REGISTER_KERNEL(concat, DType::kInt32, infer, run);
DTORCH_REGISTER_KERNEL(concat, DType::kBool, infer, run);
DTORCH_REGISTER_KERNEL(concat, DType::kInt8, infer, run);
}  // namespace dtorch
