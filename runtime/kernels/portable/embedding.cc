// embedding: indices (int64, any shape), weight (V, D) -> (*indices.shape, D), row indices[i] of the
// weight (runtime/OPS.md). Attribute: padding_idx i (ignored at inference). An index outside [0, V) is an
// error, checked at run time. Registered for int64, the dtype of its first input (the indices).
#include <cstring>

#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "embedding";

Status check(const TensorView* in, int n_in, Shape* out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 2, 2));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "indices", in[0], DType::kInt64));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "weight", in[1], DType::kFloat32));
  DTORCH_RETURN_IF_ERROR(kernels::check_rank(kOp, "weight (num_embeddings, embedding_dim)", in[1], 2));
  if (in[0].shape.ndim >= kMaxDims)
    return op_error(StatusCode::kInvalidArgument, kOp, "indices have %d dimensions; at most %d are supported",
                    in[0].shape.ndim, kMaxDims - 1);
  *out = in[0].shape;
  out->dims[out->ndim++] = in[1].shape.dims[1];
  return Status::Ok();
}

Status infer(const Attrs&, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  *scratch_bytes = 0;
  return check(in, n_in, &out[0]);
}

Status run(const KernelContext&, const TensorView* in, int n_in, TensorView* out, int n_out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  Shape o;
  DTORCH_RETURN_IF_ERROR(check(in, n_in, &o));
  const int64_t* idx = in[0].as<const int64_t>();
  const int64_t n = in[0].shape.numel(), v = in[1].shape.dims[0], d = in[1].shape.dims[1];
  for (int64_t i = 0; i < n; ++i)
    if (idx[i] < 0 || idx[i] >= v)
      return op_error(StatusCode::kInvalidArgument, kOp, "index %lld (position %lld) is out of range for %lld embeddings",
                      (long long)idx[i], (long long)i, (long long)v);
  const float* w = in[1].as<const float>();
  float* y = out[0].as<float>();
  if (d > 0)
    for (int64_t i = 0; i < n; ++i) std::memcpy(y + i * d, w + idx[i] * d, static_cast<size_t>(d) * sizeof(float));
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(embedding, DType::kInt64, infer, run);
}  // namespace dtorch
