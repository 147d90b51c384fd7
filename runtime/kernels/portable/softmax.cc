// softmax: exp(x - max) / sum along dim (runtime/OPS.md). Attribute: dim i (normalized, >= 0; a negative
// dim is accepted and normalized). The row maximum is subtracted first (a row of -inf uses 0); the sum
// is in double, in order; each row is handled by one thread. The output may alias x.

#include "kernels/common/scalar_math.h"
#include "kernels/common/softmax.h"

namespace dtorch {
namespace {

constexpr const char* kOp = "softmax";

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  return kernels::softmax_infer(kOp, attrs, in, n_in, out, n_out, scratch_bytes);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  return kernels::softmax_run(kOp, ctx, in, n_in, out, n_out,
                              [](const float* x, float* y, int64_t base, int64_t inner, int64_t len, float m) {
                                double sum = 0.0;
                                for (int64_t k = 0; k < len; ++k) {
                                  const float e = kernels::smath::exp(x[base + k * inner] - m);
                                  y[base + k * inner] = e;
                                  sum += e;
                                }
                                const float s = static_cast<float>(sum);
                                for (int64_t k = 0; k < len; ++k) y[base + k * inner] /= s;
                              });
}

}  // namespace
DTORCH_REGISTER_KERNEL(softmax, DType::kFloat32, infer, run);
}  // namespace dtorch
