// add: a + b with NumPy broadcasting (runtime/OPS.md); float32, or int64 / int32 (wrapping around). Fused `activation`
// attribute (float32 only). The output may alias input a.
#include <cmath>

#include "kernels/common/activation.h"
#include "kernels/common/broadcast.h"

namespace dtorch {
namespace {

constexpr const char* kOp = "add";

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  kernels::Activation act;
  DTORCH_RETURN_IF_ERROR(kernels::parse_activation(kOp, attrs, &act));
  return kernels::binary_infer(kOp, in, n_in, out, n_out);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  kernels::Activation act;
  DTORCH_RETURN_IF_ERROR(kernels::parse_activation(kOp, *ctx.attrs, &act));
  if (in[0].dtype != DType::kFloat32) {
    if (act.kind != kernels::ActKind::kNone)
      return kernels::op_error(StatusCode::kInvalidArgument, kOp, "a fused activation needs float32 inputs, got %s",
                               dtype_name(in[0].dtype));
    return kernels::int_binary_run(kOp, ctx, in, n_in, out, n_out,
                                   [](auto a, auto b) { return kernels::wrap_add(a, b); });
  }
  if (act.kind == kernels::ActKind::kNone)
    return kernels::binary_run(kOp, ctx, in, n_in, out, n_out, [](float a, float b) { return a + b; });
  if (act.kind == kernels::ActKind::kRelu)
    return kernels::binary_run(kOp, ctx, in, n_in, out, n_out,
                               [](float a, float b) { return kernels::relu_f(a + b); });
  return kernels::binary_run(kOp, ctx, in, n_in, out, n_out,
                             [act](float a, float b) { return kernels::apply_activation(act, a + b); });
}

}  // namespace
DTORCH_REGISTER_KERNEL(add, DType::kFloat32, infer, run);
DTORCH_REGISTER_KERNEL(add, DType::kInt64, infer, run);
DTORCH_REGISTER_KERNEL(add, DType::kInt32, infer, run);
}  // namespace dtorch
