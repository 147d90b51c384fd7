// quantize: float32 x -> int8 y = saturate(round_half_even(x / scale) + zero_point), elementwise, same shape
// (runtime/OPS.md; ONNX QuantizeLinear with a scalar scale; NaN -> zero_point). kernels/common/requant.h holds the
// arithmetic.
#include "kernels/common/quant_params.h"
#include "kernels/common/requant.h"

namespace dtorch {
namespace {

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  return kernels::quant_unary_infer(DTORCH_OP_SCHEMA(quantize), attrs, in, n_in, out, n_out, scratch_bytes);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  return kernels::quant_unary_run<float, int8_t>(DTORCH_OP_SCHEMA(quantize), ctx, in, n_in, out, n_out,
                                                [](auto x, const kernels::QuantParams& q) {
                                                  return kernels::requant::quantize(x, q.scale_f, q.zero_point);
                                                });
}

}  // namespace
DTORCH_REGISTER_KERNEL(quantize, DType::kFloat32, infer, run);
}  // namespace dtorch
