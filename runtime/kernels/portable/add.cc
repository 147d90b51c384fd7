// add: a + b with NumPy broadcasting (runtime/OPS.md). Fused `activation` attribute. The output may alias input a.
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
}  // namespace dtorch
