// conv_transpose2d, the neon32 kernel set (kernels/neon32/neon32.h): kernels/common/fma_conv_transpose.h over this
// set's GEMM (kernels/neon32/gemm_neon32.h) through kernels/common/fma_gemm.h's BlockedProducts, as the host's FMA sets
// run it. Tolerance: the set's (within 1e-5 x output scale of portable); threads change no bit. What the set does not
// take and every error go to the bit-exact kernel.
#include "kernels/common/fma_conv_transpose.h"
#include "kernels/neon32/gemm_neon32.h"
#include "kernels/neon32/neon32.h"

namespace dtorch {
namespace {
using Kernel = kernels::FmaConvTranspose<kernels::BlockedProducts<kernels::neon32::Gemm>>;
}  // namespace
DTORCH_REGISTER_NEON32_KERNEL(conv_transpose2d, DType::kFloat32, Kernel::infer, Kernel::run, Kernel::prepare);
}  // namespace dtorch
