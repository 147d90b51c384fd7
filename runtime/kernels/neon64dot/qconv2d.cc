// qconv2d on the Armv8.2 dot-product instructions: the portable kernel's bits (kernels/portable/qconv2d.cc is the
// specification; integer sums do not depend on their order), channel-major like the float sets' convolutions,
// without im2col columns:
//
// - Each image and group's input is copied once into blocks of 4 channels, padded and split by column phase:
//   [C4 / 4][H + pt + pb][sw][Wq][4] s8, where padded column c of a row is at phase c % sw, index c / sw, and the
//   border holds x_zero_point (the real value 0). An output row's consecutive positions then read consecutive 4-byte
//   groups for every tap and any column stride: one 16-byte load is 4 positions x 4 channels. Rows of 16 columns go
//   through registers (4 channel rows zipped; LD2 splits the phases of stride 2).
// - A step of the K loop is one tap (i, j) and 4 channels. SDOT by element multiplies the 4 positions of a load by
//   one output channel's 4 weights (a lane of a packed weight vector: [steps][8][4] s8 per panel of 8 output
//   channels, packed when the session loads, with each channel's weight sum).
// - Register tile: up to kNV x 4 positions of one output row x 8 output channels (24 accumulators, 4 positions of one
//   channel each), starting at bias - x_zero_point * sum(w): what x - x_zero_point takes back, a padding tap adding
//   w * 0 net.
// - Epilogue: requant_* (kernels/common/requant_neon.h) per channel, stored straight to the NCHW output row.
// Depthwise convolutions (one input and one output channel per group): `depthwise` below.
#include <cstdint>
#include <cstring>

#include "kernels/common/portable_kernel.h"
#include "kernels/common/conv_geometry.h"
#include "kernels/common/qconv_prepare.h"
#include "kernels/common/quant_params.h"
#include "kernels/common/util.h"
#include "kernels/neon64dot/neon64dot.h"

namespace dtorch {
namespace {

using kernels::op_error;
using kernels::store_partial;
namespace rq = kernels::requant;
constexpr char kOp[] = "qconv2d";
constexpr int kNV = 3;      // 4-position vectors per tile
constexpr int64_t kNR = 8;  // output channels per panel (two weight vectors)

const KernelDef* portable() { return kernels::portable_kernel<kOp, DType::kInt8>(); }

struct Plan {
  kernels::ConvGeometry g;
  kernels::QuantIO io;
  int64_t cq;      // blocks of 4 channels per group
  int64_t steps;   // K-loop steps: cq * kh * kw
  int64_t panels;  // 8-channel panels per group
  int64_t hp;      // padded rows
  int64_t wq;      // 4-byte groups per phase of a padded row
  bool direct;     // this GEMM runs it (not depthwise)
};

int64_t packed_weight_bytes(const kernels::ConvGeometry& g) {
  return g.groups * kernels::ceil_div(g.og, kNR) * kernels::ceil_div(g.cg, 4) * g.kh * g.kw * kNR * 4;
}
int64_t packed_bytes(const kernels::ConvGeometry& g) { return packed_weight_bytes(g) + g.o * int64_t{4}; }

// The node's plan once the portable kernel's infer has accepted it (out: the output shape it gave).
Status plan_of(const Attrs& attrs, const TensorView* in, const Shape& out, Plan* p) {
  DTORCH_RETURN_IF_ERROR(kernels::read_quant_io(kOp, attrs, &p->io));
  DTORCH_RETURN_IF_ERROR(kernels::conv_geometry(kOp, attrs, in, out, &p->g));
  const kernels::ConvGeometry& g = p->g;
  p->cq = kernels::ceil_div(g.cg, 4);
  p->steps = p->cq * g.kh * g.kw;
  p->panels = kernels::ceil_div(g.og, kNR);
  p->hp = g.h + g.pt + g.pb;
  // Every phase holds the padded row's columns, and a tile's loads (whole vectors of 4 positions) reach at most
  // ceil(OW / 4) * 4 + ((kw - 1) * dw) / sw groups into it.
  const int64_t real = kernels::ceil_div(g.w + g.pl + g.pr, g.sw);
  const int64_t reach = kernels::ceil_div(g.ow, 4) * 4 + ((g.kw - 1) * g.dw) / g.sw;
  p->wq = real > reach ? real : reach;
  p->direct = !(g.cg == 1 && g.og == 1);
  return Status::Ok();
}

int64_t dw_scratch_bytes(const Plan& p);
constexpr int64_t kDwMaxTaps = 64;  // depthwise kernels up to this many taps here; larger ones take portable's

int64_t copy_bytes(const Plan& p) { return p.cq * p.hp * p.g.sw * p.wq * 4; }

// Scratch: the packed weights (when prepare did not keep them), the step offsets, one image and group's copy.
int64_t scratch_bytes_of(const Plan& p) {
  return kernels::ceil_div(packed_bytes(p.g), 64) * 64 + kernels::ceil_div(p.steps * 8, 64) * 64 + copy_bytes(p) +
         64;
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  DTORCH_RETURN_IF_ERROR((kernels::portable_infer<kOp, DType::kInt8>(attrs, in, n_in, out, n_out, scratch_bytes)));
  Plan p;
  DTORCH_RETURN_IF_ERROR(plan_of(attrs, in, out[0], &p));
  if (p.direct) {
    *scratch_bytes = static_cast<size_t>(scratch_bytes_of(p));
  } else if (p.g.kh * p.g.kw <= kDwMaxTaps) {
    *scratch_bytes = static_cast<size_t>(dw_scratch_bytes(p));
  }
  return Status::Ok();
}

// Packed weights: per group and panel [steps][8][4] s8, step = (q * kh + i) * kw + j for channels 4q .. 4q + 3 and
// tap (i, j) (0 past the group's channels), then each output channel's weight sum (int32, wrapping).
void pack(const kernels::ConvGeometry& g, const int8_t* w, void* out) {
  uint8_t* dst = static_cast<uint8_t*>(out);
  const int64_t cq = kernels::ceil_div(g.cg, 4), panels = kernels::ceil_div(g.og, kNR);
  const int64_t steps = cq * g.kh * g.kw, K = g.cg * g.kh * g.kw;
  int8_t* wp = reinterpret_cast<int8_t*>(dst);
  std::memset(wp, 0, static_cast<size_t>(packed_weight_bytes(g)));
  for (int64_t gi = 0; gi < g.groups; ++gi)
    for (int64_t o = 0; o < g.og; ++o) {
      int8_t* panel = wp + (gi * panels + o / kNR) * steps * kNR * 4;
      const int8_t* wo = w + (gi * g.og + o) * K;
      for (int64_t c = 0; c < g.cg; ++c)
        for (int64_t i = 0; i < g.kh; ++i)
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t step = ((c / 4) * g.kh + i) * g.kw + j;
            panel[(step * kNR + o % kNR) * 4 + c % 4] = wo[(c * g.kh + i) * g.kw + j];
          }
    }
  int32_t* sums = reinterpret_cast<int32_t*>(dst + packed_weight_bytes(g));
  kernels::qconv_weight_sums(w, g.o, K, sums);
}

// 4 rows of 16 bytes (channels 0-3 of 16 columns) -> 64 bytes: column t's 4 channels at 4t.
inline void zip4_store(int8x16_t r0, int8x16_t r1, int8x16_t r2, int8x16_t r3, int8_t* dst) {
  const int8x16_t a0 = vzip1q_s8(r0, r1), a1 = vzip2q_s8(r0, r1);
  const int8x16_t b0 = vzip1q_s8(r2, r3), b1 = vzip2q_s8(r2, r3);
  const int16x8_t a0h = vreinterpretq_s16_s8(a0), a1h = vreinterpretq_s16_s8(a1);
  const int16x8_t b0h = vreinterpretq_s16_s8(b0), b1h = vreinterpretq_s16_s8(b1);
  vst1q_s8(dst, vreinterpretq_s8_s16(vzip1q_s16(a0h, b0h)));
  vst1q_s8(dst + 16, vreinterpretq_s8_s16(vzip2q_s16(a0h, b0h)));
  vst1q_s8(dst + 32, vreinterpretq_s8_s16(vzip1q_s16(a1h, b1h)));
  vst1q_s8(dst + 48, vreinterpretq_s8_s16(vzip2q_s16(a1h, b1h)));
}

// 4 rows of 8 bytes -> 32 bytes: column t's 4 channels at 4t.
inline void zip4_store8(int8x8_t r0, int8x8_t r1, int8x8_t r2, int8x8_t r3, int8_t* dst) {
  const int16x8_t a = vreinterpretq_s16_s8(vcombine_s8(vzip1_s8(r0, r1), vzip2_s8(r0, r1)));
  const int16x8_t b = vreinterpretq_s16_s8(vcombine_s8(vzip1_s8(r2, r3), vzip2_s8(r2, r3)));
  vst1q_s8(dst, vreinterpretq_s8_s16(vzip1q_s16(a, b)));
  vst1q_s8(dst + 16, vreinterpretq_s8_s16(vzip2q_s16(a, b)));
}

// Padded row r of channel block q: [sw][wq][4]. src[l]: channel 4q + l's input row (nullptr: a channel past the
// group's, or a padding row: zero point).
void copy_row(const Plan& p, const int8_t* const src[4], int8_t* dst) {
  const kernels::ConvGeometry& g = p.g;
  const int8_t zp = static_cast<int8_t>(p.io.x_zero_point);
  const int64_t row = g.sw * p.wq * 4;
  const int8x16_t vzp = vdupq_n_s8(zp);
  auto fill = [&](int64_t b, int64_t e) {  // bytes [b, e) of the row: the zero point
    for (; b + 16 <= e; b += 16) vst1q_s8(dst + b, vzp);
    for (; b < e; ++b) dst[b] = zp;
  };
  if (src[0] == nullptr) return fill(0, row);  // a padding row
  const int8_t* s[4];
  for (int l = 0; l < 4; ++l) s[l] = src[l] != nullptr ? src[l] : src[0];  // lanes past cg: their weights are 0
  if (g.sw == 1) {  // the interior is [pl, pl + w): fill only around it
    fill(0, g.pl * 4);
    fill((g.pl + g.w) * 4, row);
    int8_t* d = dst + g.pl * 4;
    // Chunks of 16 (or 8) columns; a last partial chunk is redone overlapping the previous one (the same bytes).
    if (g.w >= 16) {
      for (int64_t iw = 0;; iw += 16) {
        if (iw + 16 > g.w) iw = g.w - 16;
        zip4_store(vld1q_s8(s[0] + iw), vld1q_s8(s[1] + iw), vld1q_s8(s[2] + iw), vld1q_s8(s[3] + iw), d + iw * 4);
        if (iw + 16 >= g.w) break;
      }
      return;
    }
    if (g.w >= 8) {
      for (int64_t iw = 0;; iw += 8) {
        if (iw + 8 > g.w) iw = g.w - 8;
        zip4_store8(vld1_s8(s[0] + iw), vld1_s8(s[1] + iw), vld1_s8(s[2] + iw), vld1_s8(s[3] + iw), d + iw * 4);
        if (iw + 8 >= g.w) break;
      }
      return;
    }
  } else {
    fill(0, row);
  }
  int64_t iw = 0;
  if (g.sw == 2 && g.w >= 32) {
    // input column iw -> padded column pl + iw: phase (pl + iw) & 1, group (pl + iw) >> 1; a last partial chunk is
    // redone overlapping the previous one
    for (;; iw += 32) {
      if (iw + 32 > g.w) iw = g.w - 32;
      const int8x16x2_t r0 = vld2q_s8(s[0] + iw), r1 = vld2q_s8(s[1] + iw), r2 = vld2q_s8(s[2] + iw),
                        r3 = vld2q_s8(s[3] + iw);
      for (int e = 0; e < 2; ++e) {
        const int64_t c = g.pl + iw + e;
        zip4_store(r0.val[e], r1.val[e], r2.val[e], r3.val[e], dst + ((c & 1) * p.wq + (c >> 1)) * 4);
      }
      if (iw + 32 >= g.w) return;
    }
  }
  for (; iw < g.w; ++iw) {
    const int64_t c = g.pl + iw;
    int8_t* d = dst + ((c % g.sw) * p.wq + c / g.sw) * 4;
    for (int l = 0; l < 4; ++l) d[l] = s[l][iw];
  }
}

void copy_input(ThreadPool* pool, const Plan& p, const int8_t* x0, int64_t gi, int8_t* xs) {
  const kernels::ConvGeometry& g = p.g;
  const int64_t row = g.sw * p.wq * 4;
  kernels::parallel_chunks(pool, p.cq * p.hp, 8, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t q = u / p.hp, r = u % p.hp, ih = r - g.pt;
      const int8_t* src[4] = {nullptr, nullptr, nullptr, nullptr};
      if (ih >= 0 && ih < g.h)
        for (int l = 0; l < 4; ++l) {
          const int64_t c = q * 4 + l;
          if (c < g.cg) src[l] = x0 + ((gi * g.cg + c) * g.h + ih) * g.w;
        }
      copy_row(p, src, xs + u * row);
    }
  });
}

struct TileArgs {
  const int8_t* x;      // the tile's first position at step 0's offset 0
  const int64_t* off;   // per step: byte offset from x
  int64_t steps;
  const int8_t* w;      // the panel's packed weights
  const int32_t* start; // 8 starting sums
  const kernels::Requant* rq;  // 8 channels' requantization
  int noc;              // output channels of the panel (<= 8)
  int npos;             // positions of the tile (<= 4 * NV)
  int8_t* y;            // output (channel 0 of the panel, the tile's first position)
  int64_t ys;           // output channel stride
  kernels::Requant out; // the output's zero point and clamp (the same for every channel)
};

template <int NV, int K>  // K: the panel's multipliers' kind (requant_apply), -1 when they differ
void tile(const TileArgs& a) {
  int32x4_t acc[NV][kNR];
  DTORCH_NEON64DOT_UNROLL
  for (int c = 0; c < kNR; ++c) {
    const int32x4_t s = vdupq_n_s32(a.start[c]);
    DTORCH_NEON64DOT_UNROLL
    for (int v = 0; v < NV; ++v) acc[v][c] = s;
  }
  const int8_t* w = a.w;
  for (int64_t s = 0; s < a.steps; ++s) {
    const int8_t* xp = a.x + a.off[s];
    int8x16_t xv[NV];
    DTORCH_NEON64DOT_UNROLL
    for (int v = 0; v < NV; ++v) xv[v] = vld1q_s8(xp + 16 * v);
    const int8x16_t w0 = vld1q_s8(w), w1 = vld1q_s8(w + 16);
    w += 32;
    DTORCH_NEON64DOT_UNROLL
    for (int v = 0; v < NV; ++v) {
      acc[v][0] = vdotq_laneq_s32(acc[v][0], xv[v], w0, 0);
      acc[v][1] = vdotq_laneq_s32(acc[v][1], xv[v], w0, 1);
      acc[v][2] = vdotq_laneq_s32(acc[v][2], xv[v], w0, 2);
      acc[v][3] = vdotq_laneq_s32(acc[v][3], xv[v], w0, 3);
      acc[v][4] = vdotq_laneq_s32(acc[v][4], xv[v], w1, 0);
      acc[v][5] = vdotq_laneq_s32(acc[v][5], xv[v], w1, 1);
      acc[v][6] = vdotq_laneq_s32(acc[v][6], xv[v], w1, 2);
      acc[v][7] = vdotq_laneq_s32(acc[v][7], xv[v], w1, 3);
    }
  }
  // The epilogue's channel loop is unrolled (c is a constant in each copy) so the accumulators stay in registers.
  DTORCH_NEON64DOT_UNROLL
  for (int c = 0; c < kNR; ++c) {
    if (c >= a.noc) break;
    const kernels::Requant& r = a.rq[c];
    int32x4_t v[3];
    DTORCH_NEON64DOT_UNROLL
    for (int q = 0; q < 3; ++q) v[q] = kernels::requant_apply<K>(acc[q < NV ? q : NV - 1][c], r);
    const int16x8_t h01 = kernels::requant_zp8(v[0], v[1], a.out);
    const int16x8_t h2 = NV > 2 ? kernels::requant_zp8(v[2], v[2], a.out) : h01;
    const int8x16_t b = kernels::requant_clamp16(h01, h2, a.out);
    int8_t* y = a.y + c * a.ys;
    if (a.npos == 4 * NV) {
      if (NV == 1) {
        vst1q_lane_s32(reinterpret_cast<int32_t*>(y), vreinterpretq_s32_s8(b), 0);
      } else {
        vst1_s8(y, vget_low_s8(b));
        if (NV == 3) vst1q_lane_s32(reinterpret_cast<int32_t*>(y + 8), vreinterpretq_s32_s8(b), 2);
      }
    } else {
      store_partial(b, a.npos, y);
    }
  }
}

using TileFn = void (*)(const TileArgs&);
constexpr TileFn kTiles[4][kNV] = {{tile<1, -1>, tile<2, -1>, tile<3, -1>},
                                   {tile<1, 0>, tile<2, 0>, tile<3, 0>},
                                   {tile<1, 1>, tile<2, 1>, tile<3, 1>},
                                   {tile<1, 2>, tile<2, 2>, tile<3, 2>}};

// Depthwise (cg = og = 1): each channel's plane is copied padded and split by column phase as above (bytes, not
// 4-byte groups: [hp][sw][dw_wq]), then each output row runs 8, 16 or 32 positions a step (dw_step): for each pair of taps, 16
// products x * w per vector in int16 (|x * w| <= 16256 for the quantizer's weights in [-127, 127]), the pair summed in
// int16 (<= 32512; a channel with a weight of -128 reaches 32768 and takes dw_row's kMin form) before widening into
// the int32 sums, which start at bias - x_zero_point * sum(w). Kernels up to kDwMaxTaps taps; larger ones take the
// portable kernel.
int64_t dw_step(int64_t ow);

// Bytes per phase row of a depthwise plane: the padded row, and the last step's loads.
int64_t dw_wq(const kernels::ConvGeometry& g) {
  const int64_t real = kernels::ceil_div(g.w + g.pl + g.pr, g.sw);
  const int64_t reach = kernels::ceil_div(g.ow, dw_step(g.ow)) * dw_step(g.ow) + ((g.kw - 1) * g.dw) / g.sw;
  return real > reach ? real : reach;
}

// Kernels up to 4 columns wide with no column dilation and column stride 1 or 2 (3x3 and 1x3, every network's
// depthwise layers) take the windows path, dw_win_row: the plane is the plain padded rows (no phase split), bytes per
// row reaching the last 16-byte load of the last step.
bool dw_windows(const kernels::ConvGeometry& g) { return g.kw <= 4 && g.dw == 1 && (g.sw == 1 || g.sw == 2); }

// Bytes per padded row of a depthwise plane.
int64_t dw_row_bytes(const kernels::ConvGeometry& g) {
  if (!dw_windows(g)) return g.sw * dw_wq(g);
  const int64_t real = g.w + g.pl + g.pr, reach = (kernels::ceil_div(g.ow, 16) * 16 - 4) * g.sw + 16;
  return kernels::ceil_div(real > reach ? real : reach, 16) * 16;  // whole vectors: dw_copy fills rows by vector
}

int64_t dw_plane_bytes(const Plan& p) { return kernels::ceil_div(p.hp * dw_row_bytes(p.g), 64) * 64; }

// Scratch of a depthwise node: one image's planes.
int64_t dw_scratch_bytes(const Plan& p) { return p.g.c * dw_plane_bytes(p); }

// n bytes from s to d (n >= 16): 16-byte blocks, the last one overlapping the one before (the same bytes).
inline void copy_bytes16(const int8_t* s, int8_t* d, int64_t n) {
  for (int64_t i = 0;; i += 16) {
    if (i + 16 > n) i = n - 16;
    vst1q_s8(d + i, vld1q_s8(s + i));
    if (i + 16 >= n) return;
  }
}

// bytes [b, e) of d: v.
inline void fill_bytes(int8_t* d, int64_t b, int64_t e, int8x16_t v) {
  for (; b + 16 <= e; b += 16) vst1q_s8(d + b, v);
  for (; b < e; ++b) d[b] = vgetq_lane_s8(v, 0);
}

void dw_copy(const Plan& p, const int8_t* x, int8_t* plane) {
  const kernels::ConvGeometry& g = p.g;
  const int64_t wq = dw_wq(g), rs = dw_row_bytes(g);
  const int8x16_t vzp = vdupq_n_s8(static_cast<int8_t>(p.io.x_zero_point));
  if (g.sw == 1 || dw_windows(g)) {  // plain rows (rs a multiple of 16): the zero point, then the input row over it
    if (rs % 16 == 0) {
      for (int64_t b = 0; b < p.hp * rs; b += 16) vst1q_s8(plane + b, vzp);
    } else {
      fill_bytes(plane, 0, p.hp * rs, vzp);
    }
    for (int64_t ih = 0; ih < g.h; ++ih) {
      int8_t* d = plane + (ih + g.pt) * rs + g.pl;
      const int8_t* s = x + ih * g.w;
      if (g.w >= 16) {
        copy_bytes16(s, d, g.w);
      } else if (g.w >= 8) {  // two 8-byte blocks, overlapping
        vst1_s8(d, vld1_s8(s));
        vst1_s8(d + g.w - 8, vld1_s8(s + g.w - 8));
      } else if (g.w >= 4) {  // two 4-byte blocks, overlapping
        uint32_t a, b;
        std::memcpy(&a, s, 4);
        std::memcpy(&b, s + g.w - 4, 4);
        std::memcpy(d, &a, 4);
        std::memcpy(d + g.w - 4, &b, 4);
      } else {
        for (int64_t i = 0; i < g.w; ++i) d[i] = s[i];
      }
    }
    return;
  }
  fill_bytes(plane, 0, p.hp * rs, vzp);
  for (int64_t ih = 0; ih < g.h; ++ih) {
    int8_t* d = plane + (ih + g.pt) * rs;
    const int8_t* s = x + ih * g.w;
    int64_t iw = 0;
    if (g.sw == 2)
      for (; iw + 32 <= g.w; iw += 32) {
        const int8x16x2_t v = vld2q_s8(s + iw);
        for (int e = 0; e < 2; ++e) {
          const int64_t c = g.pl + iw + e;
          vst1q_s8(d + (c & 1) * wq + (c >> 1), v.val[e]);
        }
      }
    for (; iw < g.w; ++iw) {
      const int64_t c = g.pl + iw;
      d[(c % g.sw) * wq + c / g.sw] = s[iw];
    }
  }
}

// One output row of a channel, L (8, 16 or 32) positions a step: row (the plane's first row for it), off[t] (tap t's
// byte offset from it), w8[t] (tap t's weight in every lane), start, the channel's requantization.
// kMin: the channel has a weight of -128 (never from the quantizer, possible in other int8 models). A pair of products
// then spans [-32512, 32768], one past int16: its int16 sum is taken 1 lower ([-32513, 32767], exact), and start
// holds the pairs' 1s back (the caller adds taps / 2).
template <int L, bool kMin>
void dw_row(const kernels::ConvGeometry& g, const int8_t* row, const int64_t* off, const int8x16_t* w8, int64_t taps,
            int32_t start, const kernels::Requant& rq, int8_t* y) {
  constexpr int kH = L / 8;  // int16x8 sums per step
  for (int64_t ow0 = 0; ow0 < g.ow; ow0 += L) {
    int16x8_t s[kH];
    int32x4_t acc[2 * kH];
    for (int v = 0; v < 2 * kH; ++v) acc[v] = vdupq_n_s32(start);
    for (int64_t t = 0; t < taps; t += 2) {  // taps is even: an odd count ends with a zero-weight tap
      const int8_t* x0 = row + off[t] + ow0;
      const int8_t* x1 = row + off[t + 1] + ow0;
      const int8x16_t wa = w8[t], wb = w8[t + 1];
      if (L == 8) {
        s[0] = vmlal_s8(vmull_s8(vld1_s8(x0), vget_low_s8(wa)), vld1_s8(x1), vget_low_s8(wb));
      } else {
        DTORCH_NEON64DOT_UNROLL
        for (int v = 0; v < kH / 2; ++v) {
          const int8x16_t a = vld1q_s8(x0 + 16 * v), b = vld1q_s8(x1 + 16 * v);
          s[2 * v] = vmlal_s8(vmull_s8(vget_low_s8(a), vget_low_s8(wa)), vget_low_s8(b), vget_low_s8(wb));
          s[2 * v + 1] = vmlal_high_s8(vmull_high_s8(a, wa), b, wb);
        }
      }
      if (kMin) {
        DTORCH_NEON64DOT_UNROLL
        for (int v = 0; v < kH; ++v) s[v] = vsubq_s16(s[v], vdupq_n_s16(1));
      }
      DTORCH_NEON64DOT_UNROLL
      for (int v = 0; v < kH; ++v) {
        acc[2 * v] = vaddw_s16(acc[2 * v], vget_low_s16(s[v]));
        acc[2 * v + 1] = vaddw_high_s16(acc[2 * v + 1], s[v]);
      }
    }
    const int64_t n = g.ow - ow0;
    if (L == 8) {
      const int16x8_t h = kernels::requant_zp8(kernels::requant_apply(acc[0], rq), kernels::requant_apply(acc[1], rq),
                                               rq);
      const int8x16_t b = kernels::requant_clamp16(h, h, rq);
      if (n >= 8) {
        vst1_s8(y + ow0, vget_low_s8(b));
      } else {
        store_partial(b, static_cast<int>(n), y + ow0);
      }
    } else {
      DTORCH_NEON64DOT_UNROLL
      for (int v = 0; v < L / 16; ++v) {
        const int8x16_t b = kernels::requantize16(acc[4 * v], acc[4 * v + 1], acc[4 * v + 2], acc[4 * v + 3], rq);
        if (n >= 16 * (v + 1)) {
          vst1q_s8(y + ow0 + 16 * v, b);
        } else if (n > 16 * v) {
          store_partial(b, static_cast<int>(n - 16 * v), y + ow0 + 16 * v);
        }
      }
    }
  }
}

// One output row of a channel on the windows path, 4 * G positions a step: for each kernel row i, a 16-byte load per 4
// positions, TBL gathers each position's (up to) 4 taps into its 32-bit lane (idx: sliding windows for the column
// stride), and SDOT adds them times the row's weights (wrow[i]: w[i][0..kw-1] and zeros, in every lane).
// SW: the column stride; KH: the kernel's rows, 0 = any (g.kh); K: the multiplier's kind (requant_apply), -1 = any.
template <int G, int SW, int KH, int K>
inline void dw_win_row(const kernels::ConvGeometry& g, const int8_t* row, int64_t rs, const int8x16_t* wrow,
                       uint8x16_t idx, int32_t start, const kernels::Requant& rq, int8_t* y);

// Output rows [oh0, oh1) of a channel (plane: its copy; yplane: its output plane).
template <int G, int SW, int KH, int K>
void dw_win_rows(const kernels::ConvGeometry& g, const int8_t* plane, int64_t rs, const int8x16_t* wrow,
                 uint8x16_t idx, int32_t start, const kernels::Requant& rq, int64_t oh0, int64_t oh1, int8_t* yplane) {
  for (int64_t oh = oh0; oh < oh1; ++oh)
    dw_win_row<G, SW, KH, K>(g, plane + oh * g.sh * rs, rs, wrow, idx, start, rq, yplane + oh * g.ow);
}

template <int G, int SW, int KH, int K>
__attribute__((always_inline)) inline void dw_win_row(const kernels::ConvGeometry& g, const int8_t* row, int64_t rs,
                                                      const int8x16_t* wrow, uint8x16_t idx, int32_t start,
                                                      const kernels::Requant& rq, int8_t* y) {
  const int64_t kh = KH > 0 ? KH : g.kh, rstep = g.dh * rs;
  for (int64_t ow0 = 0; ow0 < g.ow; ow0 += 4 * G) {
    int32x4_t acc[G];
    DTORCH_NEON64DOT_UNROLL
    for (int q = 0; q < G; ++q) acc[q] = vdupq_n_s32(start);
    const int8_t* r = row + ow0 * SW;
    DTORCH_NEON64DOT_UNROLL
    for (int64_t i = 0; i < kh; ++i) {
      DTORCH_NEON64DOT_UNROLL
      for (int q = 0; q < G; ++q)
        acc[q] = vdotq_s32(acc[q], vqtbl1q_s8(vld1q_s8(r + i * rstep + 4 * q * SW), idx), wrow[i]);
    }
    int8x16_t b;
    if (G == 4) {
      b = kernels::requant_clamp16(
          kernels::requant_zp8(kernels::requant_apply<K>(acc[0], rq), kernels::requant_apply<K>(acc[G > 1 ? 1 : 0], rq), rq),
          kernels::requant_zp8(kernels::requant_apply<K>(acc[G > 2 ? 2 : 0], rq), kernels::requant_apply<K>(acc[G > 3 ? 3 : 0], rq),
                               rq),
          rq);
    } else {
      const int16x8_t h = kernels::requant_zp8(kernels::requant_apply<K>(acc[0], rq),
                                               kernels::requant_apply<K>(acc[G > 1 ? 1 : 0], rq), rq);
      b = kernels::requant_clamp16(h, h, rq);
    }
    const int64_t n = g.ow - ow0;
    if (n >= 4 * G) {
      if (G == 4) {
        vst1q_s8(y + ow0, b);
      } else if (G == 2) {
        vst1_s8(y + ow0, vget_low_s8(b));
      } else {
        vst1q_lane_s32(reinterpret_cast<int32_t*>(y + ow0), vreinterpretq_s32_s8(b), 0);
      }
    } else {
      store_partial(b, static_cast<int>(n), y + ow0);
    }
  }
}

using DwWinFn = void (*)(const kernels::ConvGeometry&, const int8_t*, int64_t, const int8x16_t*, uint8x16_t, int32_t,
                         const kernels::Requant&, int64_t, int64_t, int8_t*);

template <int SW, int KH, int K>
DwWinFn dw_win_fn_for(int64_t ow) {
  if (ow <= 4) return dw_win_rows<1, SW, KH, K>;
  if (ow <= 8) return dw_win_rows<2, SW, KH, K>;
  return dw_win_rows<4, SW, KH, K>;
}

template <int K>
DwWinFn dw_win_fn_kind(const kernels::ConvGeometry& g) {
  if (g.sw == 1) return g.kh == 3 ? dw_win_fn_for<1, 3, K>(g.ow) : dw_win_fn_for<1, 0, K>(g.ow);
  return g.kh == 3 ? dw_win_fn_for<2, 3, K>(g.ow) : dw_win_fn_for<2, 0, K>(g.ow);
}

// The windows kernel for the node and a channel's multiplier kind: 3-row kernels with their rows unrolled, the
// common kind (a multiplier below 1/2) without its test.
DwWinFn dw_win_fn(const kernels::ConvGeometry& g, int kind) {
  return kind == 0 ? dw_win_fn_kind<0>(g) : dw_win_fn_kind<-1>(g);
}

// The step for a row of OW outputs: the narrowest that covers it, else 32.
int64_t dw_step(int64_t ow) { return ow <= 8 ? 8 : ow <= 16 ? 16 : 32; }

using DwRowFn = void (*)(const kernels::ConvGeometry&, const int8_t*, const int64_t*, const int8x16_t*, int64_t, int32_t,
                         const kernels::Requant&, int8_t*);

Status depthwise(const KernelContext& ctx, const Plan& p, const int8_t* x, const int8_t* w, const float* ws,
                 const int32_t* bias, int8_t* y) {
  const kernels::ConvGeometry& g = p.g;
  const int64_t pb = dw_plane_bytes(p), wq = dw_wq(g), rs = dw_row_bytes(g), taps = g.kh * g.kw,
                step = dw_step(g.ow);
  const bool windows = dw_windows(g);
  // windows path: lane l of a 4-position group reads columns l * sw + 0..3 of its 16-byte load
  alignas(16) uint8_t idx_bytes[16];
  for (int l = 0; l < 4; ++l)
    for (int j = 0; j < 4; ++j) idx_bytes[4 * l + j] = static_cast<uint8_t>(l * g.sw + j);
  const uint8x16_t idx = vld1q_u8(idx_bytes);

  int8_t* planes = static_cast<int8_t*>(ctx.scratch);
  for (int64_t img = 0; img < g.n; ++img) {
    kernels::parallel_chunks(ctx.pool, g.c, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) dw_copy(p, x + (img * g.c + c) * g.h * g.w, planes + c * pb);
    });
    kernels::parallel_chunks(ctx.pool, g.c * g.oh, 4, [&](int64_t r0, int64_t r1) {
      int64_t cached = -1;
      int64_t off[kDwMaxTaps + 1];
      int8x16_t w8[kDwMaxTaps + 1];
      int8x16_t wrow[kDwMaxTaps];
      const int64_t even = taps + (taps & 1);  // an odd count gets a zero-weight tap at the last one's offset
      int32_t start = 0, start_min = 0;  // start_min: start + the pairs' 1s (dw_row<L, true>)
      bool min128 = false;               // the channel has a weight of -128
      kernels::Requant rq4{};
      DwWinFn win = nullptr;
      for (int64_t i = 0; i < g.kh; ++i)
        for (int64_t j = 0; j < g.kw; ++j) {
          const int64_t c = j * g.dw;
          off[i * g.kw + j] = i * g.dh * rs + (c % g.sw) * wq + c / g.sw;
        }
      off[taps] = off[taps - 1];
      w8[taps] = vdupq_n_s8(0);
      for (int64_t r = r0; r < r1;) {
        const int64_t ch = r / g.oh, oh = r % g.oh;
        const int64_t oh_end = g.oh - oh < r1 - r ? g.oh : oh + (r1 - r);  // this channel's rows in the chunk
        if (ch != cached) {
          cached = ch;
          uint32_t sum = 0;
          for (int64_t t = 0; t < taps; ++t) {
            w8[t] = vdupq_n_s8(w[ch * taps + t]);
            sum += static_cast<uint32_t>(static_cast<int32_t>(w[ch * taps + t]));
          }
          if (windows)
            for (int64_t i = 0; i < g.kh; ++i) {  // wrow[i]: kernel row i's weights, zeros past kw, in every lane
              uint32_t word = 0;
              for (int64_t j = 0; j < g.kw; ++j)
                word |= static_cast<uint32_t>(static_cast<uint8_t>(w[ch * taps + i * g.kw + j])) << (8 * j);
              wrow[i] = vreinterpretq_s8_u32(vdupq_n_u32(word));
            }
          int32_t wsum;
          std::memcpy(&wsum, &sum, sizeof wsum);
          start = kernels::qconv_start(bias, ch, p.io.x_zero_point, wsum);
          min128 = false;
          for (int64_t t = 0; t < taps; ++t) min128 = min128 || w[ch * taps + t] == -128;
          const uint32_t pairs_back = static_cast<uint32_t>(start) + static_cast<uint32_t>(even / 2);
          std::memcpy(&start_min, &pairs_back, sizeof start_min);
          rq4 = kernels::requant_of(kernels::channel_multiplier(p.io, ws, ch), p.io.y_zero_point, p.io.lo, p.io.hi);
          if (windows) win = dw_win_fn(g, rq4.kind);
        }
        int8_t* yplane = y + (img * g.c + ch) * g.oh * g.ow;
        if (windows) {
          win(g, planes + ch * pb, rs, wrow, idx, start, rq4, oh, oh_end, yplane);
        } else {
          for (int64_t h = oh; h < oh_end; ++h) {
            const int8_t* row = planes + ch * pb + h * g.sh * rs;
            int8_t* yr = yplane + h * g.ow;
            if (min128) {
              const DwRowFn f = step == 8 ? dw_row<8, true> : step == 16 ? dw_row<16, true> : dw_row<32, true>;
              f(g, row, off, w8, even, start_min, rq4, yr);
            } else {
              const DwRowFn f = step == 8 ? dw_row<8, false> : step == 16 ? dw_row<16, false> : dw_row<32, false>;
              f(g, row, off, w8, even, start, rq4, yr);
            }
          }
        }
        r += oh_end - oh;
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
  const kernels::ConvGeometry& g = p.g;
  DTORCH_RETURN_IF_ERROR(kernels::check_weight_scales(kOp, p.io, in[2], g.o));
  if (!p.direct && g.kh * g.kw > kDwMaxTaps) return portable()->run(ctx, in, n_in, out, n_out);
  const size_t need = static_cast<size_t>(p.direct ? scratch_bytes_of(p) : dw_scratch_bytes(p));
  DTORCH_RETURN_IF_ERROR(kernels::check_qconv_output(kOp, ctx, out[0], g, need));
  if (out[0].shape.numel() == 0) return Status::Ok();
  const float* ws = in[2].as<const float>();
  const int32_t* bias = kernels::optional_present(in, n_in, 3) ? in[3].as<const int32_t>() : nullptr;
  if (!p.direct)
    return depthwise(ctx, p, in[0].as<const int8_t>(), in[1].as<const int8_t>(), ws, bias, out[0].as<int8_t>());
  uint8_t* scratch = static_cast<uint8_t*>(ctx.scratch);
  const int64_t pb = packed_bytes(g);
  const uint8_t* packed = static_cast<const uint8_t*>(ctx.prepared);
  if (packed == nullptr || ctx.prepared_bytes != static_cast<size_t>(pb)) {
    pack(g, in[1].as<const int8_t>(), scratch);
    packed = scratch;
  }
  int64_t* off = reinterpret_cast<int64_t*>(scratch + kernels::ceil_div(pb, 64) * 64);
  int8_t* xs = reinterpret_cast<int8_t*>(off) + kernels::ceil_div(p.steps * 8, 64) * 64;
  for (int64_t q = 0; q < p.cq; ++q)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        const int64_t c = j * g.dw;
        off[(q * g.kh + i) * g.kw + j] = (((q * p.hp + i * g.dh) * g.sw + c % g.sw) * p.wq + c / g.sw) * 4;
      }
  const int32_t* sums = reinterpret_cast<const int32_t*>(packed + packed_weight_bytes(g));
  const int64_t ohw = g.oh * g.ow, vecs = kernels::ceil_div(g.ow, 4);
  for (int64_t img = 0; img < g.n; ++img) {
    const int8_t* x0 = in[0].as<const int8_t>() + img * g.c * g.h * g.w;
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      copy_input(ctx.pool, p, x0, gi, xs);
      int8_t* yg = out[0].as<int8_t>() + (img * g.o + gi * g.og) * ohw;
      // Units: (panel, output row); a unit runs the row's tiles of whole vectors (ceil(OW / 4) of them, in runs of
      // up to kNV).
      kernels::parallel_chunks(ctx.pool, p.panels * g.oh, 2, [&](int64_t u0, int64_t u1) {
        int64_t cached = -1;
        int32_t start[kNR];
        kernels::Requant rq4[kNR];
        TileArgs ta{nullptr, off, p.steps, nullptr, start, rq4, 0, 0, nullptr, ohw,
                    kernels::requant_of(rq::Multiplier{}, p.io.y_zero_point, p.io.lo, p.io.hi)};
        int kind = 0;  // kTiles' row: 1 + the panel's kind, 0 when its channels' kinds differ
        for (int64_t u = u0; u < u1; ++u) {
          const int64_t a = u / g.oh, oh = u % g.oh;
          if (a != cached) {  // the panel's starting sums and multipliers
            cached = a;
            ta.noc = static_cast<int>(g.og - a * kNR < kNR ? g.og - a * kNR : kNR);
            ta.w = reinterpret_cast<const int8_t*>(packed) + (gi * p.panels + a) * p.steps * kNR * 4;
            for (int c = 0; c < kNR; ++c) {
              if (c < ta.noc) {
                const int64_t o = gi * g.og + a * kNR + c;
                start[c] = kernels::qconv_start(bias, o, p.io.x_zero_point, sums[o]);
                rq4[c] = kernels::requant_of(kernels::channel_multiplier(p.io, ws, o), p.io.y_zero_point, p.io.lo,
                                              p.io.hi);
              } else {
                start[c] = 0;
                rq4[c] = rq4[0];  // a channel past the group's: never stored
              }
            }
            kind = 1 + rq4[0].kind;
            for (int c = 1; c < ta.noc; ++c)
              if (rq4[c].kind != rq4[0].kind) kind = 0;
          }
          const int8_t* xrow = xs + oh * g.sh * g.sw * p.wq * 4;
          int8_t* yrow = yg + a * kNR * ohw + oh * g.ow;
          for (int64_t v0 = 0; v0 < vecs; v0 += kNV) {
            const int64_t nv = vecs - v0 < kNV ? vecs - v0 : kNV;
            const int64_t ow0 = v0 * 4;
            ta.x = xrow + ow0 * 4;
            ta.y = yrow + ow0;
            ta.npos = static_cast<int>(g.ow - ow0 < 4 * nv ? g.ow - ow0 : 4 * nv);
            kTiles[kind][nv - 1](ta);
          }
        }
      });
    }
  }
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_NEON64DOT_KERNEL(qconv2d, DType::kInt8, infer, run,
                                 (kernels::qconv_prepare_packed<packed_bytes, pack>));
}  // namespace dtorch
