// conv_transpose2d, the neon64 kernel set (kernels/neon64/neon64.h): kernels/common/fma_conv_transpose.h over this
// set's GEMM (kernels/neon64/gemm_neon64.h) through kernels/common/fma_gemm.h's BlockedProducts, as the host's FMA sets
// run it. Tolerance: the set's (within 1e-5 x output scale of portable); threads change no bit. What the set does not
// take and every error go to the bit-exact kernel.
#include "kernels/common/fma_conv_transpose.h"
#include "kernels/neon64/gemm_neon64.h"
#include "kernels/neon64/neon64.h"

namespace dtorch {
namespace {
using Kernel = kernels::FmaConvTranspose<kernels::BlockedProducts<kernels::neon64::Gemm>>;
}  // namespace
DTORCH_REGISTER_NEON64_KERNEL(conv_transpose2d, DType::kFloat32, Kernel::infer, Kernel::run, Kernel::prepare);
}  // namespace dtorch
