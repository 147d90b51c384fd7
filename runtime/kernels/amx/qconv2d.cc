// qconv2d on AMX tiles: the portable kernel's bits (kernels/portable/qconv2d.cc is the specification; integer sums
// do not depend on their order) for pointwise layers (1x1, stride 1, no padding, one group), the GEMM that holds most
// of a MobileNet's or ResNet's multiply-adds; every other convolution runs the vnni set's kernel.
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

// The K chunks of a layer with K input channels: n chunks of kc bytes (a multiple of 4, at most 64), n * kc >= K.
struct Chunks {
  int64_t n, kc, kp;  // kp = n * kc: K with its zero padding
};
Chunks chunks_of(int64_t k) {
  const int64_t n = kernels::ceil_div(k, 64);
  const int64_t kc = kernels::ceil_div(kernels::ceil_div(k, n), 4) * 4;
  return Chunks{n, kc, n * kc};
}

// Packed weights: [panel][chunk][16 rows][64 bytes] s8 (zero past K and past O), then (64-aligned) a ChanRec per
// output channel when prepare could make them (constant scales and bias).
int64_t panels_of(int64_t o) { return kernels::ceil_div(o, kCh); }
int64_t weight_bytes(int64_t o, int64_t k) { return panels_of(o) * chunks_of(k).n * kCh * 64; }
int64_t recs_bytes(int64_t o) { return kernels::ceil_div(o * static_cast<int64_t>(sizeof(ChanRec)), 64) * 64; }

void pack(const int8_t* w, int64_t o_count, int64_t k, int8_t* dst) {
  const Chunks ch = chunks_of(k);
  std::memset(dst, 0, static_cast<size_t>(weight_bytes(o_count, k)));
  for (int64_t o = 0; o < o_count; ++o)
    for (int64_t c = 0; c < ch.n; ++c) {
      const int64_t k0 = c * ch.kc, k1 = k0 + ch.kc < k ? k0 + ch.kc : k;
      if (k1 > k0)
        std::memcpy(dst + ((o / kCh * ch.n + c) * kCh + o % kCh) * 64, w + o * k + k0, static_cast<size_t>(k1 - k0));
    }
}

void make_recs(const kernels::QuantIO& io, const int8_t* w, int64_t o_count, int64_t k, const float* ws,
               const int32_t* bias, ChanRec* recs) {
  for (int64_t o = 0; o < o_count; ++o) {
    int32_t wsum = 0;
    kernels::qconv_weight_sums(w + o * k, 1, k, &wsum);
    recs[o] = kernels::chan_rec(io, ws, bias, o, wsum);
  }
}

// Whether this kernel takes a convolution of geometry g (the tile data permitted).
bool takes(const kernels::ConvGeometry& g) { return g.pointwise && g.groups == 1 && kernels::amx_permitted(); }

// Scratch: the packed weights and records (when prepare did not keep them), then one image's copy.
int64_t copy_bytes(const kernels::ConvGeometry& g) {
  return kernels::ceil_div(g.h * g.w, kPos) * chunks_of(g.c).kp * kPos;
}
int64_t scratch_bytes(const kernels::ConvGeometry& g) {
  return weight_bytes(g.o, g.c) + recs_bytes(g.o) + copy_bytes(g);
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
  Chunks ch;
  const kernels::QuantIO* io;
};

// Units [u0, u1) of (block, panel), block-major.
void run_units(const Work& w, int64_t u0, int64_t u1) {
  const kernels::TileConfig cfg = tile_config(w.ch.kc);
  _tile_loadconfig(&cfg);
  alignas(64) int32_t buf[kCh * kPos];  // C tiles: channel r's 64 sums at buf + r * 64
  const kernels::QuantIO io = *w.io;
  const kernels::Store64 st(io);
  const int64_t nb = w.ch.kc / 4;  // B rows per chunk
  for (int64_t u = u0; u < u1; ++u) {
    const int64_t blk = u / w.panels, pan = u % w.panels;
    const uint8_t* xb = w.xs + blk * w.ch.kp * kPos;
    const int8_t* wa = w.wp + pan * w.ch.n * kCh * 64;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t c = 0; c < w.ch.n; ++c) {
      const uint8_t* xc = xb + c * nb * kPos * 4;
      _tile_loadd(4, wa + c * kCh * 64, 64);
      _tile_loadd(5, xc, kPos * 4);
      _tile_dpbsud(0, 4, 5);
      _tile_loadd(6, xc + 64, kPos * 4);
      _tile_dpbsud(1, 4, 6);
      _tile_loadd(5, xc + 128, kPos * 4);
      _tile_dpbsud(2, 4, 5);
      _tile_loadd(6, xc + 192, kPos * 4);
      _tile_dpbsud(3, 4, 6);
    }
    _tile_stored(0, buf, kPos * 4);
    _tile_stored(1, buf + 16, kPos * 4);
    _tile_stored(2, buf + 32, kPos * 4);
    _tile_stored(3, buf + 48, kPos * 4);
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

Status prepare(const Attrs& attrs, const TensorView* in, int n_in, void* dst, size_t* bytes) {
  *bytes = 0;
  kernels::ConvGeometry g{};
  int64_t stride[2] = {}, pad[4] = {};
  const bool mine = kernels::qconv_weight_geometry(attrs, in, n_in, &g) && g.kh == 1 && g.kw == 1 &&
                    g.groups == 1 && kernels::get_ints_exact(kOp, attrs, "stride", 2, stride, nullptr).ok() &&
                    kernels::get_ints_exact(kOp, attrs, "padding", 4, pad, nullptr).ok() && stride[0] == 1 &&
                    stride[1] == 1 && pad[0] == 0 && pad[1] == 0 && pad[2] == 0 && pad[3] == 0 &&
                    kernels::amx_permitted();
  if (!mine) return next_kernel()->prepare != nullptr ? next_kernel()->prepare(attrs, in, n_in, dst, bytes)
                                                      : Status::Ok();
  const int64_t o = g.o, k = g.cg;
  kernels::QuantIO io{};
  const bool bias_present = kernels::optional_present(in, n_in, 3);
  const bool recs = n_in > 2 && in[2].data != nullptr && in[2].dtype == DType::kFloat32 && in[2].shape.numel() == o &&
                    (!bias_present ||
                     (in[3].data != nullptr && in[3].dtype == DType::kInt32 && in[3].shape.numel() == o)) &&
                    kernels::read_quant_io(kOp, attrs, &io).ok();
  *bytes = static_cast<size_t>(weight_bytes(o, k) + (recs ? recs_bytes(o) : 0));
  if (dst == nullptr) return Status::Ok();
  int8_t* d = static_cast<int8_t*>(dst);
  pack(in[1].as<const int8_t>(), o, k, d);
  if (recs)
    make_recs(io, in[1].as<const int8_t>(), o, k, in[2].as<const float>(),
              bias_present ? in[3].as<const int32_t>() : nullptr,
              reinterpret_cast<ChanRec*>(d + weight_bytes(o, k)));
  return Status::Ok();
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  Shape shape;
  DTORCH_RETURN_IF_ERROR(kernels::spec_output_shape(portable(), kOp, ctx, in, n_in, n_out, &shape));
  kernels::ConvGeometry g{};
  kernels::QuantIO io{};
  DTORCH_RETURN_IF_ERROR(plan_of(*ctx.attrs, in, shape, &g, &io));
  if (!takes(g)) return next_kernel()->run(ctx, in, n_in, out, n_out);
  DTORCH_RETURN_IF_ERROR(kernels::check_weight_scales(kOp, io, in[2], g.o));
  DTORCH_RETURN_IF_ERROR(kernels::check_conv_output(kOp, out[0], g));
  if (out[0].shape.numel() == 0) return Status::Ok();
  const size_t need = static_cast<size_t>(scratch_bytes(g));
  if (ctx.scratch_bytes < need)
    return op_error(StatusCode::kInternal, kOp, "scratch of %zu bytes is smaller than the %zu bytes infer asked for",
                    ctx.scratch_bytes, need);
  const int64_t o = g.o, k = g.c, hw = g.h * g.w;
  uint8_t* scratch = static_cast<uint8_t*>(ctx.scratch);
  const int8_t* wp = static_cast<const int8_t*>(ctx.prepared);
  const size_t wbytes = static_cast<size_t>(weight_bytes(o, k));
  const bool have_recs = wp != nullptr && ctx.prepared_bytes == wbytes + static_cast<size_t>(recs_bytes(o));
  if (wp == nullptr || (!have_recs && ctx.prepared_bytes != wbytes)) {
    pack(in[1].as<const int8_t>(), o, k, reinterpret_cast<int8_t*>(scratch));
    wp = reinterpret_cast<const int8_t*>(scratch);
  }
  const ChanRec* recs = reinterpret_cast<const ChanRec*>(wp + wbytes);
  if (!have_recs) {
    ChanRec* made = reinterpret_cast<ChanRec*>(scratch + wbytes);
    make_recs(io, in[1].as<const int8_t>(), o, k, in[2].as<const float>(),
              kernels::optional_present(in, n_in, 3) ? in[3].as<const int32_t>() : nullptr, made);
    recs = made;
  }
  uint8_t* xs = scratch + wbytes + recs_bytes(o);
  const Chunks ch = chunks_of(k);
  const int64_t blocks = kernels::ceil_div(hw, kPos), panels = panels_of(o);
  for (int64_t img = 0; img < g.n; ++img) {
    const int8_t* x0 = in[0].as<const int8_t>() + img * k * hw;
    kernels::parallel_chunks(ctx.pool, blocks, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) copy_block(x0, k, hw, ch.kp, b, xs + b * ch.kp * kPos);
    });
    const Work w{x0, wp, recs, xs, out[0].as<int8_t>() + img * o * hw, o, hw, panels, blocks, ch, &io};
    kernels::parallel_chunks(ctx.pool, blocks * panels, 1, [&](int64_t u0, int64_t u1) { run_units(w, u0, u1); });
  }
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_AMX_KERNEL(qconv2d, DType::kInt8, infer, run, prepare);
}  // namespace dtorch
