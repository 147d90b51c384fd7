// qadd, AArch64 int8 kernel set (kernels/neon64dot/neon64dot.h): kernels/common/qadd_neon.h (the portable kernel's
// bits for inputs of the output's shape, 16 values a step; broadcasting inputs take the portable kernel), shared with
// the armv7 set kernels/neon32int8.
#include "kernels/neon64dot/neon64dot.h"
#include "kernels/common/qadd_neon.h"

namespace dtorch {
DTORCH_REGISTER_NEON64DOT_KERNEL(qadd, DType::kInt8, kernels::qadd_neon::infer, kernels::qadd_neon::run, nullptr);
}  // namespace dtorch
