// conv2d, x86-64 AVX2 kernel set (kernels/x86/x86.h). Tolerance: bit-identical to the portable kernel (the same
// per-output accumulation order, kernels/x86/gemm_avx2.h), hence within 1e-5 x output scale of eager.
//
// Dense convolutions (groups == 1): per image, im2col of the input straight into 16-column panels in scratch,
// then the AVX2 6x16 GEMM (weights O x C*kh*kw times columns) into the NCHW output with bias and the fused
// activation in the epilogue. A 1x1 stride-1 unpadded convolution uses the input as the (unpacked) columns.
// Grouped and depthwise convolutions (incl. a single input channel, which portable runs as depthwise) are delegated to the portable kernel (infer and run), found through the
// registry. Threads split im2col rows and GEMM output tiles only: results do not depend on the count.
#include "kernels/common/activation.h"
#include "kernels/common/conv_geometry.h"
#include "kernels/common/util.h"
#include "kernels/x86/gemm_avx2.h"
#include "kernels/x86/x86.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr char kOp[] = "conv2d";

struct Geo : kernels::ConvGeometry {
  bool dense;  // groups == 1 (c == 1 is portable's depthwise path)
};

// The geometry of inputs the portable infer has accepted (shapes and attributes are valid).
Status geometry(const Attrs& attrs, const TensorView* in, const Shape& out, Geo* g) {
  DTORCH_RETURN_IF_ERROR(kernels::conv_geometry(kOp, attrs, in, out, g));
  g->dense = g->groups == 1 && g->c != 1;
  return Status::Ok();
}

size_t dense_scratch(const Geo& g) {
  if (g.pointwise) return 0;
  // Sizes fit: the portable infer checked C*kh*kw*OH*OW against overflow.
  return static_cast<size_t>(kernels::x86::packed_b_floats(g.c * g.kh * g.kw, g.oh * g.ow)) * sizeof(float);
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  const KernelDef* p = kernels::portable_kernel<kOp>();
  if (p == nullptr) return op_error(StatusCode::kInternal, kOp, "the portable kernel is not registered");
  DTORCH_RETURN_IF_ERROR(p->infer(attrs, in, n_in, out, n_out, scratch_bytes));
  Geo g{};
  DTORCH_RETURN_IF_ERROR(geometry(attrs, in, out[0], &g));
  if (g.dense) *scratch_bytes = dense_scratch(g);
  return Status::Ok();
}

// Rows [r0, r1) of the columns (C*kh*kw, OH*OW) of one image, in 16-column panels (pad columns zeroed).
void im2col_rows(const Geo& g, const float* x, float* cols, int64_t r0, int64_t r1) {
  constexpr int64_t kNR = kernels::x86::kNR;
  const int64_t kg = g.c * g.kh * g.kw, ohw = g.oh * g.ow;
  const int64_t panel = kg * kNR;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t j = r % g.kw, i = (r / g.kw) % g.kh, c = r / (g.kw * g.kh);
    const float* xc = x + c * g.h * g.w;
    float* dst = cols + r * kNR;  // column q at dst[(q / kNR) * panel + q % kNR]
    int64_t col_lo, col_hi;
    kernels::conv_valid_range(j * g.dw - g.pl, g.sw, g.w, g.ow, &col_lo, &col_hi);
    int64_t q = 0;  // running output position
    for (int64_t oh = 0; oh < g.oh; ++oh) {
      const int64_t ih = oh * g.sh - g.pt + i * g.dh;
      const bool row_ok = ih >= 0 && ih < g.h;
      const int64_t lo = row_ok ? col_lo : 0, hi = row_ok ? col_hi : 0;
      const float* src = xc + (row_ok ? ih * g.w : 0) + j * g.dw - g.pl;  // src[ow * sw] valid in [lo, hi)
      int64_t ow = 0;
      while (ow < g.ow) {  // runs that stay inside one panel
        const int64_t off = q % kNR;
        const int64_t n = (kNR - off) < (g.ow - ow) ? (kNR - off) : (g.ow - ow);
        float* d = dst + (q / kNR) * panel + off;
        const int64_t a = lo > ow ? (lo < ow + n ? lo : ow + n) : ow;    // first valid in the run
        const int64_t b = hi < ow + n ? (hi > a ? hi : a) : ow + n;      // end of the valid part
        int64_t e = ow;
        for (; e < a; ++e) d[e - ow] = 0.0f;
        if (g.sw == 1) {
          for (; e < b; ++e) d[e - ow] = src[e];
        } else {
          for (; e < b; ++e) d[e - ow] = src[e * g.sw];
        }
        for (; e < ow + n; ++e) d[e - ow] = 0.0f;
        ow += n;
        q += n;
      }
    }
    for (int64_t p = ohw; p % kNR != 0; ++p) dst[(p / kNR) * panel + p % kNR] = 0.0f;
  }
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  const KernelDef* p = kernels::portable_kernel<kOp>();
  if (p == nullptr) return op_error(StatusCode::kInternal, kOp, "the portable kernel is not registered");
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 2, 3));
  if (in[0].shape.ndim != 4 || in[1].shape.ndim != 4 || out[0].shape.ndim != 4)
    return p->run(ctx, in, n_in, out, n_out);  // the portable kernel reports the error
  Geo g{};
  DTORCH_RETURN_IF_ERROR(geometry(*ctx.attrs, in, out[0].shape, &g));
  if (!g.dense) return p->run(ctx, in, n_in, out, n_out);  // grouped and depthwise convolutions
  if (in[1].shape.dims[1] != g.c || out[0].shape.dims[1] != g.o || out[0].shape.dims[0] != g.n)
    return p->run(ctx, in, n_in, out, n_out);  // not a shape infer accepted: let the portable kernel say so
  const size_t need = dense_scratch(g);
  if (ctx.scratch_bytes < need)
    return op_error(StatusCode::kInternal, kOp, "scratch of %zu bytes is smaller than the %zu bytes infer asked for",
                    ctx.scratch_bytes, need);
  const float* x = in[0].as<const float>();
  const float* w = in[1].as<const float>();
  const float* bias = kernels::optional_present(in, n_in, 2) ? in[2].as<const float>() : nullptr;
  float* y = out[0].as<float>();
  if (out[0].shape.numel() == 0) return Status::Ok();
  const int64_t kg = g.c * g.kh * g.kw, ohw = g.oh * g.ow;
  float* cols = static_cast<float*>(ctx.scratch);
  kernels::Epilogue ep;
  ep.bias = bias;
  ep.bias_per_row = true;
  ep.act = g.act;
  for (int64_t n = 0; n < g.n; ++n) {
    const float* xn = x + n * g.c * g.h * g.w;
    float* yn = y + n * g.o * ohw;
    if (g.pointwise) {
      kernels::x86::gemm_nn(ctx.pool, g.o, ohw, kg, w, kg, xn, ohw, false, yn, ohw, ep);
    } else {
      kernels::parallel_chunks(ctx.pool, kg, 1, [&](int64_t r0, int64_t r1) { im2col_rows(g, xn, cols, r0, r1); });
      kernels::x86::gemm_nn(ctx.pool, g.o, ohw, kg, w, kg, cols, kernels::x86::kNR, true, yn, ohw, ep);
    }
  }
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_X86_KERNEL(conv2d, DType::kFloat32, infer, run);
}  // namespace dtorch
