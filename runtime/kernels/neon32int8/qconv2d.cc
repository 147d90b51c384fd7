// qconv2d on armv7-a NEON (no dot product): the portable kernel's bits (kernels/portable/qconv2d.cc is the
// specification; integer sums do not depend on their order), channel-major like kernels/neon64dot/qconv2d.cc:
//
// - Each image and group's input is copied once, widened to int16 as x - x_zero_point (|x - zp| <= 255), padded
//   (the border holds 0: the real value 0, which adds nothing) and split by column phase: [cg][H + pt + pb][sw][wq],
//   where padded column c of a row is at phase c % sw, index c / sw. An output row's consecutive positions then read
//   consecutive int16 values for every tap and any column stride.
// - The products are VMLAL.S16 by lane (16 x 16 -> 32 bits, exact for every int8 weight including -128, added in
//   int32 wrapping as the portable kernel's sums wrap): 8 positions of one output row (one int16x8 load) times one
//   output channel's weight of the step (a lane of the packed weights: [steps][4] int16 per panel of 4 output
//   channels, packed when the session loads). The sums start at the bias: the copy already took x_zero_point off.
// - Register tile: 8 positions x 4 output channels (8 int32x4 accumulators); a row's last tile computes a whole 8
//   (the copy reaches that far) and stores the positions that exist.
// - Epilogue: kernels/common/requant_neon.h per channel, stored straight to the NCHW output row.
// Depthwise convolutions (one input and one output channel per group): `depthwise` below, 8 or 16 positions a step,
// one tap's weight in every lane.
// Zero points outside the int8 range (never from the quantizer) take the portable kernel.
#include <cstdint>
#include <cstring>

#include "kernels/common/conv_geometry.h"
#include "kernels/common/portable_kernel.h"
#include "kernels/common/qconv_prepare.h"
#include "kernels/common/quant_params.h"
#include "kernels/common/util.h"
#include "kernels/neon32int8/neon32int8.h"

namespace dtorch {
namespace {

using kernels::op_error;
using kernels::store_partial;
constexpr char kOp[] = "qconv2d";
constexpr int64_t kNR = 4;  // output channels per panel
constexpr int64_t kNP = 8;  // positions per tile
constexpr int64_t kDwMaxTaps = 64;  // depthwise kernels up to this many taps here; larger ones take portable's

const KernelDef* portable() { return kernels::portable_kernel<kOp, DType::kInt8>(); }

struct Plan {
  kernels::ConvGeometry g;
  kernels::QuantIO io;
  int64_t steps;   // K-loop steps: cg * kh * kw
  int64_t panels;  // 4-channel panels per group
  int64_t hp;      // padded rows
  int64_t wq;      // int16 values per phase of a padded row
  bool direct;     // the tiles run it (not depthwise)
  bool ours;       // this kernel runs it (else portable's)
};

// Positions a depthwise step covers: the narrowest that covers the row, else 16.
int64_t dw_step(int64_t ow) { return ow <= 8 ? 8 : 16; }

int64_t packed_bytes(const kernels::ConvGeometry& g) {
  return g.groups * kernels::ceil_div(g.og, kNR) * g.cg * g.kh * g.kw * kNR * 2;
}

// The node's plan once the portable kernel's infer has accepted it (out: the output shape it gave).
Status plan_of(const Attrs& attrs, const TensorView* in, const Shape& out, Plan* p) {
  DTORCH_RETURN_IF_ERROR(kernels::read_quant_io(kOp, attrs, &p->io));
  DTORCH_RETURN_IF_ERROR(kernels::conv_geometry(kOp, attrs, in, out, &p->g));
  const kernels::ConvGeometry& g = p->g;
  p->steps = g.cg * g.kh * g.kw;
  p->panels = kernels::ceil_div(g.og, kNR);
  p->hp = g.h + g.pt + g.pb;
  p->direct = !(g.cg == 1 && g.og == 1);
  // Every phase holds the padded row's columns, and a row's last step (whole steps of L positions) reaches at most
  // ceil(OW / L) * L + ((kw - 1) * dw) / sw values into it.
  const int64_t step = p->direct ? kNP : dw_step(g.ow);
  const int64_t real = kernels::ceil_div(g.w + g.pl + g.pr, g.sw);
  const int64_t reach = kernels::ceil_div(g.ow, step) * step + ((g.kw - 1) * g.dw) / g.sw;
  p->wq = real > reach ? real : reach;
  p->ours = p->io.x_zero_point >= kernels::requant::kQMin && p->io.x_zero_point <= kernels::requant::kQMax &&
            (p->direct || g.kh * g.kw <= kDwMaxTaps);
  return Status::Ok();
}

int64_t round64(int64_t n) { return kernels::ceil_div(n, 64) * 64; }

// One group's (dense) or image's (depthwise: every channel) widened copy.
int64_t copy_bytes(const Plan& p) {
  const int64_t plane = round64(p.hp * p.g.sw * p.wq * 2);
  return (p.direct ? p.g.cg : p.g.c) * plane;
}

// Scratch: dense: the packed weights (when prepare did not keep them), the step offsets, one image and group's
// copy; depthwise: one image's copy.
int64_t scratch_bytes_of(const Plan& p) {
  if (!p.direct) return copy_bytes(p) + 64;
  return round64(packed_bytes(p.g)) + round64(p.steps * 8) + copy_bytes(p) + 64;
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  DTORCH_RETURN_IF_ERROR((kernels::portable_infer<kOp, DType::kInt8>(attrs, in, n_in, out, n_out, scratch_bytes)));
  Plan p;
  DTORCH_RETURN_IF_ERROR(plan_of(attrs, in, out[0], &p));
  if (p.ours) *scratch_bytes = static_cast<size_t>(scratch_bytes_of(p));
  return Status::Ok();
}

// Packed weights: per group and panel [steps][4] int16, step = (c * kh + i) * kw + j (0 past the group's channels).
void pack(const kernels::ConvGeometry& g, const int8_t* w, void* out) {
  int16_t* dst = static_cast<int16_t*>(out);
  const int64_t panels = kernels::ceil_div(g.og, kNR), steps = g.cg * g.kh * g.kw;
  std::memset(dst, 0, static_cast<size_t>(packed_bytes(g)));
  for (int64_t gi = 0; gi < g.groups; ++gi)
    for (int64_t o = 0; o < g.og; ++o) {
      int16_t* panel = dst + (gi * panels + o / kNR) * steps * kNR;
      const int8_t* wo = w + (gi * g.og + o) * steps;
      for (int64_t s = 0; s < steps; ++s) panel[s * kNR + o % kNR] = wo[s];
    }
}

// Input row s (w values) into padded row d ([sw][wq], zeros first) as x - zp.
void copy_row(const Plan& p, const int8_t* s, int16_t* d) {
  const kernels::ConvGeometry& g = p.g;
  const int16_t zp = static_cast<int16_t>(p.io.x_zero_point);
  const int16x8_t vzp = vdupq_n_s16(zp);
  int64_t iw = 0;
  if (g.sw == 1) {
    for (; iw + 8 <= g.w; iw += 8) vst1q_s16(d + g.pl + iw, vsubq_s16(vmovl_s8(vld1_s8(s + iw)), vzp));
  } else if (g.sw == 2) {
    // columns iw + e + 2k (k < 8) -> padded column pl + iw + e + 2k: phase (pl + iw + e) & 1, index (pl + iw + e) >> 1
    // + k (iw even)
    for (; iw + 16 <= g.w; iw += 16) {
      const int8x8x2_t v = vld2_s8(s + iw);
      for (int e = 0; e < 2; ++e) {
        const int64_t c = g.pl + iw + e;
        vst1q_s16(d + (c & 1) * p.wq + (c >> 1), vsubq_s16(vmovl_s8(v.val[e]), vzp));
      }
    }
  }
  for (; iw < g.w; ++iw) {
    const int64_t c = g.pl + iw;
    d[(c % g.sw) * p.wq + c / g.sw] = static_cast<int16_t>(s[iw] - zp);
  }
}

// Channel planes [c0, c1) of x (channels of H x W) into their padded copies (plane values apart).
void copy_planes(ThreadPool* pool, const Plan& p, const int8_t* x, int64_t channels, int64_t plane, int16_t* xs) {
  const kernels::ConvGeometry& g = p.g;
  const int64_t row = g.sw * p.wq;
  kernels::parallel_chunks(pool, channels * p.hp, 8, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t c = u / p.hp, r = u % p.hp, ih = r - g.pt;
      int16_t* d = xs + c * plane + r * row;
      std::memset(d, 0, static_cast<size_t>(row * 2));
      if (ih >= 0 && ih < g.h) copy_row(p, x + (c * g.h + ih) * g.w, d);
    }
  });
}

// acc[c][h] += x[h] * w[c] for the 4 channels c of a step and the two halves h of 8 positions.
#define DTORCH_N32I8_MLA4(acc, xv, wv)                                           \
  do {                                                                           \
    const int16x4_t xl = vget_low_s16(xv), xh = vget_high_s16(xv);               \
    acc[0][0] = vmlal_lane_s16(acc[0][0], xl, wv, 0);                            \
    acc[0][1] = vmlal_lane_s16(acc[0][1], xh, wv, 0);                            \
    acc[1][0] = vmlal_lane_s16(acc[1][0], xl, wv, 1);                            \
    acc[1][1] = vmlal_lane_s16(acc[1][1], xh, wv, 1);                            \
    acc[2][0] = vmlal_lane_s16(acc[2][0], xl, wv, 2);                            \
    acc[2][1] = vmlal_lane_s16(acc[2][1], xh, wv, 2);                            \
    acc[3][0] = vmlal_lane_s16(acc[3][0], xl, wv, 3);                            \
    acc[3][1] = vmlal_lane_s16(acc[3][1], xh, wv, 3);                            \
  } while (0)

struct RowArgs {
  const int16_t* x;        // the output row's first position at step 0's offset 0
  const int64_t* off;      // per step: offset (int16 values) from x
  int64_t steps;
  const int16_t* w;        // the panel's packed weights
  const int32_t* start;    // 4 starting sums (the bias)
  const kernels::Requant* rq;  // 4 channels' requantization
  int noc;                 // output channels of the panel (<= 4)
  int64_t ow;              // positions of the row
  int8_t* y;               // output (channel 0 of the panel, position 0)
  int64_t ys;              // output channel stride
};

// 8 int32 sums of one channel -> int8, the first n (<= 8) to y.
__attribute__((always_inline)) inline void store8(int32x4_t a, int32x4_t b, const kernels::Requant& r, int64_t n,
                                                  int8_t* y) {
  const int16x8_t h = kernels::requant_zp8(kernels::requant_apply(a, r), kernels::requant_apply(b, r), r);
  const int8x16_t v = kernels::requant_clamp16(h, h, r);
  if (n >= 8) {
    vst1_s8(y, vget_low_s8(v));
  } else {
    store_partial(v, static_cast<int>(n), y);
  }
}

// One output row of a panel, 8 positions a tile.
void panel_row(const RowArgs& a) {
  for (int64_t ow0 = 0; ow0 < a.ow; ow0 += kNP) {
    int32x4_t acc[kNR][2];
    DTORCH_NEON32INT8_UNROLL
    for (int c = 0; c < kNR; ++c) acc[c][0] = acc[c][1] = vdupq_n_s32(a.start[c]);
    const int16_t* x = a.x + ow0;
    const int16_t* w = a.w;
    int64_t s = 0;
    for (; s + 2 <= a.steps; s += 2, w += 2 * kNR) {
      const int16x8_t x0 = vld1q_s16(x + a.off[s]), x1 = vld1q_s16(x + a.off[s + 1]);
      const int16x8_t wv = vld1q_s16(w);
      DTORCH_N32I8_MLA4(acc, x0, vget_low_s16(wv));
      DTORCH_N32I8_MLA4(acc, x1, vget_high_s16(wv));
    }
    if (s < a.steps) {
      const int16x8_t x0 = vld1q_s16(x + a.off[s]);
      const int16x4_t wv = vld1_s16(w);
      DTORCH_N32I8_MLA4(acc, x0, wv);
    }
    const int64_t n = a.ow - ow0;
    int8_t* y = a.y + ow0;
    store8(acc[0][0], acc[0][1], a.rq[0], n, y);
    if (a.noc > 1) store8(acc[1][0], acc[1][1], a.rq[1], n, y + a.ys);
    if (a.noc > 2) store8(acc[2][0], acc[2][1], a.rq[2], n, y + 2 * a.ys);
    if (a.noc > 3) store8(acc[3][0], acc[3][1], a.rq[3], n, y + 3 * a.ys);
  }
}

Status dense(const KernelContext& ctx, const Plan& p, const int8_t* x, const int8_t* wt, const float* ws,
             const int32_t* bias, int8_t* y) {
  const kernels::ConvGeometry& g = p.g;
  uint8_t* scratch = static_cast<uint8_t*>(ctx.scratch);
  const int64_t pb = packed_bytes(g);
  const int16_t* packed = static_cast<const int16_t*>(ctx.prepared);
  if (packed == nullptr || ctx.prepared_bytes != static_cast<size_t>(pb)) {
    pack(g, wt, scratch);
    packed = reinterpret_cast<const int16_t*>(scratch);
  }
  int64_t* off = reinterpret_cast<int64_t*>(scratch + round64(pb));
  int16_t* xs = reinterpret_cast<int16_t*>(scratch + round64(pb) + round64(p.steps * 8));
  const int64_t plane = round64(p.hp * g.sw * p.wq * 2) / 2;  // int16 values per channel's copy
  for (int64_t c = 0; c < g.cg; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        const int64_t col = j * g.dw;
        off[(c * g.kh + i) * g.kw + j] = c * plane + ((i * g.dh) * g.sw + col % g.sw) * p.wq + col / g.sw;
      }
  const int64_t ohw = g.oh * g.ow;
  for (int64_t img = 0; img < g.n; ++img) {
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      copy_planes(ctx.pool, p, x + (img * g.c + gi * g.cg) * g.h * g.w, g.cg, plane, xs);
      int8_t* yg = y + (img * g.o + gi * g.og) * ohw;
      // Units: (panel, output row).
      kernels::parallel_chunks(ctx.pool, p.panels * g.oh, 2, [&](int64_t u0, int64_t u1) {
        int64_t cached = -1;
        int32_t start[kNR];
        kernels::Requant rq4[kNR];
        RowArgs ra{nullptr, off, p.steps, nullptr, start, rq4, 0, g.ow, nullptr, ohw};
        for (int64_t u = u0; u < u1; ++u) {
          const int64_t a = u / g.oh, oh = u % g.oh;
          if (a != cached) {  // the panel's starting sums and multipliers
            cached = a;
            ra.noc = static_cast<int>(g.og - a * kNR < kNR ? g.og - a * kNR : kNR);
            ra.w = packed + (gi * p.panels + a) * p.steps * kNR;
            for (int c = 0; c < kNR; ++c) {
              if (c < ra.noc) {
                const int64_t o = gi * g.og + a * kNR + c;
                start[c] = bias != nullptr ? bias[o] : 0;
                rq4[c] = kernels::requant_of(kernels::channel_multiplier(p.io, ws, o), p.io.y_zero_point, p.io.lo,
                                              p.io.hi);
              } else {
                start[c] = 0;
                rq4[c] = rq4[0];  // a channel past the group's: never stored
              }
            }
          }
          ra.x = xs + oh * g.sh * g.sw * p.wq;
          ra.y = yg + a * kNR * ohw + oh * g.ow;
          panel_row(ra);
        }
      });
    }
  }
  return Status::Ok();
}

// One output row of a depthwise channel, L (8 or 16) positions a step: row (the copy's first row for it), off[t]
// (tap t's offset from it), wt[t] (tap t's weight), start (the bias), the channel's requantization.
template <int L>
void dw_row(const kernels::ConvGeometry& g, const int16_t* row, const int64_t* off, const int16_t* wt, int64_t taps,
            int32_t start, const kernels::Requant& rq, int8_t* y) {
  constexpr int kA = L / 4;  // int32x4 sums per step
  for (int64_t ow0 = 0; ow0 < g.ow; ow0 += L) {
    int32x4_t acc[kA];
    DTORCH_NEON32INT8_UNROLL
    for (int v = 0; v < kA; ++v) acc[v] = vdupq_n_s32(start);
    for (int64_t t = 0; t < taps; ++t) {
      const int16_t* xp = row + off[t] + ow0;
      const int16x4_t wv = vld1_dup_s16(wt + t);
      DTORCH_NEON32INT8_UNROLL
      for (int v = 0; v < kA / 2; ++v) {
        const int16x8_t xv = vld1q_s16(xp + 8 * v);
        acc[2 * v] = vmlal_lane_s16(acc[2 * v], vget_low_s16(xv), wv, 0);
        acc[2 * v + 1] = vmlal_lane_s16(acc[2 * v + 1], vget_high_s16(xv), wv, 0);
      }
    }
    const int64_t n = g.ow - ow0;
    if (L == 8) {
      store8(acc[0], acc[1], rq, n, y + ow0);
    } else {
      const int8x16_t b = kernels::requantize16(acc[0], acc[kA > 1 ? 1 : 0], acc[kA > 2 ? 2 : 0],
                                                acc[kA > 3 ? 3 : 0], rq);
      if (n >= 16) {
        vst1q_s8(y + ow0, b);
      } else {
        store_partial(b, static_cast<int>(n), y + ow0);
      }
    }
  }
}

Status depthwise(const KernelContext& ctx, const Plan& p, const int8_t* x, const int8_t* w, const float* ws,
                 const int32_t* bias, int8_t* y) {
  const kernels::ConvGeometry& g = p.g;
  const int64_t plane = round64(p.hp * g.sw * p.wq * 2) / 2, rs = g.sw * p.wq, taps = g.kh * g.kw;
  int16_t* planes = static_cast<int16_t*>(ctx.scratch);
  for (int64_t img = 0; img < g.n; ++img) {
    copy_planes(ctx.pool, p, x + img * g.c * g.h * g.w, g.c, plane, planes);
    kernels::parallel_chunks(ctx.pool, g.c * g.oh, 4, [&](int64_t r0, int64_t r1) {
      int64_t off[kDwMaxTaps];
      int16_t wt[kDwMaxTaps];
      for (int64_t i = 0; i < g.kh; ++i)
        for (int64_t j = 0; j < g.kw; ++j) {
          const int64_t c = j * g.dw;
          off[i * g.kw + j] = i * g.dh * rs + (c % g.sw) * p.wq + c / g.sw;
        }
      int64_t cached = -1;
      int32_t start = 0;
      kernels::Requant rq{};
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t ch = r / g.oh, oh = r % g.oh;
        if (ch != cached) {
          cached = ch;
          for (int64_t t = 0; t < taps; ++t) wt[t] = w[ch * taps + t];
          start = bias != nullptr ? bias[ch] : 0;
          rq = kernels::requant_of(kernels::channel_multiplier(p.io, ws, ch), p.io.y_zero_point, p.io.lo, p.io.hi);
        }
        const int16_t* row = planes + ch * plane + oh * g.sh * rs;
        int8_t* yr = y + ((img * g.c + ch) * g.oh + oh) * g.ow;
        if (dw_step(g.ow) == 8) {
          dw_row<8>(g, row, off, wt, taps, start, rq, yr);
        } else {
          dw_row<16>(g, row, off, wt, taps, start, rq, yr);
        }
      }
    });
  }
  return Status::Ok();
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  Shape shape;
  DTORCH_RETURN_IF_ERROR(kernels::qconv_portable_shape(kOp, portable(), ctx, in, n_in, n_out, &shape));
  Plan p;
  DTORCH_RETURN_IF_ERROR(plan_of(*ctx.attrs, in, shape, &p));
  if (!p.ours) return portable()->run(ctx, in, n_in, out, n_out);
  DTORCH_RETURN_IF_ERROR(kernels::check_weight_scales(kOp, p.io, in[2], p.g.o));
  DTORCH_RETURN_IF_ERROR(
      kernels::check_qconv_output(kOp, ctx, out[0], p.g, static_cast<size_t>(scratch_bytes_of(p))));
  if (out[0].shape.numel() == 0) return Status::Ok();
  const float* ws = in[2].as<const float>();
  const int32_t* bias = kernels::optional_present(in, n_in, 3) ? in[3].as<const int32_t>() : nullptr;
  const int8_t* x = in[0].as<const int8_t>();
  const int8_t* w = in[1].as<const int8_t>();
  if (!p.direct) return depthwise(ctx, p, x, w, ws, bias, out[0].as<int8_t>());
  return dense(ctx, p, x, w, ws, bias, out[0].as<int8_t>());
}

}  // namespace
DTORCH_REGISTER_NEON32INT8_KERNEL(qconv2d, DType::kInt8, infer, run,
                                  (kernels::qconv_prepare_packed<packed_bytes, pack>));
}  // namespace dtorch
