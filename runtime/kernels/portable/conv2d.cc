// conv2d: x (N, C, H, W), w (O, C/groups, kh, kw), optional bias (O) -> (N, O, OH, OW), then the fused
// activation (runtime/OPS.md). Attributes: stride is[2], padding is[4] (top, bottom, left, right),
// dilation is[2], groups i, activation s (+ min_val/max_val/alpha).
//
// Grouped and dense convolutions: per image and group, im2col of the group's channels into scratch, written
// straight into the GEMM's packed panel layout (kernels/common/gemm.h), then one gemm_nn_packed (weights
// Og x Cg*kh*kw times columns) into the NCHW output, with bias and activation in the GEMM epilogue. A 1x1
// stride-1 unpadded convolution uses the input as the columns (no scratch, plain gemm_nn).
// Depthwise convolutions (one input channel per group) run a direct loop over kernel taps instead: each
// output adds its valid taps in (row, column) order; interior outputs go kDwBlock at a time so the loop
// vectorizes across outputs. Threads split output tiles (GEMM) or output planes (depthwise): results do not
// depend on the count.
#include <cstring>

#include "kernels/common/activation.h"
#include "kernels/common/conv_geometry.h"
#include "kernels/common/gemm.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "conv2d";

struct Geo : kernels::ConvGeometry {
  bool depthwise;
};

Status geometry(const Attrs& attrs, const TensorView* in, int n_in, Geo* g) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 2, 3));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "input", in[0], DType::kFloat32));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "weight", in[1], DType::kFloat32));
  DTORCH_RETURN_IF_ERROR(kernels::parse_activation(kOp, attrs, &g->act));
  DTORCH_RETURN_IF_ERROR(kernels::checked_conv_geometry(kOp, attrs, in, g));
  if (kernels::optional_present(in, n_in, 2)) DTORCH_RETURN_IF_ERROR(kernels::check_vector(kOp, "bias", in[2], g->o));
  g->depthwise = g->cg == 1 && g->groups == g->c;
  return Status::Ok();
}

// im2col scratch bytes, or false when it does not fit (the caller reports the output as too large).
bool scratch_for(const Geo& g, size_t* bytes) {
  *bytes = 0;
  if (g.depthwise || g.pointwise) return true;
  int64_t k = 0, cols = 0, floats = 0;
  constexpr int64_t kCap = int64_t{1} << 40;  // far above any arena limit; keeps packed_b_floats exact
  if (!kernels::checked_mul(g.cg, g.kh, &k) || !kernels::checked_mul(k, g.kw, &k) ||
      !kernels::checked_mul(g.oh, g.ow, &cols) || !kernels::checked_mul(k, cols, &floats) || floats > kCap)
    return false;
  *bytes = static_cast<size_t>(kernels::packed_b_floats(k, cols)) * sizeof(float);
  return true;
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  Geo g{};
  DTORCH_RETURN_IF_ERROR(geometry(attrs, in, n_in, &g));
  out[0].ndim = 4;
  out[0].dims[0] = g.n;
  out[0].dims[1] = g.o;
  out[0].dims[2] = g.oh;
  out[0].dims[3] = g.ow;
  if (!scratch_for(g, scratch_bytes))
    return op_error(StatusCode::kInvalidArgument, kOp, "output %lldx%lld with a %lldx%lldx%lld kernel is too large",
                    (long long)g.oh, (long long)g.ow, (long long)g.cg, (long long)g.kh, (long long)g.kw);
  return Status::Ok();
}

// Valid output columns [lo, hi) for kernel column offset `off` (= j*dw - pl): 0 <= ow*sw + off < W.
inline void valid_range(int64_t off, int64_t stride, int64_t size, int64_t out, int64_t* lo, int64_t* hi) {
  int64_t l = off >= 0 ? 0 : kernels::ceil_div(-off, stride);
  int64_t h = (size - 1 - off) < 0 ? 0 : (size - 1 - off) / stride + 1;
  if (h > out) h = out;
  if (l > h) l = h;
  *lo = l;
  *hi = h;
}

// Columns (Cg*kh*kw, OH*OW) of one image's group, rows [r0, r1), in the packed layout of gemm_nn_packed
// (kernels::packed_b_index); the pad columns of the last panel are zeroed.
void im2col_packed_rows(const Geo& g, const float* x, float* cols, int64_t r0, int64_t r1) {
  constexpr int64_t kNR = kernels::gemm_detail::kNR;
  const int64_t kg = g.cg * g.kh * g.kw, ohw = g.oh * g.ow;
  const int64_t panel = kg * kNR;  // floats per panel
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t j = r % g.kw, i = (r / g.kw) % g.kh, c = r / (g.kw * g.kh);
    const float* xc = x + c * g.h * g.w;
    float* dst = cols + r * kNR;  // column q lives at dst[(q / kNR) * panel + q % kNR]
    int64_t col_lo, col_hi;
    valid_range(j * g.dw - g.pl, g.sw, g.w, g.ow, &col_lo, &col_hi);
    for (int64_t oh = 0; oh < g.oh; ++oh) {
      const int64_t ih = oh * g.sh - g.pt + i * g.dh;
      const bool row_ok = ih >= 0 && ih < g.h;
      const int64_t lo = row_ok ? col_lo : 0, hi = row_ok ? col_hi : 0;
      const float* src = xc + (row_ok ? ih * g.w : 0) + j * g.dw - g.pl;  // src[ow * sw] valid in [lo, hi)
      // Copy the row in runs that stay inside one panel.
      int64_t ow = 0;
      while (ow < g.ow) {
        const int64_t q = oh * g.ow + ow;
        const int64_t off = q % kNR;
        const int64_t n = (kNR - off) < (g.ow - ow) ? (kNR - off) : (g.ow - ow);
        float* d = dst + (q / kNR) * panel + off;
        for (int64_t e = 0; e < n; ++e) {
          const int64_t o = ow + e;
          d[e] = (o >= lo && o < hi) ? src[o * g.sw] : 0.0f;
        }
        ow += n;
      }
    }
    for (int64_t q = ohw; q % kNR != 0; ++q) dst[(q / kNR) * panel + q % kNR] = 0.0f;
  }
}

constexpr int kDwBlock = 8;  // interior depthwise outputs computed together (independent sums)

// One depthwise output row: yr[ow] = sum over valid taps (i, j), i then j ascending, of w * x (no bias).
// Taps outside the padded input are skipped. Outputs in [in_lo, in_hi) have every column tap valid and go
// kDwBlock at a time with a fixed-size loop the compiler vectorizes; the rest go one at a time.
template <int SW>
void depthwise_row(const Geo& g, const float* xp, const float* wp, int64_t oh, int64_t sw_rt, float* yr) {
  const int64_t sw = SW > 0 ? SW : sw_rt;
  int64_t i_lo = 0, i_hi = g.kh;  // valid kernel rows
  while (i_lo < g.kh && oh * g.sh - g.pt + i_lo * g.dh < 0) ++i_lo;
  while (i_hi > i_lo && oh * g.sh - g.pt + (i_hi - 1) * g.dh >= g.h) --i_hi;
  int64_t in_lo = 0, in_hi = g.ow;  // outputs whose column taps are all inside the input
  for (int64_t j = 0; j < g.kw; ++j) {
    int64_t lo, hi;
    valid_range(j * g.dw - g.pl, sw, g.w, g.ow, &lo, &hi);
    if (lo > in_lo) in_lo = lo;
    if (hi < in_hi) in_hi = hi;
  }
  if (in_hi < in_lo) in_hi = in_lo;
  auto one = [&](int64_t ow) {
    float acc = 0.0f;
    for (int64_t i = i_lo; i < i_hi; ++i) {
      const float* xr = xp + (oh * g.sh - g.pt + i * g.dh) * g.w;
      for (int64_t j = 0; j < g.kw; ++j) {
        const int64_t iw = ow * sw + j * g.dw - g.pl;
        if (iw >= 0 && iw < g.w) acc += wp[i * g.kw + j] * xr[iw];
      }
    }
    yr[ow] = acc;
  };
  int64_t ow = 0;
  for (; ow < in_lo; ++ow) one(ow);
  for (; ow + kDwBlock <= in_hi; ow += kDwBlock) {
    float acc[kDwBlock];
    DTORCH_GEMM_UNROLL
    for (int e = 0; e < kDwBlock; ++e) acc[e] = 0.0f;
    for (int64_t i = i_lo; i < i_hi; ++i) {
      const float* xr = xp + (oh * g.sh - g.pt + i * g.dh) * g.w + ow * sw - g.pl;
      for (int64_t j = 0; j < g.kw; ++j) {
        const float wv = wp[i * g.kw + j];
        const float* xs = xr + j * g.dw;
        float xv[kDwBlock];
        DTORCH_GEMM_UNROLL
        for (int e = 0; e < kDwBlock; ++e) xv[e] = xs[e * sw];
        DTORCH_GEMM_UNROLL
        for (int e = 0; e < kDwBlock; ++e) acc[e] += wv * xv[e];
      }
    }
    DTORCH_GEMM_UNROLL
    for (int e = 0; e < kDwBlock; ++e) yr[ow + e] = acc[e];
  }
  for (; ow < g.ow; ++ow) one(ow);
}

// Depthwise: output planes [p0, p1) of N*O, each row by depthwise_row, then bias + activation.
void depthwise_planes(const Geo& g, const float* x, const float* w, const float* bias, float* y, int64_t p0,
                      int64_t p1) {
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n = p / g.o, o = p % g.o;
    const int64_t c = o / g.og;  // the group's single input channel
    const float* xp = x + (n * g.c + c) * g.h * g.w;
    const float* wp = w + o * g.kh * g.kw;
    float* yp = y + p * g.oh * g.ow;
    for (int64_t oh = 0; oh < g.oh; ++oh) {
      float* yr = yp + oh * g.ow;
      if (g.sw == 1)
        depthwise_row<1>(g, xp, wp, oh, 1, yr);
      else if (g.sw == 2)
        depthwise_row<2>(g, xp, wp, oh, 2, yr);
      else
        depthwise_row<0>(g, xp, wp, oh, g.sw, yr);
      kernels::bias_activation(g.act, bias != nullptr ? bias[o] : 0.0f, yr, g.ow);
    }
  }
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  Geo g{};
  DTORCH_RETURN_IF_ERROR(geometry(*ctx.attrs, in, n_in, &g));
  size_t need = 0;
  if (!scratch_for(g, &need) || ctx.scratch_bytes < need)
    return op_error(StatusCode::kInternal, kOp, "scratch of %zu bytes is smaller than the %zu bytes infer asked for",
                    ctx.scratch_bytes, need);
  const float* x = in[0].as<const float>();
  const float* w = in[1].as<const float>();
  const float* bias = kernels::optional_present(in, n_in, 2) ? in[2].as<const float>() : nullptr;
  float* y = out[0].as<float>();
  if (out[0].shape.numel() == 0) return Status::Ok();
  if (g.depthwise) {
    kernels::parallel_chunks(ctx.pool, g.n * g.o, 1,
                             [&](int64_t b, int64_t e) { depthwise_planes(g, x, w, bias, y, b, e); });
    return Status::Ok();
  }
  const int64_t kg = g.cg * g.kh * g.kw, ohw = g.oh * g.ow;
  float* cols = static_cast<float*>(ctx.scratch);
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      const float* xg = x + (n * g.c + gi * g.cg) * g.h * g.w;
      kernels::Epilogue ep;
      ep.bias = bias != nullptr ? bias + gi * g.og : nullptr;
      ep.bias_per_row = true;
      ep.act = g.act;
      const float* wg = w + gi * g.og * kg;
      float* yg = y + (n * g.o + gi * g.og) * ohw;
      if (g.pointwise) {
        kernels::gemm_nn(ctx.pool, g.og, ohw, kg, wg, kg, 1, xg, ohw, yg, ohw, ep);
      } else {
        kernels::parallel_chunks(ctx.pool, kg, 1,
                                 [&](int64_t r0, int64_t r1) { im2col_packed_rows(g, xg, cols, r0, r1); });
        kernels::gemm_nn_packed(ctx.pool, g.og, ohw, kg, wg, kg, 1, cols, yg, ohw, ep);
      }
    }
  }
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(conv2d, DType::kFloat32, infer, run);
}  // namespace dtorch
