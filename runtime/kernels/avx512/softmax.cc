// softmax, the avx512 kernel set (kernels/avx512/avx512.h): kernels/common/vector_softmax.h over this set's vectors
// (kernels/avx512/activation_avx512.h's V512): e^x in registers along a contiguous dim, the same bits as the other FMA
// set; other dims and every error go to the portable kernel. Tolerance: the set's (1e-5 x output scale).
#include "kernels/avx512/activation_avx512.h"
#include "kernels/avx512/avx512.h"
#include "kernels/common/vector_softmax.h"

namespace dtorch {
namespace {
using Kernel = kernels::FmaSoftmax<kernels::avx512::V512>;
}  // namespace
DTORCH_REGISTER_AVX512_KERNEL(softmax, DType::kFloat32, Kernel::infer, Kernel::run, nullptr);
}  // namespace dtorch
