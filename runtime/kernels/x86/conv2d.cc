// conv2d, x86-64 AVX2 kernel set (kernels/x86/x86.h). Tolerance: bit-identical to the portable kernel (the same
// per-output accumulation order, kernels/x86/gemm_avx2.h), hence within 1e-5 x output scale of eager.
//
// Dense convolutions (groups == 1): per image, im2col of the input straight into 16-column panels in scratch,
// then the AVX2 6x16 GEMM (weights O x C*kh*kw times columns) into the NCHW output with bias and the fused
// activation in the epilogue. A 1x1 stride-1 unpadded convolution uses the input as the (unpacked) columns.
// Grouped and depthwise convolutions (incl. a single input channel, which portable runs as depthwise) are delegated to the portable kernel (infer and run), found through the
// registry. Threads split im2col rows and GEMM output tiles only: results do not depend on the count.
#include "kernels/common/activation.h"
#include "kernels/common/util.h"
#include "kernels/x86/gemm_avx2.h"
#include "kernels/x86/x86.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "conv2d";

const KernelDef* portable() {
  static const KernelDef* k = find_kernel_in_set(kOp, DType::kFloat32, "portable");
  return k;
}

struct Geo {
  int64_t n, c, h, w, o, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow;
  bool dense, pointwise;
  kernels::Activation act;
};

// The geometry of inputs the portable infer has accepted (shapes and attributes are valid).
Status geometry(const Attrs& attrs, const TensorView* in, const Shape& out, Geo* g) {
  const int64_t one2[2] = {1, 1}, zero4[4] = {0, 0, 0, 0};
  int64_t stride[2] = {}, pad[4] = {}, dil[2] = {};
  DTORCH_RETURN_IF_ERROR(kernels::get_ints_exact(kOp, attrs, "stride", 2, stride, one2));
  DTORCH_RETURN_IF_ERROR(kernels::get_ints_exact(kOp, attrs, "padding", 4, pad, zero4));
  DTORCH_RETURN_IF_ERROR(kernels::get_ints_exact(kOp, attrs, "dilation", 2, dil, one2));
  DTORCH_RETURN_IF_ERROR(kernels::parse_activation(kOp, attrs, &g->act));
  g->n = in[0].shape.dims[0];
  g->c = in[0].shape.dims[1];
  g->dense = attrs.get_int("groups", 1) == 1 && g->c != 1;  // c == 1 is portable's depthwise path
  g->h = in[0].shape.dims[2];
  g->w = in[0].shape.dims[3];
  g->o = in[1].shape.dims[0];
  g->kh = in[1].shape.dims[2];
  g->kw = in[1].shape.dims[3];
  g->sh = stride[0];
  g->sw = stride[1];
  g->pt = pad[0];
  g->pl = pad[2];
  g->dh = dil[0];
  g->dw = dil[1];
  g->oh = out.dims[2];
  g->ow = out.dims[3];
  g->pointwise = g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && pad[0] == 0 && pad[1] == 0 &&
                 pad[2] == 0 && pad[3] == 0;
  return Status::Ok();
}

size_t dense_scratch(const Geo& g) {
  if (g.pointwise) return 0;
  // Sizes fit: the portable infer checked C*kh*kw*OH*OW against overflow.
  return static_cast<size_t>(kernels::x86::packed_b_floats(g.c * g.kh * g.kw, g.oh * g.ow)) * sizeof(float);
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  const KernelDef* p = portable();
  if (p == nullptr) return op_error(StatusCode::kInternal, kOp, "the portable kernel is not registered");
  DTORCH_RETURN_IF_ERROR(p->infer(attrs, in, n_in, out, n_out, scratch_bytes));
  Geo g{};
  DTORCH_RETURN_IF_ERROR(geometry(attrs, in, out[0], &g));
  if (g.dense) *scratch_bytes = dense_scratch(g);
  return Status::Ok();
}

// Valid output columns [lo, hi) for kernel column offset `off`: 0 <= o * stride + off < size.
inline void valid_range(int64_t off, int64_t stride, int64_t size, int64_t out, int64_t* lo, int64_t* hi) {
  int64_t l = off >= 0 ? 0 : kernels::ceil_div(-off, stride);
  int64_t h = (size - 1 - off) < 0 ? 0 : (size - 1 - off) / stride + 1;
  if (h > out) h = out;
  if (l > h) l = h;
  *lo = l;
  *hi = h;
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
    valid_range(j * g.dw - g.pl, g.sw, g.w, g.ow, &col_lo, &col_hi);
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
  const KernelDef* p = portable();
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
DTORCH_REGISTER_X86_KERNEL("conv2d", DType::kFloat32, infer, run, 2, 3, ::dtorch::optional_inputs(2), 1);
}  // namespace dtorch
