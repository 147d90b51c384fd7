// qconv2d on AVX-512 VNNI: the portable kernel's bits (kernels/portable/qconv2d.cc is the specification; integer
// sums do not depend on their order), channel-major as the float sets' convolutions, without columns:
//
// - Each image and group's input is copied once, channels last and zero-padded: [H + pt + pb][W + pl + pr][C4] u8
//   with u = x + 128 (x ^ 0x80), C4 the group's channels rounded up to 4, the border holding x_zero_point + 128 (the
//   real value 0). 16 x 16 byte blocks are transposed in registers.
// - A step of the K loop is one tap (i, j) and 4 channels: their 4 bytes of one output position are one broadcast
//   int32, read in place at off[step] + r * stride from the tile's first position; the weights of 32 output channels
//   for that step are two vectors ([steps][32][4] s8 per 32-channel panel, packed at load with each channel's weight
//   sum). vpdpbusd adds 4 u8 x s8 products per int32 lane.
// - Register tile: up to kCR positions of one output row x 32 output channels: 2 x kCR accumulators, each starting at
//   bias - (128 + x_zero_point) * sum(w) (what u - 128 - zp takes back; a padding tap adds w * 0 net).
// - Epilogue: each channel's multiplier in its lane (64-bit products of the even and odd lanes), the portable
//   rounding and clamp, 16 bytes a position, stored to the NCHW output.
// Depthwise convolutions (one input and one output channel per group): `depthwise` below.
#include <cstdint>
#include <cstring>

#include "kernels/common/portable_kernel.h"
#include "kernels/common/conv_geometry.h"
#include "kernels/common/qconv_prepare.h"
#include "kernels/common/quant_params.h"
#include "kernels/common/util.h"
#include "kernels/vnni/vnni.h"

namespace dtorch {
namespace {

using kernels::op_error;
namespace rq = kernels::requant;
constexpr char kOp[] = "qconv2d";
constexpr int kCR = 12;      // positions per tile
constexpr int64_t kNR = 32;  // output channels per panel (two vectors)

const KernelDef* portable() { return kernels::portable_kernel<kOp, DType::kInt8>(); }

struct Plan {
  kernels::ConvGeometry g;
  kernels::QuantIO io;
  int64_t c4;        // bytes per position in the copy: the group's channels rounded up to 4
  int64_t steps;     // K-loop steps: kh * kw * c4 / 4
  int64_t panels;    // 32-channel panels per group
  int64_t hp, wp;    // padded rows and columns of the copy
  bool direct;       // this kernel runs it (not depthwise)
};

// Packed weights: per group and panel [steps][32][4] s8 (0 past the group's channels and past cg), then each
// output channel's weight sum (int32).
int64_t packed_weight_bytes(const kernels::ConvGeometry& g) {
  const int64_t c4 = kernels::ceil_div(g.cg, 4) * 4;
  return g.groups * kernels::ceil_div(g.og, kNR) * g.kh * g.kw * c4 * kNR;
}
int64_t packed_bytes(const kernels::ConvGeometry& g) { return packed_weight_bytes(g) + g.o * int64_t{4}; }

// The node's plan once the portable kernel's infer has accepted it (out: the output shape it gave). Read without
// the validating helpers: their messages format lists with std::to_string, whose inline copies an ISA object must
// not define (tests/runtime/test_isa_isolation.py).
Status plan_of(const Attrs& attrs, const TensorView* in, const Shape& out, Plan* p) {
  DTORCH_RETURN_IF_ERROR(kernels::read_quant_io(kOp, attrs, &p->io));
  DTORCH_RETURN_IF_ERROR(kernels::conv_geometry(kOp, attrs, in, out, &p->g));
  const kernels::ConvGeometry& g = p->g;
  p->c4 = kernels::ceil_div(g.cg, 4) * 4;
  p->steps = g.kh * g.kw * p->c4 / 4;
  p->panels = kernels::ceil_div(g.og, kNR);
  p->hp = g.h + g.pt + g.pb;
  p->wp = g.w + g.pl + g.pr;
  p->direct = !(g.cg == 1 && g.og == 1);
  return Status::Ok();
}

// Scratch: the packed weights (when prepare did not keep them), the step offsets, one image and group's copy.
int64_t scratch_bytes_of(const Plan& p) {
  return kernels::ceil_div(packed_bytes(p.g), 64) * 64 + kernels::ceil_div(p.steps * 4, 64) * 64 +
         p.hp * p.wp * p.c4 + 64;
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  const KernelDef* k = portable();
  if (k == nullptr) return op_error(StatusCode::kInternal, kOp, "the portable kernel is not registered");
  DTORCH_RETURN_IF_ERROR(k->infer(attrs, in, n_in, out, n_out, scratch_bytes));
  Plan p;
  DTORCH_RETURN_IF_ERROR(plan_of(attrs, in, out[0], &p));
  if (p.direct) *scratch_bytes = static_cast<size_t>(scratch_bytes_of(p));
  return Status::Ok();
}

void pack(const kernels::ConvGeometry& g, const int8_t* w, uint8_t* dst) {
  const int64_t c4 = kernels::ceil_div(g.cg, 4) * 4, panels = kernels::ceil_div(g.og, kNR);
  const int64_t steps = g.kh * g.kw * c4 / 4, K = g.cg * g.kh * g.kw;
  int8_t* wp = reinterpret_cast<int8_t*>(dst);
  std::memset(wp, 0, static_cast<size_t>(packed_weight_bytes(g)));
  for (int64_t gi = 0; gi < g.groups; ++gi)
    for (int64_t o = 0; o < g.og; ++o) {
      int8_t* panel = wp + (gi * panels + o / kNR) * steps * kNR * 4;
      const int8_t* wo = w + (gi * g.og + o) * K;
      for (int64_t c = 0; c < g.cg; ++c)
        for (int64_t i = 0; i < g.kh; ++i)
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t step = (i * g.kw + j) * (c4 / 4) + c / 4;
            panel[(step * kNR + o % kNR) * 4 + c % 4] = wo[(c * g.kh + i) * g.kw + j];
          }
    }
  int32_t* sums = reinterpret_cast<int32_t*>(dst + packed_weight_bytes(g));
  kernels::qconv_weight_sums(w, g.o, K, sums);
}

Status prepare(const Attrs& attrs, const TensorView* in, int n_in, void* dst, size_t* bytes) {
  *bytes = 0;
  kernels::ConvGeometry g{};
  if (!kernels::qconv_weight_geometry(attrs, in, n_in, &g)) return Status::Ok();
  if (g.cg == 1 && g.og == 1) return Status::Ok();  // depthwise: the portable kernel
  *bytes = static_cast<size_t>(packed_bytes(g));
  if (dst != nullptr) pack(g, in[1].as<const int8_t>(), static_cast<uint8_t*>(dst));
  return Status::Ok();
}

// 16 rows of 16 bytes (a[i]: channel i's 16 positions) -> a[j]: position j's 16 channels.
inline void transpose16x16(__m128i (&a)[16]) {
  __m128i b[16];
  for (int i = 0; i < 8; ++i) {
    b[i] = _mm_unpacklo_epi8(a[2 * i], a[2 * i + 1]);
    b[8 + i] = _mm_unpackhi_epi8(a[2 * i], a[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 4; ++i) {
      a[8 * h + i] = _mm_unpacklo_epi16(b[8 * h + 2 * i], b[8 * h + 2 * i + 1]);
      a[8 * h + 4 + i] = _mm_unpackhi_epi16(b[8 * h + 2 * i], b[8 * h + 2 * i + 1]);
    }
  for (int q = 0; q < 4; ++q)
    for (int i = 0; i < 2; ++i) {
      b[4 * q + i] = _mm_unpacklo_epi32(a[4 * q + 2 * i], a[4 * q + 2 * i + 1]);
      b[4 * q + 2 + i] = _mm_unpackhi_epi32(a[4 * q + 2 * i], a[4 * q + 2 * i + 1]);
    }
  // b holds, per group of 4, positions in the order the stages interleaved them: undo with the 64-bit stage.
  __m128i c[16];
  for (int q = 0; q < 4; ++q) {
    c[4 * q + 0] = _mm_unpacklo_epi64(b[4 * q + 0], b[4 * q + 1]);
    c[4 * q + 1] = _mm_unpackhi_epi64(b[4 * q + 0], b[4 * q + 1]);
    c[4 * q + 2] = _mm_unpacklo_epi64(b[4 * q + 2], b[4 * q + 3]);
    c[4 * q + 3] = _mm_unpackhi_epi64(b[4 * q + 2], b[4 * q + 3]);
  }
  for (int i = 0; i < 16; ++i) a[i] = c[i];
}

// The channels-last copy of image x0, group gi (see the file comment).
void copy_nhwc(ThreadPool* pool, const Plan& p, const int8_t* x0, int64_t gi, uint8_t* xs) {
  const kernels::ConvGeometry& g = p.g;
  const uint8_t pad = static_cast<uint8_t>(p.io.x_zero_point + 128);
  const int64_t row_bytes = p.wp * p.c4, plane = g.h * g.w;
  const int8_t* xg = x0 + gi * g.cg * plane;
  kernels::parallel_chunks(pool, p.hp, 4, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      uint8_t* dst = xs + r * row_bytes;
      const int64_t h = r - g.pt;
      if (h < 0 || h >= g.h) {
        std::memset(dst, pad, static_cast<size_t>(row_bytes));
        continue;
      }
      std::memset(dst, pad, static_cast<size_t>(g.pl * p.c4));
      std::memset(dst + (g.pl + g.w) * p.c4, pad, static_cast<size_t>(g.pr * p.c4));
      uint8_t* body = dst + g.pl * p.c4;
      const int8_t* src = xg + h * g.w;
      int64_t c = 0;
      const __m128i flip = _mm_set1_epi8(static_cast<char>(0x80));
      for (; c + 16 <= g.cg; c += 16) {
        int64_t w = 0;
        for (; w + 16 <= g.w; w += 16) {
          __m128i a[16];
          for (int i = 0; i < 16; ++i)
            a[i] = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + (c + i) * plane + w)), flip);
          transpose16x16(a);
          for (int j = 0; j < 16; ++j) _mm_storeu_si128(reinterpret_cast<__m128i*>(body + (w + j) * p.c4 + c), a[j]);
        }
        for (; w < g.w; ++w)
          for (int64_t i = 0; i < 16; ++i)
            body[w * p.c4 + c + i] = static_cast<uint8_t>(src[(c + i) * plane + w]) ^ 0x80u;
      }
      if (p.c4 == 4) {  // 1 to 4 channels (a stem): 16 positions of the 4 channel rows interleaved at a time
        const __m128i zero = _mm_setzero_si128();
        int64_t w = 0;
        for (; w + 16 <= g.w; w += 16) {
          __m128i r[4];
          for (int i = 0; i < 4; ++i)
            r[i] = i < g.cg ? _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * plane + w)),
                                            flip)
                            : zero;
          const __m128i ab0 = _mm_unpacklo_epi8(r[0], r[1]), ab1 = _mm_unpackhi_epi8(r[0], r[1]);
          const __m128i cd0 = _mm_unpacklo_epi8(r[2], r[3]), cd1 = _mm_unpackhi_epi8(r[2], r[3]);
          __m128i* o = reinterpret_cast<__m128i*>(body + w * 4);
          _mm_storeu_si128(o, _mm_unpacklo_epi16(ab0, cd0));
          _mm_storeu_si128(o + 1, _mm_unpackhi_epi16(ab0, cd0));
          _mm_storeu_si128(o + 2, _mm_unpacklo_epi16(ab1, cd1));
          _mm_storeu_si128(o + 3, _mm_unpackhi_epi16(ab1, cd1));
        }
        for (; w < g.w; ++w)
          for (int64_t i = 0; i < 4; ++i)
            body[w * 4 + i] = i < g.cg ? static_cast<uint8_t>(src[i * plane + w]) ^ 0x80u : 0;
        continue;
      }
      for (; c < p.c4; ++c)
        for (int64_t w = 0; w < g.w; ++w)
          body[w * p.c4 + c] = c < g.cg ? static_cast<uint8_t>(src[c * plane + w]) ^ 0x80u : 0;
    }
  });
}

// The per-lane requantization constants of 16 output channels: each channel's multiplier and rounding in the low
// half of a 64-bit lane, for the even and the odd channels.
struct LaneRequant {
  __m512i m[2], round[2], shift[2];
};

inline LaneRequant lane_requant(const rq::Multiplier* mul) {
  alignas(64) int64_t m[2][8], rd[2][8], sh[2][8];
  for (int l = 0; l < 16; ++l) {
    m[l & 1][l >> 1] = mul[l].m;
    rd[l & 1][l >> 1] = int64_t{1} << (mul[l].shift - 1);
    sh[l & 1][l >> 1] = mul[l].shift;
  }
  LaneRequant r;
  for (int e = 0; e < 2; ++e) {
    r.m[e] = _mm512_load_si512(m[e]);
    r.round[e] = _mm512_load_si512(rd[e]);
    r.shift[e] = _mm512_load_si512(sh[e]);
  }
  return r;
}

inline __m128i requantize_lanes(__m512i acc, const LaneRequant& q, __m512i vlo, __m512i vhi, __m512i zp) {
  constexpr __mmask8 k8 = 0xFF;  // the all-lanes forms: see requantize16
  auto half = [&](__m512i v, int e) {
    __m512i p = _mm512_mask_mul_epi32(v, k8, v, q.m[e]);
    p = _mm512_mask_srav_epi64(p, k8, _mm512_mask_add_epi64(p, k8, p, q.round[e]), q.shift[e]);
    return _mm512_mask_min_epi64(p, k8, _mm512_mask_max_epi64(p, k8, p, vlo), vhi);
  };
  const __m512i even = half(acc, 0);
  const __m512i odd = half(_mm512_mask_srli_epi64(acc, k8, acc, 32), 1);
  const __m512i both = _mm512_mask_blend_epi32(__mmask16{0xAAAA}, even, _mm512_mask_slli_epi64(odd, k8, odd, 32));
  return _mm512_mask_cvtepi32_epi8(_mm_setzero_si128(), __mmask16{0xFFFF},
                                   _mm512_mask_add_epi32(both, __mmask16{0xFFFF}, both, zp));
}

struct TileArgs {
  const Plan* p;
  const uint8_t* a;     // the tile's first position in the copy
  int64_t ps;           // bytes from one position to the next
  const int32_t* off;   // byte offset of each step from a position
  const int8_t* w;      // the panel
  const __m512i* start;  // 2 vectors: each channel's starting sum
  const LaneRequant* rq;  // 2
  int noc;              // channels of the panel (<= 32)
  int8_t* y;            // the panel's first channel, the tile's first position (NCHW)
  int64_t ohw;
};

template <int R>
void tile(const TileArgs& t) {
  __m512i acc[R][2];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    acc[r][0] = t.start[0];
    acc[r][1] = t.start[1];
  }
  const int8_t* w = t.w;
  for (int64_t s = 0; s < t.p->steps; ++s) {
    const __m512i w0 = _mm512_loadu_si512(w);
    const __m512i w1 = _mm512_loadu_si512(w + 64);
    const uint8_t* as = t.a + t.off[s];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      int32_t v;
      std::memcpy(&v, as + r * t.ps, sizeof v);
      const __m512i b = _mm512_set1_epi32(v);
      acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], b, w0);
      acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], b, w1);
    }
    w += kNR * 4;
  }
  const kernels::QuantIO& io = t.p->io;
  const __m512i vlo = _mm512_set1_epi64(io.lo - io.y_zero_point), vhi = _mm512_set1_epi64(io.hi - io.y_zero_point);
  const __m512i zp = _mm512_set1_epi32(io.y_zero_point);
  constexpr __mmask16 kRows = static_cast<__mmask16>((1u << R) - 1);
#pragma GCC unroll 2
  for (int v = 0; v < 2; ++v) {
    const int n = t.noc - 16 * v;
    if (n <= 0) break;
    __m128i q[16];  // q[r]: position r's 16 channels; transposed: q[c], channel c's R positions
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) q[r] = requantize_lanes(acc[r][v], t.rq[v], vlo, vhi, zp);
    for (int r = R; r < 16; ++r) q[r] = _mm_setzero_si128();
    transpose16x16(q);
    for (int c = 0; c < n && c < 16; ++c) _mm_mask_storeu_epi8(t.y + (16 * v + c) * t.ohw, kRows, q[c]);
  }
}

using TileFn = void (*)(const TileArgs&);
constexpr TileFn kTiles[kCR] = {tile<1>, tile<2>, tile<3>, tile<4>, tile<5>, tile<6>,
                                tile<7>, tile<8>, tile<9>, tile<10>, tile<11>, tile<12>};

// Depthwise (one input and one output channel per group): 16 output positions of a row per vector, their sums in a
// register across the taps ((x - zp) * w: exact in int32), then requantize16 with the channel's multiplier. A chunk
// whose every tap lies inside the input row reads plain vectors; a chunk at a border masks the lanes whose tap is
// padding (they add 0, as the portable kernel skips them; masked loads do not touch those addresses). Column
// strides 1 and 2 (every network's); others take the portable kernel.

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
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  if (portable() == nullptr) return op_error(StatusCode::kInternal, kOp, "the portable kernel is not registered");
  Shape shape;
  size_t portable_scratch = 0;
  DTORCH_RETURN_IF_ERROR(portable()->infer(*ctx.attrs, in, n_in, &shape, n_out, &portable_scratch));
  Plan p;
  DTORCH_RETURN_IF_ERROR(plan_of(*ctx.attrs, in, shape, &p));
  const kernels::ConvGeometry& g = p.g;
  if (!p.direct && (!(g.sw == 1 || g.sw == 2) || g.kh * g.kw > kDwMaxTaps))
    return portable()->run(ctx, in, n_in, out, n_out);
  DTORCH_RETURN_IF_ERROR(kernels::check_weight_scales(kOp, p.io, in[2], g.o));
  if (out[0].dtype != DType::kInt8 || out[0].shape.ndim != 4 || out[0].shape.dims[0] != g.n ||
      out[0].shape.dims[1] != g.o || out[0].shape.dims[2] != g.oh || out[0].shape.dims[3] != g.ow)
    return op_error(StatusCode::kInternal, kOp, "output %s is not the int8 (N, O, OH, OW) infer gave",
                    ::dtorch::shape_str(out[0].shape).c_str());
  if (out[0].shape.numel() == 0) return Status::Ok();
  const float* ws = in[2].as<const float>();
  const int32_t* bias = kernels::optional_present(in, n_in, 3) ? in[3].as<const int32_t>() : nullptr;
  if (!p.direct) {
    depthwise(ctx, p, in[0].as<const int8_t>(), in[1].as<const int8_t>(), ws, bias, out[0].as<int8_t>());
    return Status::Ok();
  }
  const size_t need = static_cast<size_t>(scratch_bytes_of(p));
  if (ctx.scratch_bytes < need)
    return op_error(StatusCode::kInternal, kOp, "scratch of %zu bytes is smaller than the %zu bytes infer asked for",
                    ctx.scratch_bytes, need);
  uint8_t* scratch = static_cast<uint8_t*>(ctx.scratch);
  const int64_t pb = packed_bytes(g);
  const uint8_t* packed = static_cast<const uint8_t*>(ctx.prepared);
  if (packed == nullptr || ctx.prepared_bytes != static_cast<size_t>(pb)) {
    pack(g, in[1].as<const int8_t>(), scratch);
    packed = scratch;
  }
  int32_t* off = reinterpret_cast<int32_t*>(scratch + kernels::ceil_div(pb, 64) * 64);
  uint8_t* xs = reinterpret_cast<uint8_t*>(off) + kernels::ceil_div(p.steps * 4, 64) * 64;
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j)
      for (int64_t q = 0; q < p.c4 / 4; ++q)
        off[(i * g.kw + j) * (p.c4 / 4) + q] = static_cast<int32_t>((i * g.dh * p.wp + j * g.dw) * p.c4 + q * 4);
  const int32_t* sums = reinterpret_cast<const int32_t*>(packed + packed_weight_bytes(g));
  const int64_t ohw = g.oh * g.ow, row_tiles = kernels::ceil_div(g.ow, kCR);
  for (int64_t img = 0; img < g.n; ++img) {
    const int8_t* x0 = in[0].as<const int8_t>() + img * g.c * g.h * g.w;
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      copy_nhwc(ctx.pool, p, x0, gi, xs);
      int8_t* yg = out[0].as<int8_t>() + (img * g.o + gi * g.og) * ohw;
      const int64_t per_panel = g.oh * row_tiles;
      kernels::parallel_chunks(ctx.pool, p.panels * per_panel, 1, [&](int64_t u0, int64_t u1) {
        int64_t cached = -1;
        alignas(64) __m512i start[2];
        LaneRequant lrq[2];
        int noc = 0;
        for (int64_t u = u0; u < u1; ++u) {
          const int64_t a = u / per_panel, v = u % per_panel, oh = v / row_tiles, t = v % row_tiles;
          if (a != cached) {  // the panel's starting sums and multipliers
            cached = a;
            noc = static_cast<int>(g.og - a * kNR < kNR ? g.og - a * kNR : kNR);
            alignas(64) int32_t st[kNR];
            rq::Multiplier mul[kNR];
            for (int c = 0; c < kNR; ++c) {
              if (c < noc) {
                const int64_t o = gi * g.og + a * kNR + c;
                st[c] = kernels::qconv_start(bias, o, 128 + p.io.x_zero_point, sums[o]);
                mul[c] = kernels::channel_multiplier(p.io, ws, o);
              } else {
                st[c] = 0;
                mul[c] = rq::Multiplier{};
              }
            }
            start[0] = _mm512_load_si512(st);
            start[1] = _mm512_load_si512(st + 16);
            lrq[0] = lane_requant(mul);
            lrq[1] = lane_requant(mul + 16);
          }
          const int64_t ow0 = t * g.ow / row_tiles, ow1 = (t + 1) * g.ow / row_tiles;
          TileArgs ta{&p, xs + ((oh * g.sh) * p.wp + ow0 * g.sw) * p.c4, g.sw * p.c4, off,
                      reinterpret_cast<const int8_t*>(packed) + (gi * p.panels + a) * p.steps * kNR * 4, start, lrq,
                      noc, yg + a * kNR * ohw + oh * g.ow + ow0, ohw};
          kTiles[ow1 - ow0 - 1](ta);
        }
      });
    }
  }
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_VNNI_KERNEL(qconv2d, DType::kInt8, infer, run, prepare);
}  // namespace dtorch
