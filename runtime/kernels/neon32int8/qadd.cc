// qadd, the armv7-a NEON int8 kernel set (kernels/neon32int8/neon32int8.h): kernels/common/qadd_neon.h (the portable
// kernel's bits for inputs of the output's shape, 16 values a step; broadcasting inputs take the portable kernel).
#include "kernels/neon32int8/neon32int8.h"
#include "kernels/common/qadd_neon.h"

namespace dtorch {
DTORCH_REGISTER_NEON32INT8_KERNEL(qadd, DType::kInt8, kernels::qadd_neon::infer, kernels::qadd_neon::run, nullptr);
}  // namespace dtorch
