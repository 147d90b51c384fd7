// shape: y = x.shape[start:end] as int64 (runtime/OPS.md; ONNX Shape). start and end slice the dimension list as
// Python does (negative counts from the end, both clamped to [0, rank]). x's data is never read, so this is how a
// size that follows a dynamic dimension reaches arithmetic at run time (ONNX models built from indices such as
// batch_idx * seq_len + pos). The output length depends only on x's rank, which is fixed in a model.
#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;

Status plan(const Attrs& attrs, const TensorView* in, int n_in, const TensorView* outs, int n_out, int* start,
            int* count) {
  DTORCH_RETURN_IF_ERROR(kernels::check_signature(DTORCH_OP_SCHEMA(shape), attrs, in, n_in, outs, n_out));
  const int rank = in[0].shape.ndim;
  const auto clamp = [rank](int64_t v) {
    if (v < 0) v += rank;
    return static_cast<int>(v < 0 ? 0 : (v > rank ? rank : v));
  };
  const int s = clamp(attrs.get_int("start")), e = clamp(attrs.get_int("end"));
  *start = s;
  *count = e > s ? e - s : 0;
  return Status::Ok();
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  int start = 0, count = 0;
  DTORCH_RETURN_IF_ERROR(plan(attrs, in, n_in, nullptr, n_out, &start, &count));
  out[0].ndim = 1;
  out[0].dims[0] = count;
  return Status::Ok();
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  int start = 0, count = 0;
  DTORCH_RETURN_IF_ERROR(plan(*ctx.attrs, in, n_in, out, n_out, &start, &count));
  if (out[0].shape.ndim != 1 || out[0].shape.dims[0] != count)
    return op_error(StatusCode::kInternal, "shape", "output has shape %s, expected (%d)",
                    ::dtorch::shape_str(out[0].shape).c_str(), count);
  int64_t* y = out[0].as<int64_t>();
  for (int i = 0; i < count; ++i) y[i] = in[0].shape.dims[start + i];
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(shape, DType::kFloat32, infer, run);
DTORCH_REGISTER_KERNEL(shape, DType::kInt64, infer, run);
DTORCH_REGISTER_KERNEL(shape, DType::kInt32, infer, run);
DTORCH_REGISTER_KERNEL(shape, DType::kBool, infer, run);
DTORCH_REGISTER_KERNEL(shape, DType::kInt8, infer, run);
}  // namespace dtorch
