// conv_transpose2d: x (N, C, H, W), w (C, O/groups, kh, kw), optional bias (O) -> (N, O, OH, OW) with
// OH = (H - 1) * sh - 2 * ph + dh * (kh - 1) + output_padding_h + 1 (PyTorch's rule), then the fused
// activation (runtime/OPS.md). Attributes: stride is[2], padding is[2], output_padding is[2],
// dilation is[2], groups i, activation s.
//
// Per image and group: columns (Og*kh*kw, H*W) = w_g^T . x_g with gemm_nn into scratch (the transposed
// weight is read in place through strides), then col2im adds every column onto the output plane. Each
// output plane is owned by one thread and summed in a fixed order (taps, then input rows and columns).
#include "kernels/common/activation.h"
#include "kernels/common/conv_transpose.h"
#include "kernels/common/gemm.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "conv_transpose2d";
using Geo = kernels::ConvTransposeGeo;

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  Geo g{};
  DTORCH_RETURN_IF_ERROR(kernels::conv_transpose_geometry(attrs, in, n_in, &g));
  out[0].ndim = 4;
  out[0].dims[0] = g.n;
  out[0].dims[1] = g.o;
  out[0].dims[2] = g.oh;
  out[0].dims[3] = g.ow;
  if (!kernels::conv_transpose_scratch(g, scratch_bytes))
    return op_error(StatusCode::kInvalidArgument, kOp, "input %lldx%lld with a %lldx%lld kernel is too large",
                    (long long)g.h, (long long)g.w, (long long)g.kh, (long long)g.kw);
  return Status::Ok();
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  Geo g{};
  DTORCH_RETURN_IF_ERROR(kernels::conv_transpose_geometry(*ctx.attrs, in, n_in, &g));
  size_t need = 0;
  if (!kernels::conv_transpose_scratch(g, &need) || ctx.scratch_bytes < need)
    return op_error(StatusCode::kInternal, kOp, "scratch of %zu bytes is smaller than the %zu bytes infer asked for",
                    ctx.scratch_bytes, need);
  const float* x = in[0].as<const float>();
  const float* w = in[1].as<const float>();
  const float* bias = kernels::optional_present(in, n_in, 2) ? in[2].as<const float>() : nullptr;
  float* y = out[0].as<float>();
  float* cols = static_cast<float*>(ctx.scratch);
  const int64_t rows = g.og * g.kh * g.kw, hw = g.h * g.w;
  const kernels::Epilogue none;
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      const float* xg = x + (n * g.c + gi * g.cg) * hw;
      const float* wg = w + gi * g.cg * rows;  // (Cg, rows) row-major: A[r][c] = wg[c * rows + r]
      kernels::gemm_nn(ctx.pool, rows, hw, g.cg, wg, 1, rows, xg, hw, cols, hw, none);
      float* yg = y + (n * g.o + gi * g.og) * g.oh * g.ow;
      const float* bg = bias != nullptr ? bias + gi * g.og : nullptr;
      kernels::parallel_chunks(ctx.pool, g.og, 1,
                               [&](int64_t o0, int64_t o1) { kernels::col2im_planes(g, cols, bg, yg, o0, o1); });
    }
  }
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(conv_transpose2d, DType::kFloat32, infer, run);
}  // namespace dtorch
