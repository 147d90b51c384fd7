// elu: x for x > 0, alpha * (exp(x) - 1) otherwise; attr alpha f (default 1), elementwise, same shape (runtime/OPS.md). The output may alias the input (in place).
#include <cmath>

#include "kernels/common/activation.h"
#include "kernels/common/unary.h"

namespace dtorch {
namespace {

constexpr const char* kOp = "elu";

Status infer(const Attrs&, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  return kernels::unary_infer(kOp, in, n_in, out, n_out);
}

// The loader has held the attributes against the catalogue (types, values, defaults).
Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  const float alpha = static_cast<float>(ctx.attrs->get_float("alpha"));
  return kernels::unary_run(kOp, ctx, in, n_in, out, n_out, [alpha](float x) { return kernels::elu_f(x, alpha); });
}

}  // namespace
DTORCH_REGISTER_KERNEL(elu, DType::kFloat32, infer, run);
}  // namespace dtorch
