// pad: x -> x padded as torch.nn.functional.pad (runtime/OPS.md). Attributes: pads is[] in PyTorch order (last dim
// first: lo, hi pairs; negative values crop), mode s, value f (mode "constant" only). Any rank; the pads apply to the
// last len(pads) / 2 dimensions. Modes, for output index j of a dimension of size n with pads (lo, hi):
//   constant   x[j - lo] inside [0, n), else `value`;
//   reflect    x[j - lo] mirrored about the first and last element (not repeating them): each pad must be < n;
//   replicate  x[j - lo] clamped to [0, n - 1]: n must be > 0 when the output is not empty;
//   circular   the input cropped by the negative pads (m elements from max(-lo, 0)), wrapped around (as often as
//              the pads need): each pad must be <= n, as torch checks, and m > 0 when the output is not empty.
// reflect and replicate index the uncropped input when the other side crops, as torch does. Each output element is
// copied from one input element (or is `value`), so any thread count gives the same bits.
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "pad";

enum class Mode { kConstant, kReflect, kReplicate, kCircular };

struct Plan {
  Shape out;
  Mode mode = Mode::kConstant;
  int64_t lo[kMaxDims] = {};    // the pad before each dimension (negative: crops)
  int64_t base[kMaxDims] = {};  // circular: where the cropped input starts, and its size
  int64_t span[kMaxDims] = {};
};

Status parse_mode(const char* s, Mode* m) {
  const struct { const char* name; Mode mode; } modes[] = {
      {"constant", Mode::kConstant}, {"reflect", Mode::kReflect}, {"replicate", Mode::kReplicate},
      {"circular", Mode::kCircular}};
  for (const auto& e : modes)
    if (std::strcmp(s, e.name) == 0) {
      *m = e.mode;
      return Status::Ok();
    }
  return op_error(StatusCode::kUnsupported, kOp, "mode \"%s\" is not supported (constant, reflect, replicate or circular)",
                  s);
}

Status plan(const Attrs& attrs, const TensorView* in, int n_in, Plan* p) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 1, 1));
  const char* mode = attrs.get_string("mode");
  DTORCH_RETURN_IF_ERROR(parse_mode(mode, &p->mode));
  const Shape& s = in[0].shape;
  int64_t pads[2 * kMaxDims];
  int n = 0;
  DTORCH_RETURN_IF_ERROR(kernels::get_ints_list(kOp, attrs, "pads", 2 * kMaxDims, pads, &n, true));
  if (n % 2 != 0 || n / 2 > s.ndim)
    return op_error(StatusCode::kInvalidArgument, kOp, "pads %s must have an even length of at most 2 * %d (input %s)",
                    kernels::ints_str(pads, n).c_str(), s.ndim, ::dtorch::shape_str(s).c_str());
  p->out = s;
  for (int d = 0; d < s.ndim; ++d) p->lo[d] = 0, p->base[d] = 0, p->span[d] = s.dims[d];
  for (int i = 0; i < n / 2; ++i) {
    const int d = s.ndim - 1 - i;
    const int64_t lo = pads[2 * i], hi = pads[2 * i + 1], size = s.dims[d];
    // |pad| <= 2^31 keeps every offset the run computes (input dims are small) inside int64.
    constexpr int64_t kMaxPad = int64_t{1} << 31;
    if (lo < -kMaxPad || lo > kMaxPad || hi < -kMaxPad || hi > kMaxPad)
      return op_error(StatusCode::kInvalidModel, kOp, "pads %s are out of range (at most %lld in magnitude)",
                      kernels::ints_str(pads, n).c_str(), static_cast<long long>(kMaxPad));
    p->lo[d] = lo;
    p->out.dims[d] = size + lo + hi;
    if (p->out.dims[d] < 0)
      return op_error(StatusCode::kInvalidArgument, kOp, "pads %s give a negative size for dimension %d of input %s",
                      kernels::ints_str(pads, n).c_str(), d, ::dtorch::shape_str(s).c_str());
    const auto refuse = [&](const char* why) {
      return op_error(StatusCode::kInvalidArgument, kOp, "mode \"%s\" with pads (%lld, %lld) for dimension %d of input %s: %s",
                      mode, static_cast<long long>(lo), static_cast<long long>(hi), d, ::dtorch::shape_str(s).c_str(), why);
    };
    if (p->mode == Mode::kReflect && ((lo > 0 && lo >= size) || (hi > 0 && hi >= size)))
      return refuse("each pad must be smaller than the dimension (torch.nn.functional.pad refuses it too)");
    if (p->mode == Mode::kReplicate && size == 0 && p->out.dims[d] > 0)
      return refuse("the dimension is empty, there is no edge element to repeat");
    if (p->mode == Mode::kCircular) {
      p->base[d] = lo < 0 ? -lo : 0;
      p->span[d] = size - p->base[d] - (hi < 0 ? -hi : 0);
      if (lo > size || hi > size)
        return refuse("each pad must be at most the dimension (it would wrap around more than once; "
                      "torch.nn.functional.pad refuses it too)");
      if (p->span[d] <= 0 && p->out.dims[d] > 0)
        return refuse("the negative pads leave nothing to wrap around");
    }
  }
  return Status::Ok();
}

// The input index that output index j of dimension d reads, or -1: `value` (constant mode only).
int64_t source(const Plan& p, int64_t size, int d, int64_t j) {
  int64_t i = j - p.lo[d];
  switch (p.mode) {
    case Mode::kConstant: return (i >= 0 && i < size) ? i : -1;
    case Mode::kReflect:
      if (i < 0) i = -i;
      if (i >= size) i = 2 * (size - 1) - i;
      return i;
    case Mode::kReplicate: return i < 0 ? 0 : (i >= size ? size - 1 : i);
    case Mode::kCircular: {
      const int64_t k = (j - (p.lo[d] > 0 ? p.lo[d] : 0)) % p.span[d];
      return p.base[d] + (k < 0 ? k + p.span[d] : k);
    }
  }
  return -1;
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  *scratch_bytes = 0;
  Plan p;
  DTORCH_RETURN_IF_ERROR(plan(attrs, in, n_in, &p));
  out[0] = p.out;
  return Status::Ok();
}

template <typename T>
void pad_rows(const KernelContext& ctx, const Plan& p, const Shape& s, const T* x, T* y, T value) {
  const Shape& o = p.out;
  if (o.ndim == 0) {
    y[0] = x[0];
    return;
  }
  int64_t ist[kMaxDims];
  kernels::contiguous_strides(s, ist);
  const int last = o.ndim - 1;
  const int64_t cols = o.dims[last], rows = o.numel() / cols;
  kernels::parallel_chunks(ctx.pool, rows, cols >= 4096 ? 1 : kernels::ceil_div(4096, cols), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      T* yr = y + r * cols;
      int64_t off = 0, rem = r;
      bool inside = true;
      for (int d = last - 1; d >= 0; --d) {
        const int64_t id = source(p, s.dims[d], d, rem % o.dims[d]);
        rem /= o.dims[d];
        if (id < 0) inside = false;
        off += id * ist[d];
      }
      for (int64_t j = 0; j < cols; ++j) {
        const int64_t ij = inside ? source(p, s.dims[last], last, j) : -1;
        yr[j] = ij >= 0 ? x[off + ij] : value;
      }
    }
  });
}

// Integer inputs take `value` truncated toward zero, a value outside the dtype refused; bool ones: value != 0.
Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  Plan p;
  DTORCH_RETURN_IF_ERROR(plan(*ctx.attrs, in, n_in, &p));
  if (p.out.numel() == 0) return Status::Ok();
  const double value = ctx.attrs->get_float("value");
  return kernels::visit_dtype(kOp, in[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      // Outside the dtype's range (or not finite) the conversion is undefined: refuse it rather than guess.
      if (!(value >= static_cast<double>(std::numeric_limits<T>::lowest()) &&
            value <= static_cast<double>(std::numeric_limits<T>::max())))
        return op_error(StatusCode::kInvalidArgument, kOp, "value %g does not fit the %s input", value,
                        dtype_name(in[0].dtype));
    }
    const T fill = in[0].dtype == DType::kBool ? static_cast<T>(value != 0.0) : static_cast<T>(value);
    pad_rows<T>(ctx, p, in[0].shape, in[0].as<const T>(), out[0].as<T>(), fill);
    return Status::Ok();
  });
}

}  // namespace
DTORCH_REGISTER_KERNEL(pad, DType::kFloat32, infer, run);
DTORCH_REGISTER_KERNEL(pad, DType::kInt64, infer, run);
DTORCH_REGISTER_KERNEL(pad, DType::kInt32, infer, run);
DTORCH_REGISTER_KERNEL(pad, DType::kBool, infer, run);
DTORCH_REGISTER_KERNEL(pad, DType::kInt8, infer, run);
}  // namespace dtorch
