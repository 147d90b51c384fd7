// Parts of the int8 convolutions on vpdpbusd and AMX tiles (kernels/vnni/qconv2d.cc, kernels/amx/qconv2d.cc): each
// output channel's starting sum and requantization (ChanRec), the u8 copy of 4-channel blocks (copy_run) and the
// requantization and store of 64 consecutive outputs of one channel (store64). Compiled into each set that includes
// it, in that set's namespace (kernels/common/isa.h).
#pragma once

#include <cstdint>

#include "kernels/common/qconv_prepare.h"
#include "kernels/common/conv_geometry.h"
#include "kernels/common/quant_params.h"
#include "kernels/common/util.h"
#include "kernels/vnni/vnni.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

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
