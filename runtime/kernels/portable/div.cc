// div: a / b with NumPy broadcasting (runtime/OPS.md): true division for float32; int64 / int32 divide as ONNX Div
// and C++ do, truncating toward zero (a division by zero gives 0, as NumPy's). The output may alias input a.
#include <cmath>

#include "kernels/common/activation.h"
#include "kernels/common/broadcast.h"

namespace dtorch {
namespace {

constexpr const char* kOp = "div";

Status infer(const Attrs&, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  return kernels::binary_infer(kOp, in, n_in, out, n_out);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  if (in[0].dtype != DType::kFloat32)
    return kernels::int_binary_run(kOp, ctx, in, n_in, out, n_out, [](auto a, auto b) -> decltype(a) {
      using T = decltype(a);
      if (b == 0) return T{0};                          // NumPy's result; C++ leaves it undefined
      if (b == -1) return kernels::wrap_sub(T{0}, a);  // INT_MIN / -1 wraps
      return static_cast<T>(a / b);
    });
  return kernels::binary_run(kOp, ctx, in, n_in, out, n_out, [](float a, float b) { return a / b; });
}

}  // namespace
DTORCH_REGISTER_KERNEL(div, DType::kFloat32, infer, run);
DTORCH_REGISTER_KERNEL(div, DType::kInt64, infer, run);
DTORCH_REGISTER_KERNEL(div, DType::kInt32, infer, run);
}  // namespace dtorch
