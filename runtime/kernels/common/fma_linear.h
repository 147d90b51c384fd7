// The linear kernel of an FMA kernel set (kernels/avx2, kernels/avx512) around the set's GEMM: the node checks (the
// bit-exact kernel's, which also runs what the set does not take and reports every error), the weight packed once
// at load (`prepare`; into scratch at run time when it is not a constant), the input rows packed into scratch, and
// the product with the bias and the fused activation in the GEMM's epilogue. Header-only; each set's linear.cc
// instantiates FmaLinear<Set> with its Products traits and registers its infer, run and prepare.
//
// y (rows x M) = x (rows x K) . w^T + bias: A = x packed in panels of Set::kRowPanel rows, B = w^T, which is w's
// rows packed in panels of Set::kColPanel (pack_panels: B[k][j] = w[j][k] at panel j / kColPanel, k * kColPanel +
// j % kColPanel, zero past M), so a GEMM block of B is a slice of a panel. Numerics: the set's GEMM contract (each
// output starts at its bias and adds its K products in k order, one FMA each), so thread counts change nothing and
// the avx2 and avx512 sets give the same bits.
//
// Set (a struct of static members):
//   kRowPanel, kColPanel
//   gemm_packed(pool, M, N, K, ap, bp, C, ldc, ep): C = A . B (+ ep), A and B packed as above
//   activate(act, p, n): p[i] = act(p[i]) for i < n, as the GEMM's epilogue would
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/kernel.h"
#include "kernels/common/activation.h"
#include "kernels/common/fma_gemm.h"
#include "kernels/common/gemm.h"
#include "kernels/common/portable_kernel.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

// The operator's name, at namespace scope: a template argument of portable_kernel / exact_kernel.
inline constexpr char kLinearOp[] = "linear";

template <class Set>
struct FmaLinear {
  static constexpr const char* kOp = kLinearOp;

  static const KernelDef* fallback() { return exact_kernel<kLinearOp>(); }

  struct Geo {
    int64_t rows, k, m;
  };

  // The product's shape for inputs the bit-exact infer accepted; false for what this kernel leaves to it.
  static bool geometry(const TensorView* in, int n_in, Geo* g) {
    if (n_in < 2 || in[1].shape.ndim != 2 || in[0].shape.ndim < 1) return false;
    g->k = in[1].shape.dims[1];
    g->m = in[1].shape.dims[0];
    if (in[0].shape.dims[in[0].shape.ndim - 1] != g->k) return false;
    g->rows = g->k > 0 ? in[0].shape.numel() / g->k : 0;
    if (g->k == 0) {  // no features: the rows are the leading dims
      g->rows = 1;
      for (int d = 0; d + 1 < in[0].shape.ndim; ++d) g->rows *= in[0].shape.dims[d];
    }
    return true;
  }

  // Floats of the packed input (rounded to 64 bytes, so the packed weight after it stays aligned) and weight.
  static int64_t a_floats(const Geo& g) {
    return ceil_div(packed_panels_floats(g.rows, g.k, Set::kRowPanel), 16) * 16;
  }
  static int64_t b_floats(const Geo& g) { return packed_panels_floats(g.m, g.k, Set::kColPanel); }

  static Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out,
                      size_t* scratch_bytes) {
    const KernelDef* f = fallback();
    if (f == nullptr) return op_error(StatusCode::kInternal, kOp, "no bit-exact kernel is registered");
    DTORCH_RETURN_IF_ERROR(f->infer(attrs, in, n_in, out, n_out, scratch_bytes));
    Geo g{};
    if (geometry(in, n_in, &g)) {
      const size_t mine = static_cast<size_t>(a_floats(g) + b_floats(g)) * sizeof(float);
      if (mine > *scratch_bytes) *scratch_bytes = mine;
    }
    return Status::Ok();
  }

  // Load time: a constant float32 weight is packed once.
  static Status prepare(const Attrs&, const TensorView* in, int n_in, void* dst, size_t* bytes) {
    *bytes = 0;
    if (n_in < 2 || in[1].data == nullptr || in[1].dtype != DType::kFloat32 || in[1].shape.ndim != 2)
      return Status::Ok();
    const int64_t m = in[1].shape.dims[0], k = in[1].shape.dims[1];
    if (m < 1 || k < 1 || packed_panels_floats(m, k, Set::kColPanel) > (int64_t{1} << 40)) return Status::Ok();
    *bytes = static_cast<size_t>(packed_panels_floats(m, k, Set::kColPanel)) * sizeof(float);
    if (dst != nullptr)
      pack_all_panels(nullptr, in[1].as<const float>(), k, 1, m, k, Set::kColPanel, static_cast<float*>(dst));
    return Status::Ok();
  }

  static Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
    const KernelDef* f = fallback();
    if (f == nullptr) return op_error(StatusCode::kInternal, kOp, "no bit-exact kernel is registered");
    Geo g{};
    if (n_out != 1 || n_in > 3 || in[0].dtype != DType::kFloat32 || in[1].dtype != DType::kFloat32 ||
        !geometry(in, n_in, &g))
      return f->run(ctx, in, n_in, out, n_out);  // the bit-exact kernel runs it or reports the error
    Epilogue ep;
    DTORCH_RETURN_IF_ERROR(parse_activation(kOp, *ctx.attrs, &ep.act));
    ep.bias = optional_present(in, n_in, 2) ? in[2].as<const float>() : nullptr;
    ep.bias_per_row = false;
    if (g.rows == 0 || g.m == 0) return Status::Ok();
    float* scratch = static_cast<float*>(ctx.scratch);
    const float* bp = static_cast<const float*>(ctx.prepared);
    if (bp == nullptr || ctx.prepared_bytes != static_cast<size_t>(b_floats(g)) * sizeof(float)) {
      float* packed = scratch + a_floats(g);  // not prepared at load: pack the weight now
      pack_all_panels(ctx.pool, in[1].as<const float>(), g.k, 1, g.m, g.k, Set::kColPanel, packed);
      bp = packed;
    }
    pack_all_panels(ctx.pool, in[0].as<const float>(), g.k, 1, g.rows, g.k, Set::kRowPanel, scratch);
    // The clamps stay in the tiles' registers; any other activation runs once over the whole output afterwards,
    // several vectors at a time (in the tiles it would run 16 or 8 values per call, one dependent chain each:
    // ViT-Tiny's gelu took 2.2 ms that way). The same function on every value: the same bits either way.
    const Activation act = ep.act;
    const bool after = act.kind != ActKind::kNone && act.kind != ActKind::kRelu && act.kind != ActKind::kRelu6 &&
                       act.kind != ActKind::kHardtanh;
    if (after) ep.act = Activation{};
    float* y = out[0].as<float>();
    Set::gemm_packed(ctx.pool, g.rows, g.m, g.k, scratch, bp, y, g.m, ep);
    if (after)
      parallel_chunks(ctx.pool, g.rows * g.m, 16384,
                      [&](int64_t i0, int64_t i1) { Set::activate(act, y + i0, i1 - i0); });
    return Status::Ok();
  }
};

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
