// Source positions of the 2-D resampling kernels (upsample_nearest2d, upsample_bilinear2d), following
// dtorch/nn/ops/upsample.py and PyTorch's CPU kernels, including where they compute in float32.
// Attributes: either `size` is[2] (output size; positions use in/out), or `scales` fs[2] (the user's
// scale factors; output size floor(in * scale) and positions use 1/scale).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

struct ResampleAxis {
  int64_t in = 0, out = 0;
  double scale = 0.0;  // the user's scale factor, or 0 when the output size was given
};

// Reads size/scales for x (N, C, H, W) and fills the two axes.
inline Status resample_geometry(const char* op, const Attrs& attrs, const TensorView* in, int n_in, int n_out,
                                ResampleAxis* ah, ResampleAxis* aw) {
  DTORCH_RETURN_IF_ERROR(check_num_inputs(op, n_in, 1, 1));
  DTORCH_RETURN_IF_ERROR(check_num_outputs(op, n_out, 1));
  DTORCH_RETURN_IF_ERROR(check_dtype(op, "input", in[0], DType::kFloat32));
  DTORCH_RETURN_IF_ERROR(check_rank(op, "input (N, C, H, W)", in[0], 4));
  const int64_t h = in[0].shape.dims[2], w = in[0].shape.dims[3];
  int64_t size[2] = {0, 0};
  double scales[2];
  const int ns = attrs.get_ints("size", size, 2);
  const int nf = attrs.get_floats("scales", scales, 2);
  ah->in = h;
  aw->in = w;
  if (ns >= 0 && nf >= 0)
    return op_error(StatusCode::kInvalidModel, op, "only one of 'size' and 'scales' may be given");
  if (ns >= 0) {
    if (ns != 2) return op_error(StatusCode::kInvalidModel, op, "attribute 'size' must have 2 values, got %d", ns);
    DTORCH_RETURN_IF_ERROR(check_attr_max(op, "size", size, 2, kMaxAttrValue));
    ah->out = size[0];
    aw->out = size[1];
    ah->scale = aw->scale = 0.0;
  } else if (nf >= 0) {
    if (nf != 2) return op_error(StatusCode::kInvalidModel, op, "attribute 'scales' must have 2 values, got %d", nf);
    if (!(scales[0] > 0.0) || !(scales[1] > 0.0))
      return op_error(StatusCode::kInvalidModel, op, "scales must be > 0, got [%g, %g]", scales[0], scales[1]);
    ah->scale = scales[0];
    aw->scale = scales[1];
    const double oh = std::floor(static_cast<double>(h) * scales[0]);
    const double ow = std::floor(static_cast<double>(w) * scales[1]);
    const double cap = static_cast<double>(kMaxAttrValue);
    if (!(oh <= cap) || !(ow <= cap))
      return op_error(StatusCode::kInvalidModel, op, "scales [%g, %g] give an output size over %lld for input %s",
                      scales[0], scales[1], static_cast<long long>(kMaxAttrValue), shape_str(in[0].shape).c_str());
    ah->out = static_cast<int64_t>(oh);
    aw->out = static_cast<int64_t>(ow);
  } else {
    return op_error(StatusCode::kInvalidModel, op, "needs attribute 'size' (ints) or 'scales' (floats)");
  }
  if (h < 1 || w < 1 || ah->out < 1 || aw->out < 1)
    return op_error(StatusCode::kInvalidArgument, op,
                    "input and output sizes must be > 0, got input %s and output size [%lld, %lld]",
                    shape_str(in[0].shape).c_str(), (long long)ah->out, (long long)aw->out);
  return Status::Ok();
}

// compute_scales_value in float32: 1/scale for a given scale factor, else in/out.
inline float resample_scale(const ResampleAxis& a) {
  if (a.scale > 0.0) return static_cast<float>(1.0 / a.scale);
  return static_cast<float>(a.in) / static_cast<float>(a.out);
}

// Nearest: source index of output index i.
inline int64_t nearest_source(const ResampleAxis& a, int64_t i) {
  if (a.out == a.in) return i;
  if (a.out == 2 * a.in) return i >> 1;
  const float s = resample_scale(a);
  const int64_t src = static_cast<int64_t>(std::floor(static_cast<float>(i) * s));
  return src < a.in - 1 ? src : a.in - 1;
}

// Bilinear: out[i] = w0 * x[i0] + w1 * x[i1].
inline void linear_source(const ResampleAxis& a, bool align_corners, int64_t i, int64_t* i0, int64_t* i1, float* w0,
                          float* w1) {
  if (a.out == a.in) {
    *i0 = *i1 = i;
    *w0 = 1.0f;
    *w1 = 0.0f;
    return;
  }
  float real;
  if (align_corners) {
    const float s = a.out > 1 ? static_cast<float>(a.in - 1) / static_cast<float>(a.out - 1) : 0.0f;
    real = s * static_cast<float>(i);
  } else {
    const float s = resample_scale(a);
    real = s * (static_cast<float>(i) + 0.5f) - 0.5f;
    if (real < 0.0f) real = 0.0f;
  }
  int64_t lo = static_cast<int64_t>(std::floor(real));
  if (lo > a.in - 1) lo = a.in - 1;
  float lam = real - static_cast<float>(lo);
  lam = lam < 0.0f ? 0.0f : (lam > 1.0f ? 1.0f : lam);
  *i0 = lo;
  *i1 = lo + (lo < a.in - 1 ? 1 : 0);
  *w0 = 1.0f - lam;
  *w1 = lam;
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
