// index_select: x, indices (int64, 1-D) -> the entries `indices` of x along `axis`: the output has x's shape with dimension
// `axis` replaced by len(indices) (runtime/OPS.md). Attribute: axis i. An index outside [0, size) is an
// error (checked at run time, since indices may be a model input); negative indices count from the end. x is
// float32, int64, int32 or bool: rows are copied.
#include <cstring>

#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "index_select";

Status check(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int* axis) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 2, 2));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "indices", in[1], DType::kInt64));
  if (in[1].shape.ndim != 1)
    return op_error(StatusCode::kInvalidArgument, kOp, "indices must be 1-D, got shape %s",
                    ::dtorch::shape_str(in[1].shape).c_str());
  if (in[0].shape.ndim < 1) return op_error(StatusCode::kInvalidArgument, kOp, "input must have at least 1 dimension");
  DTORCH_RETURN_IF_ERROR(kernels::normalize_axis(kOp, "axis", attrs.get_int("axis"), in[0].shape.ndim, axis));
  *out = in[0].shape;
  out->dims[*axis] = in[1].shape.dims[0];
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
  DTORCH_RETURN_IF_ERROR(kernels::check_signature(DTORCH_OP_SCHEMA(index_select), *ctx.attrs, in, n_in, out, n_out));
  const Shape& s = in[0].shape;
  const int64_t* idx = in[1].as<const int64_t>();
  const int64_t k = in[1].shape.dims[0], size = s.dims[axis];
  for (int64_t i = 0; i < k; ++i)
    if (idx[i] < -size || idx[i] >= size)
      return op_error(StatusCode::kInvalidArgument, kOp, "index %lld (position %lld) is out of range for axis %d of size %lld",
                      (long long)idx[i], (long long)i, axis, (long long)size);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= s.dims[d];
  for (int d = axis + 1; d < s.ndim; ++d) inner *= s.dims[d];
  const size_t es = dtype_size(in[0].dtype), row = static_cast<size_t>(inner) * es;
  const char* x = static_cast<const char*>(in[0].data);
  char* y = static_cast<char*>(out[0].data);
  for (int64_t r = 0; r < outer; ++r)
    for (int64_t i = 0; i < k; ++i) {
      const int64_t j = idx[i] < 0 ? idx[i] + size : idx[i];
      if (inner > 0) std::memcpy(y + static_cast<size_t>(r * k + i) * row, x + static_cast<size_t>(r * size + j) * row, row);
    }
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(index_select, DType::kFloat32, infer, run);
DTORCH_REGISTER_KERNEL(index_select, DType::kInt64, infer, run);
DTORCH_REGISTER_KERNEL(index_select, DType::kInt32, infer, run);
DTORCH_REGISTER_KERNEL(index_select, DType::kBool, infer, run);
DTORCH_REGISTER_KERNEL(index_select, DType::kInt8, infer, run);
}  // namespace dtorch
