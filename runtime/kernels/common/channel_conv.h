// The channel-major convolution of the FMA kernel sets (kernels/avx512, kernels/avx2) and their blocked layouts
// (core/kernel.h, NCHW16c). Header-only; a set's conv2d.cc supplies its register tile and instantiates
// ChannelConv<Tiles> (and BlockedConv2d<Conv, Tiles> to offer blocked layouts).
//
// A GEMM that puts output positions across its vectors must gather B (the input) into blocks first (the im2col fill
// or a plane copy), and the last panel of each plane, or the planes' padded columns, waste lanes. Turned around, a
// register tile is kCR positions x kNR output channels: the packed weights' panels (k-major, kNR channels per k)
// are its vectors, read in place, and each position's input is one broadcast: position r of a tile reads
// src[off[k] + at + r * PS], so nothing is packed. The source is the input itself when there is no padding, else a
// zero-padded copy of it (column strides 1 and 2), or phase planes (other column strides: PS = 1 in the planes), or
// for strides 1 and 2 the input itself with bands and strips (Halo); a blocked input is read in place, as a
// zero-padded blocked copy, or with bands and strips. Tiles run
// along one output row (or, for a 1x1 stride-1 unpadded convolution, along the flat plane). Each output starts at
// its bias and adds its products (padding taps as +0.0f products) in k order with one FMA each, over all of K in one
// chain: the bits of the set's GEMM, whichever layout X and Y have.
//
// Tiles (a struct of static members):
//   kNR                       output channels per packed weight panel and per tile (a multiple of kLayoutBlock)
//   kCR                       positions per tile (at most)
//   pick(yb, ps, noc, mr)     the tile (ChannelTileFn) for Y blocked or not, position stride ps (1, 2: NCHW sources;
//                             16, 32: blocked ones), noc channels of the panel and mr positions
//   copy_phase_row(g, l, x, b, dst)   one padded row of column phase b of layout l (NCHW sources)
//   kDwBlockedTaps, depthwise_blocked(pool, g, x, w, bias, y)   (BlockedConv2d only) blocked depthwise kernels
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/kernel.h"
#include "kernels/common/activation.h"
#include "kernels/common/conv_geometry.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {
namespace channel_conv {

using Geo = FmaConvGeometry;

// PlaneLayout says how a source of the taps is laid out: per channel, sh x sw phase planes of hp rows x wp columns,
// plane (a, b) holding padded rows a, a + sh, ... and columns b, b + sw, ... (padded row 0 is input row -pt, padded
// column 0 input column -pl). The GEMM's phase planes are (sh, sw) = the convolution's strides; the channel-major
// tiles also read a zero-padded copy, (1, 1, hp, wp), or the input itself, (1, 1, H, W) with no padding.
struct PlaneLayout {
  int64_t sh, sw;  // phases
  int64_t hp, wp;  // rows and columns of one phase plane
  int64_t chan() const { return sh * sw * hp * wp; }  // floats per channel
};

// off[k] for kernel row k = (c, i, j): where tap (i, j) of channel c reads for output position (0, 0) in layout l.
inline void plane_offsets(const Geo& g, const PlaneLayout& l, int64_t* off) {
  for (int64_t c = 0; c < g.cg; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        const int64_t a = i * g.dh % l.sh, b = j * g.dw % l.sw;
        off[(c * g.kh + i) * g.kw + j] =
            c * l.chan() + (a * l.sw + b) * l.hp * l.wp + (i * g.dh / l.sh) * l.wp + j * g.dw / l.sw;
      }
}

// Scratch of a source copy: the row offsets (K int64), then the copy.
inline int64_t off_floats(const Geo& g) { return ceil_div(2 * g.cg * g.kh * g.kw, 16) * 16; }

// The phase planes of stride sh x sw that every tap of g reads: oh + (kh - 1) * dh / sh rows of
// ow + (kw - 1) * dw / sw columns.
inline PlaneLayout phase_planes(const Geo& g) {
  return PlaneLayout{g.sh, g.sw, g.oh + (g.kh - 1) * g.dh / g.sh, g.ow + (g.kw - 1) * g.dw / g.sw};
}

// Tiles of one output row (or of the flat plane): `len` positions in ceil(len / cr) tiles of nearly equal size
// (cr = 14: a 16-wide row runs 8 + 8, not 14 + 2; 56 and 28 run whole tiles of 14).
struct RowTiles {
  int64_t len, n;
  RowTiles(int64_t len_, int64_t cr) : len(len_), n(ceil_div(len_, cr)) {}
  int64_t begin(int64_t t) const { return t * len / n; }
};

// Whether a channel-major convolution's output rows pair up (cr positions per tile) when it reads a copy of its
// input: rows whose tiles leave many of a tile's cr positions unused (7 positions in tiles of 14 or of 6, 14 in tiles
// of 6) pair up when that fills the tiles better: a tile then takes up to cr / 2 positions of a row and the same
// columns of the next row (see ChannelConv::run).
inline bool pair_rows(const Geo& g, int64_t cr) {
  return g.oh > 1 && RowTiles(g.ow, cr / 2).n < 2 * RowTiles(g.ow, cr).n;
}


// A padded convolution (row and column strides 1 or 2) may read the image in place and copy only what its padding
// reaches: output rows [r0, r1) x columns [lo, hi) have their whole window inside the image and read it in place;
// each other ("border") output row reads a band, the zero-padded copy of the kh input rows it needs (channel units x
// kh rows x wp columns, a unit being a blocked input's 16-channel block or an NCHW input's channel); each other
// ("edge") output column of the interior rows reads a strip, the kw input columns it needs copied column-major
// (units x kw columns x the rows, +0 outside the image), so that consecutive output rows are u * sh floats apart (u
// floats per unit and position) and a tile runs down the column (into a buffer, then stored position by position).
// Every position still adds all K products in order, +0.0f for the padding: the bits of a zero-padded copy, for a few
// rows and columns of copying instead of the whole image.
//
// Along one axis, the output positions [a, b) whose whole window (its last tap `reach` past its first) lies inside
// [0, size): those where the first tap and the last are both valid (conv_valid_range of each).
inline void window_inside(int64_t out, int64_t stride, int64_t pad, int64_t reach, int64_t size, int64_t* a,
                          int64_t* b) {
  int64_t first_hi = 0, last_lo = 0;
  conv_valid_range(-pad, stride, size, out, a, &first_hi);
  conv_valid_range(reach - pad, stride, size, out, &last_lo, b);
  if (*b < *a) *b = *a;
}

struct Halo {
  int64_t r0, r1, lo, hi;  // the interior
  int64_t nb, ne;          // border rows, edge columns
  int64_t nrho, wp;        // rows of a strip, columns of a band
  explicit Halo(const Geo& g) {
    window_inside(g.oh, g.sh, g.pt, (g.kh - 1) * g.dh, g.h, &r0, &r1);
    window_inside(g.ow, g.sw, g.pl, (g.kw - 1) * g.dw, g.w, &lo, &hi);
    nb = r0 + (g.oh - r1);
    ne = r1 > r0 ? lo + (g.ow - hi) : 0;
    nrho = r1 > r0 ? (r1 - 1 - r0) * g.sh + (g.kh - 1) * g.dh + 1 : 0;
    wp = (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1;
  }
  static bool takes(const Geo& g) { return (g.sh == 1 || g.sh == 2) && (g.sw == 1 || g.sw == 2); }
  int64_t band(const Geo& g) const { return g.cg * g.kh * wp; }    // floats of one band
  int64_t strip(const Geo& g) const { return g.cg * g.kw * nrho; }  // floats of one strip
  // Scratch floats: three offset tables (interior, band, strip), the bands, the strips.
  int64_t floats(const Geo& g) const { return 3 * off_floats(g) + nb * band(g) + ne * strip(g); }
  int64_t border_row(int64_t b) const { return b < r0 ? b : r1 + (b - r0); }
  int64_t edge_col(int64_t e) const { return e < lo ? e : hi + (e - lo); }
};

// Where a channel-major convolution's broadcasts read. An NCHW input: in place (no padding), a zero-padded copy
// (column stride 1 or 2: at stride 2 a plain row copy is 5-7% faster over the whole convolution than the phase
// planes' de-interleaving), or the phase planes (other column strides). A blocked input (kLayoutBlock channels per
// position, column strides 1 and 2): in place, or a zero-padded blocked copy.
struct ChannelSource {
  enum Kind { kInPlace, kPadded, kPlanes } kind;
  bool blocked;     // the source holds 16-channel blocks (kLayoutBlock floats per position)
  PlaneLayout l;    // the source's layout (kInPlace: the input's), in positions
  int64_t sh, sw;   // source rows and columns (within a plane) from one output position to the next
  int64_t cr;       // positions per tile of the kernel set
  ChannelSource(const Geo& g, bool blocked_x, int64_t cr_)
      : blocked(blocked_x), l{1, 1, g.h, g.w}, sh(g.sh), sw(g.sw), cr(cr_) {
    const bool padded = g.pt != 0 || g.pb != 0 || g.pl != 0 || g.pr != 0;
    kind = g.sw > 2 && !blocked ? kPlanes : padded ? kPadded : kInPlace;
    if (kind == kPlanes) {
      l = phase_planes(g);
      sh = sw = 1;
    } else if (kind == kPadded) {  // the rows and columns the taps reach
      l.hp = (g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1;
      l.wp = (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1;
    }
  }
  int64_t unit() const { return blocked ? kLayoutBlock : 1; }  // floats per position and channel (block)
  // A tile may run across output rows (the flat plane) when consecutive positions are consecutive in the source.
  bool flat(const Geo& g) const { return kind == kInPlace && g.pointwise; }
  // Scratch floats: the row offsets, then the copy.
  int64_t floats(const Geo& g) const {
    if (halo(g)) return Halo(g).floats(g);
    return off_floats(g) + (kind == kInPlace ? 0 : g.cg * l.chan());
  }
  // A padded input read in place with bands and strips (Halo) rather than copied whole.
  // - Blocked: when the copy would not stay in a core's L2. Measured on Zen 4 (1 MiB L2), paired against the whole
  //   copy, same bits: SimpleNet's 3x3 stride-2 layers on 32 x 112 x 112 and 64 x 56 x 56 inputs 0.93-0.96x,
  //   ResNet-18's 64 x 56 x 56 1.0x, its 128-512 channel layers on 28 x 28 to 7 x 7 maps (copies of 460-166 KiB)
  //   1.01-1.05x: the borders are a larger share of small maps and their short tiles and stores cost more than
  //   copying a cached image (on the Intel AVX-512 VM, reading those in place too made ResNet-18 15% slower).
  // - NCHW (a copy of short rows, one channel at a time, costs more): unless the copy's output rows pair up, which
  //   the bands and strips cannot. Measured on the Intel AVX-512 VM (avx512 set, the node alone, same bits): the
  //   3 -> 32 3x3 stride-2 stems on 224 to 32 maps 0.85-0.87x (SimpleNet's and MobileNetV2's 0.23 -> 0.20 ms),
  //   ResNet-18's 7x7 stem 0.97x, 64 channels on 14 x 14 0.90x, 128 on 28 x 28 stride 2 0.88x, 8-32 channels on
  //   112-28 maps 0.95-0.96x; 256 channels on 7 x 7 (rows that pair) 1.2x. The avx2 set (6 positions per tile): the
  //   stems 0.92x, 128 on 28 x 28 stride 2 1.07x (13-column rows in tiles of 4, 4 and 5).
  bool halo(const Geo& g) const {
    if (kind != kPadded || !Halo::takes(g)) return false;
    if (!blocked) return !pair_rows(g, cr);
    return g.cg * l.chan() * 4 > (int64_t{768} << 10);
  }
};

// off[k] for kernel row k = (c, i, j) of a source of u floats per position and channel unit, laid out as l (sh = sw =
// 1): where tap (i, j) of channel c reads for output position (0, 0). u = kLayoutBlock: a blocked source; u = 1: an
// NCHW one (plane_offsets' unit-stride case).
inline void unit_offsets(const Geo& g, const PlaneLayout& l, int64_t u, int64_t* off) {
  for (int64_t c = 0; c < g.cg; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j)
        off[(c * g.kh + i) * g.kw + j] = (c / u) * l.chan() * u + (i * g.dh * l.wp + j * g.dw) * u + c % u;
}

// One padded row of wp positions of u floats each (u = kLayoutBlock: a blocked input's 16-channel block; 1: one
// channel of an NCHW input): input row `row` (null: a row outside the image, all zeros) with its columns starting at
// padded column pl.
inline void padded_row(const Geo& g, int64_t wp, int64_t u, const float* row, float* dst) {
  if (row == nullptr) {
    std::memset(dst, 0, static_cast<size_t>(wp * u) * sizeof(float));
    return;
  }
  const int64_t lo = g.pl < wp ? g.pl : wp;            // padded columns before the row
  const int64_t n = g.w < wp - lo ? g.w : wp - lo;     // input columns the taps reach
  std::memset(dst, 0, static_cast<size_t>(lo * u) * sizeof(float));
  std::memcpy(dst + lo * u, row, static_cast<size_t>(n * u) * sizeof(float));
  std::memset(dst + (lo + n) * u, 0, static_cast<size_t>((wp - lo - n) * u) * sizeof(float));
}

// One image's blocked input, zero-padded to l (hp x wp positions per 16-channel block; padded row 0 and column 0
// are input row -pt and column -pl).
inline void copy_blocked_padded(ThreadPool* pool, const Geo& g, const PlaneLayout& l, const float* x, float* xp) {
  const int64_t B = kLayoutBlock;
  const PlaneRows rows(pool, g.cg / B, l.hp);  // by rows with threads, as the tiles that read the copy
  parallel_chunks(pool, g.cg / B * l.hp, 16, [&](int64_t rb, int64_t re) {
    PlaneRows::Pos at = rows.at(rb);
    for (int64_t cr = rb; cr < re; ++cr, rows.next(&at)) {
      const int64_t cb = at.plane, r = at.row, ih = r - g.pt;
      const bool in = ih >= 0 && ih < g.h;
      padded_row(g, l.wp, B, in ? x + (cb * g.h + ih) * g.w * B : nullptr, xp + (cb * l.hp + r) * l.wp * B);
    }
  });
}


// Bytes of a core's L2 cache (sysconf; 1 MiB when it does not say).
inline int64_t l2_bytes() {
  static const int64_t bytes = [] {
    const long b = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return b > 0 ? static_cast<int64_t>(b) : int64_t{1} << 20;
  }();
  return bytes;
}


// One tile: positions [0, mr), kNR channels of a panel b (K x kNR, k-major) from their bias (null: 0), the
// activation applied. Positions r < mr / 2 read at a + off[k] + r * ps and are stored from y on, the others read at
// a2 + off[k] + (r - mr / 2) * ps and are stored from y2 on (a2 = a + mr / 2 * ps and y2 = y + mr / 2 positions
// along one row; two rows' halves otherwise, see ChannelConv::run). Y is NCHW (channel j's positions at
// y + j * ohw) or blocked (a position's 16 channels together, the next 16-channel block ohw * 16 floats further).
// pf: the weights to prefetch a line of per k.
using ChannelTileFn = void (*)(int64_t K, const float* a, const float* a2, const int64_t* off, const float* b,
                               const float* pf, const float* bias, int noc, const Activation& act, float* y,
                               float* y2, int64_t ohw);

// A tile's second half along one source row: a2 for positions read at a + r * ps.
inline const float* second_half(const float* a, int64_t mr, int64_t ps) { return a + mr / 2 * ps; }

template <class T>
struct ChannelConv {
  static constexpr int64_t kNR = T::kNR;
  static constexpr int kCR = T::kCR;
  static_assert(kNR % kLayoutBlock == 0, "a panel holds whole 16-channel blocks");

  // Runs f(a, v, u) for every unit (panel a, index v < per_panel within the panel; u = a * per_panel + v) of a
  // convolution with K weights per output channel. Weights beyond half a core's L2: panel by panel, so a panel of
  // weights is reused from cache. Weights that fit: the positions are split into blocks instead (position_blocks
  // over v: 4 per thread, each block's units panel by panel), so every panel reads a block's input rows while they
  // are still in cache, and with threads the next node finds most of its input in the cache of the core that reads
  // it. At 1 thread this matters when the input does not stay in L2 from one panel's pass to the next: SimpleNet's
  // 32 x 112 x 112 input to its 32 -> 64 stride-2 layer (1.6 MB) ran 0.740-0.748 -> 0.726-0.739 ms on the Intel
  // AVX-512 VM (Emerald Rapids, 2 MiB L2), the same bits; ResNet-18 and MobileNetV2 unchanged within noise.
  template <class F>
  static void for_units(ThreadPool* pool, int64_t panels, int64_t per_panel, int64_t K, F&& f) {
    if (panels * kNR * K * static_cast<int64_t>(sizeof(float)) <= l2_bytes() / 2) {
      position_blocks(pool, per_panel, [&](int64_t v0, int64_t v1) {
        for (int64_t a = 0; a < panels; ++a)
          for (int64_t v = v0; v < v1; ++v) f(a, v, a * per_panel + v);
      });
      return;
    }
    parallel_chunks(pool, panels * per_panel, 1, [&](int64_t ub, int64_t ue) {
      for (int64_t u = ub; u < ue; ++u) f(u / per_panel, u % per_panel, u);
    });
  }

  // One tile of mr positions along one source row (read at a + r * ps) and one output row, with no weights
  // prefetched.
  static void row_tile(bool yb, int64_t ps, int noc, int64_t mr, int64_t K, const float* a, const int64_t* off,
                       const float* w, const float* bias, const Activation& act, float* y, int64_t ohw) {
    float* y2 = y + mr / 2 * (yb ? kLayoutBlock : 1);
    T::pick(yb, ps, noc, static_cast<int>(mr))(K, a, second_half(a, mr, ps), off, w, w, bias, noc, act, y, y2, ohw);
  }

  // One image and group's input in layout l (the phase planes, or with l.sh = l.sw = 1 a zero-padded copy); planes no
  // tap reads are left unwritten.
  static void copy_phases(ThreadPool* pool, const Geo& g, const PlaneLayout& l, const float* x, float* xp) {
    auto read = [](int64_t phase, int64_t taps, int64_t dil, int64_t stride) {
      for (int64_t t = 0; t < taps; ++t)
        if (t * dil % stride == phase) return true;
      return false;
    };
    const int64_t rows = g.cg * l.sh * l.hp;  // (channel, row phase, plane row)
    parallel_chunks(pool, rows, 16, [&](int64_t rb, int64_t re) {
      for (int64_t cr = rb; cr < re; ++cr) {
        const int64_t c = cr / (l.sh * l.hp), a = (cr / l.hp) % l.sh, r = cr % l.hp;
        if (!read(a, g.kh, g.dh, l.sh)) continue;
        const int64_t ih = r * l.sh + a - g.pt;
        for (int64_t b = 0; b < l.sw; ++b) {
          if (!read(b, g.kw, g.dw, l.sw)) continue;
          float* dst = xp + c * l.chan() + (a * l.sw + b) * l.hp * l.wp + r * l.wp;
          if (ih < 0 || ih >= g.h) {
            for (int64_t u = 0; u < l.wp; ++u) dst[u] = 0.0f;
          } else {
            T::copy_phase_row(g, l, x + (c * g.h + ih) * g.w, b, dst);
          }
        }
      }
    });
  }


  // One image of a padded input (blocked, xb, or NCHW), channel-major with bands and strips (Halo). Bands and
  // strips hold u floats per position: a 16-channel block of a blocked input (u = kLayoutBlock), one channel of an
  // NCHW one (u = 1).
  static void halo(ThreadPool* pool, const Geo& g, const float* wg, const float* x, const float* bias,
                   const Activation& act, float* y, float* work, bool xb, bool yb) {
    const int64_t u = xb ? kLayoutBlock : 1, K = g.cg * g.kh * g.kw, ohw = g.oh * g.ow, cbs = g.cg / u;
    const Halo hb(g);
    int64_t* off = reinterpret_cast<int64_t*>(work);
    int64_t* off_b = reinterpret_cast<int64_t*>(work + off_floats(g));
    int64_t* off_s = reinterpret_cast<int64_t*>(work + 2 * off_floats(g));
    float* bands = work + 3 * off_floats(g);
    float* strips = bands + hb.nb * hb.band(g);
    unit_offsets(g, PlaneLayout{1, 1, g.h, g.w}, u, off);
    for (int64_t c = 0; c < g.cg; ++c)
      for (int64_t i = 0; i < g.kh; ++i)
        for (int64_t j = 0; j < g.kw; ++j) {
          const int64_t k = (c * g.kh + i) * g.kw + j;
          off_b[k] = ((c / u * g.kh + i) * hb.wp + j * g.dw) * u + c % u;
          off_s[k] = ((c / u * g.kw + j) * hb.nrho + i * g.dh) * u + c % u;
        }
    const int64_t ih0 = hb.r0 * g.sh - g.pt;  // the strips' first input row
    parallel_chunks(pool, (hb.nb + hb.ne) * cbs, 1, [&](int64_t pb, int64_t pe) {
      for (int64_t part = pb; part < pe; ++part) {
        const int64_t which = part / cbs, cb = part % cbs;
        if (which < hb.nb) {  // band rows i: input row oh * sh - pt + i * dh, columns -pl ...
          const int64_t oh = hb.border_row(which);
          for (int64_t i = 0; i < g.kh; ++i) {
            const int64_t ih = oh * g.sh - g.pt + i * g.dh;
            const bool in = ih >= 0 && ih < g.h;
            padded_row(g, hb.wp, u, in ? x + (cb * g.h + ih) * g.w * u : nullptr,
                       bands + which * hb.band(g) + (cb * g.kh + i) * hb.wp * u);
          }
        } else {  // strip columns j: input column ow * sw - pl + j * dw, rows ih0 ...
          const int64_t e = which - hb.nb, ow = hb.edge_col(e);
          for (int64_t j = 0; j < g.kw; ++j) {
            float* dst = strips + e * hb.strip(g) + (cb * g.kw + j) * hb.nrho * u;
            const int64_t iw = ow * g.sw - g.pl + j * g.dw;
            if (iw < 0 || iw >= g.w) {
              std::memset(dst, 0, static_cast<size_t>(hb.nrho * u) * sizeof(float));
              continue;
            }
            const float* src = x + ((cb * g.h + ih0) * g.w + iw) * u;
            for (int64_t r = 0; r < hb.nrho; ++r) std::memcpy(dst + r * u, src + r * g.w * u, u * sizeof(float));
          }
        }
      }
    });
    const int64_t panels = ceil_div(g.og, kNR), L = kLayoutBlock, yu = yb ? L : 1;
    const RowTiles ri(hb.hi - hb.lo, kCR), rb(g.ow, kCR), rs(hb.r1 - hb.r0, kCR);
    const int64_t n_in = hb.hi > hb.lo ? (hb.r1 - hb.r0) * ri.n : 0, n_b = hb.nb * rb.n, n_s = hb.ne * rs.n;
    const int64_t per_panel = n_in + n_b + n_s;
    for_units(pool, panels, per_panel, K, [&](int64_t a, int64_t v, int64_t) {
      alignas(64) float tmp[kNR * kCR];  // kNR / 16 blocks of kCR positions
      const int noc = static_cast<int>(g.og - a * kNR < kNR ? g.og - a * kNR : kNR);
      const float* ba = bias == nullptr ? nullptr : bias + a * kNR;
      const float* wa = wg + a * kNR * K;
      float* ya = y + a * kNR * ohw;
      if (v < n_in) {  // interior: in place
        const int64_t oh = hb.r0 + v / ri.n, t = v % ri.n, p0 = ri.begin(t), mr = ri.begin(t + 1) - p0;
        const float* at = x + ((oh * g.sh - g.pt) * g.w + (hb.lo + p0) * g.sw - g.pl) * u;
        row_tile(yb, g.sw * u, noc, mr, K, at, off, wa, ba, act, ya + (oh * g.ow + hb.lo + p0) * yu, ohw);
        return;
      }
      v -= n_in;
      if (v < n_b) {  // a border row: its band
        const int64_t b = v / rb.n, t = v % rb.n, p0 = rb.begin(t), mr = rb.begin(t + 1) - p0;
        const float* at = bands + b * hb.band(g) + p0 * g.sw * u;
        row_tile(yb, g.sw * u, noc, mr, K, at, off_b, wa, ba, act, ya + (hb.border_row(b) * g.ow + p0) * yu, ohw);
        return;
      }
      v -= n_b;  // an edge column: down its strip into tmp, then position by position
      const int64_t e = v / rs.n, t = v % rs.n, p0 = rs.begin(t), mr = rs.begin(t + 1) - p0, ow = hb.edge_col(e);
      const float* at = strips + e * hb.strip(g) + p0 * g.sh * u;
      row_tile(true, g.sh * u, noc, mr, K, at, off_s, wa, ba, act, tmp, kCR);
      for (int64_t r = 0; r < mr; ++r) {
        const int64_t q = (hb.r0 + p0 + r) * g.ow + ow;
        for (int vv = 0; 16 * vv < noc; ++vv) {
          const float* tv = tmp + (vv * kCR + r) * L;
          if (yb)
            std::memcpy(ya + (vv * ohw + q) * L, tv, L * sizeof(float));
          else
            for (int l = 0; l < L && 16 * vv + l < noc; ++l) ya[(16 * vv + l) * ohw + q] = tv[l];
        }
      }
    });
  }


  // One image and group, channel-major: the source, its row offsets, then the tiles: units (panel of kNR channels,
  // output row or flat chunk) in for_units' order. xb / yb: X / Y blocked (then the group is the whole convolution:
  // blocked layouts are offered for groups = 1 only).
  static void run(ThreadPool* pool, const Geo& g, const float* wg, const float* xg, const float* bias,
                  const Activation& act, float* yg, float* work, bool xb = false, bool yb = false) {
    const int64_t K = g.cg * g.kh * g.kw, ohw = g.oh * g.ow;
    const ChannelSource cs(g, xb, kCR);
    if (cs.halo(g)) {
      halo(pool, g, wg, xg, bias, act, yg, work, xb, yb);
      return;
    }
    int64_t* off = reinterpret_cast<int64_t*>(work);
    const float* src = xg;
    if (cs.kind != ChannelSource::kInPlace) {
      float* xp = work + off_floats(g);
      if (xb)
        copy_blocked_padded(pool, g, cs.l, xg, xp);
      else
        copy_phases(pool, g, cs.l, xg, xp);
      src = xp;
    }
    if (xb)
      unit_offsets(g, cs.l, kLayoutBlock, off);
    else
      plane_offsets(g, cs.l, off);
    const bool flat = cs.flat(g);
    // Rows that pair up (pair_rows): a tile's halves read two source rows and are stored to two output rows, an odd
    // last row the first half only.
    const RowTiles single(g.ow, kCR), half(g.ow, kCR / 2);
    const bool pairs = !flat && pair_rows(g, kCR);
    const RowTiles rt = flat ? RowTiles(ohw, kCR) : pairs ? half : single;
    const int64_t rows = flat ? 1 : pairs ? ceil_div(g.oh, 2) : g.oh, per_panel = rows * rt.n;
    const int64_t panels = ceil_div(g.og, kNR);
    const int64_t unit = cs.unit(), ps = cs.sw * unit, yu = yb ? kLayoutBlock : 1, pitch = cs.sh * cs.l.wp * unit;
    // Weights that stream from memory (a model's weights beyond the cache: ResNet-18's 7 x 7 layers, 9.4 MiB each,
    // took 2.2-2.3 ms on avx512 where the same layer with cached weights takes 1.5-1.6) are prefetched into L2 one
    // panel ahead, when two panels fit in a core's L2 and a panel has at least two tiles to spread the lines over.
    const bool prefetch =
        per_panel >= 2 && panels > 1 && 2 * kNR * K * static_cast<int64_t>(sizeof(float)) <= l2_bytes();
    // Unit u = (panel a, index v within the panel's units): one tile.
    auto one_tile = [&](int64_t a, int64_t v, int64_t u) {
      const int64_t row = v / rt.n, t = v % rt.n;
      const int64_t oh = pairs ? 2 * row : row;
      const int64_t p0 = rt.begin(t);
      int64_t mr = rt.begin(t + 1) - p0;
      const int noc = static_cast<int>(g.og - a * kNR < kNR ? g.og - a * kNR : kNR);
      const float* at = flat ? src + p0 * unit : src + oh * pitch + p0 * cs.sw * unit;
      const float* at2 = second_half(at, mr, ps);
      float* ya = yg + a * kNR * ohw + (oh * g.ow + p0) * yu;
      float* ya2 = ya + mr / 2 * yu;
      if (pairs && oh + 1 < g.oh) {  // rows oh and oh + 1, the same columns
        at2 = at + pitch;
        ya2 = ya + g.ow * yu;
        mr *= 2;
      }
      const float* ba = bias == nullptr ? nullptr : bias + a * kNR;
      const float* wa = wg + a * kNR * K;
      // The next panel's weights into L2 while this one's tiles run, a line per k: its 16-channel parts by turns of
      // the tiles (see `prefetch`).
      const float* pf = prefetch && a + 1 < panels ? wa + kNR * K + (u % (kNR / 16)) * 16 * K : wa;
      const ChannelTileFn tile = T::pick(yb, ps, noc, static_cast<int>(mr));
      tile(K, at, at2, off, wa, pf, ba, noc, act, ya, ya2, ohw);
    };
    for_units(pool, panels, per_panel, K, one_tile);
  }

};

// Blocked layouts for a set's conv2d (Conv: its kernels/common/fma_conv.h FmaConv2d). Dense convolutions (groups = 1)
// take a blocked X (column stride 1 or 2) and write a blocked Y, in any combination with NCHW: they run
// channel-major then, whatever their K (a blocked Y needs no transposition), with the same products in the same
// order as every other path: the same bits. Depthwise ones take X and Y blocked together (T::depthwise_blocked).
template <class Conv, class T>
struct BlockedConv2d {
  // The node's geometry when it may run blocked, else false.
  static bool blocked_geometry(const Attrs& attrs, const TensorView* in, int n_in, const TensorView& out, Geo* g) {
    if (n_in < 2 || in[0].shape.ndim != 4 || in[1].shape.ndim != 4 || out.shape.ndim != 4) return false;
    if (!fma_conv_geometry("conv2d", attrs, in, out.shape, g).ok()) return false;
    if (!conv_shapes_agree(*g, in, out)) return false;
    return (g->gemm && g->groups == 1) || (g->depthwise && g->kh * g->kw <= T::kDwBlockedTaps);
  }

  static bool blocked_x_ok(const Geo& g, const TensorView& x) { return blockable(x) && (g.sw == 1 || g.sw == 2); }

  static LayoutCaps layouts(const Attrs& attrs, const TensorView* in, int n_in, const TensorView* out, int n_out) {
    LayoutCaps caps;
    Geo g{};
    if (n_out != 1 || !blocked_geometry(attrs, in, n_in, out[0], &g)) return caps;
    if (g.depthwise) {  // X and Y together
      if (blockable(in[0]) && blockable(out[0])) {
        caps.inputs = caps.outputs = 1;
        caps.tied = true;
      }
      return caps;
    }
    caps.inputs = blocked_x_ok(g, in[0]) ? 1 : 0;
    caps.outputs = blockable(out[0]) ? 1 : 0;
    return caps;
  }

  // Scratch floats of a dense convolution run blocked: its packed weights (when not prepared), then the channel-major
  // path's buffers for either layout of X.
  static int64_t blocked_scratch_floats(const Geo& g) {
    return Conv::group_floats(g) +
           std::max(ChannelSource(g, false, T::kCR).floats(g), ChannelSource(g, true, T::kCR).floats(g));
  }

  // Conv's scratch, or the channel-major path's for either layout of X when the node may run blocked.
  static Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out,
                      size_t* scratch_bytes) {
    DTORCH_RETURN_IF_ERROR(Conv::infer(attrs, in, n_in, out, n_out, scratch_bytes));
    TensorView y;
    y.shape = out[0];
    Geo g{};
    if (n_out == 1 && blocked_geometry(attrs, in, n_in, y, &g) && !g.depthwise)
      *scratch_bytes = std::max(*scratch_bytes, static_cast<size_t>(blocked_scratch_floats(g)) * sizeof(float));
    return Status::Ok();
  }

  static Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
    const bool xb = ctx.blocked_inputs & 1, yb = ctx.blocked_outputs & 1;
    if (!xb && !yb) return Conv::run(ctx, in, n_in, out, n_out);
    Geo g{};
    if (n_out != 1 || (ctx.blocked_inputs >> 1) != 0 || !blocked_geometry(*ctx.attrs, in, n_in, out[0], &g) ||
        (xb && !blocked_x_ok(g, in[0])) || (yb && !blockable(out[0])))
      return op_error(StatusCode::kInternal, "conv2d",
                               "asked to run a blocked layout its layouts() did not offer");
    if (out[0].shape.numel() == 0) return Status::Ok();
    const float* x = in[0].as<const float>();
    const float* bias = optional_present(in, n_in, 2) ? in[2].as<const float>() : nullptr;
    float* y = out[0].as<float>();
    if (g.depthwise) {
      if (!xb || !yb) return op_error(StatusCode::kInternal, "conv2d", "a depthwise layout must be tied");
      T::depthwise_blocked(ctx.pool, g, x, in[1].as<const float>(), bias, y);
      return Status::Ok();
    }
    const int64_t K = g.cg * g.kh * g.kw, packed = Conv::group_floats(g);
    const size_t need = static_cast<size_t>(blocked_scratch_floats(g)) * sizeof(float);
    if (ctx.scratch_bytes < need)
      return op_error(StatusCode::kInternal, "conv2d",
                               "scratch of %zu bytes is smaller than the %zu bytes infer asked for", ctx.scratch_bytes,
                               need);
    float* scratch = static_cast<float*>(ctx.scratch);
    const float* ap = static_cast<const float*>(ctx.prepared);
    if (ap == nullptr || ctx.prepared_bytes != static_cast<size_t>(packed) * sizeof(float)) {
      Conv::pack_weights(ctx.pool, 1, g.og, K, in[1].as<const float>(), scratch);
      ap = scratch;
    }
    for (int64_t n = 0; n < g.n; ++n)
      ChannelConv<T>::run(ctx.pool, g, ap, x + n * g.c * g.h * g.w, bias, g.act, y + n * g.o * g.oh * g.ow,
                          scratch + packed, xb, yb);
    return Status::Ok();
  }

};

}  // namespace channel_conv
}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
