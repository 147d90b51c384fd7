// amax: x -> the max over `axes` (runtime/OPS.md), as torch.amax: a NaN propagates, a reduced dimension of size 0
// is an error. float32 or int64; exact (nothing rounds), one pass in row-major order. Attributes: axes is[] (absent
// = all), keepdim i.
#include "kernels/common/reduce.h"

namespace dtorch {
namespace {

constexpr const char* kOp = "amax";

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  return kernels::extreme_infer(kOp, attrs, in, n_in, out, n_out, scratch_bytes);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  return kernels::extreme_run(kOp, ctx, in, n_in, out, n_out, /*largest=*/true);
}

}  // namespace
DTORCH_REGISTER_KERNEL(amax, DType::kFloat32, infer, run);
DTORCH_REGISTER_KERNEL(amax, DType::kInt64, infer, run);
}  // namespace dtorch
