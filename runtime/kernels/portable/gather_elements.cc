// gather_elements: data, index (int64 or int32, data's rank) -> y of index's shape and data's dtype, y[i0, .., ik, ..]
// = data[i0, .., index[i0, .., ik, ..], ..] with the index at dimension `axis` (torch.gather, ONNX GatherElements;
// runtime/OPS.md). Attribute: axis i (non-negative in a model file; the kernel also takes a negative one). Every
// dimension of index but `axis` is at most data's (infer refuses the rest: ONNX leaves them undefined, torch refuses
// them). An index outside [-size, size) of data's `axis` is an error, checked before anything is written (index may be
// a model input); negative indices count from the end. data is float32, int64, int32 or bool: elements are copied, so y
// holds data's exact bits. One kernel per data dtype serves both index dtypes. Threads split the output into fixed
// chunks; each element is one copy, so the result is the same for any thread count.
#include <cstdint>

#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "gather_elements";

Status plan(const Attrs& attrs, const TensorView* in, int n_in, const TensorView* outs, int n_out, Shape* out,
            int* axis) {
  DTORCH_RETURN_IF_ERROR(kernels::check_signature(DTORCH_OP_SCHEMA(gather_elements), attrs, in, n_in, outs, n_out));
  const Shape &d = in[0].shape, &ix = in[1].shape;
  if (d.ndim < 1)
    return op_error(StatusCode::kInvalidArgument, kOp, "data must have at least 1 dimension, got a scalar");
  if (ix.ndim != d.ndim)
    return op_error(StatusCode::kInvalidArgument, kOp, "index must have data's rank %d, got shape %s (data %s)", d.ndim,
                    ::dtorch::shape_str(ix).c_str(), ::dtorch::shape_str(d).c_str());
  DTORCH_RETURN_IF_ERROR(kernels::normalize_axis(kOp, "axis", attrs.get_int("axis"), d.ndim, axis));
  for (int k = 0; k < d.ndim; ++k)
    if (k != *axis && ix.dims[k] > d.dims[k])
      return op_error(StatusCode::kInvalidArgument, kOp,
                      "index %s is larger than data %s in dimension %d (only the axis %d may be larger)",
                      ::dtorch::shape_str(ix).c_str(), ::dtorch::shape_str(d).c_str(), k, *axis);
  *out = ix;
  return Status::Ok();
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  int axis = 0;
  return plan(attrs, in, n_in, nullptr, n_out, &out[0], &axis);
}

// The first index outside [-size, size), as an error; none: Ok.
template <typename I>
Status check_range(const I* idx, int64_t n, int64_t size, int axis) {
  for (int64_t i = 0; i < n; ++i)
    if (static_cast<int64_t>(idx[i]) < -size || static_cast<int64_t>(idx[i]) >= size)
      return op_error(StatusCode::kInvalidArgument, kOp,
                      "index %lld (position %lld of index) is out of range for axis %d of size %lld",
                      static_cast<long long>(idx[i]), static_cast<long long>(i), axis, static_cast<long long>(size));
  return Status::Ok();
}

template <typename T, typename I>
void gather(ThreadPool* pool, const T* x, const Shape& ds, const I* idx, const Shape& is, int axis, T* y) {
  int64_t dst[kMaxDims];
  kernels::contiguous_strides(ds, dst);
  const int nd = is.ndim;
  const int64_t n = is.numel(), size = ds.dims[axis], astride = dst[axis];
  kernels::parallel_chunks(pool, n, 16384, [&](int64_t b, int64_t e) {
    // The multi-index of output element b, and the offset in data of its position without the axis term.
    int64_t pos[kMaxDims];
    int64_t rem = b, base = 0;
    for (int k = nd - 1; k >= 0; --k) {
      pos[k] = rem % is.dims[k];
      rem /= is.dims[k];
      if (k != axis) base += pos[k] * dst[k];
    }
    for (int64_t i = b; i < e; ++i) {
      const int64_t j = static_cast<int64_t>(idx[i]);
      y[i] = x[base + (j < 0 ? j + size : j) * astride];
      for (int k = nd - 1; k >= 0; --k) {  // advance the multi-index (the axis adds nothing to base)
        const int64_t step = k == axis ? 0 : dst[k];
        if (++pos[k] < is.dims[k]) {
          base += step;
          break;
        }
        base -= step * (pos[k] - 1);
        pos[k] = 0;
      }
    }
  });
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  Shape o;
  int axis = 0;
  DTORCH_RETURN_IF_ERROR(plan(*ctx.attrs, in, n_in, out, n_out, &o, &axis));
  if (out[0].shape != o)
    return op_error(StatusCode::kInternal, kOp, "output has shape %s, expected %s",
                    ::dtorch::shape_str(out[0].shape).c_str(), ::dtorch::shape_str(o).c_str());
  const int64_t n = o.numel(), size = in[0].shape.dims[axis];
  const auto with_index = [&](auto itag) {
    using I = decltype(itag);
    const I* idx = in[1].as<const I>();
    DTORCH_RETURN_IF_ERROR(check_range(idx, n, size, axis));
    return kernels::visit_dtype(kOp, in[0].dtype, [&](auto tag) {
      using T = decltype(tag);
      gather(ctx.pool, in[0].as<const T>(), in[0].shape, idx, o, axis, out[0].as<T>());
      return Status::Ok();
    });
  };
  if (in[1].dtype == DType::kInt64) return with_index(int64_t{});
  return with_index(int32_t{});  // check_signature: int64 or int32
}

}  // namespace
DTORCH_REGISTER_KERNEL(gather_elements, DType::kFloat32, infer, run);
DTORCH_REGISTER_KERNEL(gather_elements, DType::kInt64, infer, run);
DTORCH_REGISTER_KERNEL(gather_elements, DType::kInt32, infer, run);
DTORCH_REGISTER_KERNEL(gather_elements, DType::kBool, infer, run);
DTORCH_REGISTER_KERNEL(gather_elements, DType::kInt8, infer, run);
}  // namespace dtorch
