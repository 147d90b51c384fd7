// pad: x -> x padded with a constant (runtime/OPS.md). Attributes: pads is[] in PyTorch order (last dim
// first: lo, hi pairs; negative values crop), mode s ("constant" only), value f (default 0).
#include <cstring>

#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "pad";

Status plan(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int64_t* lo) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_inputs(kOp, n_in, 1, 1));
  DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "input", in[0], DType::kFloat32));
  const char* mode = attrs.get_string("mode");
  if (std::strcmp(mode, "constant") != 0)
    return op_error(StatusCode::kUnsupported, kOp, "mode \"%s\" is not supported; only \"constant\" is", mode);
  const Shape& s = in[0].shape;
  int64_t pads[2 * kMaxDims];
  int n = 0;
  DTORCH_RETURN_IF_ERROR(kernels::get_ints_list(kOp, attrs, "pads", 2 * kMaxDims, pads, &n, true));
  if (n % 2 != 0 || n / 2 > s.ndim)
    return op_error(StatusCode::kInvalidArgument, kOp, "pads %s must have an even length of at most 2 * %d (input %s)",
                    kernels::ints_str(pads, n).c_str(), s.ndim, ::dtorch::shape_str(s).c_str());
  *out = s;
  for (int d = 0; d < s.ndim; ++d) lo[d] = 0;
  for (int i = 0; i < n / 2; ++i) {
    const int d = s.ndim - 1 - i;
    lo[d] = pads[2 * i];
    // |pad| <= 2^31 keeps every offset the run computes (input dims are small) inside int64.
    constexpr int64_t kMaxPad = int64_t{1} << 31;
    if (pads[2 * i] < -kMaxPad || pads[2 * i] > kMaxPad || pads[2 * i + 1] < -kMaxPad || pads[2 * i + 1] > kMaxPad)
      return op_error(StatusCode::kInvalidModel, kOp, "pads %s are out of range (at most %lld in magnitude)",
                      kernels::ints_str(pads, n).c_str(), static_cast<long long>(kMaxPad));
    out->dims[d] = s.dims[d] + pads[2 * i] + pads[2 * i + 1];
    if (out->dims[d] < 0)
      return op_error(StatusCode::kInvalidArgument, kOp, "pads %s give a negative size for dimension %d of input %s",
                      kernels::ints_str(pads, n).c_str(), d, ::dtorch::shape_str(s).c_str());
  }
  return Status::Ok();
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  int64_t lo[kMaxDims];
  *scratch_bytes = 0;
  return plan(attrs, in, n_in, &out[0], lo);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  Shape o;
  int64_t lo[kMaxDims];
  DTORCH_RETURN_IF_ERROR(plan(*ctx.attrs, in, n_in, &o, lo));
  const float value = static_cast<float>(ctx.attrs->get_float("value"));
  const Shape& s = in[0].shape;
  const float* x = in[0].as<const float>();
  float* y = out[0].as<float>();
  if (o.numel() == 0) return Status::Ok();
  if (o.ndim == 0) {
    y[0] = x[0];
    return Status::Ok();
  }
  int64_t ist[kMaxDims];
  kernels::contiguous_strides(s, ist);
  const int last = o.ndim - 1;
  const int64_t cols = o.dims[last], rows = o.numel() / cols;
  for (int64_t r = 0; r < rows; ++r) {
    float* yr = y + r * cols;
    int64_t off = 0, rem = r;
    bool inside = true;
    for (int d = last - 1; d >= 0; --d) {
      const int64_t id = rem % o.dims[d] - lo[d];
      rem /= o.dims[d];
      if (id < 0 || id >= s.dims[d]) inside = false;
      off += id * ist[d];
    }
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t ij = j - lo[last];
      yr[j] = (inside && ij >= 0 && ij < s.dims[last]) ? x[off + ij] : value;
    }
  }
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(pad, DType::kFloat32, infer, run);
}  // namespace dtorch
