// matmul, the avx2 kernel set (kernels/avx2/avx2.h): kernels/common/fma_matmul.h over this set's GEMM
// (kernels/avx2/gemm_fma.h): A packed per run, B read in place, batches broadcast as torch.matmul. Tolerance: the set's
// (within 1e-5 x output scale of portable); threads change no bit, and the avx2 and avx512 sets give the same bits (one
// FMA per product, k ascending). What the set does not take and every error go to the bit-exact kernel.
#include "kernels/common/fma_matmul.h"
#include "kernels/avx2/avx2.h"
#include "kernels/avx2/gemm_fma.h"

namespace dtorch {
namespace {
using Kernel = kernels::FmaMatmul<kernels::avx2::Products>;
}  // namespace
DTORCH_REGISTER_AVX2_KERNEL(matmul, DType::kFloat32, Kernel::infer, Kernel::run, nullptr);
}  // namespace dtorch
