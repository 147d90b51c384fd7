// linear, the rvv kernel set (kernels/rvv/rvv.h): kernels/common/fma_linear.h over this set's GEMM
// (kernels/rvv/gemm_rvv.h) through kernels/common/fma_gemm.h's BlockedProducts, as the host's FMA sets run it.
// Tolerance: the set's (within 1e-5 x output scale of portable); threads change no bit. What the set does not take and
// every error go to the bit-exact kernel.
#include "kernels/common/fma_linear.h"
#include "kernels/rvv/gemm_rvv.h"
#include "kernels/rvv/rvv.h"

namespace dtorch {
namespace {
using Kernel = kernels::FmaLinear<kernels::BlockedProducts<kernels::rvv::Gemm>>;
}  // namespace
DTORCH_REGISTER_RVV_KERNEL(linear, DType::kFloat32, Kernel::infer, Kernel::run, Kernel::prepare);
}  // namespace dtorch
