// qconv2d, x86-64 AVX2 kernel set (kernels/x86/x86.h): the portable kernel's bits (kernels/portable/qconv2d.cc is the
// specification; the arithmetic and why it is exact: kernels/x86/int8.h). Output positions run along the vector lanes,
// so each tile stores straight into the NCHW output:
//
// - The input is copied as d = x - x_zero_point in int16 (the border holds 0, the real value 0, which adds nothing,
//   as the portable kernel skips padding taps), zero-padded and split by column phase: element (row, col) at
//   [row][col % sw][col / sw], so the inputs of 8 consecutive output columns at any tap are 8 consecutive elements
//   whatever the column stride (strides 1 and 2 are copied 16 columns a step, others one by one).
// - Dense and grouped convolutions: per image and group, the copy interleaves each two input channels as one int32
//   (an int16 pair; an odd last channel pairs with 0), and a step of the K loop is one tap and one channel pair.
//   Tile: kP slots of 8 consecutive positions of one output row (the slots run on across rows; a 1x1 stride-1
//   unpadded convolution has one row of every position) times kNC output channels: per step, each slot's 8 pairs
//   meet each channel's weight pair (one int32 broadcast; the weights are packed at load, [panel][step][kNC] int16
//   pairs) in vpmaddwd, summed with vpaddd. Threads split tiles (all their panels while there are enough tiles).
// - Depthwise (one input and one output channel per group): each channel is one unit that copies its own plane and
//   then runs its rows in blocks of up to 64 positions; the taps go in pairs, the two taps' inputs of 16 positions
//   interleaved (vpunpcklwd / vpunpckhwd) to meet the pair's weights in vpmaddwd.
// - Epilogue: kernels/x86/int8.h requantize8 with each channel's constants (computed at load with the packed
//   weights; at run when the weights or scales are not constants).
// Every output is computed the same way whichever thread takes it: the bits do not depend on the thread count.
#include <cstdint>
#include <cstring>

#include "kernels/common/portable_kernel.h"
#include "kernels/common/conv_geometry.h"
#include "kernels/common/quant_params.h"
#include "kernels/common/util.h"
#include "kernels/x86/int8.h"
#include "kernels/x86/x86.h"

namespace dtorch {
namespace {

using kernels::op_error;
using kernels::x86::ChannelRequant;
constexpr char kOp[] = "qconv2d";
constexpr int kNC = 6;  // output channels per dense tile
constexpr int kP = 2;   // slots of 8 positions per dense tile
constexpr int64_t kSlack = 16;  // elements of the copy past its end (see plan_of)

const KernelDef* portable() { return kernels::portable_kernel<kOp, DType::kInt8>(); }

int64_t align64(int64_t n) { return kernels::ceil_div(n, 64) * 64; }

// What the packing needs: the weight's shape and the groups.
struct Weights {
  int64_t o, cg, og, kh, kw, groups;
  bool dw;            // depthwise: one input and one output channel per group
  int64_t pairs;      // dense: the group's input channels in pairs (cg rounded up to even, halved)
  int64_t steps;      // dense: K-loop steps, kh * kw * pairs
  int64_t panels;     // dense: kNC-channel panels per group
  int64_t tap_pairs;  // depthwise: the taps in pairs, ceil(kh * kw / 2)
};

Weights weights_of(int64_t o, int64_t cg, int64_t kh, int64_t kw, int64_t groups) {
  Weights w{};
  w.o = o;
  w.cg = cg;
  w.kh = kh;
  w.kw = kw;
  w.groups = groups;
  w.og = o / groups;
  w.dw = cg == 1 && w.og == 1;
  w.pairs = kernels::ceil_div(cg, 2);
  w.steps = kh * kw * w.pairs;
  w.panels = kernels::ceil_div(w.og, kNC);
  w.tap_pairs = kernels::ceil_div(kh * kw, 2);
  return w;
}

// Packed weights: dense [group][panel][step][kNC] int16 pairs (0 past the group's channels); depthwise
// [channel][tap pair] int16 pairs (0 past the last tap).
int64_t weight_bytes(const Weights& w) {
  return (w.dw ? w.o * w.tap_pairs : w.groups * w.panels * w.steps * kNC) * int64_t{4};
}
// What prepare keeps: the requantization table (kernels/x86/int8.h), then the packed weights.
int64_t requant_bytes(const Weights& w) { return kernels::x86::requant_table_bytes(w.o); }
int64_t packed_bytes(const Weights& w) { return requant_bytes(w) + weight_bytes(w); }

void pack(const Weights& wg, const int8_t* w, int32_t* dst) {
  const int64_t taps = wg.kh * wg.kw;
  if (wg.dw) {
    for (int64_t o = 0; o < wg.o; ++o)
      for (int64_t t = 0; t < wg.tap_pairs; ++t)
        dst[o * wg.tap_pairs + t] =
            kernels::x86::pair16(w[o * taps + 2 * t], 2 * t + 1 < taps ? w[o * taps + 2 * t + 1] : 0);
    return;
  }
  std::memset(dst, 0, static_cast<size_t>(weight_bytes(wg)));
  for (int64_t o = 0; o < wg.o; ++o) {
    const int64_t gi = o / wg.og, oc = o % wg.og;
    int32_t* panel = dst + (gi * wg.panels + oc / kNC) * wg.steps * kNC;
    const int8_t* wo = w + o * wg.cg * taps;
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t q = 0; q < wg.pairs; ++q) {
        const int32_t lo = wo[(2 * q) * taps + t], hi = 2 * q + 1 < wg.cg ? wo[(2 * q + 1) * taps + t] : 0;
        panel[(t * wg.pairs + q) * kNC + oc % kNC] = kernels::x86::pair16(lo, hi);
      }
  }
}

// The requantization constants and the packed weights into dst (packed_bytes(wg) bytes, 64-byte aligned).
void prepare_into(const Weights& wg, const kernels::QuantIO& io, const int8_t* w, const float* ws, uint8_t* dst) {
  kernels::x86::write_requant_table(io, ws, wg.o, dst);
  pack(wg, w, reinterpret_cast<int32_t*>(dst + requant_bytes(wg)));
}

struct Plan {
  kernels::ConvGeometry g;
  kernels::QuantIO io;
  Weights wg;
  int64_t hp, wq;         // the copy: padded rows, columns per phase
  int64_t plane;          // elements per channel (pair) of the copy: hp * sw * wq
  int64_t copy_bytes;     // dense: a group's pairs; depthwise: an image's channels (slack included)
  bool merged;            // dense 1x1, stride 1, unpadded: every position of the image as one output row
  int64_t rows, cols;     // output rows and positions per row as the tiles see them
  int64_t offsets;        // step (dense) or tap (depthwise) offsets
};

// The node's plan once the portable kernel's infer has accepted it (out: the output shape it gave). Read without
// the validating helpers: their messages format lists with std::to_string, whose inline copies an ISA object must
// not define (tests/runtime/test_isa_isolation.py).
Status plan_of(const Attrs& attrs, const TensorView* in, const Shape& out, Plan* p) {
  DTORCH_RETURN_IF_ERROR(kernels::read_quant_io(kOp, attrs, &p->io));
  DTORCH_RETURN_IF_ERROR(kernels::conv_geometry(kOp, attrs, in, out, &p->g));
  const kernels::ConvGeometry& g = p->g;
  p->wg = weights_of(g.o, g.cg, g.kh, g.kw, g.groups);
  p->merged = !p->wg.dw && g.pointwise;
  p->hp = g.h + g.pt + g.pb;
  p->wq = kernels::ceil_div(g.w + g.pl + g.pr, g.sw);
  p->plane = p->hp * g.sw * p->wq;
  p->rows = p->merged ? 1 : g.oh;
  p->cols = p->merged ? g.oh * g.ow : g.ow;
  // Slack past the last element: the lanes of a row's last vector past its end read (and discard) up to 15
  // elements on (depthwise: each channel's plane has its own, as another thread may be writing the next one).
  if (p->wg.dw) {
    p->copy_bytes = align64(g.c * (p->plane + kSlack) * 2);
    p->offsets = g.kh * g.kw;
  } else {
    p->copy_bytes = align64((p->wg.pairs * p->plane + kSlack) * 4);
    p->offsets = p->wg.steps;
  }
  return Status::Ok();
}

// Scratch: the constants and packed weights (when prepare did not keep them), the offsets, one copy.
int64_t scratch_bytes_of(const Plan& p) {
  return align64(packed_bytes(p.wg)) + align64(p.offsets * 8) + p.copy_bytes;
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  const KernelDef* k = portable();
  if (k == nullptr) return op_error(StatusCode::kInternal, kOp, "the portable kernel is not registered");
  DTORCH_RETURN_IF_ERROR(k->infer(attrs, in, n_in, out, n_out, scratch_bytes));
  Plan p;
  DTORCH_RETURN_IF_ERROR(plan_of(attrs, in, out[0], &p));
  *scratch_bytes = static_cast<size_t>(scratch_bytes_of(p));
  return Status::Ok();
}

// Load time: with constant weights and weight scales, their constants and packed weights (else run makes them).
Status prepare(const Attrs& attrs, const TensorView* in, int n_in, void* dst, size_t* bytes) {
  *bytes = 0;
  if (n_in < 3 || in[1].data == nullptr || in[1].dtype != DType::kInt8 || in[1].shape.ndim != 4 ||
      in[2].data == nullptr || in[2].dtype != DType::kFloat32 || in[2].shape.ndim != 1)
    return Status::Ok();
  const int64_t groups = attrs.get_int("groups"), o = in[1].shape.dims[0];
  if (groups < 1 || o < 1 || o % groups != 0 || in[1].shape.dims[1] < 1 || in[1].shape.dims[2] < 1 ||
      in[1].shape.dims[3] < 1 || in[2].shape.dims[0] != o)
    return Status::Ok();  // run's checks report it
  kernels::QuantIO io{};
  if (!kernels::read_quant_io(kOp, attrs, &io).ok() || !kernels::check_weight_scales(kOp, io, in[2], o).ok())
    return Status::Ok();
  const Weights wg = weights_of(o, in[1].shape.dims[1], in[1].shape.dims[2], in[1].shape.dims[3], groups);
  *bytes = static_cast<size_t>(packed_bytes(wg));
  if (dst != nullptr) prepare_into(wg, io, in[1].as<const int8_t>(), in[2].as<const float>(), static_cast<uint8_t*>(dst));
  return Status::Ok();
}

// --- the copy ----------------------------------------------------------------------------------------------------

// The 16 int16 values d = x - zp of x[0 .. 16).
inline __m256i load_d16(const int8_t* x, __m256i zp) {
  return _mm256_sub_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x))), zp);
}

// One padded row of the copy (sw phases of wq elements) from input rows x0 and x1 (x1: the pair's second channel,
// null for none; T = int32_t) or x0 alone (T = int16_t); x0 null: a padding row. Column strides 1 and 2 (every
// network's) run 16 input columns a step; others element by element. `overrun` (depthwise planes, whose unit writes
// its rows in order and has kSlack elements after its last): the row's last columns may be one more full step that
// reads up to 15 bytes past the row (never past x_end, the input's end) and stores up to 15 elements past the row's
// end; the padding is written after it and the next row over it.
template <typename T>
void copy_row(const Plan& p, const int8_t* x0, const int8_t* x1, T* dst, bool overrun = false,
              const int8_t* x_end = nullptr) {
  constexpr bool kPairs = sizeof(T) == 4;
  // Locals: the stores below could alias the plan as far as the compiler knows.
  const int64_t W = p.g.w, pl = p.g.pl, sw = p.g.sw, wq = p.wq;
  const int32_t zp = p.io.x_zero_point;
  if (x0 == nullptr) {
    std::memset(dst, 0, static_cast<size_t>(sw * wq) * sizeof(T));
    return;
  }
  auto value = [&](int64_t w) -> T {
    if constexpr (kPairs) {
      return kernels::x86::pair16(x0[w] - zp, x1 != nullptr ? x1[w] - zp : 0);
    } else {
      return static_cast<T>(x0[w] - zp);
    }
  };
  // Zeros in phase ph's row outside its elements [u0, u1) that hold input columns (a few: no memset call).
  auto pad = [&](int64_t ph, int64_t u0, int64_t u1) {
    T* row = dst + ph * wq;
    if (u1 <= u0) u0 = u1 = wq;
    for (int64_t u = 0; u < u0; ++u) row[u] = 0;
    for (int64_t u = u1; u < wq; ++u) row[u] = 0;
  };
  const __m256i vzp = _mm256_set1_epi16(static_cast<int16_t>(zp));
  int64_t w = 0;
  // Whether one full step may end the row at column c (see `overrun`).
  auto may_overrun = [&](int64_t c) { return overrun && x0 + c + 16 <= x_end; };
  if (sw == 1) {
    T* body = dst + pl;
    auto step16 = [&](int64_t c) {  // columns c .. c + 15
      const __m256i d0 = load_d16(x0 + c, vzp);
      if constexpr (kPairs) {
        const __m256i d1 = x1 != nullptr ? load_d16(x1 + c, vzp) : _mm256_setzero_si256();
        const __m256i lo = _mm256_unpacklo_epi16(d0, d1), hi = _mm256_unpackhi_epi16(d0, d1);  // 0-3 8-11 | 4-7 12-15
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(body + c), _mm256_permute2x128_si256(lo, hi, 0x20));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(body + c + 8), _mm256_permute2x128_si256(lo, hi, 0x31));
      } else {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(body + c), d0);
      }
    };
    for (; w + 16 <= W; w += 16) step16(w);
    if (w < W && may_overrun(w)) {
      step16(w);
      w = W;
    } else if (w < W && W >= 16) {  // the last 16 columns, some again (the same values)
      step16(W - 16);
      w = W;
    }
    for (; w < W; ++w) body[w] = value(w);
    pad(0, pl, pl + W);
    return;
  }
  if (sw == 2) {  // padded column c = w + pl goes to phase c & 1, place c >> 1
    const int64_t w0 = (pl & 1) != 0 && W > 0 ? 1 : 0;  // w + pl even: w, w + 2, ... go to phase 0, the rest to 1
    w = w0;
    // Columns c .. c + 15 (c + pl even): the even ones to phase 0, the odd ones to phase 1.
    auto step16 = [&](int64_t c) {
      const int64_t u = (c + pl) >> 1;
      if constexpr (kPairs) {
        const __m256i d0 = load_d16(x0 + c, vzp);
        const __m256i d1 = x1 != nullptr ? load_d16(x1 + c, vzp) : _mm256_setzero_si256();
        const __m256 lo = _mm256_castsi256_ps(_mm256_unpacklo_epi16(d0, d1));  // pairs of columns 0-3 8-11
        const __m256 hi = _mm256_castsi256_ps(_mm256_unpackhi_epi16(d0, d1));  // 4-7 12-15
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + u),
                            _mm256_castps_si256(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0))));  // 0 2 .. 14
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + wq + u),
                            _mm256_castps_si256(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1))));  // 1 3 .. 15
      } else {
        // Per 128-bit lane, the even columns' words then the odd ones'; then 8 even | 8 odd columns.
        const __m256i split = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15,
                                               0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
        const __m256i a = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(load_d16(x0 + c, vzp), split), 0xD8);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + u), _mm256_castsi256_si128(a));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + wq + u), _mm256_extracti128_si256(a, 1));
      }
    };
    for (; w + 16 <= W; w += 16) step16(w);
    if (w == w0 && w < W && may_overrun(w)) {  // the whole row in one step: its phase-0 store may run into the
      step16(w);                               // start of phase 1 (padding and the odd column 0, written below)
      w = W;
    } else if (w < W - 1 && W >= 17) {  // 16 columns again ending at or one before the last (c + pl even)
      const int64_t c = W - 16 - ((W - 16 + pl) & 1);
      step16(c);
      w = c + 16;
    }
    for (; w < W; ++w) {
      const int64_t c = w + pl;
      dst[(c & 1) * wq + (c >> 1)] = value(w);
    }
    if (w0 == 1) dst[wq + (pl >> 1)] = value(0);
    pad(0, (pl + 1) >> 1, (pl + W + 1) >> 1);
    pad(1, pl >> 1, (pl + W) >> 1);
    return;
  }
  for (int64_t ph = 0; ph < sw; ++ph)
    pad(ph, kernels::ceil_div(pl - ph > 0 ? pl - ph : 0, sw),
        pl + W - ph > 0 ? kernels::ceil_div(pl + W - ph, sw) : 0);
  int64_t ph = pl % sw, u = pl / sw;
  for (; w < W; ++w) {
    dst[ph * wq + u] = value(w);
    if (++ph == sw) {
      ph = 0;
      ++u;
    }
  }
}

// Dense: the pairs of group gi of image x0 (NCHW) into xs, [pair][row][phase][column].
void copy_pairs(ThreadPool* pool, const Plan& p, const int8_t* x0, int64_t gi, int32_t* xs) {
  const kernels::ConvGeometry& g = p.g;
  const int64_t hw = g.h * g.w;
  kernels::parallel_chunks(pool, p.wg.pairs * p.hp, 8, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t q = r / p.hp, h = r % p.hp - g.pt;
      const int8_t* c0 = h >= 0 && h < g.h ? x0 + (gi * g.cg + 2 * q) * hw + h * g.w : nullptr;
      copy_row<int32_t>(p, c0, c0 != nullptr && 2 * q + 1 < g.cg ? c0 + hw : nullptr, xs + r * g.sw * p.wq);
    }
  });
  std::memset(xs + p.wg.pairs * p.plane, 0, kSlack * sizeof(int32_t));  // read by the last lanes, then discarded
}

// Offset of tap (i, j) from an output position's element in a channel (pair) of the copy.
int64_t tap_offset(const Plan& p, int64_t i, int64_t j) {
  const kernels::ConvGeometry& g = p.g;
  return (i * g.dh * g.sw + (j * g.dw) % g.sw) * p.wq + (j * g.dw) / g.sw;
}

// --- dense and grouped -------------------------------------------------------------------------------------------

// A tile is kP slots of up to 8 positions of one output row each (the row's last slot may be shorter).
struct Slot {
  const int32_t* x;  // the copy at the slot's first position
  int64_t y;         // the slot's first position in an output channel
  int64_t n;         // positions (1 to 8)
};

struct TileArgs {
  Slot slot[kP];
  const int64_t* off;           // each step's offset from a position
  int64_t steps;
  const int32_t* w;             // the panel: [step][kNC] pairs
  const ChannelRequant* rq;     // the panel's channels
  const int32_t* bias;          // the panel's channels, or null
  __m256i lo, hi;               // the output clamp
  bool clamp;                   // whether a channel needs it
  int8_t* y;                    // the panel's first channel
  int64_t plane;                // output elements per channel
};

// The first n (1 to 8) bytes of the low (hi = false) or high 8 of v at dst.
inline void store8(int8_t* dst, __m128i v, bool high, int64_t n) {
  if (high) v = _mm_unpackhi_epi64(v, v);
  if (n == 8) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), v);
    return;
  }
  alignas(16) int8_t b[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(b), v);
  for (int64_t i = 0; i < n; ++i) dst[i] = b[i];
}

// NC channels x P slots.
template <int NC, int P>
void tile(const TileArgs& t) {
  __m256i acc[NC][P];
#pragma GCC unroll 8
  for (int c = 0; c < NC; ++c) {
    const __m256i b = _mm256_set1_epi32(t.bias != nullptr ? t.bias[c] : 0);
#pragma GCC unroll 4
    for (int v = 0; v < P; ++v) acc[c][v] = b;
  }
  const int32_t* xs[P];
#pragma GCC unroll 4
  for (int v = 0; v < P; ++v) xs[v] = t.slot[v].x;
  const int32_t* w = t.w;
  for (int64_t s = 0; s < t.steps; ++s, w += kNC) {
    const int64_t o = t.off[s];
    __m256i xv[P];
#pragma GCC unroll 4
    for (int v = 0; v < P; ++v) xv[v] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs[v] + o));
#pragma GCC unroll 8
    for (int c = 0; c < NC; ++c) {
      const __m256i wb = _mm256_set1_epi32(w[c]);
#pragma GCC unroll 4
      for (int v = 0; v < P; ++v) acc[c][v] = _mm256_add_epi32(acc[c][v], _mm256_madd_epi16(xv[v], wb));
    }
  }
#pragma GCC unroll 8
  for (int c = 0; c < NC; ++c) {
    const kernels::x86::Requant8 q = kernels::x86::requant8_of(t.rq[c]);
    __m256i r[P + 1];
#pragma GCC unroll 4
    for (int v = 0; v < P; ++v) r[v] = kernels::x86::requantize8(acc[c][v], q, t.lo, t.hi, t.clamp);
    r[P] = r[P - 1];
    int8_t* yc = t.y + c * t.plane;
#pragma GCC unroll 4
    for (int v = 0; v < P; v += 2) {
      const __m128i b = kernels::x86::pack16(r[v], r[v + 1]);
      store8(yc + t.slot[v].y, b, false, t.slot[v].n);
      if (v + 1 < P) store8(yc + t.slot[v + 1].y, b, true, t.slot[v + 1].n);
    }
  }
}

using TileFn = void (*)(const TileArgs&);
template <int NC>
constexpr TileFn kRow[kP] = {tile<NC, 1>, tile<NC, 2>};
constexpr const TileFn* kTiles[kNC] = {kRow<1>, kRow<2>, kRow<3>, kRow<4>, kRow<5>, kRow<6>};

void dense(const KernelContext& ctx, const Plan& p, const int8_t* x, const int32_t* packed,
           const kernels::x86::RequantTable& rq, const int32_t* bias, int64_t* off, int32_t* xs, int8_t* y) {
  const kernels::ConvGeometry& g = p.g;
  const Weights& wg = p.wg;
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j)
      for (int64_t q = 0; q < wg.pairs; ++q) off[(i * g.kw + j) * wg.pairs + q] = q * p.plane + tap_offset(p, i, j);
  // Slots run along each output row, then on to the next row; tiles take kP consecutive slots.
  const int64_t ohw = g.oh * g.ow, per_row = kernels::ceil_div(p.cols, 8), slots = p.rows * per_row;
  const int64_t tiles = kernels::ceil_div(slots, kP), units = tiles * wg.panels;
  const int64_t threads = ctx.pool != nullptr ? ctx.pool->size() : 1;
  // Whole tiles (all their panels) per chunk while there are enough of them: the tile's inputs stay in L1.
  const int64_t grain = tiles >= 4 * threads ? wg.panels : kernels::ceil_div(units, 4 * threads);
  const __m256i lo = _mm256_set1_epi32(p.io.lo), hi = _mm256_set1_epi32(p.io.hi);
  for (int64_t img = 0; img < g.n; ++img) {
    const int8_t* x0 = x + img * g.c * g.h * g.w;
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      copy_pairs(ctx.pool, p, x0, gi, xs);
      int8_t* yg = y + (img * g.o + gi * wg.og) * ohw;
      kernels::parallel_chunks(ctx.pool, units, grain, [&](int64_t u0, int64_t u1) {
        TileArgs t{};
        t.off = off;
        t.steps = wg.steps;
        t.lo = lo;
        t.hi = hi;
        t.clamp = rq.clamp;
        t.plane = ohw;
        int64_t cached = -1, np = 0;
        for (int64_t u = u0; u < u1; ++u) {
          const int64_t ti = u / wg.panels, a = u % wg.panels;
          if (ti != cached) {  // the tile's slots
            cached = ti;
            np = 0;
            for (int64_t sl = ti * kP; sl < slots && np < kP; ++sl, ++np) {
              const int64_t row = sl / per_row, c0 = sl % per_row * 8;
              t.slot[np] = Slot{xs + row * g.sh * g.sw * p.wq + c0, row * p.cols + c0,
                                p.cols - c0 < 8 ? p.cols - c0 : 8};
            }
          }
          const int64_t nc = wg.og - a * kNC < kNC ? wg.og - a * kNC : kNC;
          const int64_t o0 = gi * wg.og + a * kNC;
          t.w = packed + (gi * wg.panels + a) * wg.steps * kNC;
          t.rq = rq.channels + o0;
          t.bias = bias != nullptr ? bias + o0 : nullptr;
          t.y = yg + a * kNC * ohw;
          kTiles[nc - 1][np - 1](t);
        }
      });
    }
  }
}

// --- depthwise ---------------------------------------------------------------------------------------------------

// 16 bytes of the two vectors v0 (positions 0-3 | 8-11) and v1 (4-7 | 12-15), in position order.
inline __m128i pack16_interleaved(__m256i v0, __m256i v1) {
  const __m256i w = _mm256_packs_epi32(v0, v1);  // 0-7 | 8-15
  const __m256i b = _mm256_packs_epi16(w, w);
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(b, 0x08));  // qwords 0 and 2
}

struct DwArgs {
  const int16_t* x;          // the row's inputs at the block's first position (tap offsets from there)
  const int64_t* off;        // each tap's offset
  int64_t taps, tap_pairs;
  const int32_t* w;          // the channel's tap pairs
  __m256i start;             // the bias
  const kernels::x86::Requant8* rq;
  __m256i lo, hi;
  bool clamp;
  int8_t* y;                 // the block's first output
  int64_t n;                 // outputs of the block (<= 16 * G)
  const int8_t* y_end;       // the end of the channel's output plane: a group's 16 bytes may all be stored up to it
};                           // (past the row come the next rows', which this unit writes later)

// G groups of 16 consecutive positions of one output row: per tap pair, the two taps' inputs of 16 positions
// interleaved (vpunpcklwd / vpunpckhwd: positions 0-3 | 8-11 and 4-7 | 12-15) meet the pair's weights.
template <int G>
void dw_block(const DwArgs& t) {
  __m256i acc[G][2];
#pragma GCC unroll 4
  for (int gi = 0; gi < G; ++gi) acc[gi][0] = acc[gi][1] = t.start;
  for (int64_t k = 0; k < t.tap_pairs; ++k) {
    const int16_t* x0 = t.x + t.off[2 * k];
    const int16_t* x1 = t.x + t.off[2 * k + 1 < t.taps ? 2 * k + 1 : 2 * k];  // a lone last tap has weight 0 beside
    const __m256i wb = _mm256_set1_epi32(t.w[k]);
#pragma GCC unroll 4
    for (int gi = 0; gi < G; ++gi) {
      const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x0 + 16 * gi));
      const __m256i v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x1 + 16 * gi));
      acc[gi][0] = _mm256_add_epi32(acc[gi][0], _mm256_madd_epi16(_mm256_unpacklo_epi16(v0, v1), wb));
      acc[gi][1] = _mm256_add_epi32(acc[gi][1], _mm256_madd_epi16(_mm256_unpackhi_epi16(v0, v1), wb));
    }
  }
#pragma GCC unroll 4
  for (int gi = 0; gi < G; ++gi) {
    const __m128i out = pack16_interleaved(kernels::x86::requantize8(acc[gi][0], *t.rq, t.lo, t.hi, t.clamp),
                                           kernels::x86::requantize8(acc[gi][1], *t.rq, t.lo, t.hi, t.clamp));
    if (t.y + 16 * gi + 16 <= t.y_end)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(t.y + 16 * gi), out);
    else
      kernels::x86::store_bytes(t.y + 16 * gi, out, t.n - 16 * gi);
  }
}

constexpr int kDwG = 4;  // groups of 16 positions per block
using DwFn = void (*)(const DwArgs&);
constexpr DwFn kDwBlocks[kDwG] = {dw_block<1>, dw_block<2>, dw_block<3>, dw_block<4>};

// One channel per unit: its plane of the copy (its own part of the scratch), then its output rows in blocks of up to
// 64 positions.
void depthwise(const KernelContext& ctx, const Plan& p, const int8_t* x, const int32_t* packed,
               const kernels::x86::RequantTable& rq, const int32_t* bias, int64_t* off, int16_t* xs, int8_t* y) {
  const kernels::ConvGeometry& g = p.g;
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j) off[i * g.kw + j] = tap_offset(p, i, j);
  const __m256i lo = _mm256_set1_epi32(p.io.lo), hi = _mm256_set1_epi32(p.io.hi);
  const int8_t* x_end = x + g.n * g.c * g.h * g.w;
  for (int64_t img = 0; img < g.n; ++img) kernels::parallel_chunks(ctx.pool, g.o, 1, [&](int64_t u0, int64_t u1) {
    for (int64_t o = u0; o < u1; ++o) {
      int16_t* plane = xs + o * (p.plane + kSlack);
      const int8_t* xc = x + (img * g.c + o) * g.h * g.w;
      for (int64_t r = 0; r < p.hp; ++r) {
        const int64_t h = r - g.pt;
        copy_row<int16_t>(p, h >= 0 && h < g.h ? xc + h * g.w : nullptr, nullptr, plane + r * g.sw * p.wq, true,
                          x_end);
      }
      std::memset(plane + p.plane, 0, kSlack * sizeof(int16_t));
      const kernels::x86::Requant8 q = kernels::x86::requant8_of(rq.channels[o]);
      DwArgs t{};
      t.off = off;
      t.taps = g.kh * g.kw;
      t.tap_pairs = p.wg.tap_pairs;
      t.w = packed + o * p.wg.tap_pairs;
      t.start = _mm256_set1_epi32(bias != nullptr ? bias[o] : 0);
      t.rq = &q;
      t.lo = lo;
      t.hi = hi;
      t.clamp = rq.clamp;
      int8_t* yo = y + (img * g.o + o) * g.oh * g.ow;
      t.y_end = yo + g.oh * g.ow;
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        const int16_t* xr = plane + oh * g.sh * g.sw * p.wq;
        for (int64_t c0 = 0; c0 < g.ow; c0 += 16 * kDwG) {
          t.x = xr + c0;
          t.y = yo + oh * g.ow + c0;
          t.n = g.ow - c0 < 16 * kDwG ? g.ow - c0 : 16 * kDwG;
          kDwBlocks[kernels::ceil_div(t.n, 16) - 1](t);
        }
      }
    }
  });
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  Shape shape;
  Plan p;
  Status planned = Status::Ok();
  DTORCH_RETURN_IF_ERROR(kernels::x86::begin_run(kOp, portable(), ctx, in, n_in, out, n_out, &shape, [&](const Shape& s) {
    planned = plan_of(*ctx.attrs, in, s, &p);
    return planned.ok() ? static_cast<size_t>(scratch_bytes_of(p)) : size_t{0};
  }));
  DTORCH_RETURN_IF_ERROR(planned);
  if (out[0].shape.numel() == 0) return Status::Ok();
  const int64_t pb = packed_bytes(p.wg);
  const uint8_t* prepared = kernels::x86::prepared_or_made(ctx, pb, [&](uint8_t* dst) {
    prepare_into(p.wg, p.io, in[1].as<const int8_t>(), in[2].as<const float>(), dst);
  });
  uint8_t* scratch = static_cast<uint8_t*>(ctx.scratch);
  const kernels::x86::RequantTable rq = kernels::x86::read_requant_table(prepared);
  const int32_t* packed = reinterpret_cast<const int32_t*>(prepared + requant_bytes(p.wg));
  int64_t* off = reinterpret_cast<int64_t*>(scratch + align64(pb));
  uint8_t* copy = scratch + align64(pb) + align64(p.offsets * 8);
  const int32_t* bias = kernels::optional_present(in, n_in, 3) ? in[3].as<const int32_t>() : nullptr;
  const int8_t* x = in[0].as<const int8_t>();
  int8_t* y = out[0].as<int8_t>();
  if (p.wg.dw)
    depthwise(ctx, p, x, packed, rq, bias, off, reinterpret_cast<int16_t*>(copy), y);
  else
    dense(ctx, p, x, packed, rq, bias, off, reinterpret_cast<int32_t*>(copy), y);
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_X86_PREPARED_KERNEL(qconv2d, DType::kInt8, infer, run, prepare);
}  // namespace dtorch
