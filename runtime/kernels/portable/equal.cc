// equal: a == b elementwise (NaN == NaN is false) with NumPy broadcasting -> bool (runtime/OPS.md).
// a and b have one dtype, float32, int64 or int32; one kernel serves every signature (keyed by a's dtype).
#include "kernels/common/compare.h"

namespace dtorch {
namespace {

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  return kernels::compare_infer(DTORCH_OP_SCHEMA(equal), attrs, in, n_in, out, n_out, scratch_bytes);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  return kernels::compare_run(DTORCH_OP_SCHEMA(equal), ctx, in, n_in, out, n_out, [](auto a, auto b) { return a == b; });
}

}  // namespace
DTORCH_REGISTER_KERNEL(equal, DType::kFloat32, infer, run);
DTORCH_REGISTER_KERNEL(equal, DType::kInt64, infer, run);
DTORCH_REGISTER_KERNEL(equal, DType::kInt32, infer, run);
}  // namespace dtorch
