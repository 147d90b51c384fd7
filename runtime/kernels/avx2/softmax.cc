// softmax, the avx2 kernel set (kernels/avx2/avx2.h): kernels/common/vector_softmax.h over this set's vectors
// (kernels/avx2/activation_avx2.h's V256): e^x in registers along a contiguous dim, the same bits as the other FMA
// set; other dims and every error go to the portable kernel. Tolerance: the set's (1e-5 x output scale).
#include "kernels/avx2/activation_avx2.h"
#include "kernels/avx2/avx2.h"
#include "kernels/common/vector_softmax.h"

namespace dtorch {
namespace {
using Kernel = kernels::FmaSoftmax<kernels::avx2::V256>;
}  // namespace
DTORCH_REGISTER_AVX2_KERNEL(softmax, DType::kFloat32, Kernel::infer, Kernel::run, nullptr);
}  // namespace dtorch
