// conv2d, AArch64 Advanced SIMD kernel set (kernels/neon64/neon64.h: FMA, within 1e-5 x output scale of portable;
// identical bits for any thread count).
//
// Dense and grouped convolutions: per image and group, the FMA GEMM of kernels/neon64/gemm_neon64.h, weights
// (Og x Cg*kh*kw, packed once when the session loads: `prepare`; into scratch at run time when the weight is not a
// constant) times the im2col columns, which the GEMM's fill step writes block by block (12 output positions x up to
// 256 kernel rows) into a buffer that stays in L1: the columns are never written to memory. The fill goes tap by
// tap (kernel row and column), working out once for every channel which of the panel's 12 positions read inside the
// image and where: runs of evenly spaced floats of one input row, copied with vector loads (stride 1) or
// de-interleaving loads (stride 2), the rest +0. A 1x1 stride-1 unpadded convolution reads its input plane in place
// (no im2col, no copy). Bias and the fused activation are applied in the GEMM (bias first, then the taps).
// Depthwise convolutions (one input and one output channel per group): the direct kernels of depthwise_neon64.h
// (kernels taller than its ring of padded rows run the bit-exact kernel).
// Threads split GEMM work units or output planes only.
#include <arm_neon.h>

#include "kernels/common/activation.h"
#include "kernels/common/conv_geometry.h"
#include "kernels/common/util.h"
#include "kernels/neon64/depthwise_neon64.h"
#include "kernels/neon64/gemm_neon64.h"
#include "kernels/neon64/neon64.h"

namespace dtorch {
namespace {

using kernels::op_error;
namespace kn = kernels::neon64;
constexpr const char* kOp = "conv2d";

const KernelDef* fallback() {
  static const KernelDef* k = find_kernel(kOp, DType::kFloat32, KernelPolicy::kExact);
  return k;
}

using Geo = kernels::FmaConvGeometry;  // read after the fallback's infer accepted the node

size_t gemm_scratch(const Geo& g) {  // the packed weights of every group
  return static_cast<size_t>(kn::packed_a_floats(g.og, g.cg * g.kh * g.kw) * g.groups) * sizeof(float);
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  const KernelDef* f = fallback();
  if (f == nullptr) return op_error(StatusCode::kInternal, kOp, "no bit-exact kernel is registered");
  DTORCH_RETURN_IF_ERROR(f->infer(attrs, in, n_in, out, n_out, scratch_bytes));
  Geo g{};
  DTORCH_RETURN_IF_ERROR(kernels::fma_conv_geometry(kOp, attrs, in, out[0], &g));
  if (g.gemm) *scratch_bytes = gemm_scratch(g);
  if (g.depthwise && kn::depthwise_fits(g)) *scratch_bytes = 0;
  return Status::Ok();
}

// --- dense / grouped: the im2col fill of the GEMM ---------------------------------------------------------

// Columns of one image and group: B[r][q] for kernel row r = (c, i, j) and output position q = (oh, ow) is
// x[c][oh * sh - pt + i * dh][ow * sw - pl + j * dw], 0 outside the image.
struct Im2col {
  const Geo* g;
  const float* x;  // the group's first input channel

  static constexpr int kNR = kn::kNR;
  struct Seg {       // panel lanes [q, q + len) read x_c[off + u * sw] for u < len
    int q, len;
    int64_t off;
  };

  // Copies one segment of channel plane xc (plane floats) to d (the block row).
  static void copy(const float* xc, int64_t plane, int64_t sw, const Seg& s, float* d) {
    const float* src = xc + s.off;
    float* dst = d + s.q;
    int u = 0;
    if (sw == 1) {
      for (; u + 4 <= s.len; u += 4) vst1q_f32(dst + u, vld1q_f32(src + u));
    } else if (sw == 2) {  // LD2 reads 8 floats; keep inside the plane
      for (; u + 4 <= s.len && s.off + 2 * u + 8 <= plane; u += 4) vst1q_f32(dst + u, vld2q_f32(src + 2 * u).val[0]);
    }
    for (; u < s.len; ++u) dst[u] = src[u * sw];
  }

  void operator()(int64_t j0, int nr, int64_t k0, int64_t kc, float* dst) const {
    const Geo& G = *g;
    kernels::ConvRun runs[kNR];
    const int n_runs = kernels::conv_panel_runs(G, j0, nr, runs, kNR);  // at most nr runs
    const int64_t taps = G.kh * G.kw, plane = G.h * G.w;
    const int64_t c_begin = k0 / taps, c_end = (k0 + kc - 1) / taps + 1;  // channels with rows in [k0, k0 + kc)
    const float32x4_t zero = vdupq_n_f32(0.0f);
    for (int64_t t = 0; t < taps; ++t) {
      const int64_t i = t / G.kw, j = t % G.kw;
      Seg segs[kNR];
      int n_segs = 0, covered = 0;
      for (int k = 0; k < n_runs; ++k) {
        const kernels::ConvRun& ru = runs[k];
        const int64_t ih = ru.oh * G.sh - G.pt + i * G.dh;
        if (ih < 0 || ih >= G.h) continue;
        const int64_t off0 = ru.ow * G.sw - G.pl + j * G.dw;  // input column of lane ru.a
        int64_t lo = 0, hi = 0;
        kernels::conv_valid_range(off0, G.sw, G.w, ru.b - ru.a, &lo, &hi);
        if (lo >= hi) continue;
        segs[n_segs++] = Seg{ru.a + static_cast<int>(lo), static_cast<int>(hi - lo), ih * G.w + off0 + lo * G.sw};
        covered += static_cast<int>(hi - lo);
      }
      const bool whole = covered == kNR;  // every lane is written: no zeros
      const bool plain = whole && n_segs == 1 && (G.sw == 1 || (G.sw == 2 && segs[0].off + 2 * kNR <= plane));
      for (int64_t c = c_begin; c < c_end; ++c) {
        const int64_t r = c * taps + t - k0;
        if (r < 0 || r >= kc) continue;
        const float* xc = x + c * plane;
        float* d = dst + r * kNR;
        if (plain) {  // one run of the whole panel
          const float* s = xc + segs[0].off;
          for (int v = 0; v < kn::kNV; ++v)
            vst1q_f32(d + 4 * v, G.sw == 1 ? vld1q_f32(s + 4 * v) : vld2q_f32(s + 8 * v).val[0]);
          continue;
        }
        if (!whole)
          for (int v = 0; v < kn::kNV; ++v) vst1q_f32(d + 4 * v, zero);
        for (int k = 0; k < n_segs; ++k) copy(xc, plane, G.sw, segs[k], d);
      }
    }
  }
};

// 1x1, stride 1, no padding: B[r][q] = x[r][q] (the input plane is the column matrix). The GEMM reads whole
// panels in place; this fills the last, partial one.
struct Rows {
  const float* x;
  int64_t ld;  // H * W
  void operator()(int64_t j0, int nr, int64_t k0, int64_t kc, float* dst) const {
    for (int64_t r = 0; r < kc; ++r) {
      const float* s = x + (k0 + r) * ld + j0;
      float* d = dst + r * kn::kNR;
      for (int q = 0; q < kn::kNR; ++q) d[q] = q < nr ? s[q] : 0.0f;
    }
  }
};

// The weights of every group packed for the GEMM (pack_a panels, group after group): ap must hold gemm_scratch(g).
void pack_weights(ThreadPool* pool, int64_t groups, int64_t og, int64_t kg, const float* w, float* ap) {
  const int64_t tiles = kernels::ceil_div(og, kn::kMR), per_group = kn::packed_a_floats(og, kg);
  kernels::parallel_chunks(pool, groups * tiles, 1, [&](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      const int64_t grp = u / tiles, t = u % tiles;
      kn::pack_a(w + grp * og * kg, kg, 1, og, kg, t, t + 1, ap + grp * per_group);
    }
  });
}

// Load time: a constant weight of a dense or grouped convolution is packed once (depthwise weights are used as
// they are). Nothing is kept when the weight is not a constant or the shapes are not ones infer would accept.
Status prepare(const Attrs& attrs, const TensorView* in, int n_in, void* dst, size_t* bytes) {
  *bytes = 0;
  if (n_in < 2 || in[1].data == nullptr || in[1].dtype != DType::kFloat32 || in[1].shape.ndim != 4) return Status::Ok();
  const int64_t groups = attrs.get_int("groups");
  const int64_t o = in[1].shape.dims[0], cg = in[1].shape.dims[1], kh = in[1].shape.dims[2], kw = in[1].shape.dims[3];
  if (groups < 1 || o < 1 || o % groups != 0 || cg < 1 || kh < 1 || kw < 1) return Status::Ok();
  const int64_t og = o / groups;
  if (cg == 1 && og == 1) return Status::Ok();  // depthwise
  int64_t kg = 0, floats = 0;
  if (!kernels::checked_mul(cg, kh * kw, &kg) ||
      !kernels::checked_mul(kn::packed_a_floats(og, kg), groups, &floats) || floats > (int64_t{1} << 40))
    return Status::Ok();
  *bytes = static_cast<size_t>(floats) * sizeof(float);
  if (dst != nullptr) pack_weights(nullptr, groups, og, kg, in[1].as<const float>(), static_cast<float*>(dst));
  return Status::Ok();
}

void run_gemm(const KernelContext& ctx, const Geo& g, const float* x, const float* w, const float* bias, float* y) {
  const int64_t kg = g.cg * g.kh * g.kw, ohw = g.oh * g.ow;
  const int64_t per_group = kn::packed_a_floats(g.og, kg);
  const float* ap = static_cast<const float*>(ctx.prepared);
  if (ap == nullptr || ctx.prepared_bytes != gemm_scratch(g)) {  // not prepared at load: pack into scratch now
    pack_weights(ctx.pool, g.groups, g.og, kg, w, static_cast<float*>(ctx.scratch));
    ap = static_cast<const float*>(ctx.scratch);
  }
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const float* xg = x + (n * g.c + grp * g.cg) * g.h * g.w;
      float* yg = y + (n * g.o + grp * g.og) * ohw;
      kernels::Epilogue ep;
      ep.bias = bias == nullptr ? nullptr : bias + grp * g.og;
      ep.bias_per_row = true;
      ep.act = g.act;
      if (g.pointwise)
        kn::gemm(ctx.pool, g.og, ohw, kg, ap + grp * per_group, kn::DirectB{xg, ohw}, Rows{xg, ohw}, yg, ohw, ep);
      else
        kn::gemm(ctx.pool, g.og, ohw, kg, ap + grp * per_group, kn::DirectB{}, Im2col{&g, xg}, yg, ohw, ep);
    }
  }
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  const KernelDef* f = fallback();
  if (f == nullptr) return op_error(StatusCode::kInternal, kOp, "no bit-exact kernel is registered");
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 2, 3));
  if (in[0].shape.ndim != 4 || in[1].shape.ndim != 4 || out[0].shape.ndim != 4)
    return f->run(ctx, in, n_in, out, n_out);  // the fallback reports the error
  Geo g{};
  DTORCH_RETURN_IF_ERROR(kernels::fma_conv_geometry(kOp, *ctx.attrs, in, out[0].shape, &g));
  if (!kernels::conv_shapes_agree(g, in, out[0]) || (!g.gemm && !g.depthwise) || (g.depthwise && !kn::depthwise_fits(g)))
    return f->run(ctx, in, n_in, out, n_out);  // other cases, or shapes infer did not accept: the fallback decides
  const float* x = in[0].as<const float>();
  const float* w = in[1].as<const float>();
  const float* bias = kernels::optional_present(in, n_in, 2) ? in[2].as<const float>() : nullptr;
  float* y = out[0].as<float>();
  if (out[0].shape.numel() == 0) return Status::Ok();
  if (g.depthwise) {
    kn::depthwise(ctx.pool, g, x, w, bias, y);
    return Status::Ok();
  }
  const size_t need = gemm_scratch(g);
  if (ctx.scratch_bytes < need)
    return op_error(StatusCode::kInternal, kOp, "scratch of %zu bytes is smaller than the %zu bytes infer asked for",
                    ctx.scratch_bytes, need);
  run_gemm(ctx, g, x, w, bias, y);
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_NEON64_KERNEL(conv2d, DType::kFloat32, infer, run, prepare);
}  // namespace dtorch
