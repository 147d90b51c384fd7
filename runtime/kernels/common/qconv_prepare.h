// What the int8 convolution kernels of the SIMD sets (kernels/vnni, kernels/neon64dot, kernels/x86) share at load
// time: the weight geometry a prepare hook reads before the input's shape is known, and each output channel's weight
// sum, which turns a sum of x * w into the specification's sum of (x - x_zero_point) * w (minus x_zero_point * sum(w),
// in int32 wrapping as the portable kernel's sums wrap).
#pragma once

#include <stdint.h>
#include <string.h>

#include "core/kernel.h"
#include "kernels/common/conv_geometry.h"
#include "kernels/common/isa.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

// The weight's geometry (o, cg, kh, kw, groups, og) of a qconv2d node at load time: false when the weight is not a
// constant int8 (O, C / groups, kh, kw) tensor the kernel can pack (the run-time checks then report what is wrong).
inline bool qconv_weight_geometry(const Attrs& attrs, const TensorView* in, int n_in, ConvGeometry* g) {
  if (n_in < 2 || in[1].data == nullptr || in[1].dtype != DType::kInt8 || in[1].shape.ndim != 4) return false;
  const int64_t groups = attrs.get_int("groups");
  g->o = in[1].shape.dims[0];
  g->cg = in[1].shape.dims[1];
  g->kh = in[1].shape.dims[2];
  g->kw = in[1].shape.dims[3];
  if (groups < 1 || g->o < 1 || g->o % groups != 0 || g->cg < 1 || g->kh < 1 || g->kw < 1) return false;
  g->groups = groups;
  g->og = g->o / groups;
  return true;
}

// sums[o] = the sum of output channel o's K weights (w: (O, K) int8), wrapping.
inline void qconv_weight_sums(const int8_t* w, int64_t o_count, int64_t k_count, int32_t* sums) {
  for (int64_t o = 0; o < o_count; ++o) {
    uint32_t s = 0;
    for (int64_t k = 0; k < k_count; ++k) s += static_cast<uint32_t>(static_cast<int32_t>(w[o * k_count + k]));
    memcpy(&sums[o], &s, sizeof s);
  }
}

// An output channel's starting sum: bias - x_offset * sum(w) (x_offset: what the kernel's inputs carry beyond the
// real value's quantized form: x_zero_point, or x_zero_point + 128 for an unsigned copy), wrapping.
inline int32_t qconv_start(const int32_t* bias, int64_t o, int32_t x_offset, int32_t weight_sum) {
  const uint32_t s = (bias != nullptr ? static_cast<uint32_t>(bias[o]) : 0u) -
                     static_cast<uint32_t>(x_offset) * static_cast<uint32_t>(weight_sum);
  int32_t r;
  memcpy(&r, &s, sizeof r);
  return r;
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
