// cast: x -> x converted to the dtype named by attribute `to` (runtime/OPS.md), elementwise, same shape. Between
// float32, int64, int32 and bool, every pair of two different dtypes: float -> integer truncates toward zero and
// saturates (NaN -> 0, +-inf and out-of-range values -> the integer's max / min); int64 -> int32 keeps the low 32 bits;
// integer -> float32 rounds to nearest even; anything -> bool is x != 0 (NaN -> true); bool -> number is 0 / 1. One
// kernel serves every signature; it is registered under each input dtype (the registry key).
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "cast";

// bool travels as uint8_t (kernels::visit_dtype): the only 1-byte dtype cast takes.
template <typename T>
constexpr bool kIsBool = std::is_same<T, uint8_t>::value;

template <typename To, typename From>
To convert(From v) {
  if constexpr (kIsBool<To>) {
    return static_cast<To>(v != From(0) ? 1 : 0);
  } else if constexpr (kIsBool<From>) {
    return static_cast<To>(v != 0 ? 1 : 0);
  } else if constexpr (std::is_floating_point<From>::value && std::is_integral<To>::value) {
    // The integer's range as floats: max rounds up to 2^(bits-1), which is already out of range; min is exact.
    constexpr From hi = static_cast<From>(std::numeric_limits<To>::max());
    constexpr From lo = static_cast<From>(std::numeric_limits<To>::min());
    if (v != v) return 0;
    if (v >= hi) return std::numeric_limits<To>::max();
    if (v <= lo) return std::numeric_limits<To>::min();
    return static_cast<To>(v);  // truncates toward zero
  } else if constexpr (std::is_integral<From>::value && std::is_integral<To>::value && sizeof(To) < sizeof(From)) {
    return static_cast<To>(static_cast<typename std::make_unsigned<To>::type>(v));  // the low bits (two's complement)
  } else {
    return static_cast<To>(v);
  }
}

Status check(const Attrs& attrs, const TensorView* in, int n_in, const TensorView* out, int n_out) {
  return kernels::check_signature(DTORCH_OP_SCHEMA(cast), attrs, in, n_in, out, n_out);
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  DTORCH_RETURN_IF_ERROR(check(attrs, in, n_in, nullptr, n_out));
  out[0] = in[0].shape;
  return Status::Ok();
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  DTORCH_RETURN_IF_ERROR(check(*ctx.attrs, in, n_in, out, n_out));
  if (out[0].shape != in[0].shape)
    return op_error(StatusCode::kInternal, kOp, "output has shape %s, expected %s",
                    ::dtorch::shape_str(out[0].shape).c_str(), ::dtorch::shape_str(in[0].shape).c_str());
  const int64_t n = in[0].shape.numel();
  return kernels::visit_dtype(kOp, in[0].dtype, [&](auto from_tag) {
    using From = decltype(from_tag);
    return kernels::visit_dtype(kOp, out[0].dtype, [&](auto to_tag) {
      using To = decltype(to_tag);
      const From* x = in[0].as<const From>();
      To* y = out[0].as<To>();
      kernels::parallel_chunks(ctx.pool, n, 16384, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) y[i] = convert<To>(x[i]);
      });
      return Status::Ok();
    });
  });
}

}  // namespace
DTORCH_REGISTER_KERNEL(cast, DType::kFloat32, infer, run);
DTORCH_REGISTER_KERNEL(cast, DType::kInt64, infer, run);
DTORCH_REGISTER_KERNEL(cast, DType::kInt32, infer, run);
DTORCH_REGISTER_KERNEL(cast, DType::kBool, infer, run);
}  // namespace dtorch
