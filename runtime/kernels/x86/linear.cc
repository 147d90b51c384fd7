// linear, x86-64 AVX2 kernel set (kernels/x86/x86.h). Tolerance: bit-identical to the portable kernel (portable's
// 8-lane dot-product order with one ymm accumulator per output, kernels/x86/gemm_avx2.h), hence within 1e-5 x
// output scale of eager.
//
// x (..., K) . w^T with w in its stored (M, K) layout: each output row is a GEMV, 8 weight rows at a time
// sharing each load of x (batch 1 is one such GEMV). Shapes and attributes are checked by the portable infer.
// Threads split (row block, output block) tiles only: results do not depend on the count.
#include "kernels/common/activation.h"
#include "kernels/common/util.h"
#include "kernels/x86/gemm_avx2.h"
#include "kernels/x86/x86.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr char kOp[] = "linear";

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  const KernelDef* p = kernels::portable_kernel<kOp>();
  if (p == nullptr) return op_error(StatusCode::kInternal, kOp, "the portable kernel is not registered");
  DTORCH_RETURN_IF_ERROR(p->infer(attrs, in, n_in, out, n_out, scratch_bytes));
  *scratch_bytes = 0;
  return Status::Ok();
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 2, 3));
  if (in[1].shape.ndim != 2 || in[0].shape.ndim < 1 || in[0].shape.dims[in[0].shape.ndim - 1] != in[1].shape.dims[1]) {
    const KernelDef* p = kernels::portable_kernel<kOp>();
    if (p == nullptr) return op_error(StatusCode::kInternal, kOp, "the portable kernel is not registered");
    return p->run(ctx, in, n_in, out, n_out);  // the portable kernel reports the error
  }
  kernels::Epilogue ep;
  DTORCH_RETURN_IF_ERROR(kernels::parse_activation(kOp, *ctx.attrs, &ep.act));
  const int64_t k = in[1].shape.dims[1], m = in[1].shape.dims[0];
  const int64_t rows = k > 0 ? in[0].shape.numel() / k : out[0].shape.numel() / (m > 0 ? m : 1);
  ep.bias = kernels::optional_present(in, n_in, 2) ? in[2].as<const float>() : nullptr;
  ep.bias_per_row = false;
  kernels::x86::gemm_nt(ctx.pool, rows, m, k, in[0].as<const float>(), k, in[1].as<const float>(), k,
                        out[0].as<float>(), m, ep);
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_X86_KERNEL(linear, DType::kFloat32, infer, run);
}  // namespace dtorch
