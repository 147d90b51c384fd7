// Parts of the int8 convolutions on vpdpbusd and AMX tiles (kernels/vnni/qconv2d.cc, kernels/amx/qconv2d.cc; the
// layout is described in the former's file comment): the node's plan (Plan), the u8 copy of the input in 4-channel
// blocks split by stride phase (copy_in, copy_plain, copy_run), where each vector of 16 virtual outputs goes
// (segments), each output channel's starting sum and requantization (ChanRec) and the requantization and store of 64
// consecutive outputs of one channel (store64). Compiled into each set that includes
// it, in that set's namespace (kernels/common/isa.h).
#pragma once

#include <cstdint>
#include <cstring>

#include "core/kernel.h"

#include "kernels/common/qconv_prepare.h"
#include "kernels/common/conv_geometry.h"
#include "kernels/common/quant_params.h"
#include "kernels/common/util.h"
#include "kernels/vnni/vnni.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

constexpr int kRO = 6;             // output channels per vpdpbusd tile (kernels/vnni/qconv2d.cc)
constexpr int kRV = 4;             // vectors of 16 positions per tile
constexpr int64_t kVP = 16 * kRV;  // positions per block

struct Plan {
  ConvGeometry g;
  QuantIO io;
  int64_t cb;        // blocks of 4 channels per group
  int64_t steps;     // K-loop steps: kh * kw * cb
  int64_t panels;    // kRO-channel panels per group
  int64_t hp, wp;    // the padded input
  int64_t wq;        // a phase plane's row: ceil(wp / sw)
  int64_t vpos;      // virtual outputs: oh * wq
  int64_t blocks;    // ceil(vpos / kVP)
  int64_t plane;     // positions per phase plane, with the slack the last block's reads reach
  int64_t copy;      // bytes of one image and group's copy
  bool direct;       // dense or grouped (not depthwise)
  bool plain;        // 1x1, stride 1, no padding: a block's tiles read only its own positions
};

// The node's plan once the portable kernel's infer has accepted it (out: the output shape it gave). Read without
// the validating helpers: their messages format lists with std::to_string, whose inline copies an ISA object must
// not define (tests/runtime/test_isa_isolation.py).
inline Status plan_of(const char* op, const Attrs& attrs, const TensorView* in, const Shape& out, Plan* p) {
  DTORCH_RETURN_IF_ERROR(read_quant_io(op, attrs, &p->io));
  DTORCH_RETURN_IF_ERROR(conv_geometry(op, attrs, in, out, &p->g));
  const ConvGeometry& g = p->g;
  p->direct = !(g.cg == 1 && g.og == 1);
  p->cb = ceil_div(g.cg, 4);
  p->steps = g.kh * g.kw * p->cb;
  p->panels = ceil_div(g.og, kRO);
  p->hp = g.h + g.pt + g.pb;
  p->wp = g.w + g.pl + g.pr;
  p->wq = ceil_div(p->wp, g.sw);
  const int64_t hq = ceil_div(p->hp, g.sh);
  p->vpos = g.oh * p->wq;
  p->blocks = ceil_div(p->vpos, kVP);
  const int64_t reach = ((g.kh - 1) * g.dh / g.sh) * p->wq + (g.kw - 1) * g.dw / g.sw;
  p->plane = p->blocks * kVP + reach;
  if (p->plane < hq * p->wq) p->plane = hq * p->wq;
  // An odd number of 64-byte lines per plane: the K loop reads the same positions of consecutive channel blocks'
  // planes, which a power-of-two plane size would map to a few L1 sets (a 576-channel 1x1 layer ran 6x slower).
  const int64_t lines = ceil_div(p->plane, 16);
  p->plane = (lines | 1) * 16;
  p->copy = p->cb * g.sh * g.sw * p->plane * 4;
  p->plain = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 && g.pb == 0 && g.pl == 0 && g.pr == 0;
  return Status::Ok();
}


// Each output channel's starting sum and requantization, made once per weight (prepare) or per run.
struct ChanRec {
  int32_t start;  // bias - (128 + x_zero_point) * sum(w), wrapping
  int32_t m, shift;
  int32_t fast;   // 32 <= shift <= 54: mul_shift_fast
  int64_t m64;    // m as a 64-bit lane
  int64_t r64;    // 2^(s-1) + y_zero_point * 2^s (fast only)
};

inline ChanRec chan_rec(const QuantIO& io, const float* ws, const int32_t* bias, int64_t o, int32_t wsum) {
  const requant::Multiplier mul = channel_multiplier(io, ws, o);
  ChanRec r{};
  r.start = qconv_start(bias, o, 128 + io.x_zero_point, wsum);
  r.m = mul.m;
  r.shift = mul.shift;
  r.m64 = mul.m;
  r.fast = fast_multiplier(mul, io.y_zero_point, &r.r64);
  return r;
}

// 4 rows of 16 bytes (4 channels' 16 positions) -> 64 bytes: each position's 4 channels.
inline void interleave4(__m128i r0, __m128i r1, __m128i r2, __m128i r3, uint8_t* dst) {
  const __m128i ab0 = _mm_unpacklo_epi8(r0, r1), ab1 = _mm_unpackhi_epi8(r0, r1);
  const __m128i cd0 = _mm_unpacklo_epi8(r2, r3), cd1 = _mm_unpackhi_epi8(r2, r3);
  __m128i* o = reinterpret_cast<__m128i*>(dst);
  _mm_storeu_si128(o, _mm_unpacklo_epi16(ab0, cd0));
  _mm_storeu_si128(o + 1, _mm_unpackhi_epi16(ab0, cd0));
  _mm_storeu_si128(o + 2, _mm_unpacklo_epi16(ab1, cd1));
  _mm_storeu_si128(o + 3, _mm_unpackhi_epi16(ab1, cd1));
}

// interleave4 of the first n < 16 positions only.
inline void interleave4_tail(__m128i r0, __m128i r1, __m128i r2, __m128i r3, uint8_t* dst, int64_t n) {
  const __m128i ab0 = _mm_unpacklo_epi8(r0, r1), ab1 = _mm_unpackhi_epi8(r0, r1);
  const __m128i cd0 = _mm_unpacklo_epi8(r2, r3), cd1 = _mm_unpackhi_epi8(r2, r3);
  __m512i v = _mm512_castsi128_si512(_mm_unpacklo_epi16(ab0, cd0));
  v = _mm512_maskz_inserti32x4(__mmask16{0xFFFF}, v, _mm_unpackhi_epi16(ab0, cd0), 1);
  v = _mm512_maskz_inserti32x4(__mmask16{0xFFFF}, v, _mm_unpacklo_epi16(ab1, cd1), 2);
  v = _mm512_maskz_inserti32x4(__mmask16{0xFFFF}, v, _mm_unpackhi_epi16(ab1, cd1), 3);
  _mm512_mask_storeu_epi8(dst, (~__mmask64{0}) >> (64 - 4 * n), v);
}

// Positions [0, len) of 4 channel rows (src[k]: nullptr past the group's channels, read as 0) flipped to u8 and
// interleaved into dst, 16 a step, the last 1 to 15 with masked loads and stores.
inline void copy_run(const int8_t* const src[4], int64_t len, uint8_t* dst) {
  const __m128i flip = _mm_set1_epi8(static_cast<char>(0x80)), zero = _mm_setzero_si128();
  int64_t w = 0;
  for (; w < len; w += 16) {
    const int64_t n = len - w < 16 ? len - w : 16;
    const __mmask16 m = static_cast<__mmask16>((uint32_t{1} << n) - 1);
    __m128i r[4];
    for (int k = 0; k < 4; ++k)
      r[k] = src[k] == nullptr ? zero
             : n == 16         ? _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src[k] + w)), flip)
                               : _mm_xor_si128(_mm_maskz_loadu_epi8(m, src[k] + w), flip);
    if (n == 16) interleave4(r[0], r[1], r[2], r[3], dst + w * 4);
    else interleave4_tail(r[0], r[1], r[2], r[3], dst + w * 4, n);
  }
}

// Each output channel's record from its K weights (w: (o_count, K) int8, their sums made here).
inline void weight_recs(const QuantIO& io, const int8_t* w, int64_t o_count, int64_t k, const float* ws,
                        const int32_t* bias, ChanRec* recs) {
  for (int64_t o = 0; o < o_count; ++o) {
    int32_t wsum = 0;
    qconv_weight_sums(w + o * k, 1, k, &wsum);
    recs[o] = chan_rec(io, ws, bias, o, wsum);
  }
}

// A stride-1, unpadded copy of positions [pos0, pos1) of every channel block of image x0, group gi (a channel's
// plane is one row of H * W positions): the positions past the plane's end read x_zero_point + 128.
inline void copy_plain(const Plan& p, const int8_t* x0, int64_t gi, uint8_t* xs, int64_t pos0, int64_t pos1) {
  const ConvGeometry& g = p.g;
  const int64_t hw = g.h * g.w, end = pos1 < hw ? pos1 : hw, pad_from = pos0 > end ? pos0 : end;
  const int8_t* xg = x0 + gi * g.cg * hw;
  for (int64_t b = 0; b < p.cb; ++b) {
    const int8_t* src[4];
    for (int k = 0; k < 4; ++k) src[k] = b * 4 + k < g.cg ? xg + (b * 4 + k) * hw + pos0 : nullptr;
    uint8_t* d = xs + b * p.plane * 4;
    if (end > pos0) copy_run(src, end - pos0, d + pos0 * 4);
    if (pos1 > pad_from)
      std::memset(d + pad_from * 4, p.io.x_zero_point + 128, static_cast<size_t>((pos1 - pad_from) * 4));
  }
}

// The copy of image x0, group gi (see the file comment).
inline void copy_in(ThreadPool* pool, const Plan& p, const int8_t* x0, int64_t gi, uint8_t* xs) {
  const ConvGeometry& g = p.g;
  if (g.sh == 1 && g.sw == 1 && g.pt == 0 && g.pb == 0 && g.pl == 0 && g.pr == 0) {  // one phase, no border
    constexpr int64_t kChunk = 1024;  // positions a unit, every channel block; the last one fills the slack
    parallel_chunks(pool, ceil_div(p.plane, kChunk), 1, [&](int64_t c0, int64_t c1) {
      copy_plain(p, x0, gi, xs, c0 * kChunk, c1 * kChunk < p.plane ? c1 * kChunk : p.plane);
    });
    return;
  }
  const uint8_t pad = static_cast<uint8_t>(p.io.x_zero_point + 128);
  const int64_t plane = g.h * g.w, phase_bytes = p.plane * 4;
  const int8_t* xg = x0 + gi * g.cg * plane;
  {  // the borders and slack of every phase plane: the whole copy, in 64 KiB pieces
    constexpr int64_t kPiece = 65536;
    parallel_chunks(pool, ceil_div(p.copy, kPiece), 1, [&](int64_t c0, int64_t c1) {
      const int64_t b0 = c0 * kPiece, b1 = c1 * kPiece < p.copy ? c1 * kPiece : p.copy;
      std::memset(xs + b0, pad, static_cast<size_t>(b1 - b0));
    });
  }
  // Units: (channel block, input row).
  parallel_chunks(pool, p.cb * g.h, 8, [&](int64_t u0, int64_t u1) {
    const __m256i split = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,  //
                                           0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    const __m256i flip2 = _mm256_set1_epi8(static_cast<char>(0x80));
    const int64_t len = g.w;
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t b = u / g.h, h = u % g.h, r = h + g.pt;  // r: the padded row
      const int8_t* src[4];
      for (int k = 0; k < 4; ++k) src[k] = b * 4 + k < g.cg ? xg + (b * 4 + k) * plane + h * g.w : nullptr;
      // phase_row(pc): the row's start in phase plane (r % sh, pc)
      auto phase_row = [&](int64_t pc) {
        return xs + ((b * g.sh + r % g.sh) * g.sw + pc) * phase_bytes + (r / g.sh) * p.wq * 4;
      };
      if (g.sw == 1) {
        copy_run(src, len, phase_row(0) + g.pl * 4);
        continue;
      }
      int64_t w = 0;
      if (g.sw == 2) {
        uint8_t* de = phase_row(g.pl & 1);        // the even input columns
        uint8_t* dd = phase_row((g.pl + 1) & 1);  // the odd ones
        for (; w + 32 <= len; w += 32) {
          __m256i v[4];
          for (int k = 0; k < 4; ++k)  // 32 columns -> the 16 even ones in the low half, the 16 odd ones in the high
            v[k] = src[k] != nullptr
                       ? _mm256_xor_si256(_mm256_permute4x64_epi64(_mm256_shuffle_epi8(_mm256_loadu_si256(
                                              reinterpret_cast<const __m256i*>(src[k] + w)), split), 0xD8),
                                          flip2)
                       : _mm256_setzero_si256();
          interleave4(_mm256_castsi256_si128(v[0]), _mm256_castsi256_si128(v[1]), _mm256_castsi256_si128(v[2]),
                      _mm256_castsi256_si128(v[3]), de + ((w + g.pl) >> 1) * 4);
          interleave4(_mm256_extracti128_si256(v[0], 1), _mm256_extracti128_si256(v[1], 1),
                      _mm256_extracti128_si256(v[2], 1), _mm256_extracti128_si256(v[3], 1),
                      dd + ((w + g.pl + 1) >> 1) * 4);
        }
        if (w < len) {  // the last 1 to 31 columns: the same with masked loads and stores
          const int64_t rest = len - w;
          const __mmask32 m = static_cast<__mmask32>((uint64_t{1} << rest) - 1);
          __m256i v[4];
          for (int k = 0; k < 4; ++k)
            v[k] = src[k] != nullptr
                       ? _mm256_xor_si256(
                             _mm256_permute4x64_epi64(_mm256_shuffle_epi8(_mm256_maskz_loadu_epi8(m, src[k] + w), split),
                                                      0xD8),
                             flip2)
                       : _mm256_setzero_si256();
          interleave4_tail(_mm256_castsi256_si128(v[0]), _mm256_castsi256_si128(v[1]), _mm256_castsi256_si128(v[2]),
                           _mm256_castsi256_si128(v[3]), de + ((w + g.pl) >> 1) * 4, (rest + 1) / 2);
          if (rest > 1)
            interleave4_tail(_mm256_extracti128_si256(v[0], 1), _mm256_extracti128_si256(v[1], 1),
                             _mm256_extracti128_si256(v[2], 1), _mm256_extracti128_si256(v[3], 1),
                             dd + ((w + g.pl + 1) >> 1) * 4, rest / 2);
          w = len;
        }
      }
      // Other strides: column by column (the phase and position advance without a division).
      int64_t pc = (w + g.pl) % g.sw, cq = (w + g.pl) / g.sw;
      for (; w < len; ++w) {
        uint8_t* d = phase_row(pc) + cq * 4;
        for (int k = 0; k < 4; ++k) d[k] = src[k] != nullptr ? static_cast<uint8_t>(src[k][w]) ^ 0x80u : 0;
        if (++pc == g.sw) {
          pc = 0;
          ++cq;
        }
      }
    }
  });
}

// Where a vector's 16 virtual outputs go: one masked store per output row it touches.
struct Seg {
  int64_t off;  // from the channel's output plane; byte l of the vector goes to off + l
  __mmask16 mask;
};
constexpr int kMaxSegs = 17;  // 16 rows of one virtual column (wq = 1) and one more
struct Segs {
  Seg s[kRV][kMaxSegs];
  int n[kRV];
};

inline void segments(const Plan& p, int64_t v0, int rv, Segs* out) {
  const int64_t ow = p.g.ow, wq = p.wq;
  for (int k = 0; k < rv; ++k) {
    const int64_t v = v0 + 16 * k;
    int n = 0;
    if (wq == ow) {
      const int64_t cnt = p.vpos - v < 16 ? p.vpos - v : 16;
      out->s[k][n++] = Seg{v, static_cast<__mmask16>((uint32_t{1} << cnt) - 1)};
    } else {
      for (int64_t r = v / wq; r < p.g.oh && r * wq < v + 16; ++r) {
        const int64_t lo = r * wq > v ? r * wq : v;
        const int64_t hi = r * wq + ow < v + 16 ? r * wq + ow : v + 16;
        if (lo >= hi) continue;
        const uint32_t mask = ((uint32_t{1} << (hi - v)) - 1) & ~((uint32_t{1} << (lo - v)) - 1);
        out->s[k][n++] = Seg{v - r * (wq - ow), static_cast<__mmask16>(mask)};
      }
    }
    out->n[k] = n;
  }
}

// A run's first checks: one output, and its shape as the portable kernel `spec` infers it (which validates the node).
inline Status spec_output_shape(const KernelDef* spec, const char* op, const KernelContext& ctx, const TensorView* in,
                                int n_in, int n_out, Shape* shape) {
  DTORCH_RETURN_IF_ERROR(check_num_outputs(op, n_out, 1));
  if (spec == nullptr) return op_error(StatusCode::kInternal, op, "the portable kernel is not registered");
  size_t scratch = 0;
  return spec->infer(*ctx.attrs, in, n_in, shape, n_out, &scratch);
}

// Whether the output tensor is the int8 (N, O, OH, OW) the convolution's infer gave.
inline Status check_conv_output(const char* op, const TensorView& y, const ConvGeometry& g) {
  if (y.dtype != DType::kInt8 || y.shape.ndim != 4 || y.shape.dims[0] != g.n || y.shape.dims[1] != g.o ||
      y.shape.dims[2] != g.oh || y.shape.dims[3] != g.ow)
    return op_error(StatusCode::kInternal, op, "output %s is not the int8 (N, O, OH, OW) infer gave",
                    ::dtorch::shape_str(y.shape).c_str());
  return Status::Ok();
}

// Channel c's 64 outputs whose int32 sums (before c.start) are acc[0..3] (16 consecutive outputs each), requantized
// and stored at dst, the bytes outside `mask` left alone. Fast multipliers: two vpackssdw and a vpacksswb narrow
// the four vectors together (saturating, as vpmovsdb: int32 -> int16 -> int8 saturates as int32 -> int8 does), one
// vpermd puts them back in order (the packs interleave their sources by 128-bit lane), then the clamp and one store;
// the others: requantize16 per vector.
struct Store64 {
  __m512i lo, hi;     // the activation's clamp in every byte
  __m512i order;      // after the packs, dword 4l + j holds vector j's outputs 4l .. 4l + 3
  explicit Store64(const QuantIO& io)
      : lo(_mm512_set1_epi8(static_cast<char>(io.lo))), hi(_mm512_set1_epi8(static_cast<char>(io.hi))),
        order(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15)) {}
};

__attribute__((always_inline)) inline void store64(const ChanRec& c, const __m512i acc[4], int8_t* dst, __mmask64 mask,
                                                   const Store64& k, const QuantIO& io) {
  constexpr __mmask16 k16 = 0xFFFF;  // the all-lanes mask forms: see requantize16
  const __m512i start = _mm512_set1_epi32(c.start);
  if (c.fast) {
    const __m512i m = _mm512_set1_epi64(c.m64), r = _mm512_set1_epi64(c.r64), cnt = fast_count(c.shift);
    __m512i v[4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) v[j] = mul_shift_fast(_mm512_maskz_add_epi32(k16, acc[j], start), m, r, cnt);
    const __m512i w01 = _mm512_maskz_packs_epi32(__mmask32{0xFFFFFFFF}, v[0], v[1]);
    const __m512i w23 = _mm512_maskz_packs_epi32(__mmask32{0xFFFFFFFF}, v[2], v[3]);
    const __m512i b8 = _mm512_maskz_packs_epi16(~__mmask64{0}, w01, w23);
    const __m512i b = _mm512_maskz_permutexvar_epi32(k16, k.order, b8);
    const __m512i y = _mm512_maskz_min_epi8(~__mmask64{0}, _mm512_maskz_max_epi8(~__mmask64{0}, b, k.lo), k.hi);
    _mm512_mask_storeu_epi8(dst, mask, y);
    return;
  }
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j)
    _mm_mask_storeu_epi8(dst + 16 * j, static_cast<__mmask16>(mask >> (16 * j)),
                         requantize16(_mm512_maskz_add_epi32(k16, acc[j], start), requant::Multiplier{c.m, c.shift},
                                      io.y_zero_point, io.lo, io.hi));
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
