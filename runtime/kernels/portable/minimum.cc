// minimum: elementwise minimum (NaN propagates) with NumPy broadcasting (runtime/OPS.md); float32, int64, int32. The
// output may alias input a.
#include <cmath>

#include "kernels/common/activation.h"
#include "kernels/common/broadcast.h"

namespace dtorch {
namespace {

constexpr const char* kOp = "minimum";

Status infer(const Attrs&, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  return kernels::binary_infer(kOp, in, n_in, out, n_out);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  if (in[0].dtype != DType::kFloat32)
    return kernels::int_binary_run(kOp, ctx, in, n_in, out, n_out,
                                   [](auto a, auto b) { return a < b ? a : b; });
  return kernels::binary_run(kOp, ctx, in, n_in, out, n_out, [](float a, float b) { return (a != a || a < b) ? a : b; });
}

}  // namespace
DTORCH_REGISTER_KERNEL(minimum, DType::kFloat32, infer, run);
DTORCH_REGISTER_KERNEL(minimum, DType::kInt64, infer, run);
DTORCH_REGISTER_KERNEL(minimum, DType::kInt32, infer, run);
}  // namespace dtorch
