// cumsum: x -> running sums along `axis`, same shape and dtype (torch.cumsum, ONNX CumSum; runtime/OPS.md). Attributes:
// axis i (non-negative in a model file; the kernel also takes a negative one, counted from the end; a rank-0 x is one
// line of one element), exclusive i, reverse i. x is float32, int64 or int32.
//
// Order (the result's bits depend on it only for float32): along each line of `axis`, with n its length,
//   forward:           y[0] = x[0],     y[i] = y[i-1] + x[i]      for i = 1 .. n-1
//   exclusive:         y[0] = 0,        y[i] = y[i-1] + x[i-1]
//   reverse:           y[n-1] = x[n-1], y[i] = y[i+1] + x[i]      for i = n-2 .. 0
//   reverse exclusive: y[n-1] = 0,      y[i] = y[i+1] + x[i+1]
// float32 adds in float32, one element at a time in that order (as ONNX Runtime and NumPy do; torch's CPU cumsum sums
// in double, so its float results can differ in the last bits). Integers wrap around on overflow (two's complement, as
// the integer arithmetic kernels: kernels::wrap_add). Threads take whole lines (groups of neighbouring lines in one
// block of `axis`); every line is summed by one thread in the order above, so the bits are the same for any thread
// count. The output must not share the input's buffer (the exclusive sums read x after writing y).
#include <cstdint>
#include <type_traits>

#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "cumsum";

Status plan(const Attrs& attrs, const TensorView* in, int n_in, const TensorView* outs, int n_out, int* axis) {
  DTORCH_RETURN_IF_ERROR(kernels::check_signature(DTORCH_OP_SCHEMA(cumsum), attrs, in, n_in, outs, n_out));
  return kernels::normalize_axis(kOp, "axis", attrs.get_int("axis"), in[0].shape.ndim, axis);
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  int axis = 0;
  DTORCH_RETURN_IF_ERROR(plan(attrs, in, n_in, nullptr, n_out, &axis));
  out[0] = in[0].shape;
  return Status::Ok();
}

template <typename T>
inline T add(T a, T b) {
  if constexpr (std::is_floating_point<T>::value)
    return a + b;
  else
    return kernels::wrap_add(a, b);
}

// The lines of one block of `axis` (outer index o), columns [cb, ce) of its `inner` neighbouring lines.
template <typename T>
void lines(const T* x, T* y, int64_t o, int64_t n, int64_t inner, int64_t cb, int64_t ce, bool exclusive,
           bool reverse) {
  const T* xb = x + o * n * inner;
  T* yb = y + o * n * inner;
  const int64_t first = reverse ? n - 1 : 0;
  const int64_t dir = reverse ? -1 : 1;
  T* y0 = yb + first * inner;
  const T* x0 = xb + first * inner;
  for (int64_t c = cb; c < ce; ++c) y0[c] = exclusive ? T(0) : x0[c];
  for (int64_t s = 1; s < n; ++s) {
    const int64_t i = first + dir * s, prev = i - dir;
    const T* xi = xb + (exclusive ? prev : i) * inner;
    const T* yp = yb + prev * inner;
    T* yi = yb + i * inner;
    for (int64_t c = cb; c < ce; ++c) yi[c] = add(yp[c], xi[c]);
  }
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  int axis = 0;
  DTORCH_RETURN_IF_ERROR(plan(*ctx.attrs, in, n_in, out, n_out, &axis));
  if (out[0].shape != in[0].shape)
    return op_error(StatusCode::kInternal, kOp, "output has shape %s, expected %s",
                    ::dtorch::shape_str(out[0].shape).c_str(), ::dtorch::shape_str(in[0].shape).c_str());
  const Shape& s = in[0].shape;
  if (in[0].data == out[0].data && s.numel() > 0)
    return op_error(StatusCode::kInternal, kOp, "the output shares the input's buffer");
  int64_t outer = 1, inner = 1;
  const int64_t n = s.ndim > 0 ? s.dims[axis] : 1;
  for (int d = 0; d < axis && d < s.ndim; ++d) outer *= s.dims[d];
  for (int d = axis + 1; d < s.ndim; ++d) inner *= s.dims[d];
  if (outer == 0 || n == 0 || inner == 0) return Status::Ok();
  const bool exclusive = ctx.attrs->get_int("exclusive") != 0, reverse = ctx.attrs->get_int("reverse") != 0;
  // Work items: (block o, a group of up to kCols neighbouring lines); chunks of items of about 16k elements.
  constexpr int64_t kCols = 256;
  const int64_t groups = kernels::ceil_div(inner, kCols), items = outer * groups;
  const int64_t per_item = n * (inner < kCols ? inner : kCols);
  const int64_t grain = per_item >= 16384 ? 1 : 16384 / per_item;
  const auto sum = [&](auto tag) {
    using T = decltype(tag);
    const T* x = in[0].as<const T>();
    T* y = out[0].as<T>();
    kernels::parallel_chunks(ctx.pool, items, grain, [&](int64_t b, int64_t e) {
      for (int64_t it = b; it < e; ++it) {
        const int64_t o = it / groups, cb = (it % groups) * kCols, ce = cb + kCols < inner ? cb + kCols : inner;
        lines(x, y, o, n, inner, cb, ce, exclusive, reverse);
      }
    });
    return Status::Ok();
  };
  switch (in[0].dtype) {
    case DType::kFloat32: return sum(float{});
    case DType::kInt64: return sum(int64_t{});
    case DType::kInt32: return sum(int32_t{});
    default: break;
  }
  return op_error(StatusCode::kInternal, kOp, "no loop for %s", dtype_name(in[0].dtype));
}

}  // namespace
DTORCH_REGISTER_KERNEL(cumsum, DType::kFloat32, infer, run);
DTORCH_REGISTER_KERNEL(cumsum, DType::kInt64, infer, run);
DTORCH_REGISTER_KERNEL(cumsum, DType::kInt32, infer, run);
}  // namespace dtorch
