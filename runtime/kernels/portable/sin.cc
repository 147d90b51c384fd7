// sin: sin(x), elementwise, same shape (runtime/OPS.md). The output may alias the input (in place).
#include "kernels/common/activation.h"
#include "kernels/common/scalar_math.h"
#include "kernels/common/unary.h"

namespace dtorch {
namespace {

constexpr const char* kOp = "sin";

Status infer(const Attrs&, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  return kernels::unary_infer(kOp, in, n_in, out, n_out);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  return kernels::unary_run(kOp, ctx, in, n_in, out, n_out, [](float x) { return kernels::smath::sin(x); });
}

}  // namespace
DTORCH_REGISTER_KERNEL(sin, DType::kFloat32, infer, run);
}  // namespace dtorch
