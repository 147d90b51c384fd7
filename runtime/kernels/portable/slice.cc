// slice: x -> x[starts:ends:steps] along `axes` (runtime/OPS.md). Attributes: axes is[], starts is[],
// ends is[], steps is[] (optional, default 1; each > 0). Starts and ends follow Python: negative values
// count from the end, and both are clamped to [0, size]. float32, int64, int32 or bool: elements are copied.
#include "kernels/common/strided.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "slice";

Status plan(const Attrs& attrs, const TensorView* in, int n_in, const TensorView* outs, int n_out, Shape* out,
            int64_t* offset, int64_t* strides) {
  DTORCH_RETURN_IF_ERROR(kernels::check_signature(DTORCH_OP_SCHEMA(slice), attrs, in, n_in, outs, n_out));
  const Shape& s = in[0].shape;
  int64_t axes[kMaxDims], starts[kMaxDims], ends[kMaxDims], steps[kMaxDims];
  int na = 0, ns = 0, ne = 0, nst = 0;
  DTORCH_RETURN_IF_ERROR(kernels::get_ints_list(kOp, attrs, "axes", kMaxDims, axes, &na, true));
  DTORCH_RETURN_IF_ERROR(kernels::get_ints_list(kOp, attrs, "starts", kMaxDims, starts, &ns, true));
  DTORCH_RETURN_IF_ERROR(kernels::get_ints_list(kOp, attrs, "ends", kMaxDims, ends, &ne, true));
  DTORCH_RETURN_IF_ERROR(kernels::get_ints_list(kOp, attrs, "steps", kMaxDims, steps, &nst, false));
  if (nst == 0) {
    nst = na;
    for (int i = 0; i < na; ++i) steps[i] = 1;
  }
  if (ns != na || ne != na || nst != na)
    return op_error(StatusCode::kInvalidModel, kOp, "axes, starts, ends and steps must have the same length, got %d, %d, %d, %d",
                    na, ns, ne, nst);
  int64_t in_strides[kMaxDims];
  kernels::contiguous_strides(s, in_strides);
  Shape o = s;
  for (int d = 0; d < s.ndim; ++d) strides[d] = in_strides[d];
  *offset = 0;
  bool seen[kMaxDims] = {};
  for (int i = 0; i < na; ++i) {
    int a = 0;
    DTORCH_RETURN_IF_ERROR(kernels::normalize_axis(kOp, "axis", axes[i], s.ndim, &a));
    if (seen[a]) return op_error(StatusCode::kInvalidModel, kOp, "axis %d appears more than once", a);
    seen[a] = true;
    if (steps[i] < 1)
      return op_error(StatusCode::kInvalidModel, kOp, "steps must be > 0, got %lld for axis %d", (long long)steps[i], a);
    const int64_t n = s.dims[a];
    int64_t b = starts[i], e = ends[i];
    if (b < 0) b += n;
    if (e < 0) e += n;
    b = b < 0 ? 0 : (b > n ? n : b);
    e = e < 0 ? 0 : (e > n ? n : e);
    // A step beyond the dimension takes one element, like a step of exactly the dimension's size.
    const int64_t step = steps[i] > n ? (n > 0 ? n : 1) : steps[i];
    o.dims[a] = e > b ? (e - b - 1) / step + 1 : 0;
    *offset += b * in_strides[a];
    strides[a] = in_strides[a] * step;
  }
  *out = o;
  return Status::Ok();
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  int64_t offset = 0, strides[kMaxDims] = {};
  *scratch_bytes = 0;
  return plan(attrs, in, n_in, nullptr, n_out, &out[0], &offset, strides);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  Shape o;
  int64_t offset = 0, strides[kMaxDims] = {};
  DTORCH_RETURN_IF_ERROR(plan(*ctx.attrs, in, n_in, out, n_out, &o, &offset, strides));
  return kernels::visit_dtype(kOp, in[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    kernels::strided_copy(ctx.pool, o, in[0].as<const T>(), offset, strides, out[0].as<T>());
    return Status::Ok();
  });
}

}  // namespace
DTORCH_REGISTER_KERNEL(slice, DType::kFloat32, infer, run);
DTORCH_REGISTER_KERNEL(slice, DType::kInt64, infer, run);
DTORCH_REGISTER_KERNEL(slice, DType::kInt32, infer, run);
DTORCH_REGISTER_KERNEL(slice, DType::kBool, infer, run);
DTORCH_REGISTER_KERNEL(slice, DType::kInt8, infer, run);
}  // namespace dtorch
