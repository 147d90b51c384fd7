// dequantize, AArch64 int8 kernel set (kernels/neon64dot/neon64dot.h): kernels/common/dequantize_neon.h (bit-identical
// to the portable kernel: (q - zero_point) * scale, one IEEE multiplication, 16 values per step), shared with the
// armv7 set kernels/neon32int8.
#include "kernels/neon64dot/neon64dot.h"
#include "kernels/common/dequantize_neon.h"

namespace dtorch {
DTORCH_REGISTER_NEON64DOT_KERNEL(dequantize, DType::kInt8,
                                 (kernels::portable_infer<kernels::dequantize_neon::kOp, DType::kInt8>),
                                 kernels::dequantize_neon::run, nullptr);
}  // namespace dtorch
