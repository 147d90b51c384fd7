// The depthwise convolutions of the Arm NEON kernel sets (kernels/neon64, kernels/neon32): conv2d with one input
// and one output channel per group. Header-only, included by their conv2d.cc only.
//
// Direct kernels, 4 output columns per q-register. Every output starts at its bias and adds its taps in (row,
// column) order with one FMA each, skipping input rows outside the image and adding +0 for columns outside it, so
// its bits depend only on the shapes (never on threads or blocking).
//
// The input rows a chunk of output columns reads are copied, with their zero padding, into a ring of padded rows
// on the stack (one slot per input row an output row spans, so consecutive output rows reuse the rows they
// share): every tap of every vector is then a plain load (column stride 1), a de-interleaving load (stride 2,
// LD2: the even floats) or four lane loads (other strides), with no bounds to check. Output rows go in blocks of
// kDwVecs vectors (independent accumulator chains; 3x3 kernels of stride 1 take two output rows at once, which
// share 2 of their 3 input rows), the last block of a row 1-4 vectors wide (the lanes past the
// row are computed from the padding and not stored); 3x3 kernels have their taps unrolled.
#pragma once

#include <arm_neon.h>

#include <cstdint>
#include <type_traits>

#include "kernels/common/activation.h"
#include "kernels/common/conv_geometry.h"
#include "kernels/common/neon.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {
namespace neon {

constexpr int kDwVecs = 4;             // vectors of a row in one block (independent accumulator chains)
constexpr int64_t kDwRing = 4 * 1024;  // floats of the padded-row ring (16 KiB of stack: musl threads have 128 KiB)

// Stores nv <= 4 columns of v to p with the fused activation.
DTORCH_NEON_INLINE void dw_store(const Activation& act, const Clamp& cl, float32x4_t v, int nv, float* p) {
  v = cl(v);
  if (nv == 4) {
    vst1q_f32(p, v);
  } else {
    alignas(16) float t[4];
    vst1q_f32(t, v);
    for (int l = 0; l < nv; ++l) p[l] = t[l];
  }
  if (cl.after) bias_activation(act, 0.0f, p, nv);
}

// The 4 columns a vector's tap reads from a padded row: s[0], s[SW], s[2 SW], s[3 SW] (SW = 0: any stride sw).
template <int SW>
DTORCH_NEON_INLINE float32x4_t dw_load(const float* s, int64_t sw) {
  if (SW == 1) return vld1q_f32(s);
  if (SW == 2) return vld2q_f32(s).val[0];
  float32x4_t x = vld1q_dup_f32(s);
  x = vld1q_lane_f32(s + sw, x, 1);
  x = vld1q_lane_f32(s + 2 * sw, x, 2);
  return vld1q_lane_f32(s + 3 * sw, x, 3);
}

// NV <= kDwVecs vectors from chunk column q0 of one output row, the last with nv_last valid columns: rows[i] is the
// padded input row of kernel row i (nullptr: outside the image), whose float 0 is the chunk's first column's first
// tap. KH, KW: the kernel size when it is a compile-time constant (3x3), else 0 (g.kh, g.kw). Not inlined: its
// accumulators and addresses get the registers to themselves.
template <int SW, int KH, int KW, int NV>
__attribute__((noinline)) void dw_vectors(const ConvGeometry& g, const float* const* rows, const float* wc, float b,
                                          int64_t q0, int nv_last, float* yr) {
  const int64_t kh = KH > 0 ? KH : g.kh, kw = KW > 0 ? KW : g.kw, sw = SW > 0 ? SW : g.sw, dw = g.dw;
  const Clamp cl(g.act);
  float32x4_t acc[NV];
  DTORCH_NEON_UNROLL
  for (int v = 0; v < NV; ++v) acc[v] = vdupq_n_f32(b);
  for (int64_t i = 0; i < kh; ++i) {  // constant trip counts (3x3) are unrolled by the compiler
    if (rows[i] == nullptr) continue;
    const float* s0 = rows[i] + q0 * sw;
    for (int64_t j = 0; j < kw; ++j) {
      const float32x4_t wv = vld1q_dup_f32(wc + i * kw + j);
      const float* s = s0 + j * dw;
      DTORCH_NEON_UNROLL
      for (int v = 0; v < NV; ++v) acc[v] = vfmaq_f32(acc[v], dw_load<SW>(s + 4 * v * sw, sw), wv);
    }
  }
  DTORCH_NEON_UNROLL
  for (int v = 0; v < NV; ++v) dw_store(g.act, cl, acc[v], v == NV - 1 ? nv_last : 4, yr + q0 + 4 * v);
}

// Two consecutive output rows of a 3x3 kernel with strides and dilation 1 (they read 4 input rows, rows[0..3]):
// NV vectors from chunk column q0 of each. Each loaded input vector goes into both rows' accumulators; every
// output still adds its taps in (row, column) order, so its bits are those of dw_vectors.
template <int SW, int NV>
__attribute__((noinline)) void dw_pair(const ConvGeometry& g, const float* const* rows, const float* wc, float b,
                                       int64_t q0, int nv_last, float* ya, float* yb) {
  const int64_t sw = SW > 0 ? SW : g.sw, dw = g.dw;
  const Clamp cl(g.act);
  float32x4_t a[NV], c[NV];
  DTORCH_NEON_UNROLL
  for (int v = 0; v < NV; ++v) a[v] = c[v] = vdupq_n_f32(b);
  for (int r = 0; r < 4; ++r) {
    if (rows[r] == nullptr) continue;
    const float* s0 = rows[r] + q0 * sw;
    for (int j = 0; j < 3; ++j) {
      float32x4_t x[NV];
      DTORCH_NEON_UNROLL
      for (int v = 0; v < NV; ++v) x[v] = dw_load<SW>(s0 + j * dw + 4 * v * sw, sw);
      if (r < 3) {  // row a's kernel row r
        const float32x4_t wv = vld1q_dup_f32(wc + r * 3 + j);
        DTORCH_NEON_UNROLL
        for (int v = 0; v < NV; ++v) a[v] = vfmaq_f32(a[v], x[v], wv);
      }
      if (r > 0) {  // row b's kernel row r - 1
        const float32x4_t wv = vld1q_dup_f32(wc + (r - 1) * 3 + j);
        DTORCH_NEON_UNROLL
        for (int v = 0; v < NV; ++v) c[v] = vfmaq_f32(c[v], x[v], wv);
      }
    }
  }
  DTORCH_NEON_UNROLL
  for (int v = 0; v < NV; ++v) {
    dw_store(g.act, cl, a[v], v == NV - 1 ? nv_last : 4, ya + q0 + 4 * v);
    dw_store(g.act, cl, c[v], v == NV - 1 ? nv_last : 4, yb + q0 + 4 * v);
  }
}

// Columns [0, cw) of an output row in blocks: block(nv, q0, nv_last) for blocks of kDwVecs vectors, then one of
// the 1-4 vectors left (nv: a std::integral_constant, the block's vector count; nv_last: its last vector's columns).
template <typename Block>
DTORCH_NEON_INLINE void dw_blocks(int64_t cw, Block&& block) {
  constexpr int64_t kCols = 4 * kDwVecs;
  int64_t q0 = 0;
  for (; q0 + kCols <= cw; q0 += kCols) block(std::integral_constant<int, kDwVecs>{}, q0, 4);
  const int64_t rest = cw - q0;
  if (rest <= 0) return;
  const int nv_last = static_cast<int>(rest - 4 * ((rest - 1) / 4));
  switch ((rest + 3) / 4) {
    case 1: block(std::integral_constant<int, 1>{}, q0, nv_last); break;
    case 2: block(std::integral_constant<int, 2>{}, q0, nv_last); break;
    case 3: block(std::integral_constant<int, 3>{}, q0, nv_last); break;
    default: block(std::integral_constant<int, 4>{}, q0, nv_last); break;
  }
}
static_assert(kDwVecs == 4, "dw_blocks dispatches the last block's 1-4 vectors");

// The ring of padded rows of a plane: output columns per chunk (cw, a multiple of 4 unless it is the whole row),
// padded row width (pw) and slots (the input rows an output row spans, one more where 3x3 rows go in pairs).
struct DwRing {
  int64_t cw, pw, slots;
};

// False when the kernel is too tall for the ring (the caller falls back).
inline bool dw_ring(const ConvGeometry& g, DwRing* r) {
  r->slots = (g.kh - 1) * g.dh + 1 + (g.kh == 3 && g.kw == 3 && g.sw == 1 && g.sh == 1 && g.dh == 1 ? 1 : 0);
  if (g.kh > 16 || r->slots > 64) return false;
  // padded floats a chunk of c columns reads: the last vector's last tap (+8 for LD2 / lane-load slack)
  auto width = [&](int64_t c) { return ceil_div(c, 4) * 4 * g.sw + (g.kw - 1) * g.dw + 8; };
  int64_t c = g.ow;
  while (c > 4 && width(c) * r->slots > kDwRing) c = ceil_div(c / 2, 4) * 4;
  if (width(c) * r->slots > kDwRing) return false;
  r->cw = c;
  r->pw = width(c);
  return true;
}

// Whether depthwise() takes this geometry (else the caller runs the fallback kernel).
inline bool depthwise_fits(const ConvGeometry& g) {
  DwRing r{};
  return dw_ring(g, &r);
}

// dst[q] = src[q] for q in [lo, hi), 0 for the rest of [0, pw).
inline void pad_row(const float* src, int64_t lo, int64_t hi, int64_t pw, float* dst) {
  const float32x4_t zero = vdupq_n_f32(0.0f);
  int64_t q = 0;
  for (; q + 4 <= lo; q += 4) vst1q_f32(dst + q, zero);
  for (; q < lo; ++q) dst[q] = 0.0f;
  for (; q + 8 <= hi; q += 8) {
    vst1q_f32(dst + q, vld1q_f32(src + q));
    vst1q_f32(dst + q + 4, vld1q_f32(src + q + 4));
  }
  for (; q < hi; ++q) dst[q] = src[q];
  for (; q + 4 <= pw; q += 4) vst1q_f32(dst + q, zero);
  for (; q < pw; ++q) dst[q] = 0.0f;
}

// Output columns [c0, c0 + cw) of every row of one plane, through a ring of `slots` padded rows of `pw` floats.
template <int SW, int KH, int KW>
void dw_chunk(const ConvGeometry& g, const float* xp, const float* wc, float b, int64_t c0, int64_t cw,
              const DwRing& rg, float* ring, float* yp) {
  const int64_t slots = rg.slots, pw = rg.pw;
  constexpr int kMaxKh = 16;  // dw_ring checks g.kh <= kMaxKh and slots <= 64
  const int64_t base = c0 * g.sw - g.pl;  // input column of padded float 0
  int64_t held[64];  // the input row each slot holds
  for (int64_t s = 0; s < slots; ++s) held[s] = -1;
  // padded columns [lo, hi) lie inside the image
  const int64_t lo = base < 0 ? -base : 0, hi_raw = g.w - base, hi = hi_raw < pw ? (hi_raw < lo ? lo : hi_raw) : pw;
  // rows[i] = the padded input row ih (nullptr outside the image), copied into its slot unless it is there
  const float* rows[kMaxKh + 1];
  auto fetch = [&](int64_t ih, int i) {
    if (ih < 0 || ih >= g.h) {
      rows[i] = nullptr;
      return;
    }
    float* slot = ring + (ih % slots) * pw;
    if (held[ih % slots] != ih) pad_row(xp + ih * g.w + base, lo, hi, pw, slot);  // row ih with its padding
    held[ih % slots] = ih;
    rows[i] = slot;
  };
  int64_t oh = 0;
  if constexpr (KH == 3 && KW == 3 && SW == 1) {
    if (g.sh == 1 && g.dh == 1) {  // pairs of rows share 2 of their 3 input rows
      for (; oh + 2 <= g.oh; oh += 2) {
        for (int i = 0; i < 4; ++i) fetch(oh - g.pt + i, i);
        float* ya = yp + oh * g.ow + c0;
        float* yb = ya + g.ow;
        dw_blocks(cw, [&](auto nv, int64_t q0, int nv_last) {
          dw_pair<SW, decltype(nv)::value>(g, rows, wc, b, q0, nv_last, ya, yb);
        });
      }
    }
  }
  for (; oh < g.oh; ++oh) {
    for (int64_t i = 0; i < g.kh; ++i) fetch(oh * g.sh - g.pt + i * g.dh, static_cast<int>(i));
    float* yr = yp + oh * g.ow + c0;
    dw_blocks(cw, [&](auto nv, int64_t q0, int nv_last) {
      dw_vectors<SW, KH, KW, decltype(nv)::value>(g, rows, wc, b, q0, nv_last, yr);
    });
  }
}

// One output plane (image n, channel c), chunk by chunk.
template <int SW, int KH, int KW>
void dw_plane(const ConvGeometry& g, const float* xp, const float* wc, float b, float* yp, const DwRing& rg,
              float* ring) {
  for (int64_t c0 = 0; c0 < g.ow; c0 += rg.cw)
    dw_chunk<SW, KH, KW>(g, xp, wc, b, c0, g.ow - c0 < rg.cw ? g.ow - c0 : rg.cw, rg, ring, yp);
}
using DwPlaneFn = void (*)(const ConvGeometry&, const float*, const float*, float, float*, const DwRing&, float*);

// Every plane of a depthwise convolution (depthwise_fits(g)); threads take whole planes. The ring geometry and the
// plane kernel depend on the geometry only: chosen once.
inline void depthwise(ThreadPool* pool, const ConvGeometry& g, const float* x, const float* w, const float* bias,
                      float* y) {
  DwRing rg{};
  if (!dw_ring(g, &rg)) return;  // the caller checked depthwise_fits
  const bool k3 = g.kh == 3 && g.kw == 3;
  const DwPlaneFn plane = g.sw == 1 ? (k3 ? dw_plane<1, 3, 3> : dw_plane<1, 0, 0>)
                          : g.sw == 2 ? (k3 ? dw_plane<2, 3, 3> : dw_plane<2, 0, 0>)
                                      : dw_plane<0, 0, 0>;
  const int64_t planes = g.n * g.c, in_plane = g.h * g.w, out_plane = g.oh * g.ow;
  parallel_chunks(pool, planes, 1, [&](int64_t b, int64_t e) {
    alignas(16) float ring[kDwRing];
    for (int64_t p = b; p < e; ++p) {
      const int64_t c = p % g.c;
      plane(g, x + p * in_plane, w + c * g.kh * g.kw, bias == nullptr ? 0.0f : bias[c], y + p * out_plane, rg, ring);
    }
  });
}

}  // namespace neon
}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
