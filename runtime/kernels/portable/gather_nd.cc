// gather_nd: data (rank r >= 1), indices (int64, rank q >= 1) -> slices of data picked by index tuples (ONNX GatherND;
// runtime/OPS.md). Attribute: batch_dims b (0 <= b < min(q, r)): the first b dimensions of data and indices are batch
// dimensions of equal sizes. Each tuple indices[i0, .., i(q-2), :] holds k = indices.shape[-1] indices
// (1 <= k <= r - b) into data's dimensions b .. b+k-1 of its batch: out[i0, .., i(q-2), ...] =
// data[i0, .., i(b-1), indices[i0, .., i(q-2), 0], .., indices[.., k-1], ...]. The output shape is
// indices.shape[:-1] + data.shape[b + k:]. An index outside [-size, size) of its dimension is an error, checked before
// anything is written (indices may be a model input); negative indices count from the end. data is float32, int64,
// int32 or bool: slices are copied, so the output holds data's exact bits whatever the thread count.
#include <cstdint>
#include <cstring>

#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "gather_nd";

struct Plan {
  Shape out;
  int b = 0, k = 0;
};

Status plan(const Attrs& attrs, const TensorView* in, int n_in, const TensorView* outs, int n_out, Plan* p) {
  DTORCH_RETURN_IF_ERROR(kernels::check_signature(DTORCH_OP_SCHEMA(gather_nd), attrs, in, n_in, outs, n_out));
  const Shape &d = in[0].shape, &ix = in[1].shape;
  if (d.ndim < 1 || ix.ndim < 1)
    return op_error(StatusCode::kInvalidArgument, kOp,
                    "data and indices must have at least 1 dimension, got %s and %s", ::dtorch::shape_str(d).c_str(),
                    ::dtorch::shape_str(ix).c_str());
  const int64_t b = attrs.get_int("batch_dims");
  if (b < 0 || b >= d.ndim || b >= ix.ndim)
    return op_error(StatusCode::kInvalidArgument, kOp,
                    "batch_dims %lld must be less than the ranks of data %s and indices %s", static_cast<long long>(b),
                    ::dtorch::shape_str(d).c_str(), ::dtorch::shape_str(ix).c_str());
  p->b = static_cast<int>(b);
  for (int i = 0; i < p->b; ++i)
    if (d.dims[i] != ix.dims[i])
      return op_error(StatusCode::kInvalidArgument, kOp,
                      "the batch dimensions of data %s and indices %s differ (dimension %d; batch_dims %d)",
                      ::dtorch::shape_str(d).c_str(), ::dtorch::shape_str(ix).c_str(), i, p->b);
  const int64_t k = ix.dims[ix.ndim - 1];
  if (k < 1 || k > d.ndim - p->b)
    return op_error(StatusCode::kInvalidArgument, kOp,
                    "the last dimension of indices %s (the tuple length) must be in [1, %d] for data %s with batch_dims "
                    "%d, got %lld",
                    ::dtorch::shape_str(ix).c_str(), d.ndim - p->b, ::dtorch::shape_str(d).c_str(), p->b,
                    static_cast<long long>(k));
  p->k = static_cast<int>(k);
  const int rank = ix.ndim - 1 + d.ndim - p->b - p->k;
  if (rank > kMaxDims)
    return op_error(StatusCode::kInvalidArgument, kOp, "the output would have %d dimensions; at most %d are supported",
                    rank, kMaxDims);
  p->out.ndim = 0;
  for (int i = 0; i < ix.ndim - 1; ++i) p->out.dims[p->out.ndim++] = ix.dims[i];
  for (int i = p->b + p->k; i < d.ndim; ++i) p->out.dims[p->out.ndim++] = d.dims[i];
  return Status::Ok();
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  Plan p;
  DTORCH_RETURN_IF_ERROR(plan(attrs, in, n_in, nullptr, n_out, &p));
  out[0] = p.out;
  return Status::Ok();
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  Plan p;
  DTORCH_RETURN_IF_ERROR(plan(*ctx.attrs, in, n_in, out, n_out, &p));
  if (out[0].shape != p.out)
    return op_error(StatusCode::kInternal, kOp, "output has shape %s, expected %s",
                    ::dtorch::shape_str(out[0].shape).c_str(), ::dtorch::shape_str(p.out).c_str());
  const Shape& d = in[0].shape;
  int64_t dst[kMaxDims];
  kernels::contiguous_strides(d, dst);
  // tuples: every tuple of indices (batches x tuples per batch); a batch of data spans dst[b - 1] elements (all of it
  // without batch dims); a slice, prod(data.shape[b + k:]) elements.
  const int64_t tuples = in[1].shape.numel() / p.k;
  int64_t per_batch = 1;
  for (int i = p.b; i < in[1].shape.ndim - 1; ++i) per_batch *= in[1].shape.dims[i];
  const int64_t batch_span = p.b > 0 ? dst[p.b - 1] : d.numel();
  const int64_t slice = p.b + p.k < d.ndim ? dst[p.b + p.k - 1] : 1;
  const int64_t* idx = in[1].as<const int64_t>();
  for (int64_t t = 0; t < tuples; ++t)
    for (int j = 0; j < p.k; ++j) {
      const int64_t v = idx[t * p.k + j], size = d.dims[p.b + j];
      if (v < -size || v >= size)
        return op_error(StatusCode::kInvalidArgument, kOp,
                        "index %lld (position %lld of indices) is out of range for dimension %d of data %s (size %lld)",
                        static_cast<long long>(v), static_cast<long long>(t * p.k + j), p.b + j,
                        ::dtorch::shape_str(d).c_str(), static_cast<long long>(size));
    }
  if (slice == 0 || tuples == 0) return Status::Ok();
  const size_t es = dtype_size(in[0].dtype), row = static_cast<size_t>(slice) * es;
  const char* x = static_cast<const char*>(in[0].data);
  char* y = static_cast<char*>(out[0].data);
  const int64_t grain = slice >= 16384 ? 1 : 16384 / slice;
  kernels::parallel_chunks(ctx.pool, tuples, grain, [&](int64_t tb, int64_t te) {
    for (int64_t t = tb; t < te; ++t) {
      int64_t off = (t / per_batch) * batch_span;
      for (int j = 0; j < p.k; ++j) {
        const int64_t v = idx[t * p.k + j];
        off += (v < 0 ? v + d.dims[p.b + j] : v) * dst[p.b + j];
      }
      std::memcpy(y + static_cast<size_t>(t) * row, x + static_cast<size_t>(off) * es, row);
    }
  });
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(gather_nd, DType::kFloat32, infer, run);
DTORCH_REGISTER_KERNEL(gather_nd, DType::kInt64, infer, run);
DTORCH_REGISTER_KERNEL(gather_nd, DType::kInt32, infer, run);
DTORCH_REGISTER_KERNEL(gather_nd, DType::kBool, infer, run);
DTORCH_REGISTER_KERNEL(gather_nd, DType::kInt8, infer, run);
}  // namespace dtorch
