// matmul: torch.matmul semantics (runtime/OPS.md): a 1-D first operand is a row vector and a 1-D second
// operand a column vector (the added dimension is removed from the result); leading (batch) dimensions
// broadcast with NumPy's rule. Each product is a gemm_nn (k in increasing order, kernels/common/gemm.h);
// threads split (batch, output tile) units, so results do not depend on the thread count.
#include "kernels/common/gemm.h"
#include "kernels/common/matmul_geometry.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "matmul";

struct Geo {
  int64_t m, k, n;
  int nb;                                           // batch dims of the output
  int64_t batch[kMaxDims], sa[kMaxDims], sb[kMaxDims];  // batch sizes and per-operand matrix strides (0: broadcast)
  int64_t batches;
  Shape out;
};

Status geometry(const TensorView* in, int n_in, Geo* g) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 2, 2));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "input a", in[0], DType::kFloat32));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "input b", in[1], DType::kFloat32));
  const Shape& a = in[0].shape;
  const Shape& b = in[1].shape;
  if (a.ndim < 1 || b.ndim < 1)
    return op_error(StatusCode::kInvalidArgument, kOp, "both arguments need at least 1 dimension, got %s and %s",
                    ::dtorch::shape_str(a).c_str(), ::dtorch::shape_str(b).c_str());
  g->m = a.ndim >= 2 ? a.dims[a.ndim - 2] : 1;
  g->k = a.dims[a.ndim - 1];
  const int64_t kb = b.ndim >= 2 ? b.dims[b.ndim - 2] : b.dims[0];
  g->n = b.ndim >= 2 ? b.dims[b.ndim - 1] : 1;
  if (g->k != kb)
    return op_error(StatusCode::kInvalidArgument, kOp,
                    "shapes %s and %s cannot be multiplied: the last dim of the first (%lld) must equal the %s dim of "
                    "the second (%lld)",
                    ::dtorch::shape_str(a).c_str(), ::dtorch::shape_str(b).c_str(), (long long)g->k,
                    b.ndim >= 2 ? "second-to-last" : "first", (long long)kb);
  const int ba = a.ndim > 2 ? a.ndim - 2 : 0, bb = b.ndim > 2 ? b.ndim - 2 : 0;
  g->nb = ba > bb ? ba : bb;
  const int64_t mat_a = g->m * g->k, mat_b = g->k * g->n;
  int64_t st_a = mat_a, st_b = mat_b;
  g->batches = 1;
  for (int i = g->nb - 1; i >= 0; --i) {
    const int ia = i - (g->nb - ba), ib = i - (g->nb - bb);
    const int64_t da = ia >= 0 ? a.dims[ia] : 1, db = ib >= 0 ? b.dims[ib] : 1;
    if (da != db && da != 1 && db != 1)
      return op_error(StatusCode::kInvalidArgument, kOp, "batch dimensions of %s and %s cannot be broadcast together",
                      ::dtorch::shape_str(a).c_str(), ::dtorch::shape_str(b).c_str());
    g->batch[i] = da == 1 ? db : da;
    g->sa[i] = da == 1 ? 0 : st_a;
    g->sb[i] = db == 1 ? 0 : st_b;
    st_a *= da;
    st_b *= db;
    if (!kernels::checked_mul(g->batches, g->batch[i], &g->batches))
      return op_error(StatusCode::kInvalidArgument, kOp, "batch dimensions of %s and %s broadcast to too many matrices",
                      ::dtorch::shape_str(a).c_str(), ::dtorch::shape_str(b).c_str());
  }
  g->out = kernels::matmul_out_shape(a, b, g->nb, g->batch, g->m, g->n);
  return Status::Ok();
}

Status infer(const Attrs&, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  Geo g{};
  DTORCH_RETURN_IF_ERROR(geometry(in, n_in, &g));
  out[0] = g.out;
  *scratch_bytes = 0;
  return Status::Ok();
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  Geo g{};
  DTORCH_RETURN_IF_ERROR(geometry(in, n_in, &g));
  const float* a = in[0].as<const float>();
  const float* b = in[1].as<const float>();
  float* c = out[0].as<float>();
  if (g.m == 0 || g.n == 0 || g.batches == 0) return Status::Ok();
  const int64_t per = kernels::gemm_units(g.m, g.n);
  const kernels::Epilogue none;
  kernels::parallel_chunks(ctx.pool, g.batches * per, 1, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t bi = u / per, t = u % per;
      int64_t oa = 0, ob = 0, rem = bi;
      for (int d = g.nb - 1; d >= 0; --d) {
        const int64_t idx = rem % g.batch[d];
        rem /= g.batch[d];
        oa += idx * g.sa[d];
        ob += idx * g.sb[d];
      }
      kernels::gemm_nn_unit(t, g.m, g.n, g.k, a + oa, g.k, 1, b + ob, g.n, c + bi * g.m * g.n, g.n, none);
    }
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(matmul, DType::kFloat32, infer, run);
}  // namespace dtorch
