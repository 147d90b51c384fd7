// The conv2d pieces of the Arm NEON kernel sets (kernels/neon64, kernels/neon32) for kernels/common/fma_conv.h:
// the set's GEMM (Gemm: kMR, kNR and run(...)) with the shared im2col fills (neon_im2col.h) and depthwise kernels
// (neon_depthwise.h). Header-only, included by their conv2d.cc only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/conv_geometry.h"
#include "kernels/common/fma_conv.h"
#include "kernels/common/fma_gemm.h"
#include "kernels/common/neon_depthwise.h"
#include "kernels/common/neon_im2col.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {
namespace neon {

template <class Gemm>
struct ConvSet {
  static constexpr int64_t kPanel = Gemm::kMR;
  static size_t work_floats(const FmaConvGeometry&) { return 0; }
  static bool takes_depthwise(const FmaConvGeometry& g) { return depthwise_fits(g); }
  static void depthwise(ThreadPool* pool, const FmaConvGeometry& g, const float* x, const float* w, const float* bias,
                        float* y) {
    neon::depthwise(pool, g, x, w, bias, y);
  }
  static void gemm_group(ThreadPool* pool, const FmaConvGeometry& g, const float* wg, const float* xg, Epilogue ep,
                         float* yg, float*) {
    const int64_t kg = g.cg * g.kh * g.kw, ohw = g.oh * g.ow;
    ep.bias_per_row = true;
    if (g.pointwise)  // the input plane is B: read in place, the last partial panel copied
      Gemm::run(pool, g.og, ohw, kg, wg, DirectB{xg, ohw}, Rows<Gemm::kNR>{xg, ohw}, yg, ohw, ep);
    else
      Gemm::run(pool, g.og, ohw, kg, wg, DirectB{}, Im2col<Gemm::kNR>{&g, xg}, yg, ohw, ep);
  }
};

}  // namespace neon
}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
