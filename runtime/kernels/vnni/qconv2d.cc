// qconv2d on AVX-512 VNNI: the portable kernel's bits (kernels/portable/qconv2d.cc is the specification; integer
// sums do not depend on their order), reading and writing NCHW without a transposition:
//
// - Dense and grouped convolutions are a GEMM whose vector lanes are output positions. Each image and group's input
//   is copied once as u8 (u = x + 128) in blocks of 4 channels, [C/4][sh][sw][plane][4]: the padded image split into
//   stride phases (padded row r, column c -> phase (r % sh, c % sw), position (r / sh) * wq + c / sw), the border
//   holding x_zero_point + 128 (the real value 0). A tap (i, j) of output position v = oh * wq + ow then reads the
//   position v + delta(i, j) of one phase plane, so 16 consecutive "virtual" outputs read 64 contiguous bytes (4
//   channels each), whatever the stride and padding; the virtual columns ow >= OW are computed and dropped.
// - A step of the K loop is one tap and 4 channels. The register tile is kRO output channels x kRV vectors of 16
//   positions: the input vectors are loaded once per step, each channel's 4 weights broadcast from the packed panel
//   ([steps][kRO] int32), and vpdpbusd adds 4 u8 x s8 products per lane. Accumulators start at
//   bias - (128 + x_zero_point) * sum(w) (what u - 128 - zp takes back; a padding tap adds w * 0 net).
// - Epilogue: one multiplier per vector (a vector is one channel's positions). With 32 <= s <= 54 (multipliers in
//   [2^-24, 2^-1): a trained network's) in 5 instructions: the 64-bit products of the even and odd lanes plus
//   2^(s-1) + zp * 2^s, their high halves (floor by 2^32), an arithmetic shift by s - 32 (floor(floor(a / 2^32) /
//   2^(s-32)) = floor(a / 2^s)), then a saturating narrowing to int8 and the activation's clamp in bytes; otherwise
//   requantize16 (64-bit shifts and clamps). The value before the narrowing is f + zp with |f| < 2^30: the
//   saturation is the clamp to [-128, 127] that requant::requantize applies. The 16 bytes go to the NCHW output with
//   masked stores, one per output row the vector touches.
// - prepare keeps the packed weights and, where the scales and bias are constants, each channel's starting sum and
//   multiplier (ChanRec), so a run does no per-channel setup.
// Depthwise convolutions (one input and one output channel per group) with column stride 1 or 2, no column
// dilation and up to 8 columns: `depthwise_dot` (vpdpbusd on each row's taps, rows of up to 8 outputs two to a
// vector, 3x3 and 5x5 kernels with row stride 1 or 2 four rows or row pairs a pass, each input row shuffled once);
// other depthwise shapes: `depthwise` (vpmulld).
// Measured on MobileNetV2 (benchmarks/bench_int8.py): the pointwise layers run at the vpdpbusd port's rate where K
// >= 64; with K = 16 to 32 the epilogue (mul_shift_fast: 3 port-0 and 2 port-5 instructions a vector, 4 vectors
// narrowed together) weighs as much as the products.
#include <cstdint>
#include <cstring>

#include "kernels/common/portable_kernel.h"
#include "kernels/common/conv_geometry.h"
#include "kernels/common/qconv_prepare.h"
#include "kernels/common/quant_params.h"
#include "kernels/common/util.h"
#include "kernels/vnni/qconv_vnni.h"
#include "kernels/vnni/vnni.h"

namespace dtorch {
namespace {

using kernels::op_error;
namespace rq = kernels::requant;
constexpr char kOp[] = "qconv2d";
constexpr __mmask8 k8 = 0xFF;      // the all-lanes mask forms throughout: see requantize16 (vnni.h)
constexpr __mmask16 k16 = 0xFFFF;
using kernels::ChanRec;
using kernels::kRO;
using kernels::kRV;
using kernels::kVP;
using kernels::Plan;
using kernels::Segs;
using kernels::copy_in;
using kernels::copy_plain;
using kernels::segments;
using kernels::chan_rec;
using kernels::copy_run;
using kernels::interleave4;
using kernels::interleave4_tail;

const KernelDef* portable() { return kernels::portable_kernel<kOp, DType::kInt8>(); }

// Packed weights: per group and panel [steps][kRO] x 4 s8 (0 past the group's channels and past og), then each
// output channel's weight sum (int32), then (when prepare could make them) each channel's ChanRec.
int64_t packed_weight_bytes(const kernels::ConvGeometry& g) {
  return g.groups * kernels::ceil_div(g.og, kRO) * g.kh * g.kw * kernels::ceil_div(g.cg, 4) * kRO * 4;
}
int64_t packed_bytes(const kernels::ConvGeometry& g) { return packed_weight_bytes(g) + g.o * int64_t{4}; }
int64_t recs_offset(const kernels::ConvGeometry& g) { return kernels::ceil_div(packed_bytes(g), 64) * 64; }
int64_t with_recs_bytes(const kernels::ConvGeometry& g) {
  return recs_offset(g) + g.o * static_cast<int64_t>(sizeof(ChanRec));
}

// The depthwise dot path (see depthwise_dot): its shapes, and its packed weights ([O][kh][2] int32) and records.
constexpr int64_t kDotMaxRows = 16;  // kernel rows here; taller kernels take `depthwise`
bool dot_packs(const kernels::ConvGeometry& g) { return g.kw <= 8 && g.kh <= kDotMaxRows; }
bool dot_takes(const kernels::ConvGeometry& g) { return g.dw == 1 && (g.sw == 1 || g.sw == 2) && dot_packs(g); }
int64_t dot_weight_bytes(const kernels::ConvGeometry& g) { return kernels::ceil_div(g.o * g.kh * 2 * 4, 64) * 64; }
int64_t dot_bytes(const kernels::ConvGeometry& g) {
  return dot_weight_bytes(g) + g.o * static_cast<int64_t>(sizeof(ChanRec));
}

void dot_pack(const kernels::ConvGeometry& g, const int8_t* w, int32_t* wpk) {
  const int64_t taps = g.kh * g.kw;
  for (int64_t o = 0; o < g.o; ++o)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int q = 0; q < 2; ++q) {
        uint8_t b4[4] = {0, 0, 0, 0};
        for (int t = 0; t < 4; ++t)
          if (4 * q + t < g.kw) b4[t] = static_cast<uint8_t>(w[o * taps + i * g.kw + 4 * q + t]);
        std::memcpy(&wpk[(o * g.kh + i) * 2 + q], b4, 4);
      }
}

void dot_recs(const kernels::ConvGeometry& g, const kernels::QuantIO& io, const int8_t* w, const float* ws,
              const int32_t* bias, ChanRec* recs) {
  kernels::weight_recs(io, w, g.o, g.kh * g.kw, ws, bias, recs);
}

// Scratch: the packed weights and channel records (when prepare did not keep them), the step offsets, one image and
// group's copy.
int64_t scratch_bytes_of(const Plan& p) {
  return with_recs_bytes(p.g) + kernels::ceil_div(p.steps * 8, 64) * 64 + p.copy + 64;
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  const KernelDef* k = portable();
  if (k == nullptr) return op_error(StatusCode::kInternal, kOp, "the portable kernel is not registered");
  DTORCH_RETURN_IF_ERROR(k->infer(attrs, in, n_in, out, n_out, scratch_bytes));
  Plan p;
  DTORCH_RETURN_IF_ERROR(kernels::plan_of(kOp, attrs, in, out[0], &p));
  if (p.direct) *scratch_bytes = static_cast<size_t>(scratch_bytes_of(p));
  else if (dot_takes(p.g)) *scratch_bytes = static_cast<size_t>(dot_bytes(p.g));
  return Status::Ok();
}

void pack(const kernels::ConvGeometry& g, const int8_t* w, uint8_t* dst) {
  const int64_t cb = kernels::ceil_div(g.cg, 4), panels = kernels::ceil_div(g.og, kRO);
  const int64_t steps = g.kh * g.kw * cb, K = g.cg * g.kh * g.kw;
  int8_t* wp = reinterpret_cast<int8_t*>(dst);
  std::memset(wp, 0, static_cast<size_t>(packed_weight_bytes(g)));
  for (int64_t gi = 0; gi < g.groups; ++gi)
    for (int64_t o = 0; o < g.og; ++o) {
      int8_t* panel = wp + (gi * panels + o / kRO) * steps * kRO * 4;
      const int8_t* wo = w + (gi * g.og + o) * K;
      for (int64_t c = 0; c < g.cg; ++c)
        for (int64_t i = 0; i < g.kh; ++i)
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t step = (i * g.kw + j) * cb + c / 4;
            panel[(step * kRO + o % kRO) * 4 + c % 4] = wo[(c * g.kh + i) * g.kw + j];
          }
    }
  int32_t* sums = reinterpret_cast<int32_t*>(dst + packed_weight_bytes(g));
  kernels::qconv_weight_sums(w, g.o, K, sums);
}

void make_recs(const kernels::ConvGeometry& g, const kernels::QuantIO& io, const float* ws, const int32_t* bias,
               const int32_t* sums, ChanRec* recs) {
  for (int64_t o = 0; o < g.o; ++o) recs[o] = chan_rec(io, ws, bias, o, sums[o]);
}

// Keeps the packed weights, and the channel records where the scales and bias are constants too.
Status prepare(const Attrs& attrs, const TensorView* in, int n_in, void* dst, size_t* bytes) {
  *bytes = 0;
  kernels::ConvGeometry g{};
  if (!kernels::qconv_weight_geometry(attrs, in, n_in, &g)) return Status::Ok();
  kernels::QuantIO io{};
  const bool bias_const = !kernels::optional_present(in, n_in, 3) || in[3].data != nullptr;
  const bool recs = n_in > 2 && in[2].data != nullptr && in[2].dtype == DType::kFloat32 &&
                    in[2].shape.numel() == g.o && bias_const &&
                    (!kernels::optional_present(in, n_in, 3) ||
                     (in[3].dtype == DType::kInt32 && in[3].shape.numel() == g.o)) &&
                    kernels::read_quant_io(kOp, attrs, &io).ok();
  const int32_t* bias = kernels::optional_present(in, n_in, 3) ? in[3].as<const int32_t>() : nullptr;
  if (g.cg == 1 && g.og == 1) {  // depthwise: the dot path's weights and records, only all together
    if (!recs || !dot_packs(g)) return Status::Ok();
    *bytes = static_cast<size_t>(dot_bytes(g));
    if (dst == nullptr) return Status::Ok();
    uint8_t* d = static_cast<uint8_t*>(dst);
    dot_pack(g, in[1].as<const int8_t>(), reinterpret_cast<int32_t*>(d));
    dot_recs(g, io, in[1].as<const int8_t>(), in[2].as<const float>(), bias,
             reinterpret_cast<ChanRec*>(d + dot_weight_bytes(g)));
    return Status::Ok();
  }
  *bytes = static_cast<size_t>(recs ? with_recs_bytes(g) : packed_bytes(g));
  if (dst == nullptr) return Status::Ok();
  uint8_t* d = static_cast<uint8_t*>(dst);
  pack(g, in[1].as<const int8_t>(), d);
  if (recs)
    make_recs(g, io, in[2].as<const float>(), bias, reinterpret_cast<const int32_t*>(d + packed_weight_bytes(g)),
              reinterpret_cast<ChanRec*>(d + recs_offset(g)));
  return Status::Ok();
}

struct TileArgs {
  const uint8_t* a;     // the block's first position in the copy
  const int64_t* off;   // each step's byte offset
  int64_t steps;
  const int32_t* w;     // the panel: [steps][kRO]
  const ChanRec* rec;   // the panel's channels
  int8_t* y;            // the panel's first channel's output plane
  int64_t ohw;
  const Segs* segs;
  const kernels::QuantIO* io;
};

// acc += the u8 x s8 products of x and the 4 weights at w, broadcast to every lane (vpdpbusd with an embedded
// broadcast). Written out because GCC 12 copies each accumulator around _mm512_dpbusd_epi32 (spilling a 24-register
// tile), where the instruction updates its register in place.
inline void dpbusd_bcst(__m512i& acc, __m512i x, const int32_t* w) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(x), "m"(*w));
}
inline void dpbusd(__m512i& acc, __m512i x, __m512i w) { asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(x), "v"(w)); }

template <int RO, int RV>
void tile(const TileArgs& t) {
  __m512i acc[RO][RV];
#pragma GCC unroll 8
  for (int o = 0; o < RO; ++o) {
    const __m512i s = _mm512_set1_epi32(t.rec[o].start);
#pragma GCC unroll 4
    for (int k = 0; k < RV; ++k) acc[o][k] = s;
  }
  const int32_t* w = t.w;
  for (int64_t s = 0; s < t.steps; ++s, w += kRO) {
    const uint8_t* as = t.a + t.off[s];
    __m512i x[RV];
#pragma GCC unroll 4
    for (int k = 0; k < RV; ++k) x[k] = _mm512_loadu_si512(as + 64 * k);
#pragma GCC unroll 8
    for (int o = 0; o < RO; ++o)
#pragma GCC unroll 4
      for (int k = 0; k < RV; ++k) dpbusd_bcst(acc[o][k], x[k], w + o);
  }
  // Epilogue. Everything it reads is copied first: the int8 stores may alias any of it.
  const kernels::QuantIO io = *t.io;
  const __m128i lo8 = _mm_set1_epi8(static_cast<char>(io.lo)), hi8 = _mm_set1_epi8(static_cast<char>(io.hi));
  bool simple = true;  // one masked store per vector (1x1 layers: always)
  int64_t soff[RV];
  __mmask16 smask[RV];
#pragma GCC unroll 4
  for (int k = 0; k < RV; ++k) {
    simple = simple && t.segs->n[k] == 1;
    soff[k] = t.segs->s[k][0].off;
    smask[k] = t.segs->s[k][0].mask;
  }
  const Segs* segs = t.segs;
  const int64_t ohw = t.ohw;
  int8_t* const y = t.y;
  const ChanRec* const rec = t.rec;
  // Four vectors of 64 consecutive outputs (1x1 layers, rows of 64): store64's narrowing of the four together.
  bool packed = simple && RV == 4 && smask[0] == 0xFFFF;
#pragma GCC unroll 4
  for (int k = 1; k < RV; ++k) packed = packed && soff[k] == soff[0] + 16 * k && (k == RV - 1 || smask[k] == 0xFFFF);
  __mmask64 pmask = 0;
#pragma GCC unroll 4
  for (int k = 0; k < RV; ++k) pmask |= static_cast<__mmask64>(smask[k]) << (16 * k);
  const kernels::Store64 st(io);
#pragma GCC unroll 8
  for (int o = 0; o < RO; ++o) {
    const ChanRec c = rec[o];
    int8_t* yo = y + o * ohw;
    __m128i q[RV];
    if constexpr (RV == 4) {
      if (packed && c.fast) {  // acc holds c.start already: store64 adds a zero start
        ChanRec c0 = c;
        c0.start = 0;
        kernels::store64(c0, acc[o], yo + soff[0], pmask, st, io);
        continue;
      }
    }
    if (c.fast) {
      const __m512i m = _mm512_set1_epi64(c.m64), r = _mm512_set1_epi64(c.r64);
      const __m512i cnt = kernels::fast_count(c.shift);
#pragma GCC unroll 4
      for (int k = 0; k < RV; ++k) q[k] = kernels::requant_fast(acc[o][k], m, r, cnt, lo8, hi8);
    } else {
#pragma GCC unroll 4
      for (int k = 0; k < RV; ++k)
        q[k] = kernels::requantize16(acc[o][k], rq::Multiplier{c.m, c.shift}, io.y_zero_point, io.lo, io.hi);
    }
    if (simple) {
#pragma GCC unroll 4
      for (int k = 0; k < RV; ++k) _mm_mask_storeu_epi8(yo + soff[k], smask[k], q[k]);
    } else {
      for (int k = 0; k < RV; ++k)
        for (int i = 0; i < segs->n[k]; ++i) _mm_mask_storeu_epi8(yo + segs->s[k][i].off, segs->s[k][i].mask, q[k]);
    }
  }
}

using TileFn = void (*)(const TileArgs&);
constexpr TileFn kTiles[kRO][kRV] = {
    {tile<1, 1>, tile<1, 2>, tile<1, 3>, tile<1, 4>}, {tile<2, 1>, tile<2, 2>, tile<2, 3>, tile<2, 4>},
    {tile<3, 1>, tile<3, 2>, tile<3, 3>, tile<3, 4>}, {tile<4, 1>, tile<4, 2>, tile<4, 3>, tile<4, 4>},
    {tile<5, 1>, tile<5, 2>, tile<5, 3>, tile<5, 4>}, {tile<6, 1>, tile<6, 2>, tile<6, 3>, tile<6, 4>}};

void dense(const KernelContext& ctx, const Plan& p, const TensorView* in, int n_in, int8_t* y) {
  const kernels::ConvGeometry& g = p.g;
  uint8_t* scratch = static_cast<uint8_t*>(ctx.scratch);
  const uint8_t* packed = static_cast<const uint8_t*>(ctx.prepared);
  const bool have_recs = packed != nullptr && ctx.prepared_bytes == static_cast<size_t>(with_recs_bytes(g));
  if (packed == nullptr || (!have_recs && ctx.prepared_bytes != static_cast<size_t>(packed_bytes(g)))) {
    pack(g, in[1].as<const int8_t>(), scratch);
    packed = scratch;
  }
  const int32_t* sums = reinterpret_cast<const int32_t*>(packed + packed_weight_bytes(g));
  const ChanRec* recs = reinterpret_cast<const ChanRec*>(packed + recs_offset(g));
  if (!have_recs) {
    ChanRec* made = reinterpret_cast<ChanRec*>(scratch + recs_offset(g));
    make_recs(g, p.io, in[2].as<const float>(),
              kernels::optional_present(in, n_in, 3) ? in[3].as<const int32_t>() : nullptr, sums, made);
    recs = made;
  }
  int64_t* off = reinterpret_cast<int64_t*>(scratch + with_recs_bytes(g));
  uint8_t* xs = reinterpret_cast<uint8_t*>(off) + kernels::ceil_div(p.steps * 8, 64) * 64;
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t ri = i * g.dh, cj = j * g.dw;
      const int64_t delta = (ri / g.sh) * p.wq + cj / g.sw;
      for (int64_t b = 0; b < p.cb; ++b)
        off[(i * g.kw + j) * p.cb + b] = (((b * g.sh + ri % g.sh) * g.sw + cj % g.sw) * p.plane + delta) * 4;
    }
  const int64_t ohw = g.oh * g.ow;
  for (int64_t img = 0; img < g.n; ++img) {
    const int8_t* x0 = in[0].as<const int8_t>() + img * g.c * g.h * g.w;
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      int8_t* yg = y + (img * g.o + gi * g.og) * ohw;
      const int32_t* wg = reinterpret_cast<const int32_t*>(packed) + gi * p.panels * p.steps * kRO;
      // The tiles of blocks [b0, b1), every panel. Order: with a short K loop (K <= 64) panel by panel, so that each
      // output channel's plane is written in one stream (MobileNetV2's 16 -> 96 layer: 0.35 -> 0.29 ms); otherwise
      // block by block, each block's input read once from L1 for every panel.
      const bool panel_major = p.steps <= 16;
      auto tiles = [&](int64_t b0, int64_t b1, int64_t u0, int64_t u1) {
        const int64_t nb = b1 - b0;
        int64_t cur = -1;
        int rv = 0;
        Segs segs;
        for (int64_t u = u0; u < u1; ++u) {
          const int64_t blk = b0 + (panel_major ? u % nb : u / p.panels);
          const int64_t pan = panel_major ? u / nb : u % p.panels;
          if (blk != cur) {
            cur = blk;
            const int64_t left = kernels::ceil_div(p.vpos - blk * kVP, 16);
            rv = static_cast<int>(left < kRV ? left : kRV);
            segments(p, blk * kVP, rv, &segs);
          }
          const int64_t o0 = pan * kRO, ro = g.og - o0 < kRO ? g.og - o0 : kRO;
          const TileArgs ta{xs + blk * kVP * 4, off, p.steps, wg + pan * p.steps * kRO, recs + gi * g.og + o0,
                            yg + o0 * ohw, ohw, &segs, &p.io};
          kTiles[ro - 1][rv - 1](ta);
        }
      };
      // A widening layer with a short K loop splits its threads by panels (the tile order above): each thread writes
      // whole output planes, which the depthwise layer after it (split by channels) reads on the same core.
      const bool widening = panel_major && g.og > g.cg;
      if (p.plain && !widening) {
        // 1x1, stride 1, no padding: a block's tiles read only its own positions, so each thread copies the
        // positions of its blocks and runs their tiles, in one parallel region (no barrier between copy and tiles).
        kernels::parallel_chunks(ctx.pool, p.blocks, 1, [&](int64_t b0, int64_t b1) {
          copy_plain(p, x0, gi, xs, b0 * kVP, b1 * kVP);
          tiles(b0, b1, 0, (b1 - b0) * p.panels);
        });
      } else {
        copy_in(ctx.pool, p, x0, gi, xs);
        kernels::parallel_chunks(ctx.pool, p.blocks * p.panels, 1, [&](int64_t u0, int64_t u1) {
          tiles(0, p.blocks, u0, u1);
        });
      }
    }
  }
}

// Depthwise with vpdpbusd: 16 output positions of a row per vector (rows of at most 8 outputs: two rows per vector,
// one per 256-bit half); per kernel row, one masked load of the input row's bytes (the columns outside the image
// read as x_zero_point), flipped to u8, then for each group of 4 taps a dword permutation and an in-lane byte
// shuffle give each lane its position's 4 taps, and vpdpbusd adds them times the channel's 4 weights (0 past kw). A
// row outside the image reads x_zero_point throughout. Accumulators start at bias - (128 + zp) * sum(w), so every
// padding tap adds 0 net, as the portable kernel skips it. Each channel's weights ([kh][2] int32) and record are
// made at load time (prepare) where they are constants.

// What depthwise_dot's channel loop reads.
struct DwArgs {
  int64_t H, W, OH, OW, sh, sw, dh, pt, pl, need, per;
};

struct DwConst {
  __m512i perm[2], shuf, zp8, flip, padu;
  __m256i zp8h, perm_h[2], shuf_h, flip_h, padu_h;  // the lower 256 bits (dw_channel_pairs)
  __m128i lo8, hi8;
};

// The bytes [0, need) of an input row that a vector starting at column c0 reads inside [0, W) (the others read
// x_zero_point): `full` (all need bytes) away from the borders.
inline __mmask64 row_mask(int64_t c0, int64_t W, int64_t need, __mmask64 full) {
  if (c0 >= 0 && c0 + need <= W) return full;
  const int64_t lo_b = c0 < 0 ? -c0 : 0, hi_b = W - c0 < need ? W - c0 : need;
  return hi_b > lo_b ? (((~__mmask64{0}) >> (64 - hi_b)) & ~((__mmask64{1} << lo_b) - 1)) : __mmask64{0};
}

// Input row `row` of a plane (rows of W bytes from x, read from its column c0) as u8 (x + 128): the bytes in `mask`
// loaded, the others x_zero_point (zp8); a row outside [0, H) all x_zero_point (pad: its u8 form).
inline __m512i row_u8(const int8_t* x, int64_t row, int64_t H, int64_t W, __mmask64 mask, __m512i zp8, __m512i flip,
                      __m512i pad) {
  return static_cast<uint64_t>(row) < static_cast<uint64_t>(H)
             ? _mm512_xor_si512(_mm512_mask_loadu_epi8(zp8, mask, x + row * W), flip)
             : pad;
}
inline __m256i row_u8(const int8_t* x, int64_t row, int64_t H, int64_t W, __mmask32 mask, __m256i zp8, __m256i flip,
                      __m256i pad) {
  return static_cast<uint64_t>(row) < static_cast<uint64_t>(H)
             ? _mm256_xor_si256(_mm256_mask_loadu_epi8(zp8, mask, x + row * W), flip)
             : pad;
}

// Each lane's (or, at 256 bits, each of 8 lanes') 4 taps of group `perm` from a row's u8 bytes u.
inline __m512i row_taps(__m512i u, __m512i perm, __m512i shuf) {
  return _mm512_maskz_shuffle_epi8(~__mmask64{0}, _mm512_maskz_permutexvar_epi32(k16, perm, u), shuf);
}
inline __m256i row_taps(__m256i u, __m256i perm, __m256i shuf) {
  return _mm256_maskz_shuffle_epi8(~__mmask32{0}, _mm256_maskz_permutexvar_epi32(__mmask8{0xFF}, perm, u), shuf);
}

// A channel's requantization in the depthwise loops: requant_fast where its shift allows, else requantize16.
struct DwRequant {
  __m512i m64, r64;
  __m512i cnt;
  rq::Multiplier mul;
  bool fast;
  explicit DwRequant(const ChanRec& r)
      : m64(_mm512_set1_epi64(r.m64)), r64(_mm512_set1_epi64(r.r64)), cnt(kernels::fast_count(r.shift)),
        mul{r.m, r.shift}, fast(r.fast != 0) {}
  __m128i operator()(__m512i acc, const DwConst& k, const kernels::QuantIO& io) const {
    return fast ? kernels::requant_fast(acc, m64, r64, cnt, k.lo8, k.hi8)
                : kernels::requantize16(acc, mul, io.y_zero_point, io.lo, io.hi);
  }
};

// One channel's output plane yc from its input plane xc. KH, NGR: the kernel rows and 4-tap groups (0: kh_rt,
// ngr_rt).
template <int KH, int NGR, bool PAIR>
void dw_channel(const DwArgs& d, const DwConst& k, const int8_t* xc, int8_t* yc, const int32_t* wrow, int64_t kh_rt,
                int ngr_rt, const ChanRec& rec, const kernels::QuantIO& io) {
  const int64_t kh = KH > 0 ? KH : kh_rt;
  const int ngr = NGR > 0 ? NGR : ngr_rt;
  const int64_t H = d.H, W = d.W, OH = d.OH, OW = d.OW, per = d.per, need = d.need;
  __m512i wv[kDotMaxRows][2];
  for (int64_t i = 0; i < kh; ++i)
    for (int q = 0; q < ngr; ++q) wv[i][q] = _mm512_set1_epi32(wrow[i * 2 + q]);
  const DwRequant requant(rec);
  const __m512i start = _mm512_set1_epi32(rec.start);
  const __mmask64 full = (~__mmask64{0}) >> (64 - need);
  const int64_t rows_per = PAIR ? 2 : 1;
  for (int64_t oh = 0; oh < OH; oh += rows_per) {
    const bool second = PAIR && oh + 1 < OH;
    const int64_t top = oh * d.sh - d.pt;
    for (int64_t q0 = 0; q0 < OW; q0 += per) {
      const int64_t n = OW - q0 < per ? OW - q0 : per;
      const int64_t c0 = q0 * d.sw - d.pl;  // the input column of a row's byte 0
      const __mmask64 lmask = row_mask(c0, W, need, full);
      __m512i acc = start;
#pragma GCC unroll 8
      for (int64_t i = 0; i < kh; ++i) {
        const int64_t row = top + i * d.dh;
        __m512i u;
        if (!PAIR) {
          u = row_u8(xc + c0, row, H, W, lmask, k.zp8, k.flip, k.padu);
        } else {
          const int64_t row1 = row + d.sh;
          const __mmask32 m32 = static_cast<__mmask32>(lmask);
          const __m256i a = static_cast<uint64_t>(row) < static_cast<uint64_t>(H)
                                ? _mm256_mask_loadu_epi8(k.zp8h, m32, xc + row * W + c0)
                                : k.zp8h;
          const __m256i b = second && static_cast<uint64_t>(row1) < static_cast<uint64_t>(H)
                                ? _mm256_mask_loadu_epi8(k.zp8h, m32, xc + row1 * W + c0)
                                : k.zp8h;
          u = _mm512_xor_si512(_mm512_maskz_inserti64x4(k8, _mm512_castsi256_si512(a), b, 1), k.flip);
        }
#pragma GCC unroll 2
        for (int q = 0; q < ngr; ++q)
          dpbusd(acc, row_taps(u, k.perm[q], k.shuf), wv[i][q]);
      }
      const __m128i v = requant(acc, k, io);
      const __mmask16 live = static_cast<__mmask16>((uint32_t{1} << n) - 1);
      int8_t* yr = yc + oh * OW + q0;
      if (!PAIR) {
        _mm_mask_storeu_epi8(yr, live, v);
      } else {
        _mm_mask_storeu_epi8(yr, static_cast<__mmask16>(live & 0xFF), v);
        if (second) _mm_mask_storeu_epi8(yr + OW - 8, static_cast<__mmask16>(live << 8), v);
      }
    }
  }
}

// dw_channel for undilated rows, R output rows a pass (stride SH): the (R - 1) * SH + KH input rows they read are
// loaded and shuffled once, each meeting the weights of its place in every window that holds it (3x3 stride 1: 6
// loads and shuffles for 4 rows, where one row a pass takes 12). Rows past OH are computed and not stored.
template <int KH, int NGR, int R, int SH>
void dw_channel_rows(const DwArgs& d, const DwConst& k, const int8_t* xc, int8_t* yc, const int32_t* wrow, int64_t,
                     int, const ChanRec& rec, const kernels::QuantIO& io) {
  constexpr int kIn = (R - 1) * SH + KH;
  const int64_t H = d.H, W = d.W, OH = d.OH, OW = d.OW, need = d.need, pl = d.pl, pt = d.pt;
  __m512i wv[KH][NGR];
  for (int i = 0; i < KH; ++i)
    for (int q = 0; q < NGR; ++q) wv[i][q] = _mm512_set1_epi32(wrow[i * 2 + q]);
  // Locals, so that the compiler keeps them in registers across the stores (which may alias k).
  const __m512i perm0 = k.perm[0], perm1 = k.perm[1], shuf = k.shuf, zp8 = k.zp8, flip = k.flip, padu = k.padu;
  const DwRequant requant(rec);
  const __m512i start = _mm512_set1_epi32(rec.start);
  const __mmask64 full = (~__mmask64{0}) >> (64 - need);
  for (int64_t oh = 0; oh < OH; oh += R) {
    const int64_t rows = OH - oh < R ? OH - oh : R;
    const int64_t top = oh * SH - pt;
    for (int64_t q0 = 0; q0 < OW; q0 += 16) {
      const int64_t n = OW - q0 < 16 ? OW - q0 : 16;
      const int64_t c0 = q0 * d.sw - pl;  // the input column of a row's byte 0
      const __mmask64 lmask = row_mask(c0, W, need, full);
      const int8_t* xr = xc + c0;
      __m512i acc[R];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r] = start;
#pragma GCC unroll 16
      for (int t = 0; t < kIn; ++t) {
        const int64_t row = top + t;
        const __m512i u = row_u8(xr, row, H, W, lmask, zp8, flip, padu);
#pragma GCC unroll 2
        for (int q = 0; q < NGR; ++q) {
          const __m512i s = row_taps(u, q == 0 ? perm0 : perm1, shuf);
#pragma GCC unroll 8
          for (int r = 0; r < R; ++r) {
            const int i = t - r * SH;
            if (i >= 0 && i < KH) dpbusd(acc[r], s, wv[i][q]);
          }
        }
      }
      const __mmask16 live = static_cast<__mmask16>((uint32_t{1} << n) - 1);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
        if (r < rows) _mm_mask_storeu_epi8(yc + (oh + r) * OW + q0, live, requant(acc[r], k, io));
    }
  }
}

// dw_channel in pair mode (rows of at most 8 outputs) for undilated rows, P vectors a pass, vector p holding output
// rows oh + 2p (lower half) and oh + 2p + 1 (upper half): each input row the 2P rows read is loaded, flipped and
// shuffled once as 256 bits, and a vector's halves are put together per kernel row (MobileNetV2's 7 x 7 layers: one
// pass a channel, where dw_channel takes four).
template <int KH, int NGR, int P, int SH>
void dw_channel_pairs(const DwArgs& d, const DwConst& k, const int8_t* xc, int8_t* yc, const int32_t* wrow, int64_t,
                      int, const ChanRec& rec, const kernels::QuantIO& io) {
  constexpr int kIn = (2 * P - 1) * SH + KH;
  const int64_t H = d.H, W = d.W, OH = d.OH, OW = d.OW, need = d.need;
  __m512i wv[KH][NGR];
  for (int i = 0; i < KH; ++i)
    for (int q = 0; q < NGR; ++q) wv[i][q] = _mm512_set1_epi32(wrow[i * 2 + q]);
  const __m256i perm0 = k.perm_h[0], perm1 = k.perm_h[1], shuf = k.shuf_h, zp8 = k.zp8h, flip = k.flip_h,
                padu = k.padu_h;
  const DwRequant requant(rec);
  const __m512i start = _mm512_set1_epi32(rec.start);
  const int64_t c0 = -d.pl;  // the input column of a row's byte 0 (one vector spans the row)
  const __mmask32 lmask = static_cast<__mmask32>(row_mask(c0, W, need, (~__mmask64{0}) >> (64 - need)));
  const int8_t* xr = xc + c0;
  const __mmask16 live = static_cast<__mmask16>((uint32_t{1} << OW) - 1);
  for (int64_t oh = 0; oh < OH; oh += 2 * P) {
    const int64_t top = oh * SH - d.pt;
    __m256i rs[kIn][NGR];  // each input row's shuffled taps, 4-tap group q
#pragma GCC unroll 32
    for (int t = 0; t < kIn; ++t) {
      const int64_t row = top + t;
      const __m256i u = row_u8(xr, row, H, W, lmask, zp8, flip, padu);
#pragma GCC unroll 2
      for (int q = 0; q < NGR; ++q)
        rs[t][q] = row_taps(u, q == 0 ? perm0 : perm1, shuf);
    }
#pragma GCC unroll 8
    for (int pv = 0; pv < P; ++pv) {
      const int64_t r0 = oh + 2 * pv;
      if (r0 >= OH) break;
      __m512i acc = start;
#pragma GCC unroll 16
      for (int i = 0; i < KH; ++i)
#pragma GCC unroll 2
        for (int q = 0; q < NGR; ++q)
          dpbusd(acc, _mm512_maskz_inserti64x4(k8, _mm512_castsi256_si512(rs[2 * pv * SH + i][q]),
                                               rs[(2 * pv + 1) * SH + i][q], 1),
                 wv[i][q]);
      const __m128i v = requant(acc, k, io);
      _mm_mask_storeu_epi8(yc + r0 * OW, static_cast<__mmask16>(live & 0xFF), v);
      if (r0 + 1 < OH) _mm_mask_storeu_epi8(yc + (r0 + 1) * OW - 8, static_cast<__mmask16>(live << 8), v);
    }
  }
}

using DwChannelFn = void (*)(const DwArgs&, const DwConst&, const int8_t*, int8_t*, const int32_t*, int64_t, int,
                             const ChanRec&, const kernels::QuantIO&);

// The channel loop for a kernel of kh rows and ngr 4-tap groups. rows: the row stride (1 or 2) where the kernel's
// rows are undilated (passes of several rows: dw_channel_rows, dw_channel_pairs), else 0 (dw_channel).
template <int KH, int NGR>
DwChannelFn dw_channel_of(bool pair, int rows) {
  if (pair) return rows == 1 ? dw_channel_pairs<KH, NGR, 4, 1> : rows == 2 ? dw_channel_pairs<KH, NGR, 4, 2>
                                                                           : dw_channel<KH, NGR, true>;
  return rows == 1 ? dw_channel_rows<KH, NGR, 4, 1> : rows == 2 ? dw_channel_rows<KH, NGR, 4, 2>
                                                                : dw_channel<KH, NGR, false>;
}

DwChannelFn dw_channel_fn(int64_t kh, int ngr, bool pair, int rows) {
  if (kh == 3 && ngr == 1) return dw_channel_of<3, 1>(pair, rows);
  if (kh == 5 && ngr == 2) return dw_channel_of<5, 2>(pair, rows);
  return pair ? dw_channel<0, 0, true> : dw_channel<0, 0, false>;
}

void depthwise_dot(const KernelContext& ctx, const Plan& p, const TensorView* in, int n_in, int8_t* y) {
  const kernels::ConvGeometry g = p.g;
  const kernels::QuantIO io = p.io;
  const int8_t* x = in[0].as<const int8_t>();
  const uint8_t* prepared = static_cast<const uint8_t*>(ctx.prepared);
  const int32_t* wpk;
  const ChanRec* recs;
  if (prepared != nullptr && ctx.prepared_bytes == static_cast<size_t>(dot_bytes(g))) {
    wpk = reinterpret_cast<const int32_t*>(prepared);
    recs = reinterpret_cast<const ChanRec*>(prepared + dot_weight_bytes(g));
  } else {
    uint8_t* scratch = static_cast<uint8_t*>(ctx.scratch);
    int32_t* wm = reinterpret_cast<int32_t*>(scratch);
    ChanRec* rm = reinterpret_cast<ChanRec*>(scratch + dot_weight_bytes(g));
    dot_pack(g, in[1].as<const int8_t>(), wm);
    dot_recs(g, io, in[1].as<const int8_t>(), in[2].as<const float>(),
             kernels::optional_present(in, n_in, 3) ? in[3].as<const int32_t>() : nullptr, rm);
    wpk = wm;
    recs = rm;
  }
  const int64_t W = g.w, H = g.h, OW = g.ow, OH = g.oh, sw = g.sw, kh = g.kh;
  const int ngr = static_cast<int>(kernels::ceil_div(g.kw, 4));
  const bool pair = OW <= 8;                    // two output rows per vector
  const int64_t per = pair ? 8 : 16;            // outputs of a row per vector
  DwConst k;
  {
    alignas(64) int32_t pi[2][16];
    alignas(64) int8_t si[64];
    for (int q = 0; q < 2; ++q)
      for (int l = 0; l < 4; ++l)  // 128-bit lane l: positions 4l .. 4l + 3 (pair mode: of the lower or upper row)
        for (int d = 0; d < 4; ++d)
          pi[q][4 * l + d] = static_cast<int32_t>(pair ? (l & 1) * sw + q + d + (l >> 1) * 8 : l * sw + q + d);
    for (int l = 0; l < 4; ++l)
      for (int m = 0; m < 4; ++m)
        for (int t = 0; t < 4; ++t) si[16 * l + 4 * m + t] = static_cast<int8_t>(m * sw + t);
    k.perm[0] = _mm512_load_si512(pi[0]);
    k.perm[1] = _mm512_load_si512(pi[1]);
    k.shuf = _mm512_load_si512(si);
    k.zp8 = _mm512_set1_epi8(static_cast<char>(io.x_zero_point));
    k.flip = _mm512_set1_epi8(static_cast<char>(0x80));
    k.padu = _mm512_xor_si512(k.zp8, k.flip);
    k.zp8h = _mm256_set1_epi8(static_cast<char>(io.x_zero_point));
    k.perm_h[0] = _mm256_load_si256(reinterpret_cast<const __m256i*>(pi[0]));
    k.perm_h[1] = _mm256_load_si256(reinterpret_cast<const __m256i*>(pi[1]));
    k.shuf_h = _mm256_load_si256(reinterpret_cast<const __m256i*>(si));
    k.flip_h = _mm256_set1_epi8(static_cast<char>(0x80));
    k.padu_h = _mm256_xor_si256(k.zp8h, k.flip_h);
    k.lo8 = _mm_set1_epi8(static_cast<char>(io.lo));
    k.hi8 = _mm_set1_epi8(static_cast<char>(io.hi));
  }
  const int rows = g.dh == 1 && (g.sh == 1 || g.sh == 2) ? static_cast<int>(g.sh) : 0;
  const DwChannelFn channel_fn = dw_channel_fn(kh, ngr, pair, rows);
  const DwArgs d{H, W, OH, OW, g.sh, sw, g.dh, g.pt, g.pl, (per - 1) * sw + 4 * ngr, per};  // need: <= 62 bytes
  kernels::parallel_chunks(ctx.pool, g.n * g.o, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t o = c % g.o, img = c / g.o;
      channel_fn(d, k, x + (img * g.c + o) * H * W, y + (img * g.o + o) * OH * OW, wpk + o * kh * 2, kh, ngr, recs[o],
                 io);
    }
  });
}

// Other depthwise shapes (taller kernels, wider ones, column dilation): 16 output positions of a row per vector, their
// sums in a register across the taps ((x - zp) * w: exact in int32), then requantize16 with the channel's
// multiplier. A chunk whose every tap lies inside the input row reads plain vectors; a chunk at a border masks the
// lanes whose tap is padding (they add 0, as the portable kernel skips them; masked loads do not touch those
// addresses). Column strides 1 and 2 (every network's); others take the portable kernel.

// 16 int8 values at s, s + sw, ... (sw 1 or 2) as int32 lanes, lanes outside `m` 0 and not read.
inline __m512i dw_load16(const int8_t* s, int64_t sw, __mmask16 m) {
  constexpr __mmask16 kAll = 0xFFFF;  // the all-lanes forms: see requantize16
  if (sw == 1) return _mm512_maskz_cvtepi8_epi32(kAll, _mm_maskz_loadu_epi8(m, s));
  uint32_t m2 = 0;  // lane l reads byte 2l
  for (int l = 0; l < 16; ++l) m2 |= ((static_cast<uint32_t>(m) >> l) & 1u) << (2 * l);
  const __m512i w16 = _mm512_maskz_cvtepi8_epi16(__mmask32{0xFFFFFFFF}, _mm256_maskz_loadu_epi8(m2, s));
  return _mm512_maskz_cvtepi16_epi32(kAll, _mm512_mask_cvtepi32_epi16(_mm256_setzero_si256(), kAll, w16));
}

// The same for all 16 lanes, s[15 * sw] inside the row.
inline __m512i dw_load16_full(const int8_t* s, int64_t sw) {
  constexpr __mmask16 kAll = 0xFFFF;
  if (sw == 1) return _mm512_maskz_cvtepi8_epi32(kAll, _mm_loadu_si128(reinterpret_cast<const __m128i*>(s)));
  const __m512i w16 = _mm512_maskz_cvtepi8_epi16(__mmask32{0x7FFFFFFF}, _mm256_maskz_loadu_epi8(0x7FFFFFFFu, s));
  return _mm512_maskz_cvtepi16_epi32(kAll, _mm512_mask_cvtepi32_epi16(_mm256_setzero_si256(), kAll, w16));
}

constexpr int64_t kDwMaxTaps = 49;  // kernels up to 7 x 7 here; larger ones take the portable kernel

void depthwise(const KernelContext& ctx, const Plan& p, const int8_t* x, const int8_t* w, const float* ws,
               const int32_t* bias, int8_t* y) {
  const kernels::ConvGeometry g = p.g;
  const kernels::QuantIO io = p.io;
  const int64_t sw = g.sw, W = g.w, taps = g.kh * g.kw;
  const __m512i zpx = _mm512_set1_epi32(io.x_zero_point);
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i lane_cols = _mm512_mullo_epi32(lane, _mm512_set1_epi32(static_cast<int32_t>(sw)));
  const int64_t reach = (g.kw - 1) * g.dw;  // the last tap's column past the first's
  kernels::parallel_chunks(ctx.pool, g.n * g.o * g.oh, 4, [&](int64_t r0, int64_t r1) {
    int64_t cached = -1;
    rq::Multiplier mul;
    __m512i wb[kDwMaxTaps];
    __m512i b0 = _mm512_setzero_si512();
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t oh = r % g.oh, o = (r / g.oh) % g.o, img = r / (g.oh * g.o);
      if (o != cached) {
        mul = kernels::channel_multiplier(io, ws, o);
        for (int64_t t = 0; t < taps; ++t) wb[t] = _mm512_set1_epi32(w[o * taps + t]);
        b0 = _mm512_set1_epi32(bias != nullptr ? bias[o] : 0);
        cached = o;
      }
      const int8_t* xc = x + (img * g.c + o) * g.h * W;
      int64_t i0 = 0, i1 = 0;  // the taps' rows inside the image
      kernels::conv_valid_range(oh * g.sh - g.pt, g.dh, g.h, g.kh, &i0, &i1);
      for (int64_t q0 = 0; q0 < g.ow; q0 += 16) {
        const int64_t n = g.ow - q0 < 16 ? g.ow - q0 : 16;
        const __mmask16 live = static_cast<__mmask16>(n == 16 ? 0xFFFF : (1u << n) - 1);
        const int64_t c0 = q0 * sw - g.pl;  // input column of lane 0's first tap
        __m512i acc = b0;
        if (n == 16 && c0 >= 0 && c0 + 15 * sw + reach < W) {
          for (int64_t i = i0; i < i1; ++i) {
            const int8_t* xr = xc + (oh * g.sh - g.pt + i * g.dh) * W + c0;
            for (int64_t j = 0; j < g.kw; ++j) {
              const __m512i d = _mm512_mask_sub_epi32(zpx, __mmask16{0xFFFF}, dw_load16_full(xr + j * g.dw, sw), zpx);
              acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(d, wb[i * g.kw + j]));
            }
          }
        } else {  // lanes whose column cj + l * sw is in [0, W)
          for (int64_t i = i0; i < i1; ++i) {
            const int8_t* xr = xc + (oh * g.sh - g.pt + i * g.dh) * W;
            for (int64_t j = 0; j < g.kw; ++j) {
              const int64_t cj = c0 + j * g.dw;
              const __m512i col = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int32_t>(cj)), lane_cols);
              const __mmask16 m = live & _mm512_cmpge_epi32_mask(col, _mm512_setzero_si512()) &
                                  _mm512_cmplt_epi32_mask(col, _mm512_set1_epi32(static_cast<int32_t>(W)));
              if (m == 0) continue;
              const __m512i d = _mm512_maskz_sub_epi32(m, dw_load16(xr + cj, sw, m), zpx);
              acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(d, wb[i * g.kw + j]));
            }
          }
        }
        _mm_mask_storeu_epi8(y + r * g.ow + q0, live, kernels::requantize16(acc, mul, io.y_zero_point, io.lo, io.hi));
      }
    }
  });
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  Shape shape;
  DTORCH_RETURN_IF_ERROR(kernels::spec_output_shape(portable(), kOp, ctx, in, n_in, n_out, &shape));
  Plan p;
  DTORCH_RETURN_IF_ERROR(kernels::plan_of(kOp, *ctx.attrs, in, shape, &p));
  const kernels::ConvGeometry& g = p.g;
  const bool dot = !p.direct && dot_takes(g);
  if (!p.direct && !dot && (!(g.sw == 1 || g.sw == 2) || g.kh * g.kw > kDwMaxTaps))
    return portable()->run(ctx, in, n_in, out, n_out);
  DTORCH_RETURN_IF_ERROR(kernels::check_weight_scales(kOp, p.io, in[2], g.o));
  DTORCH_RETURN_IF_ERROR(kernels::check_conv_output(kOp, out[0], g));
  if (out[0].shape.numel() == 0) return Status::Ok();
  const float* ws = in[2].as<const float>();
  const int32_t* bias = kernels::optional_present(in, n_in, 3) ? in[3].as<const int32_t>() : nullptr;
  if (dot) {
    if (ctx.scratch_bytes < static_cast<size_t>(dot_bytes(g)))
      return op_error(StatusCode::kInternal, kOp, "scratch of %zu bytes is smaller than the %zu bytes infer asked for",
                      ctx.scratch_bytes, static_cast<size_t>(dot_bytes(g)));
    depthwise_dot(ctx, p, in, n_in, out[0].as<int8_t>());
    return Status::Ok();
  }
  if (!p.direct) {
    depthwise(ctx, p, in[0].as<const int8_t>(), in[1].as<const int8_t>(), ws, bias, out[0].as<int8_t>());
    return Status::Ok();
  }
  const size_t need = static_cast<size_t>(scratch_bytes_of(p));
  if (ctx.scratch_bytes < need)
    return op_error(StatusCode::kInternal, kOp, "scratch of %zu bytes is smaller than the %zu bytes infer asked for",
                    ctx.scratch_bytes, need);
  dense(ctx, p, in, n_in, out[0].as<int8_t>());
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_VNNI_KERNEL(qconv2d, DType::kInt8, infer, run, prepare);
}  // namespace dtorch
