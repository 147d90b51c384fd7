// The conv_transpose2d kernel of an FMA kernel set (kernels/avx2, kernels/avx512): portable's method
// (kernels/portable/conv_transpose2d.cc) with the set's GEMM for the columns. Per image and group, columns
// (Og*kh*kw, H*W) = w_g^T . x_g, with w_g^T packed once at load (`prepare`; into scratch at run time when the weight
// is not a constant) and x_g read in place as B; then kernels/common/conv_transpose.h's col2im, portable's, adds them
// onto the output planes in its fixed order with the bias and activation. Only the GEMM's sums differ from portable
// (one FMA per product, k ascending: within the sets' tolerance, the same bits in both sets, any thread count).
// Header-only; each set's conv_transpose2d.cc instantiates FmaConvTranspose<Set> with its Products traits.
//
// Before: portable's GEMM (no FMA, scalar tiles) made UNet's two transposed convolutions 1.9 of its 12.5 ms.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/kernel.h"
#include "kernels/common/conv_transpose.h"
#include "kernels/common/fma_gemm.h"
#include "kernels/common/gemm.h"
#include "kernels/common/portable_kernel.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

// The operator's name, at namespace scope: a template argument of portable_kernel / exact_kernel.
inline constexpr char kConvTransposeOp[] = "conv_transpose2d";

template <class Set>
struct FmaConvTranspose {
  static constexpr const char* kOp = kConvTransposeOp;
  using Geo = ConvTransposeGeo;

  // Floats of one group's packed w_g^T (rows = Og*kh*kw, K = Cg), a multiple of 16 (each stays 64-byte aligned).
  static int64_t group_floats(const Geo& g) {
    return ceil_div(packed_panels_floats(g.og * g.kh * g.kw, g.cg, Set::kRowPanel), 16) * 16;
  }

  static Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out,
                      size_t* scratch_bytes) {
    DTORCH_RETURN_IF_ERROR(portable_infer<kConvTransposeOp>(attrs, in, n_in, out, n_out, scratch_bytes));
    Geo g{};
    if (!conv_transpose_accepted(attrs, in, n_in, &g))
      return op_error(StatusCode::kInternal, kOp, "the portable kernel accepted a node this kernel cannot read");
    int64_t packed = 0;
    if (!checked_mul(group_floats(g), g.groups, &packed) || packed > (int64_t{1} << 40))
      return op_error(StatusCode::kInvalidArgument, kOp, "weight %s is too large",
                      ::dtorch::shape_str(in[1].shape).c_str());
    size_t cols_bytes = 0;
    if (!conv_transpose_scratch(g, &cols_bytes))
      return op_error(StatusCode::kInternal, kOp, "the portable kernel accepted a node with no column scratch");
    *scratch_bytes = static_cast<size_t>(cols_floats(cols_bytes) + packed) * sizeof(float);  // columns, then weights
    return Status::Ok();
  }

  // Floats of the columns in scratch, rounded to 64 bytes: the packed weights follow them.
  static int64_t cols_floats(size_t cols_bytes) {
    return ceil_div(static_cast<int64_t>(cols_bytes / sizeof(float)), 16) * 16;
  }

  static void pack(ThreadPool* pool, const Geo& g, const float* w, float* dst) {
    const int64_t rows = g.og * g.kh * g.kw;
    for (int64_t gi = 0; gi < g.groups; ++gi)  // A[r][c] = w_g[c * rows + r]
      pack_all_panels(pool, w + gi * g.cg * rows, 1, rows, rows, g.cg, Set::kRowPanel, dst + gi * group_floats(g));
  }

  // Load time: a constant weight is packed once.
  static Status prepare(const Attrs& attrs, const TensorView* in, int n_in, void* dst, size_t* bytes) {
    *bytes = 0;
    Geo g{};
    if (n_in < 2 || in[1].data == nullptr || in[1].dtype != DType::kFloat32 || in[1].shape.ndim != 4 ||
        in[1].shape.numel() == 0)
      return Status::Ok();
    // The geometry needs an input shape; a weight (C, Og, kh, kw) alone fixes what is packed.
    g.c = in[1].shape.dims[0];
    g.og = in[1].shape.dims[1];
    g.kh = in[1].shape.dims[2];
    g.kw = in[1].shape.dims[3];
    g.groups = attrs.get_int("groups");
    if (g.groups < 1 || g.c % g.groups != 0) return Status::Ok();
    g.cg = g.c / g.groups;
    int64_t floats = 0;
    if (!checked_mul(group_floats(g), g.groups, &floats) || floats > (int64_t{1} << 40)) return Status::Ok();
    *bytes = static_cast<size_t>(floats) * sizeof(float);
    if (dst != nullptr) pack(nullptr, g, in[1].as<const float>(), static_cast<float*>(dst));
    return Status::Ok();
  }

  static Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
    Geo g{};
    if (n_out != 1 || !conv_transpose_accepted(*ctx.attrs, in, n_in, &g)) {
      const KernelDef* p = portable_kernel<kConvTransposeOp>();
      if (p == nullptr) return op_error(StatusCode::kInternal, kOp, "the portable kernel is not registered");
      return p->run(ctx, in, n_in, out, n_out);  // the portable kernel reports the error
    }
    size_t cols_bytes = 0;
    const size_t packed_bytes = static_cast<size_t>(group_floats(g) * g.groups) * sizeof(float);
    if (!conv_transpose_scratch(g, &cols_bytes) ||
        ctx.scratch_bytes < static_cast<size_t>(cols_floats(cols_bytes)) * sizeof(float) + packed_bytes)
      return op_error(StatusCode::kInternal, kOp, "scratch of %zu bytes is smaller than infer asked for",
                      ctx.scratch_bytes);
    const float* x = in[0].as<const float>();
    const float* bias = optional_present(in, n_in, 2) ? in[2].as<const float>() : nullptr;
    float* y = out[0].as<float>();
    float* cols = static_cast<float*>(ctx.scratch);
    const float* ap = static_cast<const float*>(ctx.prepared);
    if (ap == nullptr || ctx.prepared_bytes != packed_bytes) {  // not prepared at load: pack now, after the columns
      float* packed = cols + cols_floats(cols_bytes);
      pack(ctx.pool, g, in[1].as<const float>(), packed);
      ap = packed;
    }
    const int64_t rows = g.og * g.kh * g.kw, hw = g.h * g.w;
    const Epilogue none;
    for (int64_t n = 0; n < g.n; ++n) {
      for (int64_t gi = 0; gi < g.groups; ++gi) {
        const float* xg = x + (n * g.c + gi * g.cg) * hw;
        Set::gemm_rows(ctx.pool, rows, hw, g.cg, ap + gi * group_floats(g), xg, hw, cols, hw, none);
        float* yg = y + (n * g.o + gi * g.og) * g.oh * g.ow;
        const float* bg = bias != nullptr ? bias + gi * g.og : nullptr;
        parallel_chunks(ctx.pool, g.og, 1, [&](int64_t o0, int64_t o1) { col2im_planes(g, cols, bg, yg, o0, o1); });
      }
    }
    return Status::Ok();
  }
};

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
