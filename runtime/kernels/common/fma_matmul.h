// The matmul kernel of an FMA kernel set (kernels/avx2, kernels/avx512) around the set's GEMM: torch.matmul
// semantics (1-D promotion, batch broadcasting, kernels/common/matmul_geometry.h) on top of the bit-exact kernel's
// checks (it reports every error). Header-only; each set's matmul.cc instantiates FmaMatmul<Set> and registers it.
//
// Every distinct A matrix (A's own batch count, not the broadcast one) is packed into scratch in panels of
// Set::kRowPanel rows; B is read in place, row-major. The products run one after another, each split across the
// threads, or, when there are many of them, one product per thread at a time. Numerics: the set's GEMM contract
// (each output adds its K products in k order from +0.0f, one FMA each): the split changes no bit.
//
// Set (a struct of static members):
//   kRowPanel
//   gemm_rows(pool, M, N, K, ap, b, ldb, C, ldc, ep): C = A . B (+ ep), A packed, B[k][j] = b[k * ldb + j]
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/kernel.h"
#include "kernels/common/fma_gemm.h"
#include "kernels/common/gemm.h"
#include "kernels/common/matmul_geometry.h"
#include "kernels/common/portable_kernel.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

// The operator's name, at namespace scope: a template argument of portable_kernel / exact_kernel.
inline constexpr char kMatmulOp[] = "matmul";

template <class Set>
struct FmaMatmul {
  static constexpr const char* kOp = kMatmulOp;

  static const KernelDef* fallback() { return exact_kernel<kMatmulOp>(); }

  // Floats of one packed A matrix (a multiple of 16: each stays 64-byte aligned), and how many distinct ones A holds.
  static int64_t a_floats(const MatmulGeo& g) {
    return ceil_div(packed_panels_floats(g.m, g.k, Set::kRowPanel), 16) * 16;
  }
  static int64_t a_matrices(const Shape& a, const MatmulGeo& g) {
    const int64_t per = g.m * g.k;
    return per > 0 ? a.numel() / per : 0;
  }

  static Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out,
                      size_t* scratch_bytes) {
    const KernelDef* f = fallback();
    if (f == nullptr) return op_error(StatusCode::kInternal, kOp, "no bit-exact kernel is registered");
    DTORCH_RETURN_IF_ERROR(f->infer(attrs, in, n_in, out, n_out, scratch_bytes));
    MatmulGeo g{};
    if (n_in == 2 && matmul_geometry(in[0].shape, in[1].shape, &g)) {
      int64_t floats = 0;
      if (checked_mul(a_floats(g), a_matrices(in[0].shape, g), &floats)) {
        const size_t mine = static_cast<size_t>(floats) * sizeof(float);
        if (mine > *scratch_bytes) *scratch_bytes = mine;
      }
    }
    return Status::Ok();
  }

  static Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
    const KernelDef* f = fallback();
    if (f == nullptr) return op_error(StatusCode::kInternal, kOp, "no bit-exact kernel is registered");
    MatmulGeo g{};
    if (n_out != 1 || n_in != 2 || in[0].dtype != DType::kFloat32 || in[1].dtype != DType::kFloat32 ||
        !matmul_geometry(in[0].shape, in[1].shape, &g))
      return f->run(ctx, in, n_in, out, n_out);  // the bit-exact kernel runs it or reports the error
    if (g.m == 0 || g.n == 0 || g.batches == 0) return Status::Ok();
    const float* a = in[0].as<const float>();
    const float* b = in[1].as<const float>();
    float* c = out[0].as<float>();
    float* ap = static_cast<float*>(ctx.scratch);
    const int64_t per = a_floats(g), mats = a_matrices(in[0].shape, g), mk = g.m * g.k;
    if (mats > 0 && g.k > 0) {
      if (mats == 1) {
        pack_all_panels(ctx.pool, a, g.k, 1, g.m, g.k, Set::kRowPanel, ap);
      } else {
        const int64_t panels = ceil_div(g.m, int64_t{Set::kRowPanel});
        parallel_chunks(ctx.pool, mats * panels, 1, [&](int64_t u0, int64_t u1) {
          for (int64_t u = u0; u < u1; ++u) {
            const int64_t i = u / panels, t = u % panels;
            pack_panels(a + i * mk, g.k, 1, g.m, g.k, Set::kRowPanel, t, t + 1, ap + i * per);
          }
        });
      }
    }
    const Epilogue none;
    const auto product = [&](ThreadPool* pool, int64_t bi) {
      int64_t oa = 0, ob = 0;
      g.offsets(bi, &oa, &ob);
      const float* apb = mk > 0 ? ap + (oa / mk) * per : ap;
      Set::gemm_rows(pool, g.m, g.n, g.k, apb, b + ob, g.n, c + bi * g.m * g.n, g.n, none);
    };
    const int threads = ctx.pool == nullptr ? 1 : ctx.pool->size();
    if (threads > 1 && g.batches >= 2 * threads) {
      parallel_chunks(ctx.pool, g.batches, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t bi = b0; bi < b1; ++bi) product(nullptr, bi);
      });
    } else {
      for (int64_t bi = 0; bi < g.batches; ++bi) product(ctx.pool, bi);
    }
    return Status::Ok();
  }
};

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
