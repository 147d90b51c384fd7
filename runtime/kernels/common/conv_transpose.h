// What conv_transpose2d's kernels share (kernels/portable/conv_transpose2d.cc, the specification, and the FMA sets'
// kernels/common/fma_conv_transpose.h): the node's geometry and checks, the column scratch, and col2im, which adds
// the columns (Og*kh*kw, H*W) of one image's group onto its output planes in a fixed order (taps, then input rows
// and columns) and applies the bias and activation. Header-only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/activation.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

struct ConvTransposeGeo {
  int64_t n, c, h, w, o, kh, kw, sh, sw, ph, pw, oph, opw, dh, dw, groups, oh, ow, cg, og;
  Activation act;
};

// The rest of the geometry from the input's n, c, h, w and groups (already in g), the weight's shape and the
// attributes: what conv_transpose_geometry and conv_transpose_accepted share (no checks, no messages).
inline void conv_transpose_derive(const Shape& w, const int64_t* stride, const int64_t* pad, const int64_t* opad,
                                  const int64_t* dil, ConvTransposeGeo* g) {
  g->cg = g->c / g->groups;
  g->og = w.dims[1];
  g->o = g->og * g->groups;
  g->kh = w.dims[2];
  g->kw = w.dims[3];
  g->sh = stride[0];
  g->sw = stride[1];
  g->ph = pad[0];
  g->pw = pad[1];
  g->oph = opad[0];
  g->opw = opad[1];
  g->dh = dil[0];
  g->dw = dil[1];
  g->oh = (g->h - 1) * g->sh - 2 * g->ph + g->dh * (g->kh - 1) + g->oph + 1;
  g->ow = (g->w - 1) * g->sw - 2 * g->pw + g->dw * (g->kw - 1) + g->opw + 1;
}

inline Status conv_transpose_geometry(const Attrs& attrs, const TensorView* in, int n_in, ConvTransposeGeo* g) {
  constexpr const char* kOp = "conv_transpose2d";
  DTORCH_RETURN_IF_ERROR(check_num_inputs(kOp, n_in, 2, 3));
  const TensorView& x = in[0];
  const TensorView& w = in[1];
  DTORCH_RETURN_IF_ERROR(check_dtype(kOp, "input", x, DType::kFloat32));
  DTORCH_RETURN_IF_ERROR(check_dtype(kOp, "weight", w, DType::kFloat32));
  DTORCH_RETURN_IF_ERROR(check_rank(kOp, "input (N, C, H, W)", x, 4));
  DTORCH_RETURN_IF_ERROR(check_rank(kOp, "weight (C, O/groups, kh, kw)", w, 4));
  int64_t stride[2] = {}, pad[2] = {}, opad[2] = {}, dil[2] = {};
  DTORCH_RETURN_IF_ERROR(get_ints_exact(kOp, attrs, "stride", 2, stride, nullptr));
  DTORCH_RETURN_IF_ERROR(get_ints_exact(kOp, attrs, "padding", 2, pad, nullptr));
  DTORCH_RETURN_IF_ERROR(get_ints_exact(kOp, attrs, "output_padding", 2, opad, nullptr));
  DTORCH_RETURN_IF_ERROR(get_ints_exact(kOp, attrs, "dilation", 2, dil, nullptr));
  g->groups = attrs.get_int("groups");
  DTORCH_RETURN_IF_ERROR(parse_activation(kOp, attrs, &g->act));
  DTORCH_RETURN_IF_ERROR(check_attr_max(kOp, "stride", stride, 2, kMaxAttrValue));
  DTORCH_RETURN_IF_ERROR(check_attr_max(kOp, "dilation", dil, 2, kMaxAttrValue));
  DTORCH_RETURN_IF_ERROR(check_attr_max(kOp, "padding", pad, 2, kMaxAttrValue));
  DTORCH_RETURN_IF_ERROR(check_attr_max(kOp, "output_padding", opad, 2, kMaxAttrValue));
  if (g->groups > kMaxAttrValue)
    return op_error(StatusCode::kInvalidModel, kOp, "groups %lld is out of range", (long long)g->groups);
  if (stride[0] < 1 || stride[1] < 1)
    return op_error(StatusCode::kInvalidModel, kOp, "stride must be >= 1, got %s", ints_str(stride, 2).c_str());
  if (dil[0] < 1 || dil[1] < 1)
    return op_error(StatusCode::kInvalidModel, kOp, "dilation must be >= 1, got %s", ints_str(dil, 2).c_str());
  if (pad[0] < 0 || pad[1] < 0)
    return op_error(StatusCode::kInvalidModel, kOp, "padding must be >= 0, got %s", ints_str(pad, 2).c_str());
  for (int i = 0; i < 2; ++i)
    if (opad[i] < 0 || (opad[i] >= stride[i] && opad[i] >= dil[i]))
      return op_error(StatusCode::kInvalidModel, kOp,
                      "output_padding %s must be >= 0 and smaller than either stride %s or dilation %s",
                      ints_str(opad, 2).c_str(), ints_str(stride, 2).c_str(),
                      ints_str(dil, 2).c_str());
  if (g->groups < 1)
    return op_error(StatusCode::kInvalidModel, kOp, "groups must be >= 1, got %lld", (long long)g->groups);
  g->n = x.shape.dims[0];
  g->c = x.shape.dims[1];
  g->h = x.shape.dims[2];
  g->w = x.shape.dims[3];
  if (w.shape.dims[0] != g->c)
    return op_error(StatusCode::kInvalidArgument, kOp, "input has %lld channels but the weight %s expects %lld",
                    (long long)g->c, ::dtorch::shape_str(w.shape).c_str(), (long long)w.shape.dims[0]);
  if (g->c % g->groups != 0)
    return op_error(StatusCode::kInvalidArgument, kOp, "input has %lld channels, which groups=%lld does not divide",
                    (long long)g->c, (long long)g->groups);
  conv_transpose_derive(w.shape, stride, pad, opad, dil, g);
  if (g->oh < 1 || g->ow < 1)
    return op_error(StatusCode::kInvalidArgument, kOp, "input %s gives an empty output (%lldx%lld)",
                    ::dtorch::shape_str(x.shape).c_str(), (long long)g->oh, (long long)g->ow);
  if (optional_present(in, n_in, 2)) DTORCH_RETURN_IF_ERROR(check_vector(kOp, "bias", in[2], g->o));
  return Status::Ok();
}

// The geometry of a node conv_transpose_geometry has accepted, without building any message (the ISA sets' kernels
// call this after the portable infer: an ISA object must not carry the inline string code of the error paths, which
// the linker could pick for baseline code; tests/runtime/test_isa_isolation.py). False if the attributes are missing.
inline bool conv_transpose_accepted(const Attrs& attrs, const TensorView* in, int n_in, ConvTransposeGeo* g) {
  constexpr const char* kOp = "conv_transpose2d";
  int64_t stride[2] = {}, pad[2] = {}, opad[2] = {}, dil[2] = {};
  if (n_in < 2 || in[0].shape.ndim != 4 || in[1].shape.ndim != 4 ||
      !get_ints_exact(kOp, attrs, "stride", 2, stride, nullptr).ok() ||
      !get_ints_exact(kOp, attrs, "padding", 2, pad, nullptr).ok() ||
      !get_ints_exact(kOp, attrs, "output_padding", 2, opad, nullptr).ok() ||
      !get_ints_exact(kOp, attrs, "dilation", 2, dil, nullptr).ok() || !parse_activation(kOp, attrs, &g->act).ok())
    return false;
  g->groups = attrs.get_int("groups");
  if (g->groups < 1) return false;
  g->n = in[0].shape.dims[0];
  g->c = in[0].shape.dims[1];
  g->h = in[0].shape.dims[2];
  g->w = in[0].shape.dims[3];
  conv_transpose_derive(in[1].shape, stride, pad, opad, dil, g);
  return true;
}

// Column scratch bytes, or false when it does not fit (the caller reports the input as too large).
inline bool conv_transpose_scratch(const ConvTransposeGeo& g, size_t* bytes) {
  int64_t f = g.og;
  constexpr int64_t kCap = int64_t{1} << 40;
  if (!checked_mul(f, g.kh, &f) || !checked_mul(f, g.kw, &f) || !checked_mul(f, g.h, &f) ||
      !checked_mul(f, g.w, &f) || f > kCap)
    return false;
  *bytes = static_cast<size_t>(f) * sizeof(float);
  return true;
}

// Output planes [o0, o1) of one image's group: zero, add the columns of every tap, bias + activation.
inline void col2im_planes(const ConvTransposeGeo& g, const float* cols, const float* bias, float* y, int64_t o0, int64_t o1) {
  const int64_t hw = g.h * g.w, ohw = g.oh * g.ow;
  for (int64_t o = o0; o < o1; ++o) {
    float* yo = y + o * ohw;
    for (int64_t q = 0; q < ohw; ++q) yo[q] = 0.0f;
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        const float* col = cols + ((o * g.kh + i) * g.kw + j) * hw;
        for (int64_t ih = 0; ih < g.h; ++ih) {
          const int64_t oh = ih * g.sh - g.ph + i * g.dh;
          if (oh < 0 || oh >= g.oh) continue;
          float* yr = yo + oh * g.ow;
          const float* cr = col + ih * g.w;
          for (int64_t iw = 0; iw < g.w; ++iw) {
            const int64_t ow = iw * g.sw - g.pw + j * g.dw;
            if (ow >= 0 && ow < g.ow) yr[ow] += cr[iw];
          }
        }
      }
    }
    bias_activation(g.act, bias != nullptr ? bias[o] : 0.0f, yo, ohw);
  }
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
