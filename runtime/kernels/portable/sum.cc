// sum: x -> the sum over `axes` (runtime/OPS.md). Attributes: axes is[] (absent = all), keepdim i.
// Scratch: one double per output element (the accumulators).
#include "kernels/common/reduce.h"

namespace dtorch {
namespace {

constexpr const char* kOp = "sum";

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  return kernels::reduce_infer(kOp, attrs, in, n_in, out, n_out, scratch_bytes);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  return kernels::reduce_run(kOp, ctx, in, n_in, out, n_out, /*mean=*/false);
}

}  // namespace
DTORCH_REGISTER_KERNEL(sum, DType::kFloat32, infer, run);
}  // namespace dtorch
