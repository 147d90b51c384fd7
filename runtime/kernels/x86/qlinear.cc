// qlinear, x86-64 AVX2 kernel set (kernels/x86/x86.h): the portable kernel's bits (kernels/portable/qlinear.cc is the
// specification; the arithmetic and why it is exact: kernels/x86/int8.h). Features run along the vector lanes:
//
// - The input rows are copied once as d = x - x_zero_point, each two neighbouring k as one int32 (an int16 pair; an
//   odd last k pairs with 0).
// - The weights are packed at load in panels of 16 features: [panel][k pair][feature][2] int8 (32 bytes a step,
//   widened to two vectors of int16 pairs with vpmovsxbw as they are read: half the bytes of int16 weights, which
//   matters for a classifier's large matrix read once per row), with each feature's requantization constants.
// - Tile: up to kR rows x 16 features: per k pair, each row's pair (one int32 broadcast) meets the two weight vectors
//   in vpmaddwd, summed with vpaddd. Epilogue: requantize8 with each lane's feature constants, 16 bytes a row.
// Threads split (panel, row tile) units: the bits do not depend on the count.
#include <cstdint>
#include <cstring>

#include "kernels/common/portable_kernel.h"
#include "kernels/common/quant_params.h"
#include "kernels/common/util.h"
#include "kernels/x86/int8.h"
#include "kernels/x86/x86.h"

namespace dtorch {
namespace {

using kernels::op_error;
using kernels::x86::ChannelRequant;
constexpr char kOp[] = "qlinear";
constexpr int kR = 4;            // rows per tile
constexpr int64_t kPanel = 16;   // features per panel

const KernelDef* portable() { return kernels::portable_kernel<kOp, DType::kInt8>(); }

int64_t align64(int64_t n) { return kernels::ceil_div(n, 64) * 64; }

struct Geo {
  int64_t rows, k, m;
  int64_t k2;      // k in pairs
  int64_t panels;  // 16-feature panels
};

Geo geo_of(int64_t rows, int64_t k, int64_t m) {
  return Geo{rows, k, m, kernels::ceil_div(k, 2), kernels::ceil_div(m, kPanel)};
}

// What prepare keeps: the requantization table (kernels/x86/int8.h), then the packed weights.
int64_t requant_bytes(const Geo& g) { return kernels::x86::requant_table_bytes(g.m); }
int64_t packed_bytes(const Geo& g) { return requant_bytes(g) + g.panels * g.k2 * kPanel * 2; }

void prepare_into(const Geo& g, const kernels::QuantIO& io, const int8_t* w, const float* ws, uint8_t* dst) {
  kernels::x86::write_requant_table(io, ws, g.m, dst);
  int8_t* p = reinterpret_cast<int8_t*>(dst + requant_bytes(g));
  std::memset(p, 0, static_cast<size_t>(g.panels * g.k2 * kPanel * 2));
  for (int64_t f = 0; f < g.m; ++f)
    for (int64_t k = 0; k < g.k; ++k)
      p[((f / kPanel * g.k2 + k / 2) * kPanel + f % kPanel) * 2 + k % 2] = w[f * g.k + k];
}

// The geometry of inputs the portable infer has accepted.
Geo geometry(const TensorView* in) {
  const Shape& xs = in[0].shape;
  const int64_t k = xs.dims[xs.ndim - 1];
  int64_t rows = 1;
  for (int d = 0; d + 1 < xs.ndim; ++d) rows *= xs.dims[d];
  return geo_of(rows, k, in[1].shape.dims[0]);
}

// Scratch: the constants and packed weights (when prepare did not keep them), then the input pairs.
int64_t scratch_bytes_of(const Geo& g) { return align64(packed_bytes(g)) + align64(g.rows * g.k2 * 4); }

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  const KernelDef* k = portable();
  if (k == nullptr) return op_error(StatusCode::kInternal, kOp, "the portable kernel is not registered");
  DTORCH_RETURN_IF_ERROR(k->infer(attrs, in, n_in, out, n_out, scratch_bytes));
  *scratch_bytes = static_cast<size_t>(scratch_bytes_of(geometry(in)));
  return Status::Ok();
}

// Load time: with constant weights and weight scales, their constants and packed weights (else run makes them).
Status prepare(const Attrs& attrs, const TensorView* in, int n_in, void* dst, size_t* bytes) {
  *bytes = 0;
  if (n_in < 3 || in[1].data == nullptr || in[1].dtype != DType::kInt8 || in[1].shape.ndim != 2 ||
      in[2].data == nullptr || in[2].dtype != DType::kFloat32 || in[2].shape.ndim != 1)
    return Status::Ok();
  const int64_t m = in[1].shape.dims[0], k = in[1].shape.dims[1];
  kernels::QuantIO io{};
  if (!kernels::read_quant_io(kOp, attrs, &io).ok() || !kernels::check_weight_scales(kOp, io, in[2], m).ok())
    return Status::Ok();  // run's checks report it
  const Geo g = geo_of(0, k, m);
  *bytes = static_cast<size_t>(packed_bytes(g));
  if (dst != nullptr) prepare_into(g, io, in[1].as<const int8_t>(), in[2].as<const float>(), static_cast<uint8_t*>(dst));
  return Status::Ok();
}

struct TileArgs {
  const int32_t* x;      // the tile's first row of input pairs (k2 per row)
  int64_t k2;
  const int8_t* w;       // the panel
  const __m256i* start;  // 2: each feature's bias
  const kernels::x86::Requant8* rq;  // 2
  __m256i lo, hi;
  bool clamp;            // whether a feature needs the final clamp
  int8_t* y;             // the tile's first row at the panel's first feature
  int64_t m;             // output row stride
  int64_t n;             // features to store (<= 16)
};

template <int R>
void tile(const TileArgs& t) {
  __m256i acc[R][2];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    acc[r][0] = t.start[0];
    acc[r][1] = t.start[1];
  }
  const int8_t* w = t.w;
  for (int64_t s = 0; s < t.k2; ++s, w += 2 * kPanel) {
    const __m256i w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
    const __m256i w1 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + kPanel)));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256i b = _mm256_set1_epi32(t.x[r * t.k2 + s]);
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(b, w0));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(b, w1));
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const __m128i v = kernels::x86::pack16(kernels::x86::requantize8(acc[r][0], t.rq[0], t.lo, t.hi, t.clamp),
                                           kernels::x86::requantize8(acc[r][1], t.rq[1], t.lo, t.hi, t.clamp));
    kernels::x86::store_bytes(t.y + r * t.m, v, t.n);
  }
}

using TileFn = void (*)(const TileArgs&);
constexpr TileFn kTiles[kR] = {tile<1>, tile<2>, tile<3>, tile<4>};

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  Shape shape;
  DTORCH_RETURN_IF_ERROR(kernels::x86::begin_run(kOp, portable(), ctx, in, n_in, out, n_out, &shape, [&](const Shape&) {
    return static_cast<size_t>(scratch_bytes_of(geometry(in)));
  }));
  kernels::QuantIO io{};
  DTORCH_RETURN_IF_ERROR(kernels::read_quant_io(kOp, *ctx.attrs, &io));
  const Geo g = geometry(in);
  if (g.rows == 0 || g.m == 0) return Status::Ok();
  const int64_t pb = packed_bytes(g);
  const uint8_t* prepared = kernels::x86::prepared_or_made(ctx, pb, [&](uint8_t* dst) {
    prepare_into(g, io, in[1].as<const int8_t>(), in[2].as<const float>(), dst);
  });
  uint8_t* scratch = static_cast<uint8_t*>(ctx.scratch);
  const kernels::x86::RequantTable table = kernels::x86::read_requant_table(prepared);
  const ChannelRequant* rq = table.channels;
  const int8_t* packed = reinterpret_cast<const int8_t*>(prepared + requant_bytes(g));
  const int32_t* bias = kernels::optional_present(in, n_in, 3) ? in[3].as<const int32_t>() : nullptr;
  // The input pairs.
  int32_t* xs = reinterpret_cast<int32_t*>(scratch + align64(pb));
  const int8_t* x = in[0].as<const int8_t>();
  const int32_t zp = io.x_zero_point;
  kernels::parallel_chunks(ctx.pool, g.rows, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t s = 0; s < g.k2; ++s) {
        const int8_t* xk = x + r * g.k + 2 * s;
        xs[r * g.k2 + s] = kernels::x86::pair16(xk[0] - zp, 2 * s + 1 < g.k ? xk[1] - zp : 0);
      }
  });
  const int64_t row_tiles = kernels::ceil_div(g.rows, kR);
  const __m256i lo = _mm256_set1_epi32(io.lo), hi = _mm256_set1_epi32(io.hi);
  int8_t* y = out[0].as<int8_t>();
  kernels::parallel_chunks(ctx.pool, g.panels * row_tiles, 1, [&](int64_t u0, int64_t u1) {
    int64_t cached = -1;
    kernels::x86::Requant8 q[2] = {};
    __m256i start[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    int64_t n = 0;
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t a = u / row_tiles, rt = u % row_tiles, f0 = a * kPanel;
      if (a != cached) {  // the panel's constants
        cached = a;
        n = g.m - f0 < kPanel ? g.m - f0 : kPanel;
        alignas(32) int32_t b[kPanel];
        for (int64_t l = 0; l < kPanel; ++l) b[l] = bias != nullptr && l < n ? bias[f0 + l] : 0;
        start[0] = _mm256_load_si256(reinterpret_cast<const __m256i*>(b));
        start[1] = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 8));
        q[0] = kernels::x86::requant8_of(rq + f0, static_cast<int>(n));
        q[1] = kernels::x86::requant8_of(rq + f0 + (n > 8 ? 8 : 0), static_cast<int>(n > 8 ? n - 8 : 1));
      }
      const int64_t r0 = rt * kR, nr = g.rows - r0 < kR ? g.rows - r0 : kR;
      TileArgs t{xs + r0 * g.k2, g.k2, packed + a * g.k2 * kPanel * 2, start, q, lo, hi, table.clamp,
                 y + r0 * g.m + f0, g.m, n};
      kTiles[nr - 1](t);
    }
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_X86_PREPARED_KERNEL(qlinear, DType::kInt8, infer, run, prepare);
}  // namespace dtorch
