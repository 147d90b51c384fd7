// Shared geometry of the windowed 2-D pools (max_pool2d, avg_pool2d) and the adaptive pools, following
// dtorch/nn/ops/pooling.py (PyTorch's rules).
#pragma once

#include <cstdint>

#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

// PyTorch's pooling output size: floor or ceil of the span over the stride; a ceil-mode window must
// start inside the input or the left padding.
inline int64_t pool_out_size(int64_t size, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t span = size + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = floor_div(span, s) + 1;
  if (ceil_mode && (out - 1) * s >= size + p) --out;
  return out;
}

// Adaptive window i of `out` over `size`: [floor(i * size / out), ceil((i + 1) * size / out)).
inline void adaptive_window(int64_t i, int64_t size, int64_t out, int64_t* start, int64_t* end) {
  *start = (i * size) / out;
  *end = ((i + 1) * size + out - 1) / out;
}

// Checks and output shape of the adaptive pools: x (N, C, H, W), output_size is[2].
inline Status adaptive_infer(const char* op, const Attrs& attrs, const TensorView* in, int n_in, Shape* out,
                             int n_out, int64_t* oh, int64_t* ow) {
  DTORCH_RETURN_IF_ERROR(check_num_inputs(op, n_in, 1, 1));
  DTORCH_RETURN_IF_ERROR(check_num_outputs(op, n_out, 1));
  DTORCH_RETURN_IF_ERROR(check_dtype(op, "input", in[0], DType::kFloat32));
  DTORCH_RETURN_IF_ERROR(check_rank(op, "input (N, C, H, W)", in[0], 4));
  int64_t size[2] = {0, 0};
  DTORCH_RETURN_IF_ERROR(get_ints_exact(op, attrs, "output_size", 2, size, nullptr));
  if (size[0] < 1 || size[1] < 1)
    return op_error(StatusCode::kInvalidModel, op, "output_size must be >= 1, got %s", ints_str(size, 2).c_str());
  DTORCH_RETURN_IF_ERROR(check_attr_max(op, "output_size", size, 2, kMaxAttrValue));
  if (in[0].shape.dims[2] < 1 || in[0].shape.dims[3] < 1)
    return op_error(StatusCode::kInvalidArgument, op, "input %s has an empty spatial size",
                    shape_str(in[0].shape).c_str());
  *oh = size[0];
  *ow = size[1];
  out[0] = in[0].shape;
  out[0].dims[2] = size[0];
  out[0].dims[3] = size[1];
  return Status::Ok();
}

// The adaptive pools' run: checks, then for every (N*C) plane (one plane per thread at a time) and every
// output cell, window_fn(plane, W, r0, r1, c0, c1) reduces the window rows [r0, r1) x columns [c0, c1).
template <typename WindowFn>
Status adaptive_run(const char* op, const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out,
                    int n_out, WindowFn window_fn) {
  Shape expect;
  int64_t oh = 0, ow = 0;
  DTORCH_RETURN_IF_ERROR(adaptive_infer(op, *ctx.attrs, in, n_in, &expect, n_out, &oh, &ow));
  const int64_t h = in[0].shape.dims[2], w = in[0].shape.dims[3];
  const float* x = in[0].as<const float>();
  float* y = out[0].as<float>();
  parallel_chunks(ctx.pool, in[0].shape.dims[0] * in[0].shape.dims[1], 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const float* xp = x + p * h * w;
      float* yp = y + p * oh * ow;
      for (int64_t i = 0; i < oh; ++i) {
        int64_t r0, r1;
        adaptive_window(i, h, oh, &r0, &r1);
        for (int64_t j = 0; j < ow; ++j) {
          int64_t c0, c1;
          adaptive_window(j, w, ow, &c0, &c1);
          yp[i * ow + j] = window_fn(xp, w, r0, r1, c0, c1);
        }
      }
    }
  });
  return Status::Ok();
}

// The windows of an avg_pool2d / qavg_pool2d node (PyTorch's AvgPool2d): the attributes kernel, stride (default: the
// kernel), padding, ceil_mode, count_include_pad, divisor_override, checked against an input of shape x (N, C, H, W).
struct AvgPoolGeometry {
  int64_t n, c, h, w, kh, kw, sh, sw, ph, pw, oh, ow, divisor;  // divisor: divisor_override, 0 = none
  bool include_pad;
};

inline Status avg_pool_geometry(const char* op, const Attrs& attrs, const Shape& x, AvgPoolGeometry* g) {
  int64_t k[2] = {}, s[2] = {}, p[2] = {};
  DTORCH_RETURN_IF_ERROR(get_ints_exact(op, attrs, "kernel", 2, k, nullptr));
  DTORCH_RETURN_IF_ERROR(get_ints_exact(op, attrs, "stride", 2, s, k));
  DTORCH_RETURN_IF_ERROR(get_ints_exact(op, attrs, "padding", 2, p, nullptr));
  const bool ceil_mode = attrs.get_int("ceil_mode") != 0;
  const int64_t divisor = attrs.get_int("divisor_override");
  if (divisor < 0)
    return op_error(StatusCode::kInvalidModel, op, "divisor_override must be >= 0 (0 = none), got %lld",
                    (long long)divisor);
  DTORCH_RETURN_IF_ERROR(check_attr_max(op, "kernel", k, 2, kMaxAttrValue));
  DTORCH_RETURN_IF_ERROR(check_attr_max(op, "stride", s, 2, kMaxAttrValue));
  DTORCH_RETURN_IF_ERROR(check_attr_max(op, "padding", p, 2, kMaxAttrValue));
  for (int i = 0; i < 2; ++i) {
    if (k[i] < 1 || s[i] < 1 || p[i] < 0)
      return op_error(StatusCode::kInvalidModel, op, "kernel %s and stride %s must be >= 1 and padding %s >= 0",
                      ints_str(k, 2).c_str(), ints_str(s, 2).c_str(), ints_str(p, 2).c_str());
    if (2 * p[i] > k[i])
      return op_error(StatusCode::kInvalidModel, op, "padding %s should be at most half of the kernel size %s",
                      ints_str(p, 2).c_str(), ints_str(k, 2).c_str());
  }
  *g = AvgPoolGeometry{x.dims[0], x.dims[1], x.dims[2], x.dims[3], k[0], k[1], s[0], s[1], p[0], p[1], 0, 0, divisor,
                       attrs.get_int("count_include_pad") != 0};
  g->oh = pool_out_size(g->h, k[0], s[0], p[0], 1, ceil_mode);
  g->ow = pool_out_size(g->w, k[1], s[1], p[1], 1, ceil_mode);
  if (g->oh < 1 || g->ow < 1)
    return op_error(StatusCode::kInvalidArgument, op, "input %s is too small for kernel %s (output %lldx%lld)",
                    shape_str(x).c_str(), ints_str(k, 2).c_str(), (long long)g->oh, (long long)g->ow);
  return Status::Ok();
}

// For every (N*C) plane p (split over the pool, one plane at a time) and output cell o = oh * OW + ow:
// cell(p, o, a0, a1, b0, b1, d): the window's taps inside the input are rows [a0, a1) x columns [b0, b1) of plane p,
// and d is PyTorch's divisor (divisor_override, else the window clipped to the padded input with count_include_pad, or
// to the input without it; 0 only for a window with nothing to count).
template <typename Cell>
void avg_pool_cells(ThreadPool* pool, const AvgPoolGeometry& g, Cell cell) {
  parallel_chunks(pool, g.n * g.c, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        const int64_t h0 = oh * g.sh - g.ph;
        const int64_t h1p = h0 + g.kh < g.h + g.ph ? h0 + g.kh : g.h + g.ph;  // clipped to the padded input
        const int64_t a0 = h0 > 0 ? h0 : 0, a1 = h1p < g.h ? h1p : g.h;       // clipped to the input
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          const int64_t w0 = ow * g.sw - g.pw;
          const int64_t w1p = w0 + g.kw < g.w + g.pw ? w0 + g.kw : g.w + g.pw;
          const int64_t b0 = w0 > 0 ? w0 : 0, b1 = w1p < g.w ? w1p : g.w;
          int64_t d = g.divisor;
          if (d == 0) d = g.include_pad ? (h1p - h0) * (w1p - w0) : (a1 - a0) * (b1 - b0);
          cell(p, oh * g.ow + ow, a0, a1, b0, b1, d);
        }
      }
    }
  });
}

// The window geometry of a max_pool2d node whose shapes infer accepted (the attributes kernel, stride, padding,
// dilation; the output size from the output shape): what the ISA kernel sets read, without the portable kernel's
// checks and messages.
struct MaxPoolGeometry {
  int64_t n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;
};

inline Status max_pool_geometry(const char* op, const Attrs& attrs, const TensorView& x, const Shape& out,
                                MaxPoolGeometry* g) {
  int64_t k[2] = {}, s[2] = {}, p[2] = {}, d[2] = {};
  DTORCH_RETURN_IF_ERROR(get_ints_exact(op, attrs, "kernel", 2, k, nullptr));
  DTORCH_RETURN_IF_ERROR(get_ints_exact(op, attrs, "stride", 2, s, k));
  DTORCH_RETURN_IF_ERROR(get_ints_exact(op, attrs, "padding", 2, p, nullptr));
  DTORCH_RETURN_IF_ERROR(get_ints_exact(op, attrs, "dilation", 2, d, nullptr));
  *g = MaxPoolGeometry{x.shape.dims[0], x.shape.dims[1], x.shape.dims[2], x.shape.dims[3], k[0], k[1], s[0], s[1],
                       p[0], p[1], d[0], d[1], out.dims[2], out.dims[3]};
  return Status::Ok();
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
