// pow: a ** b with NumPy broadcasting (runtime/OPS.md); float32, or an int64 / int32 base with an exponent of its dtype
// or float32 (the result has the base's dtype, as ONNX Pow). The output may alias input a.
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/common/activation.h"
#include "kernels/common/broadcast.h"

namespace dtorch {
namespace {

constexpr const char* kOp = "pow";

Status infer(const Attrs&, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  return kernels::binary_infer(kOp, in, n_in, out, n_out, /*float_exponent=*/true);
}

// An integer base: an integer exponent >= 0 multiplies out exactly (wrapping around like the other integer kernels);
// a negative one gives the integer part of 1 / a^-b (1 for a = 1, +-1 for a = -1, else 0, 0 to a negative power
// included); a float32 exponent computes in double and truncates toward zero, saturating at the dtype's range (a NaN
// result, e.g. a negative base to a fractional power, gives 0). Every result is defined: a run never fails on data.
template <typename T, typename B>
T int_pow(T a, B b) {
  if constexpr (std::is_floating_point_v<B>) {
    const double r = std::pow(static_cast<double>(a), static_cast<double>(b));
    if (r != r) return T{0};
    if (r >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    if (r <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    return static_cast<T>(r);
  } else {
    if (b < 0) {
      if (a == 1) return T{1};
      if (a == -1) return (b % 2 == 0) ? T{1} : T{-1};
      return T{0};
    }
    T result = 1, base = a;
    for (B e = b; e > 0; e >>= 1) {
      if (e & 1) result = kernels::wrap_mul(result, base);
      base = kernels::wrap_mul(base, base);
    }
    return result;
  }
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  if (in[0].dtype != DType::kFloat32)
    return kernels::int_binary_run<true>(kOp, ctx, in, n_in, out, n_out, [](auto a, auto b) { return int_pow(a, b); });
  return kernels::binary_run(kOp, ctx, in, n_in, out, n_out, [](float a, float b) { return std::pow(a, b); });
}

}  // namespace
DTORCH_REGISTER_KERNEL(pow, DType::kFloat32, infer, run);
DTORCH_REGISTER_KERNEL(pow, DType::kInt64, infer, run);
DTORCH_REGISTER_KERNEL(pow, DType::kInt32, infer, run);
}  // namespace dtorch
