// The geometry of a matmul node (torch.matmul semantics, runtime/OPS.md) for the kernel sets that run it on top of
// the portable kernel's checks (kernels/x86, kernels/avx2, kernels/avx512): the product's m, k, n and how its batch
// dimensions broadcast. Header-only. The portable kernel (kernels/portable/matmul.cc) is the specification and
// reports every error; these sets call it for shapes geometry() refuses.
#pragma once

#include <cstdint>

#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

struct MatmulGeo {
  int64_t m, k, n;
  int nb;                                               // batch dims of the output
  int64_t batch[kMaxDims], sa[kMaxDims], sb[kMaxDims];  // batch sizes, per-operand matrix strides (0: broadcast)
  int64_t batches;

  // Float offsets of batch bi's matrices in a and b.
  void offsets(int64_t bi, int64_t* oa, int64_t* ob) const {
    *oa = *ob = 0;
    for (int d = nb - 1; d >= 0; --d) {
      const int64_t idx = bi % batch[d];
      bi /= batch[d];
      *oa += idx * sa[d];
      *ob += idx * sb[d];
    }
  }
};

// torch.matmul's output shape: the broadcast batch dimensions, then m where a has 2 or more dimensions, then n where b
// has (a 1-D operand's added dimension removed).
inline Shape matmul_out_shape(const Shape& a, const Shape& b, int nb, const int64_t* batch, int64_t m, int64_t n) {
  Shape o;
  o.ndim = 0;
  for (int i = 0; i < nb; ++i) o.dims[o.ndim++] = batch[i];
  if (a.ndim >= 2) o.dims[o.ndim++] = m;
  if (b.ndim >= 2) o.dims[o.ndim++] = n;
  return o;
}

// The geometry of shapes the portable infer accepts; false when they are not (then portable reports it).
inline bool matmul_geometry(const Shape& a, const Shape& b, MatmulGeo* g) {
  if (a.ndim < 1 || b.ndim < 1) return false;
  g->m = a.ndim >= 2 ? a.dims[a.ndim - 2] : 1;
  g->k = a.dims[a.ndim - 1];
  g->n = b.ndim >= 2 ? b.dims[b.ndim - 1] : 1;
  if (g->k != (b.ndim >= 2 ? b.dims[b.ndim - 2] : b.dims[0])) return false;
  const int ba = a.ndim > 2 ? a.ndim - 2 : 0, bb = b.ndim > 2 ? b.ndim - 2 : 0;
  g->nb = ba > bb ? ba : bb;
  int64_t st_a = g->m * g->k, st_b = g->k * g->n;
  g->batches = 1;
  for (int i = g->nb - 1; i >= 0; --i) {
    const int ia = i - (g->nb - ba), ib = i - (g->nb - bb);
    const int64_t da = ia >= 0 ? a.dims[ia] : 1, db = ib >= 0 ? b.dims[ib] : 1;
    if (da != db && da != 1 && db != 1) return false;
    g->batch[i] = da == 1 ? db : da;
    g->sa[i] = da == 1 ? 0 : st_a;
    g->sb[i] = db == 1 ? 0 : st_b;
    st_a *= da;
    st_b *= db;
    if (!checked_mul(g->batches, g->batch[i], &g->batches)) return false;
  }
  return true;
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
