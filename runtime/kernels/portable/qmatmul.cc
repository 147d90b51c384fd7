// qmatmul: int8 a (..., M, K) @ int8 b (..., K, N) -> int8 with torch.matmul's rules (runtime/OPS.md: a 1-D a is a row
// vector and a 1-D b a column vector, the added dimension removed; batch dimensions broadcast). Attributes: a_scale,
// a_zero_point, b_scale, b_zero_point, y_scale, y_zero_point, activation none / relu / relu6.
//
// The product of two activations (attention's q @ k^T, scores @ v): y[i, j] is the int32 sum over k of
// (a[i, k] - a_zero_point) * (b[k, j] - b_zero_point), wrapping modulo 2^32 (exact up to K = 33025; integer sums do
// not depend on their order), requantized once with a_scale * b_scale / y_scale (kernels/common/requant.h). Threads
// split (matrix, row, 64-column block) units: the bits do not depend on the count.
#include <cstdint>

#include "kernels/common/matmul_geometry.h"
#include "kernels/common/quant_params.h"
#include "kernels/common/requant.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "qmatmul";
constexpr int64_t kBlock = 64;  // output columns per unit (one int32 accumulator row on the stack)

Status geometry(const Attrs& attrs, const TensorView* in, int n_in, int n_out, kernels::MatmulGeo* g, Shape* out,
                kernels::QuantPair* q) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 2, 2));
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "a", in[0], DType::kInt8));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "b", in[1], DType::kInt8));
  DTORCH_RETURN_IF_ERROR(kernels::read_quant_pair(kOp, attrs, "matmul", q));
  const Shape& a = in[0].shape;
  const Shape& b = in[1].shape;
  if (a.ndim < 1 || b.ndim < 1)
    return op_error(StatusCode::kInvalidArgument, kOp, "both arguments need at least 1 dimension, got %s and %s",
                    ::dtorch::shape_str(a).c_str(), ::dtorch::shape_str(b).c_str());
  const int64_t ka = a.dims[a.ndim - 1], kb = b.ndim >= 2 ? b.dims[b.ndim - 2] : b.dims[0];
  if (ka != kb)
    return op_error(StatusCode::kInvalidArgument, kOp,
                    "shapes %s and %s cannot be multiplied: the last dim of the first (%lld) must equal the %s dim of "
                    "the second (%lld)",
                    ::dtorch::shape_str(a).c_str(), ::dtorch::shape_str(b).c_str(), (long long)ka,
                    b.ndim >= 2 ? "second-to-last" : "first", (long long)kb);
  if (!kernels::matmul_geometry(a, b, g))
    return op_error(StatusCode::kInvalidArgument, kOp, "batch dimensions of %s and %s cannot be broadcast together",
                    ::dtorch::shape_str(a).c_str(), ::dtorch::shape_str(b).c_str());
  *out = kernels::matmul_out_shape(a, b, g->nb, g->batch, g->m, g->n);
  return Status::Ok();
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  kernels::MatmulGeo g{};
  kernels::QuantPair q{};
  return geometry(attrs, in, n_in, n_out, &g, out, &q);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  kernels::MatmulGeo g{};
  kernels::QuantPair q{};
  Shape want;
  DTORCH_RETURN_IF_ERROR(geometry(*ctx.attrs, in, n_in, n_out, &g, &want, &q));
  if (out[0].shape != want || out[0].dtype != DType::kInt8)
    return op_error(StatusCode::kInternal, kOp, "output %s is not the int8 %s infer gave",
                    ::dtorch::shape_str(out[0].shape).c_str(), ::dtorch::shape_str(want).c_str());
  if (g.m == 0 || g.n == 0 || g.batches == 0) return Status::Ok();
  const int8_t* a = in[0].as<const int8_t>();
  const int8_t* b = in[1].as<const int8_t>();
  int8_t* y = out[0].as<int8_t>();
  const int64_t blocks = kernels::ceil_div(g.n, kBlock), per = g.m * blocks;
  kernels::parallel_chunks(ctx.pool, g.batches * per, 1, [&](int64_t u0, int64_t u1) {
    uint32_t acc[kBlock];
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t bi = u / per, i = (u % per) / blocks, j0 = (u % blocks) * kBlock;
      const int64_t nj = g.n - j0 < kBlock ? g.n - j0 : kBlock;
      int64_t oa = 0, ob = 0;
      g.offsets(bi, &oa, &ob);
      const int8_t* ar = a + oa + i * g.k;
      const int8_t* bm = b + ob + j0;
      for (int64_t j = 0; j < nj; ++j) acc[j] = 0u;
      for (int64_t k = 0; k < g.k; ++k) {
        const int32_t av = ar[k] - q.a_zero_point;
        const int8_t* br = bm + k * g.n;
        for (int64_t j = 0; j < nj; ++j) acc[j] += static_cast<uint32_t>(av * (br[j] - q.b_zero_point));
      }
      int8_t* yr = y + (bi * g.m + i) * g.n + j0;
      for (int64_t j = 0; j < nj; ++j)
        yr[j] = kernels::requant::requantize(static_cast<int32_t>(acc[j]), q.mul, q.y_zero_point, q.lo, q.hi);
    }
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(qmatmul, DType::kInt8, infer, run);
}  // namespace dtorch
