// The portable (or bit-exact) float32 kernel an ISA set's kernel leaves its checks and the cases it does not cover to
// (kernels/x86, kernels/avx2, kernels/avx512): found once by name in the registry, and an infer that is the portable
// kernel's.
#pragma once

#include "core/kernel.h"
#include "kernels/common/isa.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

// The portable kernel of the op named Op for first-input dtype D (float32 unless named: the int8 sets pass kInt8), to
// which an ISA set's kernel leaves its checks and the cases it does not cover (looked up once; null if the build
// lacks it). Op is the file's `constexpr char kOp[]`.
template <const char* Op, DType D = DType::kFloat32>
const KernelDef* portable_kernel() {
  static const KernelDef* k = find_kernel_in_set(Op, D, "portable");
  return k;
}

// An infer that is the portable kernel's: the same checks, errors, output shapes and scratch.
template <const char* Op, DType D = DType::kFloat32>
Status portable_infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out,
                      size_t* scratch_bytes) {
  const KernelDef* p = portable_kernel<Op, D>();
  if (p == nullptr) return op_error(StatusCode::kInternal, Op, "the portable kernel is not registered");
  return p->infer(attrs, in, n_in, out, n_out, scratch_bytes);
}

// The bit-exact float32 kernel of the op named Op (the best of the sets the "exact" policy allows: x86 or portable),
// to which an FMA set's kernel leaves its checks and the cases it does not cover.
template <const char* Op>
const KernelDef* exact_kernel() {
  static const KernelDef* k = find_kernel(Op, DType::kFloat32, KernelPolicy::kExact);
  return k;
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
