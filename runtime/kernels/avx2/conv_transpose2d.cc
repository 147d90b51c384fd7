// conv_transpose2d, the avx2 kernel set (kernels/avx2/avx2.h): kernels/common/fma_conv_transpose.h over this set's GEMM
// (kernels/avx2/gemm_fma.h): the columns by the set's GEMM with the weight packed at load, portable's col2im. Tolerance: the
// set's (within 1e-5 x output scale of portable); threads change no bit; the same bits as the other FMA set.
#include "kernels/avx2/avx2.h"
#include "kernels/avx2/gemm_fma.h"
#include "kernels/common/fma_conv_transpose.h"

namespace dtorch {
namespace {
using Kernel = kernels::FmaConvTranspose<kernels::avx2::Products>;
}  // namespace
DTORCH_REGISTER_AVX2_KERNEL(conv_transpose2d, DType::kFloat32, Kernel::infer, Kernel::run, Kernel::prepare);
}  // namespace dtorch
