// linear: x (..., K), w (M, K), optional bias (M) -> (..., M) = x . w^T + bias, then the fused activation
// (runtime/OPS.md). The weight is used in its stored (M, K) layout, without a transposed copy: gemm_nt
// takes dot products of rows (8-lane order, see kernels/common/gemm.h). Threads split output tiles.
#include "kernels/common/activation.h"
#include "kernels/common/gemm.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "linear";

Status check(const Attrs& attrs, const TensorView* in, int n_in, kernels::Activation* act) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 2, 3));
  const TensorView& x = in[0];
  const TensorView& w = in[1];
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "input", x, DType::kFloat32));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "weight", w, DType::kFloat32));
  DTORCH_RETURN_IF_ERROR(kernels::check_rank(kOp, "weight (out_features, in_features)", w, 2));
  if (x.shape.ndim < 1)
    return op_error(StatusCode::kInvalidArgument, kOp, "input must have at least 1 dimension, got a scalar");
  const int64_t k = x.shape.dims[x.shape.ndim - 1];
  if (k != w.shape.dims[1])
    return op_error(StatusCode::kInvalidArgument, kOp,
                    "input has %lld features (last dim of %s) but the weight %s expects %lld", (long long)k,
                    ::dtorch::shape_str(x.shape).c_str(), ::dtorch::shape_str(w.shape).c_str(),
                    (long long)w.shape.dims[1]);
  if (kernels::optional_present(in, n_in, 2))
    DTORCH_RETURN_IF_ERROR(kernels::check_vector(kOp, "bias", in[2], w.shape.dims[0]));
  return kernels::parse_activation(kOp, attrs, act);
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  kernels::Activation act;
  DTORCH_RETURN_IF_ERROR(check(attrs, in, n_in, &act));
  out[0] = in[0].shape;
  out[0].dims[out[0].ndim - 1] = in[1].shape.dims[0];
  *scratch_bytes = 0;
  return Status::Ok();
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  kernels::Epilogue ep;
  DTORCH_RETURN_IF_ERROR(check(*ctx.attrs, in, n_in, &ep.act));
  const int64_t k = in[1].shape.dims[1], m = in[1].shape.dims[0];
  const int64_t rows = k > 0 ? in[0].shape.numel() / k : out[0].shape.numel() / (m > 0 ? m : 1);
  ep.bias = kernels::optional_present(in, n_in, 2) ? in[2].as<const float>() : nullptr;
  ep.bias_per_row = false;
  kernels::gemm_nt(ctx.pool, rows, m, k, in[0].as<const float>(), k, in[1].as<const float>(), k, out[0].as<float>(),
                   m, ep);
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(linear, DType::kFloat32, infer, run);
}  // namespace dtorch
