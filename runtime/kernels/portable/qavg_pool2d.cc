// qavg_pool2d: int8 x (N, C, H, W) -> int8 (N, C, OH, OW), the average over each window (runtime/OPS.md). Attributes
// as avg_pool2d: kernel is[2], stride is[2] (default: kernel), padding is[2], ceil_mode i, count_include_pad i
// (default 1), divisor_override i (0 = none); and scale, zero_point: the input's quantization, which the output keeps
// (TFLite's AVERAGE_POOL_2D restriction: an average of values in range stays in range).
//
// The windows and divisor d are the float kernel's (PyTorch's): d = divisor_override, else the window clipped to the
// padded input (count_include_pad) or to the input. The integer sum acc = sum(x - zero_point) over the window's taps
// inside the input (a padding tap holds the real 0) + d * zero_point, which is the sum of the int8 values themselves
// (padding taps holding the zero point) whenever d counts the taps; then TFLite's int8 rounding:
//   y = acc > 0 ? (acc + d / 2) / d : (acc - d / 2) / d   (C's truncating division: half away from zero)
// clamped to [-128, 127]. With count_include_pad = 0 and no divisor_override this is TFLite's reference
// AveragePool for int8, bit for bit. The sum is int64: any window size is exact.
#include <cstdint>

#include "kernels/common/pool.h"
#include "kernels/common/quant_params.h"
#include "kernels/common/requant.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "qavg_pool2d";

Status geometry(const Attrs& attrs, const TensorView* in, int n_in, int n_out, kernels::AvgPoolGeometry* g,
                int32_t* zero_point) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 1, 1));
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "input", in[0], DType::kInt8));
  DTORCH_RETURN_IF_ERROR(kernels::check_rank(kOp, "input (N, C, H, W)", in[0], 4));
  kernels::QuantParams q{};
  DTORCH_RETURN_IF_ERROR(kernels::read_quant_params(kOp, attrs, &q));
  *zero_point = q.zero_point;
  return kernels::avg_pool_geometry(kOp, attrs, in[0].shape, g);
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  kernels::AvgPoolGeometry g{};
  int32_t zp = 0;
  DTORCH_RETURN_IF_ERROR(geometry(attrs, in, n_in, n_out, &g, &zp));
  out[0] = in[0].shape;
  out[0].dims[2] = g.oh;
  out[0].dims[3] = g.ow;
  *scratch_bytes = 0;
  return Status::Ok();
}

// TFLite's rounded integer average (half away from zero), saturated to int8.
inline int8_t rounded_average(int64_t acc, int64_t d) {
  const int64_t q = acc > 0 ? (acc + d / 2) / d : (acc - d / 2) / d;
  return static_cast<int8_t>(q < kernels::requant::kQMin ? kernels::requant::kQMin
                                                         : q > kernels::requant::kQMax ? kernels::requant::kQMax : q);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  kernels::AvgPoolGeometry g{};
  int32_t zp = 0;
  DTORCH_RETURN_IF_ERROR(geometry(*ctx.attrs, in, n_in, n_out, &g, &zp));
  if (out[0].dtype != DType::kInt8 || out[0].shape.dims[2] != g.oh || out[0].shape.dims[3] != g.ow)
    return op_error(StatusCode::kInternal, kOp, "output %s is not the int8 (N, C, %lld, %lld) infer gave",
                    ::dtorch::shape_str(out[0].shape).c_str(), (long long)g.oh, (long long)g.ow);
  const int8_t* x = in[0].as<const int8_t>();
  int8_t* y = out[0].as<int8_t>();
  kernels::avg_pool_cells(ctx.pool, g, [&](int64_t p, int64_t o, int64_t a0, int64_t a1, int64_t b0, int64_t b1,
                                           int64_t d) {
    const int8_t* xp = x + p * g.h * g.w;
    int64_t sum = 0;
    for (int64_t ih = a0; ih < a1; ++ih)
      for (int64_t iw = b0; iw < b1; ++iw) sum += xp[ih * g.w + iw];
    const int64_t taps = (a1 - a0) * (b1 - b0);
    y[p * g.oh * g.ow + o] = d > 0 ? rounded_average(sum + (d - taps) * zp, d) : static_cast<int8_t>(zp);
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(qavg_pool2d, DType::kInt8, infer, run);
}  // namespace dtorch
