// qconv2d: int8 x (N, C, H, W), int8 w (O, C/groups, kh, kw), float32 w_scale (O), optional int32 bias (O) ->
// int8 (N, O, OH, OW) (runtime/OPS.md). Attributes: conv2d's stride, padding, dilation and groups; x_scale,
// x_zero_point, y_scale, y_zero_point; activation none / relu / relu6 (the output's clamp).
//
// Each output starts at its bias and adds (x - x_zero_point) * w over the taps inside the image (a padding tap reads
// the real value 0, which contributes nothing) in int32, wrapping modulo 2^32 as every SIMD add does (a quantizer
// keeps the sum exact: |x - zp| <= 255 and |w| <= 127, so up to 66000 taps fit). Integer sums do not depend on their
// order, so the optimized sets may add in any order and still give these bits. Then kernels/common/requant.h: the
// channel's multiplier x_scale * w_scale[o] / y_scale, y_zero_point, the clamp.
//
// This kernel (the specification) runs one output channel's rows in strips of up to kStrip columns: for each tap,
// one loop over the strip's columns (unit stride when the column stride is 1, so it vectorizes). Threads split
// (image, channel, row) units: the bits do not depend on the count.
#include <cstdint>

#include "kernels/common/conv_geometry.h"
#include "kernels/common/quant_params.h"
#include "kernels/common/requant.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "qconv2d";
constexpr int64_t kStrip = 256;
constexpr int64_t kTapCols = 16;  // kernel widths up to this keep their columns' valid ranges in a table

Status geometry(const Attrs& attrs, const TensorView* in, int n_in, kernels::ConvGeometry* g, kernels::QuantIO* io) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 3, 4));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "input", in[0], DType::kInt8));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "weight", in[1], DType::kInt8));
  DTORCH_RETURN_IF_ERROR(kernels::read_quant_io(kOp, attrs, io));
  DTORCH_RETURN_IF_ERROR(kernels::checked_conv_geometry(kOp, attrs, in, g));
  DTORCH_RETURN_IF_ERROR(kernels::check_weight_scales(kOp, *io, in[2], g->o));
  if (kernels::optional_present(in, n_in, 3))
    DTORCH_RETURN_IF_ERROR(kernels::check_vector(kOp, "bias", in[3], g->o, DType::kInt32));
  return Status::Ok();
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  kernels::ConvGeometry g{};
  kernels::QuantIO io{};
  DTORCH_RETURN_IF_ERROR(geometry(attrs, in, n_in, &g, &io));
  out[0].ndim = 4;
  out[0].dims[0] = g.n;
  out[0].dims[1] = g.o;
  out[0].dims[2] = g.oh;
  out[0].dims[3] = g.ow;
  return Status::Ok();
}

// Output row oh of channel o (group gi) of one image: x0 is the image, y the row.
void output_row(const kernels::ConvGeometry& g, const kernels::QuantIO& io, const int8_t* x0, const int8_t* w,
                int32_t bias, const kernels::requant::Multiplier& mul, int64_t o, int64_t oh, int8_t* y) {
  const int64_t gi = o / g.og;
  const int8_t* wo = w + o * g.cg * g.kh * g.kw;
  uint32_t acc[kStrip];
  for (int64_t c0 = 0; c0 < g.ow; c0 += kStrip) {
    const int64_t n = g.ow - c0 < kStrip ? g.ow - c0 : kStrip;
    for (int64_t q = 0; q < n; ++q) acc[q] = static_cast<uint32_t>(bias);
    // Each tap column's valid strip columns depend only on the column: found once per strip, not per channel and
    // row (the divisions behind them are library calls on 32-bit cores).
    int64_t tap_lo[kTapCols], tap_hi[kTapCols];
    const bool tabled = g.kw <= kTapCols;
    for (int64_t j = 0; tabled && j < g.kw; ++j)
      kernels::conv_valid_range(c0 * g.sw - g.pl + j * g.dw, g.sw, g.w, n, &tap_lo[j], &tap_hi[j]);
    // Native-width index arithmetic below (ptrdiff_t): every offset here is inside one tensor, which the runtime caps
    // far below the 32-bit range, and 64-bit arithmetic costs a 32-bit core two to three instructions apiece.
    const ptrdiff_t kh = static_cast<ptrdiff_t>(g.kh), kw = static_cast<ptrdiff_t>(g.kw);
    const ptrdiff_t h = static_cast<ptrdiff_t>(g.h), wd = static_cast<ptrdiff_t>(g.w), step = static_cast<ptrdiff_t>(g.sw);
    const ptrdiff_t row0 = static_cast<ptrdiff_t>(oh * g.sh - g.pt), dh = static_cast<ptrdiff_t>(g.dh);
    const ptrdiff_t col0 = static_cast<ptrdiff_t>(c0 * g.sw - g.pl), dw = static_cast<ptrdiff_t>(g.dw);
    const int32_t zp = io.x_zero_point;
    const int8_t* xc = x0 + gi * g.cg * g.h * g.w;
    const int8_t* wc = wo;
    for (int64_t c = 0; c < g.cg; ++c, xc += h * wd, wc += kh * kw) {
      for (ptrdiff_t i = 0; i < kh; ++i) {
        const ptrdiff_t ih = row0 + i * dh;
        if (ih < 0 || ih >= h) continue;
        const int8_t* xr = xc + ih * wd;
        for (ptrdiff_t j = 0; j < kw; ++j) {
          const int32_t wv = wc[i * kw + j];
          const ptrdiff_t off = col0 + j * dw;  // input column of strip column 0
          int64_t lo = 0, hi = 0;
          if (tabled) {
            lo = tap_lo[j];
            hi = tap_hi[j];
          } else {
            kernels::conv_valid_range(off, g.sw, g.w, n, &lo, &hi);
          }
          if (lo >= hi) continue;
          const ptrdiff_t first = static_cast<ptrdiff_t>(lo), len = static_cast<ptrdiff_t>(hi - lo);
          const int8_t* xs = xr + off + first * step;  // strip column lo's input
          uint32_t* as = acc + first;
          if (step == 1) {
            for (ptrdiff_t q = 0; q < len; ++q) as[q] += static_cast<uint32_t>((xs[q] - zp) * wv);
          } else {
            for (ptrdiff_t q = 0; q < len; ++q) as[q] += static_cast<uint32_t>((xs[q * step] - zp) * wv);
          }
        }
      }
    }
    for (int64_t q = 0; q < n; ++q)
      y[c0 + q] = kernels::requant::requantize(static_cast<int32_t>(acc[q]), mul, io.y_zero_point, io.lo, io.hi);
  }
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  kernels::ConvGeometry g{};
  kernels::QuantIO io{};
  DTORCH_RETURN_IF_ERROR(geometry(*ctx.attrs, in, n_in, &g, &io));
  if (out[0].dtype != DType::kInt8 || out[0].shape.ndim != 4 || out[0].shape.dims[0] != g.n ||
      out[0].shape.dims[1] != g.o || out[0].shape.dims[2] != g.oh || out[0].shape.dims[3] != g.ow)
    return op_error(StatusCode::kInternal, kOp, "output %s is not the int8 (N, O, OH, OW) infer gave",
                    ::dtorch::shape_str(out[0].shape).c_str());
  if (out[0].shape.numel() == 0) return Status::Ok();
  const int8_t* x = in[0].as<const int8_t>();
  const int8_t* w = in[1].as<const int8_t>();
  const float* ws = in[2].as<const float>();
  const int32_t* bias = kernels::optional_present(in, n_in, 3) ? in[3].as<const int32_t>() : nullptr;
  int8_t* y = out[0].as<int8_t>();
  const int64_t rows = g.n * g.o * g.oh;
  kernels::parallel_chunks(ctx.pool, rows, 4, [&](int64_t b, int64_t e) {
    int64_t cached = -1;
    kernels::requant::Multiplier mul;
    for (int64_t r = b; r < e; ++r) {
      const int64_t oh = r % g.oh, o = (r / g.oh) % g.o, img = r / (g.oh * g.o);
      if (o != cached) {
        mul = kernels::channel_multiplier(io, ws, o);
        cached = o;
      }
      output_row(g, io, x + img * g.c * g.h * g.w, w, bias != nullptr ? bias[o] : 0, mul, o, oh,
                 y + r * g.ow);
    }
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(qconv2d, DType::kInt8, infer, run);
}  // namespace dtorch
