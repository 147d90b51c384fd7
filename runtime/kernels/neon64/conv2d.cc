// conv2d, AArch64 Advanced SIMD kernel set (kernels/neon64/neon64.h: FMA, within 1e-5 x output scale of portable;
// identical bits for any thread count), through kernels/common/fma_conv.h and neon_conv.h.
//
// Dense and grouped convolutions: per image and group, the FMA GEMM of kernels/neon64/gemm_neon64.h (8 x 12
// register tiles), weights packed once when the session loads, times the im2col columns, which the GEMM's fill step
// writes block by block (12 output positions x up to 256 kernel rows) into a buffer that stays in L1
// (kernels/common/neon_im2col.h: the columns are never written to memory). A 1x1 stride-1 unpadded convolution
// reads its input plane in place (no im2col, no copy). Bias and the fused activation are applied in the GEMM.
// Depthwise convolutions (one input and one output channel per group): the direct kernels of
// kernels/common/neon_depthwise.h (kernels taller than its ring of padded rows run the bit-exact kernel).
// Threads split GEMM work units or output planes only.
#include "kernels/common/fma_conv.h"
#include "kernels/common/neon_conv.h"
#include "kernels/neon64/gemm_neon64.h"
#include "kernels/neon64/neon64.h"

namespace dtorch {
namespace {

using Conv = kernels::FmaConv2d<kernels::neon::ConvSet<kernels::neon64::Gemm>>;

}  // namespace
DTORCH_REGISTER_NEON64_KERNEL(conv2d, DType::kFloat32, Conv::infer, Conv::run, Conv::prepare);
}  // namespace dtorch
