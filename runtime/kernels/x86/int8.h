// The int8 arithmetic of the x86 set's qconv2d and qlinear (AVX2): products on vpmaddwd, requantization with the
// portable bits.
//
// Products. Both operands are widened to int16 before they meet: d = x - x_zero_point in [-255, 255] (the zero points
// are in [-128, 127]) and w in [-128, 127]. vpmaddwd multiplies 16 int16 pairs and adds each two neighbours into an
// int32: |d * w| <= 255 * 128 = 32640, so a lane's pair sum is at most 65280 in magnitude, exact in int32, for every
// int8 weight (-128 included) and every zero point. (vpmaddubsw, u8 x s8 with the pair sums saturated to int16, would
// clip 255 * 127 * 2 = 64770.) The pairs are then added with vpaddd, wrapping modulo 2^32 as the portable kernels'
// uint32 sums do; integer sums do not depend on their order, so the accumulators hold the portable kernels' values.
//
// Requantization (kernels/common/requant.h): y = clamp(f(acc) + zp, lo, hi) with f(acc) = (acc * m + 2^(s-1)) >> s in
// 64 bits (an arithmetic shift). AVX2 has no 64-bit arithmetic shift, min or max, so per output channel:
// - f is monotonic (m >= 0), so acc is first clamped in int32 to [a, b] with f(a) <= lo - zp (or a = INT32_MIN) and
//   f(b) >= hi - zp (or b = INT32_MAX), each at most one step of f past that bound (channel_requant): a value below
//   a had f <= f(a) <= lo - zp, which the final clamp takes to lo either way (above b likewise to hi), and inside
//   [a, b] f stays within [lo - zp - 2^30 - 1, hi - zp + 2^30 + 1] (one step of acc moves f by at most m * 2^-s + 1
//   < 2^30 + 1): int32. Where f takes the values lo - zp and hi - zp (every multiplier below 1 does), a and b are
//   where it does, f(clamp(acc, a, b)) is in [lo - zp, hi - zp] already and the final clamp is left out. (a > b only
//   when lo == hi, with the final clamp: clamp(acc, a, b) = b gives f(b) >= hi - zp, clamped to hi = lo.)
// - p = acc * m (vpmuldq on the even and the odd int32 lanes) lies in (-2^62, 2^62); adding 2^(s-1) + 2^62 makes it
//   non-negative below 2^64, so a logical shift (vpsrlq) gives f(acc) + 2^(62-s) exactly (2^62 is a multiple of 2^s,
//   s <= 62). Its low 32 bits plus (zp - 2^(62-s)) modulo 2^32 are f(acc) + zp, an int32 by the bound above.
// - then the 32-bit clamp [lo, hi] where a channel needs it, and saturating packs to int8 (exact: the values are in
//   [-128, 127]).
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/common/quant_params.h"
#include "kernels/common/requant.h"
#include "kernels/common/util.h"
#include "kernels/x86/x86.h"

namespace dtorch {
namespace kernels {
namespace x86 {

// The start of a run: the portable kernel's infer on the node (its checks, its errors), the output shape it gives
// (*shape) checked against out[0], and ctx's scratch checked to hold the `need(*shape)` bytes infer asked for.
template <typename Need>
inline Status begin_run(const char* op, const KernelDef* portable, const KernelContext& ctx, const TensorView* in,
                        int n_in, const TensorView* out, int n_out, Shape* shape, Need&& need) {
  DTORCH_RETURN_IF_ERROR(check_num_outputs(op, n_out, 1));
  if (portable == nullptr) return op_error(StatusCode::kInternal, op, "the portable kernel is not registered");
  size_t portable_scratch = 0;
  DTORCH_RETURN_IF_ERROR(portable->infer(*ctx.attrs, in, n_in, shape, n_out, &portable_scratch));
  if (out[0].dtype != DType::kInt8 || out[0].shape != *shape)
    return op_error(StatusCode::kInternal, op, "output %s is not the int8 %s infer gave",
                    ::dtorch::shape_str(out[0].shape).c_str(), ::dtorch::shape_str(*shape).c_str());
  const size_t bytes = need(*shape);
  if (ctx.scratch_bytes < bytes)
    return op_error(StatusCode::kInternal, op, "scratch of %zu bytes is smaller than the %zu bytes infer asked for",
                    ctx.scratch_bytes, bytes);
  return Status::Ok();
}

// What prepare kept (`bytes` long), or, when it kept nothing (the weights or scales are not constants), the same
// made now by `fill` into the scratch.
template <typename Fill>
inline const uint8_t* prepared_or_made(const KernelContext& ctx, int64_t bytes, Fill&& fill) {
  const uint8_t* prepared = static_cast<const uint8_t*>(ctx.prepared);
  if (prepared != nullptr && ctx.prepared_bytes == static_cast<size_t>(bytes)) return prepared;
  uint8_t* scratch = static_cast<uint8_t*>(ctx.scratch);
  fill(scratch);
  return scratch;
}

// One output channel's requantization constants (see the file comment).
struct ChannelRequant {
  int32_t a, b;     // the int32 clamp of the accumulator
  int32_t m;        // the multiplier's m
  int32_t shift;    // s
  int64_t round;    // 2^(s-1) + 2^62
  int32_t c;        // zp - 2^(62-s), modulo 2^32
  int32_t exact;    // 1: f(clamp(acc, a, b)) is in [lo - zp, hi - zp] already (no final clamp needed)
};

// f(acc) of the file comment, in int64 (|acc * m| < 2^62: no overflow).
inline int64_t requant_f(int64_t acc, const requant::Multiplier& mul) {
  return (acc * mul.m + (int64_t{1} << (mul.shift - 1))) >> mul.shift;
}

// The smallest int32 acc with f(acc) >= v, or 2^31 if there is none: bisection on the monotonic f (32 steps).
inline int64_t first_at_least(int64_t v, const requant::Multiplier& mul) {
  int64_t no = int64_t{INT32_MIN} - 1, yes = int64_t{INT32_MAX} + 1;  // f(no) < v <= f(yes), at the bounds by fiat
  while (yes - no > 1) {
    const int64_t mid = no + (yes - no) / 2;
    (requant_f(mid, mul) >= v ? yes : no) = mid;
  }
  return yes;
}

// The constants of a channel with multiplier `mul`, output zero point `zp` and clamp [lo, hi] (once per channel, at
// load). a: where f reaches lo - zp exactly, the smallest acc with f(acc) = lo - zp (then a smaller acc, whose output
// is lo, is raised to it and gives lo without the final clamp), or INT32_MIN when f never goes below lo - zp; else
// (f steps over lo - zp: a multiplier above 1) the largest acc with f(acc) < lo - zp and the final clamp is needed
// (`exact` false). b likewise at hi - zp. Either way the file comment's conditions hold.
inline ChannelRequant channel_requant(const requant::Multiplier& mul, int32_t zp, int32_t lo, int32_t hi) {
  const int64_t lz = int64_t{lo} - zp, hz = int64_t{hi} - zp;
  ChannelRequant r{};
  bool exact = true;
  const int64_t a = first_at_least(lz, mul);  // INT32_MIN .. 2^31
  if (a == INT32_MIN || (a <= INT32_MAX && requant_f(a, mul) == lz)) {
    r.a = static_cast<int32_t>(a);
  } else {
    r.a = static_cast<int32_t>(a - 1);  // f(a - 1) < lz
    exact = false;
  }
  const int64_t b = first_at_least(hz + 1, mul) - 1;  // the largest acc with f(acc) <= hz: INT32_MIN - 1 .. INT32_MAX
  if (b == INT32_MAX || (b >= INT32_MIN && requant_f(b, mul) == hz)) {
    r.b = static_cast<int32_t>(b);
  } else {
    r.b = static_cast<int32_t>(b + 1);  // f(b + 1) > hz
    exact = false;
  }
  r.exact = exact ? 1 : 0;
  r.m = mul.m;
  r.shift = mul.shift;
  r.round = (int64_t{1} << (mul.shift - 1)) + (int64_t{1} << 62);
  const uint32_t c = static_cast<uint32_t>(zp) - static_cast<uint32_t>(uint64_t{1} << (62 - mul.shift));
  std::memcpy(&r.c, &c, sizeof c);
  return r;
}

// Every output channel's constants from its weight scale ws[i] (o values). Returns whether any channel needs the
// final clamp.
inline bool channel_requants(const QuantIO& io, const float* ws, int64_t o, ChannelRequant* out) {
  bool clamp = false;
  for (int64_t i = 0; i < o; ++i) {
    out[i] = channel_requant(channel_multiplier(io, ws, i), io.y_zero_point, io.lo, io.hi);
    clamp = clamp || out[i].exact == 0;
  }
  return clamp;
}

// A node's requantization table, as the kernels keep it (prepare) or make it (run): a 64-byte header whose first
// int32 says whether any channel needs the final clamp, then each output channel's constants.
inline int64_t requant_table_bytes(int64_t o) { return 64 + (o * int64_t{sizeof(ChannelRequant)} + 63) / 64 * 64; }

inline void write_requant_table(const QuantIO& io, const float* ws, int64_t o, uint8_t* dst) {
  std::memset(dst, 0, 64);
  const int32_t clamp = channel_requants(io, ws, o, reinterpret_cast<ChannelRequant*>(dst + 64)) ? 1 : 0;
  std::memcpy(dst, &clamp, sizeof clamp);
}

struct RequantTable {
  const ChannelRequant* channels;
  bool clamp;
};

inline RequantTable read_requant_table(const uint8_t* src) {
  int32_t clamp;
  std::memcpy(&clamp, src, sizeof clamp);
  return RequantTable{reinterpret_cast<const ChannelRequant*>(src + 64), clamp != 0};
}

// The requantization of 8 int32 lanes, each lane with its own constants (a channel's, broadcast, or 8 channels').
struct Requant8 {
  __m256i a, b, c;             // int32 lanes
  __m256i m_even, m_odd;       // m in the low half of each 64-bit lane: lanes 0, 2, 4, 6 and 1, 3, 5, 7
  __m256i r_even, r_odd;       // round, 64-bit lanes
  __m256i s_even, s_odd;       // shift, 64-bit lanes
};

// One channel's constants in every lane.
inline Requant8 requant8_of(const ChannelRequant& q) {
  Requant8 r;
  r.a = _mm256_set1_epi32(q.a);
  r.b = _mm256_set1_epi32(q.b);
  r.c = _mm256_set1_epi32(q.c);
  r.m_even = r.m_odd = _mm256_set1_epi32(q.m);
  r.r_even = r.r_odd = _mm256_set1_epi64x(q.round);
  r.s_even = r.s_odd = _mm256_set1_epi64x(q.shift);
  return r;
}

// Lane l with channel q[l]'s constants (n <= 8 channels; the lanes past n get channel 0's, their results unused).
inline Requant8 requant8_of(const ChannelRequant* q, int n) {
  alignas(32) int32_t a[8], b[8], c[8], m[8];
  alignas(32) int64_t r[2][4], s[2][4];
  for (int l = 0; l < 8; ++l) {
    const ChannelRequant& e = q[l < n ? l : 0];
    a[l] = e.a;
    b[l] = e.b;
    c[l] = e.c;
    m[l] = e.m;
    r[l & 1][l >> 1] = e.round;
    s[l & 1][l >> 1] = e.shift;
  }
  Requant8 v;
  v.a = _mm256_load_si256(reinterpret_cast<const __m256i*>(a));
  v.b = _mm256_load_si256(reinterpret_cast<const __m256i*>(b));
  v.c = _mm256_load_si256(reinterpret_cast<const __m256i*>(c));
  const __m256i mv = _mm256_load_si256(reinterpret_cast<const __m256i*>(m));
  v.m_even = mv;                            // vpmuldq reads the low int32 of each 64-bit lane: lanes 0, 2, 4, 6
  v.m_odd = _mm256_srli_epi64(mv, 32);      // lanes 1, 3, 5, 7 moved there
  v.r_even = _mm256_load_si256(reinterpret_cast<const __m256i*>(r[0]));
  v.r_odd = _mm256_load_si256(reinterpret_cast<const __m256i*>(r[1]));
  v.s_even = _mm256_load_si256(reinterpret_cast<const __m256i*>(s[0]));
  v.s_odd = _mm256_load_si256(reinterpret_cast<const __m256i*>(s[1]));
  return v;
}

// requant::requantize of 8 accumulators (file comment): the int32 results in [lo, hi]. `clamp`: whether a lane's
// channel may need the final clamp (ChannelRequant::exact).
__attribute__((always_inline)) inline __m256i requantize8(__m256i acc, const Requant8& q, __m256i lo, __m256i hi,
                                                          bool clamp) {
  acc = _mm256_min_epi32(_mm256_max_epi32(acc, q.a), q.b);
  const __m256i even = _mm256_srlv_epi64(_mm256_add_epi64(_mm256_mul_epi32(acc, q.m_even), q.r_even), q.s_even);
  const __m256i odd = _mm256_srlv_epi64(
      _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(acc, 32), q.m_odd), q.r_odd), q.s_odd);
  const __m256i y = _mm256_add_epi32(_mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA), q.c);
  return clamp ? _mm256_min_epi32(_mm256_max_epi32(y, lo), hi) : y;
}

// Two vectors of 8 int32 values in [-128, 127] as 16 int8 values in order (the packs saturate nothing).
inline __m128i pack16(__m256i v0, __m256i v1) {
  const __m256i w = _mm256_packs_epi32(v0, v1);           // v0[0..3] v1[0..3] | v0[4..7] v1[4..7]
  const __m256i b = _mm256_packs_epi16(w, w);             // per 128-bit lane: those 8 bytes, twice
  const __m256i o = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 0, 0, 0, 0));
  return _mm256_castsi256_si128(o);
}

// The first n (<= 16) bytes of v at dst.
inline void store_bytes(int8_t* dst, __m128i v, int64_t n) {
  if (n >= 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), v);
    return;
  }
  alignas(16) int8_t b[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(b), v);
  for (int64_t i = 0; i < n; ++i) dst[i] = b[i];
}

// An int16 pair (lo, hi) as the int32 that vpmaddwd reads: lo in the low half.
inline int32_t pair16(int32_t lo, int32_t hi) {
  const uint32_t u = (static_cast<uint32_t>(lo) & 0xFFFFu) | (static_cast<uint32_t>(hi) << 16);
  int32_t r;
  std::memcpy(&r, &u, sizeof r);
  return r;
}

}  // namespace x86
}  // namespace kernels
}  // namespace dtorch
