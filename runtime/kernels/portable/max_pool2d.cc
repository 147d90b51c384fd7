// max_pool2d: x (N, C, H, W) -> (N, C, OH, OW), the maximum over each window (runtime/OPS.md). Attributes:
// kernel is[2], stride is[2] (default: kernel), padding is[2], dilation is[2], ceil_mode i. Padding never
// wins (it is -inf); a NaN in a window wins, as in PyTorch. Output sizes follow PyTorch's ceil_mode rule.
// float32 and int8 (an int8 tensor keeps its scale and zero point: a max commutes with quantization).
#include <limits>

#include "kernels/common/pool.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "max_pool2d";

struct Geo {
  int64_t n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;
};

Status geometry(const Attrs& attrs, const TensorView* in, int n_in, Geo* g) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 1, 1));
  if (in[0].dtype != DType::kInt8) DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "input", in[0], DType::kFloat32));
  DTORCH_RETURN_IF_ERROR(kernels::check_rank(kOp, "input (N, C, H, W)", in[0], 4));
  int64_t k[2] = {}, s[2] = {}, p[2] = {}, d[2] = {};
  DTORCH_RETURN_IF_ERROR(kernels::get_ints_exact(kOp, attrs, "kernel", 2, k, nullptr));
  DTORCH_RETURN_IF_ERROR(kernels::get_ints_exact(kOp, attrs, "stride", 2, s, k));
  DTORCH_RETURN_IF_ERROR(kernels::get_ints_exact(kOp, attrs, "padding", 2, p, nullptr));
  DTORCH_RETURN_IF_ERROR(kernels::get_ints_exact(kOp, attrs, "dilation", 2, d, nullptr));
  const bool ceil_mode = attrs.get_int("ceil_mode") != 0;
  DTORCH_RETURN_IF_ERROR(kernels::check_attr_max(kOp, "kernel", k, 2, kernels::kMaxAttrValue));
  DTORCH_RETURN_IF_ERROR(kernels::check_attr_max(kOp, "stride", s, 2, kernels::kMaxAttrValue));
  DTORCH_RETURN_IF_ERROR(kernels::check_attr_max(kOp, "padding", p, 2, kernels::kMaxAttrValue));
  DTORCH_RETURN_IF_ERROR(kernels::check_attr_max(kOp, "dilation", d, 2, kernels::kMaxAttrValue));
  for (int i = 0; i < 2; ++i) {
    if (k[i] < 1 || s[i] < 1 || d[i] < 1 || p[i] < 0)
      return op_error(StatusCode::kInvalidModel, kOp,
                      "kernel %s, stride %s and dilation %s must be >= 1 and padding %s >= 0",
                      kernels::ints_str(k, 2).c_str(), kernels::ints_str(s, 2).c_str(), kernels::ints_str(d, 2).c_str(),
                      kernels::ints_str(p, 2).c_str());
    if (2 * p[i] > d[i] * (k[i] - 1) + 1)
      return op_error(StatusCode::kInvalidModel, kOp,
                      "padding %s should be at most half of the effective kernel size (kernel %s, dilation %s)",
                      kernels::ints_str(p, 2).c_str(), kernels::ints_str(k, 2).c_str(), kernels::ints_str(d, 2).c_str());
  }
  const Shape& x = in[0].shape;
  *g = Geo{x.dims[0], x.dims[1], x.dims[2], x.dims[3], k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1], 0, 0};
  g->oh = kernels::pool_out_size(g->h, k[0], s[0], p[0], d[0], ceil_mode);
  g->ow = kernels::pool_out_size(g->w, k[1], s[1], p[1], d[1], ceil_mode);
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

template <typename T>
void pool(const KernelContext& ctx, const Geo& g, const T* x, T* y) {
  kernels::parallel_chunks(ctx.pool, g.n * g.c, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const T* xp = x + p * g.h * g.w;
      T* yp = y + p * g.oh * g.ow;
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          T best = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                        : std::numeric_limits<T>::lowest();
          for (int64_t i = 0; i < g.kh; ++i) {
            const int64_t ih = oh * g.sh - g.ph + i * g.dh;
            if (ih < 0 || ih >= g.h) continue;
            for (int64_t j = 0; j < g.kw; ++j) {
              const int64_t iw = ow * g.sw - g.pw + j * g.dw;
              if (iw < 0 || iw >= g.w) continue;
              const T v = xp[ih * g.w + iw];
              if (v > best || v != v) best = v;  // v != v: a NaN (never for int8)
            }
          }
          yp[oh * g.ow + ow] = best;
        }
      }
    }
  });
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  Geo g{};
  DTORCH_RETURN_IF_ERROR(geometry(*ctx.attrs, in, n_in, &g));
  if (in[0].dtype == DType::kInt8)
    pool(ctx, g, in[0].as<const int8_t>(), out[0].as<int8_t>());
  else
    pool(ctx, g, in[0].as<const float>(), out[0].as<float>());
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(max_pool2d, DType::kFloat32, infer, run);
DTORCH_REGISTER_KERNEL(max_pool2d, DType::kInt8, infer, run);
}  // namespace dtorch
