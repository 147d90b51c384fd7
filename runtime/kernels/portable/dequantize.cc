// dequantize: int8 x -> float32 y = (x - zero_point) * scale, elementwise, same shape (runtime/OPS.md; ONNX
// DequantizeLinear with a scalar scale).
#include "kernels/common/quant_params.h"
#include "kernels/common/requant.h"

namespace dtorch {
namespace {

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  return kernels::quant_unary_infer(DTORCH_OP_SCHEMA(dequantize), attrs, in, n_in, out, n_out, scratch_bytes);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  return kernels::quant_unary_run<int8_t, float>(DTORCH_OP_SCHEMA(dequantize), ctx, in, n_in, out, n_out,
                                                [](auto x, const kernels::QuantParams& q) {
                                                  return kernels::requant::dequantize(x, q.scale_f, q.zero_point);
                                                });
}

}  // namespace
DTORCH_REGISTER_KERNEL(dequantize, DType::kInt8, infer, run);
}  // namespace dtorch
