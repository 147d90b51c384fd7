// qlut: int8 x, int8 table (256) -> int8 y = table[x + 128], elementwise, same shape (runtime/OPS.md). Attributes:
// function (the float activation the table holds), its parameters (alpha, min_val, max_val, beta, threshold), x_scale,
// x_zero_point, y_scale, y_zero_point: what the table was computed from (dtorch/quant/_fixed_point.py lut_table:
// table[q + 128] = quantize(f(dequantize(q, x_scale, x_zero_point)), y_scale, y_zero_point)), read here only to check
// them. The kernel reads the table alone, so every activation (sigmoid, tanh, gelu, ...) gives the same bits on every
// target, with no libm on the device.
#include <cstdint>

#include "kernels/common/quant_params.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "qlut";
constexpr int64_t kEntries = 256;

Status check(const Attrs& attrs, const TensorView* in, int n_in, int n_out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 2, 2));
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "input", in[0], DType::kInt8));
  DTORCH_RETURN_IF_ERROR(kernels::check_vector(kOp, "table", in[1], kEntries, DType::kInt8));
  double scale = 0.0;
  DTORCH_RETURN_IF_ERROR(kernels::read_scale(kOp, attrs, "x_scale", &scale));
  return kernels::read_scale(kOp, attrs, "y_scale", &scale);
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  DTORCH_RETURN_IF_ERROR(check(attrs, in, n_in, n_out));
  out[0] = in[0].shape;
  return Status::Ok();
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  DTORCH_RETURN_IF_ERROR(check(*ctx.attrs, in, n_in, n_out));
  if (out[0].shape != in[0].shape || out[0].dtype != DType::kInt8)
    return op_error(StatusCode::kInternal, kOp, "output %s is not the int8 %s infer gave",
                    ::dtorch::shape_str(out[0].shape).c_str(), ::dtorch::shape_str(in[0].shape).c_str());
  const int8_t* x = in[0].as<const int8_t>();
  const int8_t* table = in[1].as<const int8_t>() + 128;  // table[q] for q in [-128, 127]
  int8_t* y = out[0].as<int8_t>();  // may be x's buffer: each element is read before it is written
  kernels::parallel_chunks(ctx.pool, in[0].shape.numel(), 16384, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = table[x[i]];
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(qlut, DType::kInt8, infer, run);
}  // namespace dtorch
