// matmul, x86-64 AVX2 kernel set (kernels/x86/x86.h). Tolerance: bit-identical to the portable kernel (k in
// increasing order, one accumulator per output, no FMA: kernels/x86/gemm_avx2.h), hence within 1e-5 x output
// scale of eager.
//
// torch.matmul semantics (1-D promotion, batch broadcasting); shapes are checked by the portable infer. Each
// product is the AVX2 6x16 GEMM on the operands in place (row-major B, masked loads on the right edge);
// threads split (batch, output tile) units, so results do not depend on the thread count.
#include "kernels/common/matmul_geometry.h"
#include "kernels/common/util.h"
#include "kernels/x86/gemm_avx2.h"
#include "kernels/x86/x86.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr char kOp[] = "matmul";

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  const KernelDef* p = kernels::portable_kernel<kOp>();
  if (p == nullptr) return op_error(StatusCode::kInternal, kOp, "the portable kernel is not registered");
  DTORCH_RETURN_IF_ERROR(p->infer(attrs, in, n_in, out, n_out, scratch_bytes));
  *scratch_bytes = 0;
  return Status::Ok();
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 2, 2));
  kernels::MatmulGeo g{};
  if (!kernels::matmul_geometry(in[0].shape, in[1].shape, &g)) {
    const KernelDef* p = kernels::portable_kernel<kOp>();
    if (p == nullptr) return op_error(StatusCode::kInternal, kOp, "the portable kernel is not registered");
    return p->run(ctx, in, n_in, out, n_out);  // the portable kernel reports the error
  }
  const float* a = in[0].as<const float>();
  const float* b = in[1].as<const float>();
  float* c = out[0].as<float>();
  if (g.m == 0 || g.n == 0 || g.batches == 0) return Status::Ok();
  const int64_t per = kernels::x86::gemm_units(g.m, g.n);
  const kernels::Epilogue none;
  kernels::parallel_chunks(ctx.pool, g.batches * per, 1, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t bi = u / per, t = u % per;
      int64_t oa = 0, ob = 0;
      g.offsets(bi, &oa, &ob);
      kernels::x86::gemm_nn_unit(t, g.m, g.n, g.k, a + oa, g.k, b + ob, g.n, false, c + bi * g.m * g.n, g.n, none);
    }
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_X86_KERNEL(matmul, DType::kFloat32, infer, run);
}  // namespace dtorch
