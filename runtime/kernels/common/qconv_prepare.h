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
#include "kernels/common/util.h"

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

// A qconv2d prepare hook (core/kernel.h) for a set that packs the weights of every node but the depthwise ones
// (cg = og = 1): Bytes(g) bytes, written by Pack(g, weights, dst) when dst is given.
template <int64_t (*Bytes)(const ConvGeometry&), void (*Pack)(const ConvGeometry&, const int8_t*, void*)>
Status qconv_prepare_packed(const Attrs& attrs, const TensorView* in, int n_in, void* dst, size_t* bytes) {
  *bytes = 0;
  ConvGeometry g{};
  if (!qconv_weight_geometry(attrs, in, n_in, &g)) return Status::Ok();
  if (g.cg == 1 && g.og == 1) return Status::Ok();  // depthwise: no packed weights
  *bytes = static_cast<size_t>(Bytes(g));
  if (dst != nullptr) Pack(g, in[1].as<const int8_t>(), dst);
  return Status::Ok();
}

// What a SIMD set's qconv2d run checks before its own arithmetic, after the portable kernel's infer (`portable`:
// its checks, errors and output shape) and the set's plan gave the geometry g: the output is the int8 (N, O, OH, OW)
// tensor infer gave, and the scratch holds the `need` bytes the set's infer asked for.
inline Status qconv_portable_shape(const char* op, const KernelDef* portable, const KernelContext& ctx,
                                   const TensorView* in, int n_in, int n_out, Shape* shape) {
  DTORCH_RETURN_IF_ERROR(check_num_outputs(op, n_out, 1));
  if (portable == nullptr) return op_error(StatusCode::kInternal, op, "the portable kernel is not registered");
  size_t portable_scratch = 0;
  return portable->infer(*ctx.attrs, in, n_in, shape, n_out, &portable_scratch);
}

inline Status check_qconv_output(const char* op, const KernelContext& ctx, const TensorView& out,
                                 const ConvGeometry& g, size_t need) {
  if (out.dtype != DType::kInt8 || out.shape.ndim != 4 || out.shape.dims[0] != g.n || out.shape.dims[1] != g.o ||
      out.shape.dims[2] != g.oh || out.shape.dims[3] != g.ow)
    return op_error(StatusCode::kInternal, op, "output %s is not the int8 (N, O, OH, OW) infer gave",
                    ::dtorch::shape_str(out.shape).c_str());
  if (out.shape.numel() != 0 && ctx.scratch_bytes < need)
    return op_error(StatusCode::kInternal, op, "scratch of %zu bytes is smaller than the %zu bytes infer asked for",
                    ctx.scratch_bytes, need);
  return Status::Ok();
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
