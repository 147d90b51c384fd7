// qconv2d on AVX-512 VNNI: the portable kernel's bits (kernels/portable/qconv2d.cc is the specification), as a GEMM
// per image and group, Y (og x P) = W (og x K) . cols (K x P), P = OH * OW output positions, K = C/groups * kh * kw.
//
// - cols: the input as u8 = x + 128 (a padding tap holds x_zero_point + 128, the real value 0), laid out for
//   vpdpbusd as [K/4][P][4]: 16 positions' 4 consecutive taps are one 64-byte vector.
// - Weights: s8 in blocks of kMR output channels, [K/4][kMR][4], so one channel's 4 taps are one broadcast int32;
//   packed once at load (prepare) with each channel's weight sum. K is padded to a multiple of 4 with zero weights.
// - Register tile: kMR channels x 32 positions (2 vectors): 24 int32 accumulators, 2 loads and kMR broadcasts per 4
//   taps. sum(w * (x - zp)) = sum(w * u) - (128 + zp) * sum(w): each accumulator starts at bias - (128 + zp) * sum(w),
//   and a padding tap adds w * (zp + 128) - nothing net. The sums wrap modulo 2^32 as the portable kernel's do.
// - Epilogue: kernels/vnni/vnni.h requantize16 (the portable arithmetic on 16 lanes), stored as 16 output bytes.
// Depthwise convolutions (one input and one output channel per group) stay with the portable kernel.
#include <cstdint>
#include <cstring>

#include "kernels/common/conv_geometry.h"
#include "kernels/common/quant_params.h"
#include "kernels/common/util.h"
#include "kernels/vnni/vnni.h"

namespace dtorch {
namespace {

using kernels::op_error;
namespace rq = kernels::requant;
constexpr char kOp[] = "qconv2d";
constexpr int kMR = 12;          // output channels per tile
constexpr int64_t kNP = 32;      // positions per tile (two vectors of 16)

const KernelDef* portable() {
  static const KernelDef* k = find_kernel_in_set(kOp, DType::kInt8, "portable");
  return k;
}

struct Plan {
  kernels::ConvGeometry g;
  kernels::QuantIO io;
  int64_t k, k4, blocks, pp;  // K, K rounded up to 4, channel blocks per group, P rounded up to a tile (32)
  bool direct;                // this kernel runs it (not depthwise)
};

int64_t packed_bytes(const kernels::ConvGeometry& g) {
  const int64_t k4 = kernels::ceil_div(g.cg * g.kh * g.kw, 4) * 4;
  return g.groups * kernels::ceil_div(g.og, kMR) * k4 * kMR + g.o * int64_t{4};
}

Status plan_of(const Attrs& attrs, const TensorView* in, int n_in, Plan* p) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 3, 4));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "input", in[0], DType::kInt8));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "weight", in[1], DType::kInt8));
  DTORCH_RETURN_IF_ERROR(kernels::read_quant_io(kOp, attrs, &p->io));
  DTORCH_RETURN_IF_ERROR(kernels::checked_conv_geometry(kOp, attrs, in, &p->g));
  const kernels::ConvGeometry& g = p->g;
  p->k = g.cg * g.kh * g.kw;
  p->k4 = kernels::ceil_div(p->k, 4) * 4;
  p->blocks = kernels::ceil_div(g.og, kMR);
  p->pp = kernels::ceil_div(g.oh * g.ow, kNP) * kNP;
  p->direct = !(g.cg == 1 && g.og == 1);
  return Status::Ok();
}

// Scratch: the packed weights (when prepare did not keep them), then one image and group's cols.
int64_t scratch_bytes_of(const Plan& p) {
  return kernels::ceil_div(packed_bytes(p.g), 64) * 64 + p.k4 * p.pp;
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  const KernelDef* k = portable();
  if (k == nullptr) return op_error(StatusCode::kInternal, kOp, "the portable kernel is not registered");
  DTORCH_RETURN_IF_ERROR(k->infer(attrs, in, n_in, out, n_out, scratch_bytes));
  Plan p;
  DTORCH_RETURN_IF_ERROR(plan_of(attrs, in, n_in, &p));
  if (p.direct) *scratch_bytes = static_cast<size_t>(scratch_bytes_of(p));
  return Status::Ok();
}

// Weights of every group in blocks of kMR channels, [K/4][kMR][4] s8 (zero past K and past the group's channels),
// then each output channel's weight sum (int32).
void pack(const kernels::ConvGeometry& g, const int8_t* w, uint8_t* dst) {
  const int64_t K = g.cg * g.kh * g.kw, k4 = kernels::ceil_div(K, 4) * 4, blocks = kernels::ceil_div(g.og, kMR);
  int8_t* wp = reinterpret_cast<int8_t*>(dst);
  std::memset(wp, 0, static_cast<size_t>(g.groups * blocks * k4 * kMR));
  for (int64_t gi = 0; gi < g.groups; ++gi)
    for (int64_t o = 0; o < g.og; ++o) {
      int8_t* blk = wp + ((gi * blocks + o / kMR) * k4) * kMR;
      const int8_t* wo = w + (gi * g.og + o) * K;
      for (int64_t k = 0; k < K; ++k) blk[((k / 4) * kMR + o % kMR) * 4 + k % 4] = wo[k];
    }
  int32_t* sums = reinterpret_cast<int32_t*>(dst + g.groups * blocks * k4 * kMR);
  for (int64_t o = 0; o < g.o; ++o) {
    uint32_t s = 0;
    for (int64_t k = 0; k < K; ++k) s += static_cast<uint32_t>(static_cast<int32_t>(w[o * K + k]));
    int32_t v;
    std::memcpy(&v, &s, sizeof v);
    sums[o] = v;
  }
}

Status prepare(const Attrs& attrs, const TensorView* in, int n_in, void* dst, size_t* bytes) {
  *bytes = 0;
  if (n_in < 2 || in[1].data == nullptr || in[1].dtype != DType::kInt8 || in[1].shape.ndim != 4) return Status::Ok();
  const int64_t groups = attrs.get_int("groups");
  kernels::ConvGeometry g{};
  g.o = in[1].shape.dims[0];
  g.cg = in[1].shape.dims[1];
  g.kh = in[1].shape.dims[2];
  g.kw = in[1].shape.dims[3];
  if (groups < 1 || g.o % groups != 0 || g.o < 1) return Status::Ok();
  g.groups = groups;
  g.og = g.o / groups;
  if (g.cg == 1 && g.og == 1) return Status::Ok();  // depthwise: the portable kernel
  const size_t need = static_cast<size_t>(packed_bytes(g));
  if (dst == nullptr) {
    *bytes = need;
    return Status::Ok();
  }
  pack(g, in[1].as<const int8_t>(), static_cast<uint8_t*>(dst));
  *bytes = need;
  return Status::Ok();
}

// cols of image x0, group gi: [K/4][pp][4] bytes u = x + 128 (x ^ 0x80), the padding taps zp + 128, taps past K 0
// (their weights are 0) and positions past P 0 (their outputs are not stored). Per group of 4 taps and output row:
// the 4 taps' rows of u in a buffer (runs of the input row: unit or strided reads), then interleaved 16 positions at
// a time (byte and 16-bit unpacks) into the [P][4] layout.
void im2col(ThreadPool* pool, const Plan& p, const int8_t* x0, int64_t gi, uint8_t* cols) {
  constexpr int64_t kChunk = 256;
  const kernels::ConvGeometry& g = p.g;
  const uint8_t pad = static_cast<uint8_t>(p.io.x_zero_point + 128);
  const int64_t P = g.oh * g.ow;
  kernels::parallel_chunks(pool, p.k4 / 4, 1, [&](int64_t q0, int64_t q1) {
    alignas(64) uint8_t t[4][kChunk];
    for (int64_t q = q0; q < q1; ++q) {
      uint8_t* dst = cols + q * p.pp * 4;
      std::memset(dst + P * 4, 0, static_cast<size_t>((p.pp - P) * 4));
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        for (int64_t ow0 = 0; ow0 < g.ow; ow0 += kChunk) {
          const int64_t n = g.ow - ow0 < kChunk ? g.ow - ow0 : kChunk;
          for (int l = 0; l < 4; ++l) {
            uint8_t* tl = t[l];
            const int64_t k = q * 4 + l;
            if (k >= p.k) {
              std::memset(tl, 0, static_cast<size_t>(n));
              continue;
            }
            const int64_t c = k / (g.kh * g.kw), i = (k / g.kw) % g.kh, j = k % g.kw;
            const int64_t ih = oh * g.sh - g.pt + i * g.dh;
            if (ih < 0 || ih >= g.h) {
              std::memset(tl, pad, static_cast<size_t>(n));
              continue;
            }
            const int8_t* xr = x0 + ((gi * g.cg + c) * g.h + ih) * g.w;
            const int64_t off = ow0 * g.sw - g.pl + j * g.dw;  // input column of buffer column 0
            int64_t lo = 0, hi = 0;
            kernels::conv_valid_range(off, g.sw, g.w, n, &lo, &hi);
            std::memset(tl, pad, static_cast<size_t>(lo));
            const int8_t* xs = xr + off + lo * g.sw;
            if (g.sw == 1) {
              for (int64_t u = 0; u < hi - lo; ++u) tl[lo + u] = static_cast<uint8_t>(xs[u]) ^ 0x80u;
            } else {
              for (int64_t u = 0; u < hi - lo; ++u) tl[lo + u] = static_cast<uint8_t>(xs[u * g.sw]) ^ 0x80u;
            }
            if (hi < n) std::memset(tl + hi, pad, static_cast<size_t>(n - hi));
          }
          uint8_t* out = dst + (oh * g.ow + ow0) * 4;
          int64_t u = 0;
          for (; u + 16 <= n; u += 16) {
            const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(t[0] + u));
            const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(t[1] + u));
            const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(t[2] + u));
            const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(t[3] + u));
            const __m128i ab0 = _mm_unpacklo_epi8(a, b), ab1 = _mm_unpackhi_epi8(a, b);
            const __m128i cd0 = _mm_unpacklo_epi8(c, d), cd1 = _mm_unpackhi_epi8(c, d);
            __m128i* o = reinterpret_cast<__m128i*>(out + u * 4);
            _mm_storeu_si128(o, _mm_unpacklo_epi16(ab0, cd0));
            _mm_storeu_si128(o + 1, _mm_unpackhi_epi16(ab0, cd0));
            _mm_storeu_si128(o + 2, _mm_unpacklo_epi16(ab1, cd1));
            _mm_storeu_si128(o + 3, _mm_unpackhi_epi16(ab1, cd1));
          }
          for (; u < n; ++u)
            for (int l = 0; l < 4; ++l) out[u * 4 + l] = t[l][u];
        }
      }
    }
  });
}

// One tile: channels [o0, o0 + noc) of the group (block `blk` of the packed weights) x positions [p0, p0 + 32).
void tile(const Plan& p, const int8_t* blk, const uint8_t* cols, int64_t p0, int noc, const int32_t* start,
          const rq::Multiplier* mul, int8_t* y, int64_t P) {
  __m512i acc[kMR][2];
  for (int c = 0; c < kMR; ++c) acc[c][0] = acc[c][1] = _mm512_set1_epi32(c < noc ? start[c] : 0);
  const uint8_t* xp = cols + p0 * 4;
  const int32_t* wp = reinterpret_cast<const int32_t*>(blk);
  for (int64_t q = 0; q < p.k4 / 4; ++q) {
    const __m512i x0 = _mm512_loadu_si512(xp);
    const __m512i x1 = _mm512_loadu_si512(xp + 64);
    for (int c = 0; c < kMR; ++c) {
      const __m512i wb = _mm512_set1_epi32(wp[c]);
      acc[c][0] = _mm512_dpbusd_epi32(acc[c][0], x0, wb);
      acc[c][1] = _mm512_dpbusd_epi32(acc[c][1], x1, wb);
    }
    xp += p.pp * 4;
    wp += kMR;
  }
  const int64_t n = P - p0 < kNP ? P - p0 : kNP;
  const __mmask16 m0 = static_cast<__mmask16>(n >= 16 ? 0xFFFF : (1u << n) - 1);
  const __mmask16 m1 = static_cast<__mmask16>(n >= 32 ? 0xFFFF : n <= 16 ? 0 : (1u << (n - 16)) - 1);
  for (int c = 0; c < noc; ++c) {
    int8_t* yr = y + c * P + p0;
    _mm_mask_storeu_epi8(yr, m0, kernels::requantize16(acc[c][0], mul[c], p.io.y_zero_point, p.io.lo, p.io.hi));
    if (m1) _mm_mask_storeu_epi8(yr + 16, m1, kernels::requantize16(acc[c][1], mul[c], p.io.y_zero_point, p.io.lo, p.io.hi));
  }
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  Plan p;
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  DTORCH_RETURN_IF_ERROR(plan_of(*ctx.attrs, in, n_in, &p));
  if (!p.direct) return portable()->run(ctx, in, n_in, out, n_out);
  const kernels::ConvGeometry& g = p.g;
  DTORCH_RETURN_IF_ERROR(kernels::check_weight_scales(kOp, p.io, in[2], g.o));
  if (out[0].dtype != DType::kInt8 || out[0].shape.ndim != 4 || out[0].shape.dims[0] != g.n ||
      out[0].shape.dims[1] != g.o || out[0].shape.dims[2] != g.oh || out[0].shape.dims[3] != g.ow)
    return op_error(StatusCode::kInternal, kOp, "output %s is not the int8 (N, O, OH, OW) infer gave",
                    ::dtorch::shape_str(out[0].shape).c_str());
  if (out[0].shape.numel() == 0) return Status::Ok();
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
  uint8_t* cols = scratch + kernels::ceil_div(pb, 64) * 64;
  const int32_t* sums = reinterpret_cast<const int32_t*>(packed + g.groups * p.blocks * p.k4 * kMR);
  const float* ws = in[2].as<const float>();
  const int32_t* bias = kernels::optional_present(in, n_in, 3) ? in[3].as<const int32_t>() : nullptr;
  const int64_t P = g.oh * g.ow, ptiles = p.pp / kNP;
  const uint32_t corr = static_cast<uint32_t>(128 + p.io.x_zero_point);
  for (int64_t img = 0; img < g.n; ++img) {
    const int8_t* x0 = in[0].as<const int8_t>() + img * g.c * g.h * g.w;
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      im2col(ctx.pool, p, x0, gi, cols);
      int8_t* yg = out[0].as<int8_t>() + (img * g.o + gi * g.og) * P;
      kernels::parallel_chunks(ctx.pool, p.blocks * ptiles, 1, [&](int64_t u0, int64_t u1) {
        for (int64_t u = u0; u < u1; ++u) {
          const int64_t b = u / ptiles, t = u % ptiles;
          const int noc = static_cast<int>(g.og - b * kMR < kMR ? g.og - b * kMR : kMR);
          int32_t start[kMR];
          rq::Multiplier mul[kMR];
          for (int c = 0; c < noc; ++c) {
            const int64_t o = gi * g.og + b * kMR + c;
            const uint32_t s = (bias != nullptr ? static_cast<uint32_t>(bias[o]) : 0u) -
                               corr * static_cast<uint32_t>(sums[o]);
            std::memcpy(&start[c], &s, sizeof s);
            mul[c] = kernels::channel_multiplier(p.io, ws, o);
          }
          const int8_t* blk = reinterpret_cast<const int8_t*>(packed) + ((gi * p.blocks + b) * p.k4) * kMR;
          tile(p, blk, cols, t * kNP, noc, start, mul, yg + b * kMR * P, P);
        }
      });
    }
  }
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_VNNI_KERNEL(qconv2d, DType::kInt8, infer, run, prepare);
}  // namespace dtorch
