// conv2d, RISC-V Vector 1.0 kernel set (kernels/rvv/rvv.h: within 1e-5 x output scale of portable; identical bits
// for any thread count), through kernels/common/fma_conv.h.
//
// Dense and grouped convolutions: per image and group, the GEMM of kernels/rvv/gemm_rvv.h (4 x 16 register tiles),
// weights packed once when the session loads, times the im2col columns, which the GEMM's fill step writes block by
// block (16 output positions x up to 256 kernel rows) into a buffer on the stack: per tap, the parts of the panel's
// runs inside the image (conv_tap_segments) are one unit-stride or strided vector load each, the rest +0. A 1x1
// stride-1 unpadded convolution reads its input plane in place. Bias and the fused activation are applied in the
// GEMM. Depthwise convolutions (one input and one output channel per group): direct, a vector of output columns of
// one row at a time; each tap is one load (strided for column strides above 1), masked where the vector meets the
// padding (masked-off lanes are not read and add +0). Threads split GEMM work units or output planes only.
#include <riscv_vector.h>

#include "kernels/common/activation.h"
#include "kernels/common/conv_geometry.h"
#include "kernels/common/fma_conv.h"
#include "kernels/common/fma_gemm.h"
#include "kernels/common/util.h"
#include "kernels/rvv/gemm_rvv.h"
#include "kernels/rvv/rvv.h"

namespace dtorch {
namespace {

namespace kr = kernels::rvv;
using Geo = kernels::FmaConvGeometry;
using kr::vf;

// `len` floats of channel plane xc from offset `off`, `sw` apart, to d.
inline void copy_run(const float* src, int64_t sw, int len, float* d) {
  const size_t vl = __riscv_vsetvl_e32m4(static_cast<size_t>(len));
  const vf v = sw == 1 ? __riscv_vle32_v_f32m4(src, vl)
                       : __riscv_vlse32_v_f32m4(src, static_cast<ptrdiff_t>(sw * sizeof(float)), vl);
  __riscv_vse32_v_f32m4(d, v, vl);
}

// Columns of one image and group: B[r][q] for kernel row r = (c, i, j) and output position q = (oh, ow) is
// x[c][oh * sh - pt + i * dh][ow * sw - pl + j * dw], 0 outside the image.
struct Im2col {
  const Geo* g;
  const float* x;  // the group's first input channel

  void operator()(int64_t j0, int nr, int64_t k0, int64_t kc, float* dst) const {
    constexpr int kNR = kr::kNR;
    const Geo& G = *g;
    kernels::ConvRun runs[kNR];
    const int n_runs = kernels::conv_panel_runs(G, j0, nr, runs, kNR);  // at most nr runs
    const int64_t taps = G.kh * G.kw, plane = G.h * G.w;
    const int64_t c_begin = k0 / taps, c_end = (k0 + kc - 1) / taps + 1;  // channels with rows in [k0, k0 + kc)
    const size_t vl_row = __riscv_vsetvl_e32m4(kNR);
    const vf zero = __riscv_vfmv_v_f_f32m4(0.0f, vl_row);
    for (int64_t t = 0; t < taps; ++t) {
      kernels::ConvSeg segs[kNR];
      int covered = 0;
      const int n_segs = kernels::conv_tap_segments(G, runs, n_runs, t / G.kw, t % G.kw, segs, &covered);
      for (int64_t c = c_begin; c < c_end; ++c) {
        const int64_t r = c * taps + t - k0;
        if (r < 0 || r >= kc) continue;
        const float* xc = x + c * plane;
        float* d = dst + r * kNR;
        if (covered != kNR) __riscv_vse32_v_f32m4(d, zero, vl_row);
        for (int k = 0; k < n_segs; ++k) copy_run(xc + segs[k].off, G.sw, segs[k].len, d + segs[k].q);
      }
    }
  }
};

// 1x1, stride 1, no padding: B[r][q] = x[r][q]. The GEMM reads whole panels in place; this fills the last one.
struct Rows {
  const float* x;
  int64_t ld;  // H * W
  void operator()(int64_t j0, int nr, int64_t k0, int64_t kc, float* dst) const {
    const size_t vl_row = __riscv_vsetvl_e32m4(kr::kNR);
    const vf zero = __riscv_vfmv_v_f_f32m4(0.0f, vl_row);
    for (int64_t r = 0; r < kc; ++r) {
      float* d = dst + r * kr::kNR;
      __riscv_vse32_v_f32m4(d, zero, vl_row);
      copy_run(x + (k0 + r) * ld + j0, 1, nr, d);
    }
  }
};

// One output plane of a depthwise convolution: per output row, vectors of output columns; each output starts at
// the bias and adds its taps in (row, column) order with one FMA each (input rows outside the image skipped,
// columns outside it +0).
void depthwise_plane(const Geo& g, const float* xp, const float* wc, float b, float* yp) {
  const kr::Clamp cl(g.act);
  const ptrdiff_t stride = static_cast<ptrdiff_t>(g.sw * sizeof(float));
  for (int64_t oh = 0; oh < g.oh; ++oh) {
    float* yr = yp + oh * g.ow;
    for (int64_t ow0 = 0; ow0 < g.ow;) {
      const size_t vl = __riscv_vsetvl_e32m4(static_cast<size_t>(g.ow - ow0));
      const vuint32m4_t lane = __riscv_vid_v_u32m4(vl);
      vf acc = __riscv_vfmv_v_f_f32m4(b, vl);
      for (int64_t i = 0; i < g.kh; ++i) {
        const int64_t ih = oh * g.sh - g.pt + i * g.dh;
        if (ih < 0 || ih >= g.h) continue;
        const float* row = xp + ih * g.w;
        for (int64_t j = 0; j < g.kw; ++j) {
          const int64_t off = ow0 * g.sw - g.pl + j * g.dw;  // input column of lane 0
          int64_t lo = 0, hi = 0;  // lanes [lo, hi) read inside the row
          kernels::conv_valid_range(off, g.sw, g.w, static_cast<int64_t>(vl), &lo, &hi);
          if (lo >= hi) continue;
          const float w = wc[i * g.kw + j];
          const float* s = row + off;  // lane l reads s[l * sw] (lanes outside [lo, hi) are masked off: not read)
          vf v;
          if (lo == 0 && hi == static_cast<int64_t>(vl)) {
            v = g.sw == 1 ? __riscv_vle32_v_f32m4(s, vl) : __riscv_vlse32_v_f32m4(s, stride, vl);
          } else {
            const vbool8_t m = __riscv_vmand_mm_b8(__riscv_vmsgeu_vx_u32m4_b8(lane, static_cast<uint32_t>(lo), vl),
                                                   __riscv_vmsltu_vx_u32m4_b8(lane, static_cast<uint32_t>(hi), vl), vl);
            const vf zero = __riscv_vfmv_v_f_f32m4(0.0f, vl);
            v = __riscv_vlse32_v_f32m4_mu(m, zero, s, stride, vl);
          }
          acc = __riscv_vfmacc_vf_f32m4(acc, w, v, vl);
        }
      }
      __riscv_vse32_v_f32m4(yr + ow0, cl(acc, vl), vl);
      if (cl.other) kernels::bias_activation(g.act, 0.0f, yr + ow0, static_cast<int64_t>(vl));
      ow0 += static_cast<int64_t>(vl);
    }
  }
}

// The rvv pieces of kernels/common/fma_conv.h's conv2d.
struct Rvv {
  static constexpr int64_t kPanel = kr::kMR;
  static size_t work_floats(const Geo&) { return 0; }
  static bool takes_depthwise(const Geo&) { return true; }
  static void depthwise(ThreadPool* pool, const Geo& g, const float* x, const float* w, const float* bias, float* y) {
    const int64_t planes = g.n * g.c, in_plane = g.h * g.w, out_plane = g.oh * g.ow;
    kernels::parallel_chunks(pool, planes, 1, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const int64_t c = p % g.c;
        depthwise_plane(g, x + p * in_plane, w + c * g.kh * g.kw, bias == nullptr ? 0.0f : bias[c],
                        y + p * out_plane);
      }
    });
  }
  static void gemm_group(ThreadPool* pool, const Geo& g, const float* wg, const float* xg, kernels::Epilogue ep,
                         float* yg, float*) {
    const int64_t kg = g.cg * g.kh * g.kw, ohw = g.oh * g.ow;
    ep.bias_per_row = true;
    if (g.pointwise)
      kr::Gemm::run(pool, g.og, ohw, kg, wg, kernels::DirectB{xg, ohw}, Rows{xg, ohw}, yg, ohw, ep);
    else
      kr::Gemm::run(pool, g.og, ohw, kg, wg, kernels::DirectB{}, Im2col{&g, xg}, yg, ohw, ep);
  }
};
using Conv = kernels::FmaConv2d<Rvv>;

}  // namespace
DTORCH_REGISTER_RVV_KERNEL(conv2d, DType::kFloat32, Conv::infer, Conv::run, Conv::prepare);
}  // namespace dtorch
