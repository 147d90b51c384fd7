// dequantize, the armv7-a NEON int8 kernel set (kernels/neon32int8/neon32int8.h): kernels/common/dequantize_neon.h
// (bit-identical to the portable kernel: (q - zero_point) * scale, one IEEE multiplication, 16 values per step; a
// subnormal scale, which NEON would flush, takes the portable kernel).
#include "kernels/neon32int8/neon32int8.h"
#include "kernels/common/dequantize_neon.h"

namespace dtorch {
DTORCH_REGISTER_NEON32INT8_KERNEL(dequantize, DType::kInt8,
                                  (kernels::portable_infer<kernels::dequantize_neon::kOp, DType::kInt8>),
                                  kernels::dequantize_neon::run, nullptr);
}  // namespace dtorch
