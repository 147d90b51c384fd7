// maximum: elementwise maximum (NaN propagates) with NumPy broadcasting (runtime/OPS.md). The output may alias input a.
#include <cmath>

#include "kernels/common/activation.h"
#include "kernels/common/broadcast.h"

namespace dtorch {
namespace {

constexpr const char* kOp = "maximum";

Status infer(const Attrs&, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  return kernels::binary_infer(kOp, in, n_in, out, n_out);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  return kernels::binary_run(kOp, ctx, in, n_in, out, n_out, [](float a, float b) { return (a != a || a > b) ? a : b; });
}

}  // namespace
DTORCH_REGISTER_KERNEL(maximum, DType::kFloat32, infer, run);
}  // namespace dtorch
