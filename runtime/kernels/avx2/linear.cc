// linear, the avx2 kernel set (kernels/avx2/avx2.h): kernels/common/fma_linear.h over this set's GEMM
// (kernels/avx2/gemm_fma.h). The weight is packed once at load in panels of the GEMM's column tiles, the input rows per
// run; the bias and the fused activation are the GEMM's epilogue. Tolerance: the set's (within 1e-5 x output scale of
// portable); threads change no bit, and the avx2 and avx512 sets give the same bits (one FMA per product, k ascending).
// What the set does not take and every error go to the bit-exact kernel.
#include "kernels/common/fma_linear.h"
#include "kernels/avx2/avx2.h"
#include "kernels/avx2/gemm_fma.h"

namespace dtorch {
namespace {
using Kernel = kernels::FmaLinear<kernels::avx2::Products>;
}  // namespace
DTORCH_REGISTER_AVX2_KERNEL(linear, DType::kFloat32, Kernel::infer, Kernel::run, Kernel::prepare);
}  // namespace dtorch
