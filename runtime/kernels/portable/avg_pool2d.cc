// avg_pool2d: x (N, C, H, W) -> (N, C, OH, OW), the mean over each window (runtime/OPS.md). Attributes:
// kernel is[2], stride is[2] (default: kernel), padding is[2], ceil_mode i, count_include_pad i (default 1),
// divisor_override i (0 = none). The divisor follows PyTorch: the window clipped to the padded input
// (count_include_pad) or to the input itself; the sum runs over the window's taps in row-major order.
#include "kernels/common/pool.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "avg_pool2d";

struct Geo {
  int64_t n, c, h, w, kh, kw, sh, sw, ph, pw, oh, ow, divisor;
  bool include_pad;
};

Status geometry(const Attrs& attrs, const TensorView* in, int n_in, Geo* g) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 1, 1));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "input", in[0], DType::kFloat32));
  DTORCH_RETURN_IF_ERROR(kernels::check_rank(kOp, "input (N, C, H, W)", in[0], 4));
  int64_t k[2] = {}, s[2] = {}, p[2] = {};
  DTORCH_RETURN_IF_ERROR(kernels::get_ints_exact(kOp, attrs, "kernel", 2, k, nullptr));
  DTORCH_RETURN_IF_ERROR(kernels::get_ints_exact(kOp, attrs, "stride", 2, s, k));
  DTORCH_RETURN_IF_ERROR(kernels::get_ints_exact(kOp, attrs, "padding", 2, p, nullptr));
  const bool ceil_mode = attrs.get_int("ceil_mode") != 0;
  g->include_pad = attrs.get_int("count_include_pad") != 0;
  g->divisor = attrs.get_int("divisor_override");
  if (g->divisor < 0)
    return op_error(StatusCode::kInvalidModel, kOp, "divisor_override must be >= 0 (0 = none), got %lld",
                    (long long)g->divisor);
  DTORCH_RETURN_IF_ERROR(kernels::check_attr_max(kOp, "kernel", k, 2, kernels::kMaxAttrValue));
  DTORCH_RETURN_IF_ERROR(kernels::check_attr_max(kOp, "stride", s, 2, kernels::kMaxAttrValue));
  DTORCH_RETURN_IF_ERROR(kernels::check_attr_max(kOp, "padding", p, 2, kernels::kMaxAttrValue));
  for (int i = 0; i < 2; ++i) {
    if (k[i] < 1 || s[i] < 1 || p[i] < 0)
      return op_error(StatusCode::kInvalidModel, kOp, "kernel %s and stride %s must be >= 1 and padding %s >= 0",
                      kernels::ints_str(k, 2).c_str(), kernels::ints_str(s, 2).c_str(), kernels::ints_str(p, 2).c_str());
    if (2 * p[i] > k[i])
      return op_error(StatusCode::kInvalidModel, kOp, "padding %s should be at most half of the kernel size %s",
                      kernels::ints_str(p, 2).c_str(), kernels::ints_str(k, 2).c_str());
  }
  const Shape& x = in[0].shape;
  g->n = x.dims[0];
  g->c = x.dims[1];
  g->h = x.dims[2];
  g->w = x.dims[3];
  g->kh = k[0];
  g->kw = k[1];
  g->sh = s[0];
  g->sw = s[1];
  g->ph = p[0];
  g->pw = p[1];
  g->oh = kernels::pool_out_size(g->h, k[0], s[0], p[0], 1, ceil_mode);
  g->ow = kernels::pool_out_size(g->w, k[1], s[1], p[1], 1, ceil_mode);
  if (g->oh < 1 || g->ow < 1)
    return op_error(StatusCode::kInvalidArgument, kOp, "input %s is too small for kernel %s (output %lldx%lld)",
                    ::dtorch::shape_str(x).c_str(), kernels::ints_str(k, 2).c_str(), (long long)g->oh, (long long)g->ow);
  return Status::Ok();
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  Geo g{};
  DTORCH_RETURN_IF_ERROR(geometry(attrs, in, n_in, &g));
  out[0] = in[0].shape;
  out[0].dims[2] = g.oh;
  out[0].dims[3] = g.ow;
  *scratch_bytes = 0;
  return Status::Ok();
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  Geo g{};
  DTORCH_RETURN_IF_ERROR(geometry(*ctx.attrs, in, n_in, &g));
  const float* x = in[0].as<const float>();
  float* y = out[0].as<float>();
  kernels::parallel_chunks(ctx.pool, g.n * g.c, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const float* xp = x + p * g.h * g.w;
      float* yp = y + p * g.oh * g.ow;
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        const int64_t h0 = oh * g.sh - g.ph;
        const int64_t h1p = h0 + g.kh < g.h + g.ph ? h0 + g.kh : g.h + g.ph;  // clipped to the padded input
        const int64_t a0 = h0 > 0 ? h0 : 0, a1 = h1p < g.h ? h1p : g.h;       // clipped to the input
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          const int64_t w0 = ow * g.sw - g.pw;
          const int64_t w1p = w0 + g.kw < g.w + g.pw ? w0 + g.kw : g.w + g.pw;
          const int64_t b0 = w0 > 0 ? w0 : 0, b1 = w1p < g.w ? w1p : g.w;
          float sum = 0.0f;
          for (int64_t ih = a0; ih < a1; ++ih)
            for (int64_t iw = b0; iw < b1; ++iw) sum += xp[ih * g.w + iw];
          int64_t div = g.divisor;
          if (div == 0) div = g.include_pad ? (h1p - h0) * (w1p - w0) : (a1 - a0) * (b1 - b0);
          yp[oh * g.ow + ow] = div > 0 ? sum / static_cast<float>(div) : 0.0f;
        }
      }
    }
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(avg_pool2d, DType::kFloat32, infer, run);
}  // namespace dtorch
