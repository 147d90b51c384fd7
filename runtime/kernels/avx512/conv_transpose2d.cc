// conv_transpose2d, the avx512 kernel set (kernels/avx512/avx512.h): kernels/common/fma_conv_transpose.h over this set's GEMM
// (kernels/avx512/gemm_avx512.h): the columns by the set's GEMM with the weight packed at load, portable's col2im. Tolerance: the
// set's (within 1e-5 x output scale of portable); threads change no bit; the same bits as the other FMA set.
#include "kernels/avx512/avx512.h"
#include "kernels/avx512/gemm_avx512.h"
#include "kernels/common/fma_conv_transpose.h"

namespace dtorch {
namespace {
using Kernel = kernels::FmaConvTranspose<kernels::avx512::Products>;
}  // namespace
DTORCH_REGISTER_AVX512_KERNEL(conv_transpose2d, DType::kFloat32, Kernel::infer, Kernel::run, Kernel::prepare);
}  // namespace dtorch
