// qconv2d on AMX tiles: the portable kernel's bits (kernels/portable/qconv2d.cc is the specification; integer sums
// do not depend on their order) for pointwise layers (1x1, stride 1, no padding, one group), the GEMM that holds most
// of a MobileNet's multiply-adds, and for dense or grouped convolutions with at least 16 input channels per group
// (`dense` below); depthwise layers and narrow ones (a stem's 3 channels would fill a tile's K of 64 bytes with 4)
// run the vnni set's kernel.
//
// - y[o][p] = sum_k w[o][k] * x[k][p]: tdpbsud takes a tile of 16 output channels x K-chunk s8 weights (A, packed at
//   load time: [16-channel panel][chunk][16 rows][64 bytes]) and a tile of K-chunk / 4 rows of 16 positions x 4
//   channels of u8 input (B), adding into 16 x 16 int32 sums (C: a row is one channel's 16 positions, as NCHW
//   stores it). K runs in equal chunks of at most 64 bytes, a multiple of 4 (channels past K: zero weights).
// - The input is copied once per image as u8 (x + 128), position blocks of 64 ([block][K-chunked channels / 4][64
//   positions][4]): a B tile is 16 rows at a stride of 256 bytes. A unit of work is one block and one panel: 4 C
//   tiles (64 positions), per K chunk one A tile and 4 B tiles.
// - Epilogue: each C tile is stored to a 16 x 64 int32 buffer, and each channel's 64 sums go through the vnni set's
//   store64 (kernels/vnni/qconv_vnni.h): starting sum bias - (128 + x_zero_point) * sum(w), requantization,
//   narrowing of 4 vectors at once, clamp, one masked 64-byte store.
// - Each thread loads the tile configuration before its units and releases the tiles after them.
// - Dense and grouped convolutions read the vnni set's copy (kernels/vnni/qconv2d.cc: 4-channel blocks split by
//   stride phase, virtual output columns): for a tap and 16 consecutive channel blocks, a B tile's rows are those
//   blocks' planes at one stride, so K runs tap by tap in chunks of up to 16 blocks (equal chunks; blocks past the
//   group's: zero weights over a zeroed tail of the copy). The outputs go out through the vnni set's segments.
#include <cstdint>
#include <cstring>

#include "kernels/amx/amx.h"
#include "kernels/common/conv_geometry.h"
#include "kernels/common/portable_kernel.h"
#include "kernels/common/qconv_prepare.h"
#include "kernels/common/quant_params.h"
#include "kernels/common/util.h"
#include "kernels/vnni/qconv_vnni.h"

namespace dtorch {
namespace {

using kernels::ChanRec;
using kernels::op_error;
constexpr char kOp[] = "qconv2d";
constexpr int64_t kPos = 64;   // positions per block (4 C tiles of 16)
constexpr int64_t kCh = 16;    // output channels per panel (C tile rows)

const KernelDef* portable() { return kernels::portable_kernel<kOp, DType::kInt8>(); }

// The vnni set's qconv2d, which runs every shape this kernel does not take (and everything where the OS refuses the
// tile data); the portable one where that set is absent.
const KernelDef* next_kernel() {
  static const KernelDef* k = [] {
    const KernelDef* v = find_kernel_in_set(kOp, DType::kInt8, "vnni");
    return v != nullptr ? v : portable();
  }();
  return k;
}

int64_t panels_of(int64_t o) { return kernels::ceil_div(o, kCh); }
int64_t recs_bytes(int64_t o) { return kernels::ceil_div(o * static_cast<int64_t>(sizeof(ChanRec)), 64) * 64; }

// The K chunks of a layer (pointwise: one tap): each tap's cb channel blocks in n chunks of nr blocks (n * nr >= cb),
// so a chunk is nr * 4 <= 64 bytes of K.
struct DenseK {
  int64_t taps, cb, n, nr;
};
DenseK dense_k(int64_t cg, int64_t kh, int64_t kw) {
  const int64_t cb = kernels::ceil_div(cg, 4), n = kernels::ceil_div(cb, 16);
  return DenseK{kh * kw, cb, n, kernels::ceil_div(cb, n)};
}

// Packed weights (both paths): [group][16-channel panel][tap][chunk][16 rows][64 bytes] s8 (row r, bytes 4b + t:
// channel 4 (chunk * nr + b) + t of the tap; zero past cg and past og), then (64-aligned) a ChanRec per output
// channel when prepare could make them (constant scales and bias).
int64_t dense_weight_bytes(const kernels::ConvGeometry& g) {
  const DenseK k = dense_k(g.cg, g.kh, g.kw);
  return g.groups * panels_of(g.og) * k.taps * k.n * kCh * 64;
}

void dense_pack(const kernels::ConvGeometry& g, const int8_t* w, int8_t* dst) {
  const DenseK k = dense_k(g.cg, g.kh, g.kw);
  const int64_t panels = panels_of(g.og), kk = g.cg * k.taps;
  std::memset(dst, 0, static_cast<size_t>(dense_weight_bytes(g)));
  for (int64_t gi = 0; gi < g.groups; ++gi)
    for (int64_t o = 0; o < g.og; ++o)
      for (int64_t c = 0; c < g.cg; ++c)
        for (int64_t t = 0; t < k.taps; ++t) {
          const int64_t b = c / 4, chunk = b / k.nr;
          const int64_t tile = ((gi * panels + o / kCh) * k.taps + t) * k.n + chunk;
          dst[(tile * kCh + o % kCh) * 64 + (b - chunk * k.nr) * 4 + c % 4] = w[(gi * g.og + o) * kk + c * k.taps + t];
        }
}

// Whether this kernel takes a convolution of geometry g (the tile data permitted).
bool takes(const kernels::ConvGeometry& g) { return g.pointwise && g.groups == 1 && kernels::amx_permitted(); }

// The dense path's (below): whether it takes a convolution, and its scratch.
bool dense_takes(const kernels::ConvGeometry& g);
int64_t dense_scratch_bytes(const kernels::Plan& p);

// Scratch: the packed weights and records (when prepare did not keep them), then one image's copy.
int64_t copy_bytes(const kernels::ConvGeometry& g) {
  const DenseK k = dense_k(g.c, 1, 1);
  return kernels::ceil_div(g.h * g.w, kPos) * k.n * k.nr * 4 * kPos;
}
int64_t scratch_bytes(const kernels::ConvGeometry& g) {
  return dense_weight_bytes(g) + recs_bytes(g.o) + copy_bytes(g);
}

Status plan_of(const Attrs& attrs, const TensorView* in, const Shape& out, kernels::ConvGeometry* g,
               kernels::QuantIO* io) {
  DTORCH_RETURN_IF_ERROR(kernels::read_quant_io(kOp, attrs, io));
  return kernels::conv_geometry(kOp, attrs, in, out, g);
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch) {
  const KernelDef* k = portable();
  if (k == nullptr) return op_error(StatusCode::kInternal, kOp, "the portable kernel is not registered");
  DTORCH_RETURN_IF_ERROR(k->infer(attrs, in, n_in, out, n_out, scratch));
  kernels::ConvGeometry g{};
  kernels::QuantIO io{};
  DTORCH_RETURN_IF_ERROR(plan_of(attrs, in, out[0], &g, &io));
  if (takes(g)) {
    *scratch = static_cast<size_t>(scratch_bytes(g));
    return Status::Ok();
  }
  if (dense_takes(g)) {
    kernels::Plan p;
    DTORCH_RETURN_IF_ERROR(kernels::plan_of(kOp, attrs, in, out[0], &p));
    *scratch = static_cast<size_t>(dense_scratch_bytes(p));
    return Status::Ok();
  }
  return next_kernel()->infer(attrs, in, n_in, out, n_out, scratch);
}

// The tiles' shapes: C (0-3) 16 rows of 16 int32, A (4) 16 rows of kc bytes, B (5, 6) kc / 4 rows of 64 bytes.
kernels::TileConfig tile_config(int64_t kc) {
  kernels::TileConfig t;
  for (int i = 0; i < 4; ++i) {
    t.rows[i] = 16;
    t.colsb[i] = 64;
  }
  t.rows[4] = 16;
  t.colsb[4] = static_cast<uint16_t>(kc);
  for (int i = 5; i < 7; ++i) {
    t.rows[i] = static_cast<uint8_t>(kc / 4);
    t.colsb[i] = 64;
  }
  return t;
}

// One K chunk into the C tiles 0-3: the A tile (16 rows of kc bytes at a, 64 apart) times the B tiles at xc, xc + 64,
// xc + 128 and xc + 192 (kc / 4 rows, `stride` apart), loaded into tiles 5 and 6 in turn.
inline void chunk4(const int8_t* a, const uint8_t* xc, int64_t stride) {
  _tile_loadd(4, a, 64);
  _tile_loadd(5, xc, stride);
  _tile_dpbsud(0, 4, 5);
  _tile_loadd(6, xc + 64, stride);
  _tile_dpbsud(1, 4, 6);
  _tile_loadd(5, xc + 128, stride);
  _tile_dpbsud(2, 4, 5);
  _tile_loadd(6, xc + 192, stride);
  _tile_dpbsud(3, 4, 6);
}

// The C tiles 0-3 into buf: row r (an output channel) holds its 64 positions' sums.
inline void store4(int32_t* buf) {
  _tile_stored(0, buf, kPos * 4);
  _tile_stored(1, buf + 16, kPos * 4);
  _tile_stored(2, buf + 32, kPos * 4);
  _tile_stored(3, buf + 48, kPos * 4);
}

// Block b's copy: positions [b * 64, b * 64 + 64) of image x0's channels, as u8, [kp / 4][64][4] (channels past C:
// 0; positions past hw: not written, their outputs not stored).
void copy_block(const int8_t* x0, int64_t c_count, int64_t hw, int64_t kp, int64_t b, uint8_t* dst) {
  const int64_t p0 = b * kPos, len = hw - p0 < kPos ? hw - p0 : kPos;
  for (int64_t cb = 0; cb < kp / 4; ++cb) {
    const int8_t* src[4];
    bool any = false;
    for (int j = 0; j < 4; ++j) {
      const int64_t c = cb * 4 + j;
      src[j] = c < c_count ? x0 + c * hw + p0 : nullptr;
      any = any || src[j] != nullptr;
    }
    if (any) kernels::copy_run(src, len, dst + cb * kPos * 4);
    else std::memset(dst + cb * kPos * 4, 0, static_cast<size_t>(kPos * 4));
  }
}

struct Work {
  const int8_t* x;        // the image
  const int8_t* wp;       // packed weights
  const ChanRec* recs;
  const uint8_t* xs;      // the image's copy
  int8_t* y;              // the image's output
  int64_t o, hw, panels, blocks;
  DenseK k;  // its K chunks
  const kernels::QuantIO* io;
  bool panel_major;
};

// The order of a layer's (block, panel) units, whose consecutive runs go to the threads: panel-major where the output
// is the larger side (each thread writes whole channel planes, which the next layer, e.g. a depthwise one split by
// channels, reads on the same core), block-major where the input is (each thread reads the copy of the blocks it
// copied itself). MobileNetV2 at 2 threads: 2.34 -> 2.0 ms.
bool panel_major(int64_t in_channels, int64_t out_channels) { return out_channels > in_channels; }

// Units [u0, u1) of (block, panel), block-major.
void run_units(const Work& w, int64_t u0, int64_t u1) {
  const kernels::TileConfig cfg = tile_config(w.k.nr * 4);
  _tile_loadconfig(&cfg);
  alignas(64) int32_t buf[kCh * kPos];  // C tiles: channel r's 64 sums at buf + r * 64
  const kernels::QuantIO io = *w.io;
  const kernels::Store64 st(io);
  const int64_t nb = w.k.nr, kp = w.k.n * nb * 4;  // B rows per chunk, K with its zero padding
  for (int64_t u = u0; u < u1; ++u) {
    const int64_t blk = w.panel_major ? u % w.blocks : u / w.panels, pan = w.panel_major ? u / w.blocks : u % w.panels;
    const uint8_t* xb = w.xs + blk * kp * kPos;
    const int8_t* wa = w.wp + pan * w.k.n * kCh * 64;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t c = 0; c < w.k.n; ++c) chunk4(wa + c * kCh * 64, xb + c * nb * kPos * 4, kPos * 4);
    store4(buf);
    const int64_t p0 = blk * kPos, n = w.hw - p0 < kPos ? w.hw - p0 : kPos;
    const __mmask64 mask = n == kPos ? ~__mmask64{0} : (__mmask64{1} << n) - 1;
    const int64_t o0 = pan * kCh, ro = w.o - o0 < kCh ? w.o - o0 : kCh;
    for (int64_t r = 0; r < ro; ++r) {
      const __m512i acc[4] = {_mm512_load_si512(buf + r * kPos), _mm512_load_si512(buf + r * kPos + 16),
                              _mm512_load_si512(buf + r * kPos + 32), _mm512_load_si512(buf + r * kPos + 48)};
      kernels::store64(w.recs[o0 + r], acc, w.y + (o0 + r) * w.hw + p0, mask, st, io);
    }
  }
  _tile_release();
}

// --- dense and grouped convolutions ---------------------------------------------------------------------------

// Whether the dense path takes a convolution: not depthwise, not this file's pointwise one, 16 channels a group,
// kernels up to 8 x 8.
constexpr int64_t kMaxTaps = 64;
bool dense_shape(int64_t cg, int64_t og, int64_t kh, int64_t kw, bool pointwise, int64_t groups) {
  return !(cg == 1 && og == 1) && !(pointwise && groups == 1) && cg >= 16 && kh * kw <= kMaxTaps;
}
bool dense_takes(const kernels::ConvGeometry& g) {
  return dense_shape(g.cg, g.og, g.kh, g.kw, g.pointwise, g.groups) && kernels::amx_permitted();
}

// Scratch: packed weights and records (unprepared), then one image and group's copy with the planes of the blocks
// past cb that the last chunk reads.
int64_t dense_copy_bytes(const kernels::Plan& p) {
  const DenseK k = dense_k(p.g.cg, p.g.kh, p.g.kw);
  return p.copy + (k.n * k.nr - k.cb) * p.g.sh * p.g.sw * p.plane * 4 + 64;
}
int64_t dense_scratch_bytes(const kernels::Plan& p) {
  return dense_weight_bytes(p.g) + recs_bytes(p.g.o) + dense_copy_bytes(p);
}

struct DenseWork {
  const kernels::Plan* p;
  const int8_t* wp;      // this group's packed weights
  const ChanRec* recs;   // this group's channels
  const uint8_t* xs;     // this image and group's copy
  int8_t* y;             // this image and group's first output plane
  const int64_t* tap_off;  // each tap's byte offset in block 0's planes
  DenseK k;
  int64_t panels;
  bool panel_major;
};

void run_dense_units(const DenseWork& w, int64_t u0, int64_t u1) {
  const kernels::Plan& p = *w.p;
  const kernels::ConvGeometry& g = p.g;
  const kernels::TileConfig cfg = tile_config(w.k.nr * 4);
  _tile_loadconfig(&cfg);
  alignas(64) int32_t buf[kCh * kPos];
  const kernels::QuantIO io = p.io;
  const kernels::Store64 st(io);
  const __m128i lo8 = _mm_set1_epi8(static_cast<char>(io.lo)), hi8 = _mm_set1_epi8(static_cast<char>(io.hi));
  const int64_t bstride = g.sh * g.sw * p.plane * 4, ohw = g.oh * g.ow;
  int64_t cur = -1;
  int rv = 0;
  kernels::Segs segs;
  bool packed = false;
  for (int64_t u = u0; u < u1; ++u) {
    const int64_t blk = w.panel_major ? u % w.p->blocks : u / w.panels;
    const int64_t pan = w.panel_major ? u / w.p->blocks : u % w.panels;
    if (blk != cur) {
      cur = blk;
      const int64_t left = kernels::ceil_div(p.vpos - blk * kPos, 16);
      rv = static_cast<int>(left < 4 ? left : 4);
      kernels::segments(p, blk * kPos, rv, &segs);
      packed = rv == 4;
      for (int j = 0; j < 4 && packed; ++j)
        packed = segs.n[j] == 1 && segs.s[j][0].off == segs.s[0][0].off + 16 * j && segs.s[j][0].mask == 0xFFFF;
    }
    const uint8_t* xb = w.xs + blk * kPos * 4;
    const int8_t* wa = w.wp + pan * w.k.taps * w.k.n * kCh * 64;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t t = 0; t < w.k.taps; ++t)
      for (int64_t c = 0; c < w.k.n; ++c)
        chunk4(wa + (t * w.k.n + c) * kCh * 64, xb + w.tap_off[t] + c * w.k.nr * bstride, bstride);
    store4(buf);
    const int64_t o0 = pan * kCh, ro = g.og - o0 < kCh ? g.og - o0 : kCh;
    for (int64_t r = 0; r < ro; ++r) {
      const __m512i acc[4] = {_mm512_load_si512(buf + r * kPos), _mm512_load_si512(buf + r * kPos + 16),
                              _mm512_load_si512(buf + r * kPos + 32), _mm512_load_si512(buf + r * kPos + 48)};
      const ChanRec& c = w.recs[o0 + r];
      int8_t* yo = w.y + (o0 + r) * ohw;
      if (packed) {
        kernels::store64(c, acc, yo + segs.s[0][0].off, ~__mmask64{0}, st, io);
        continue;
      }
      for (int j = 0; j < rv; ++j) {
        const __m512i a = _mm512_add_epi32(acc[j], _mm512_set1_epi32(c.start));
        const __m128i q = c.fast ? kernels::requant_fast(a, _mm512_set1_epi64(c.m64), _mm512_set1_epi64(c.r64),
                                                         kernels::fast_count(c.shift), lo8, hi8)
                                 : kernels::requantize16(a, kernels::requant::Multiplier{c.m, c.shift},
                                                         io.y_zero_point, io.lo, io.hi);
        for (int i = 0; i < segs.n[j]; ++i) _mm_mask_storeu_epi8(yo + segs.s[j][i].off, segs.s[j][i].mask, q);
      }
    }
  }
  _tile_release();
}

Status run_dense(const KernelContext& ctx, const kernels::Plan& p, const TensorView* in, int n_in, int8_t* y) {
  const kernels::ConvGeometry& g = p.g;
  const DenseK k = dense_k(g.cg, g.kh, g.kw);
  uint8_t* scratch = static_cast<uint8_t*>(ctx.scratch);
  const int8_t* wp = static_cast<const int8_t*>(ctx.prepared);
  const size_t wbytes = static_cast<size_t>(dense_weight_bytes(g));
  const bool have_recs = wp != nullptr && ctx.prepared_bytes == wbytes + static_cast<size_t>(recs_bytes(g.o));
  if (wp == nullptr || (!have_recs && ctx.prepared_bytes != wbytes)) {
    dense_pack(g, in[1].as<const int8_t>(), reinterpret_cast<int8_t*>(scratch));
    wp = reinterpret_cast<const int8_t*>(scratch);
  }
  const ChanRec* recs = reinterpret_cast<const ChanRec*>(wp + wbytes);
  if (!have_recs) {
    ChanRec* made = reinterpret_cast<ChanRec*>(scratch + wbytes);
    kernels::weight_recs(p.io, in[1].as<const int8_t>(), g.o, g.cg * g.kh * g.kw, in[2].as<const float>(),
              kernels::optional_present(in, n_in, 3) ? in[3].as<const int32_t>() : nullptr, made);
    recs = made;
  }
  uint8_t* xs = scratch + wbytes + recs_bytes(g.o);
  const size_t tail = static_cast<size_t>(dense_copy_bytes(p) - p.copy);
  std::memset(xs + p.copy, 0, tail);  // the planes past cb: read, times zero weights
  int64_t tap_off[kMaxTaps];
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t ri = i * g.dh, cj = j * g.dw;
      tap_off[i * g.kw + j] = (((ri % g.sh) * g.sw + cj % g.sw) * p.plane + (ri / g.sh) * p.wq + cj / g.sw) * 4;
    }
  const int64_t panels = panels_of(g.og), ohw = g.oh * g.ow;
  for (int64_t img = 0; img < g.n; ++img) {
    const int8_t* x0 = in[0].as<const int8_t>() + img * g.c * g.h * g.w;
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      kernels::copy_in(ctx.pool, p, x0, gi, xs);
      const DenseWork w{&p, wp + gi * panels * k.taps * k.n * kCh * 64, recs + gi * g.og, xs,
                        y + (img * g.o + gi * g.og) * ohw, tap_off, k, panels, panel_major(g.cg, g.og)};
      kernels::parallel_chunks(ctx.pool, p.blocks * panels, 1,
                               [&](int64_t u0, int64_t u1) { run_dense_units(w, u0, u1); });
    }
  }
  return Status::Ok();
}

Status prepare(const Attrs& attrs, const TensorView* in, int n_in, void* dst, size_t* bytes) {
  *bytes = 0;
  kernels::ConvGeometry g{};
  int64_t stride[2] = {}, pad[4] = {};
  const bool shaped = kernels::qconv_weight_geometry(attrs, in, n_in, &g) &&
                      kernels::get_ints_exact(kOp, attrs, "stride", 2, stride, nullptr).ok() &&
                      kernels::get_ints_exact(kOp, attrs, "padding", 4, pad, nullptr).ok();
  const bool pointwise = shaped && g.kh == 1 && g.kw == 1 && stride[0] == 1 && stride[1] == 1 && pad[0] == 0 &&
                         pad[1] == 0 && pad[2] == 0 && pad[3] == 0;
  const bool pw = pointwise && g.groups == 1 && kernels::amx_permitted();
  const bool dense = shaped && dense_shape(g.cg, g.og, g.kh, g.kw, pointwise, g.groups) && kernels::amx_permitted();
  if (!pw && !dense)
    return next_kernel()->prepare != nullptr ? next_kernel()->prepare(attrs, in, n_in, dst, bytes) : Status::Ok();
  const int64_t o = g.o, k = g.cg * g.kh * g.kw;
  kernels::QuantIO io{};
  const bool bias_present = kernels::optional_present(in, n_in, 3);
  const bool recs = n_in > 2 && in[2].data != nullptr && in[2].dtype == DType::kFloat32 && in[2].shape.numel() == o &&
                    (!bias_present ||
                     (in[3].data != nullptr && in[3].dtype == DType::kInt32 && in[3].shape.numel() == o)) &&
                    kernels::read_quant_io(kOp, attrs, &io).ok();
  const int64_t wbytes = dense_weight_bytes(g);
  *bytes = static_cast<size_t>(wbytes + (recs ? recs_bytes(o) : 0));
  if (dst == nullptr) return Status::Ok();
  int8_t* d = static_cast<int8_t*>(dst);
  dense_pack(g, in[1].as<const int8_t>(), d);
  if (recs)
    kernels::weight_recs(io, in[1].as<const int8_t>(), o, k, in[2].as<const float>(),
              bias_present ? in[3].as<const int32_t>() : nullptr, reinterpret_cast<ChanRec*>(d + wbytes));
  return Status::Ok();
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  Shape shape;
  DTORCH_RETURN_IF_ERROR(kernels::spec_output_shape(portable(), kOp, ctx, in, n_in, n_out, &shape));
  kernels::ConvGeometry g{};
  kernels::QuantIO io{};
  DTORCH_RETURN_IF_ERROR(plan_of(*ctx.attrs, in, shape, &g, &io));
  const bool pw = takes(g), dense = !pw && dense_takes(g);
  if (!pw && !dense) return next_kernel()->run(ctx, in, n_in, out, n_out);
  DTORCH_RETURN_IF_ERROR(kernels::check_weight_scales(kOp, io, in[2], g.o));
  DTORCH_RETURN_IF_ERROR(kernels::check_conv_output(kOp, out[0], g));
  if (out[0].shape.numel() == 0) return Status::Ok();
  if (dense) {
    kernels::Plan p;
    DTORCH_RETURN_IF_ERROR(kernels::plan_of(kOp, *ctx.attrs, in, shape, &p));
    const size_t need = static_cast<size_t>(dense_scratch_bytes(p));
    if (ctx.scratch_bytes < need)
      return op_error(StatusCode::kInternal, kOp, "scratch of %zu bytes is smaller than the %zu bytes infer asked for",
                      ctx.scratch_bytes, need);
    return run_dense(ctx, p, in, n_in, out[0].as<int8_t>());
  }
  const size_t need = static_cast<size_t>(scratch_bytes(g));
  if (ctx.scratch_bytes < need)
    return op_error(StatusCode::kInternal, kOp, "scratch of %zu bytes is smaller than the %zu bytes infer asked for",
                    ctx.scratch_bytes, need);
  const int64_t o = g.o, k = g.c, hw = g.h * g.w;
  uint8_t* scratch = static_cast<uint8_t*>(ctx.scratch);
  const int8_t* wp = static_cast<const int8_t*>(ctx.prepared);
  const size_t wbytes = static_cast<size_t>(dense_weight_bytes(g));
  const bool have_recs = wp != nullptr && ctx.prepared_bytes == wbytes + static_cast<size_t>(recs_bytes(o));
  if (wp == nullptr || (!have_recs && ctx.prepared_bytes != wbytes)) {
    dense_pack(g, in[1].as<const int8_t>(), reinterpret_cast<int8_t*>(scratch));
    wp = reinterpret_cast<const int8_t*>(scratch);
  }
  const ChanRec* recs = reinterpret_cast<const ChanRec*>(wp + wbytes);
  if (!have_recs) {
    ChanRec* made = reinterpret_cast<ChanRec*>(scratch + wbytes);
    kernels::weight_recs(io, in[1].as<const int8_t>(), o, k, in[2].as<const float>(),
              kernels::optional_present(in, n_in, 3) ? in[3].as<const int32_t>() : nullptr, made);
    recs = made;
  }
  uint8_t* xs = scratch + wbytes + recs_bytes(o);
  const DenseK ck = dense_k(k, 1, 1);
  const int64_t kp = ck.n * ck.nr * 4;
  const int64_t blocks = kernels::ceil_div(hw, kPos), panels = panels_of(o);
  for (int64_t img = 0; img < g.n; ++img) {
    const int8_t* x0 = in[0].as<const int8_t>() + img * k * hw;
    kernels::parallel_chunks(ctx.pool, blocks, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) copy_block(x0, k, hw, kp, b, xs + b * kp * kPos);
    });
    const Work w{x0, wp, recs, xs, out[0].as<int8_t>() + img * o * hw, o, hw, panels, blocks, ck, &io,
                 panel_major(k, o)};
    kernels::parallel_chunks(ctx.pool, blocks * panels, 1, [&](int64_t u0, int64_t u1) { run_units(w, u0, u1); });
  }
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_AMX_KERNEL(qconv2d, DType::kInt8, infer, run, prepare);
}  // namespace dtorch
