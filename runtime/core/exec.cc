// One node at a time (core/exec.h): argument binding, shape inference and its checks, prepare, run.
#include "core/exec.h"

namespace dtorch {
namespace {

using ull = unsigned long long;

// What the kernel inferred for a tensor agrees with the shape the file declares for it: the same rank, and the
// same size in every dimension the file gives as fixed (-1: dynamic, any size).
Status check_declared_shape(const NodeInfo& n, const TensorInfo& ti, const Shape& s) {
  bool ok = ti.file_shape.ndim == s.ndim;
  for (int d = 0; ok && d < s.ndim; ++d) ok = ti.file_shape.dims[d] < 0 || ti.file_shape.dims[d] == s.dims[d];
  if (ok) return Status::Ok();
  Text declared = text("[");
  for (int d = 0; d < ti.file_shape.ndim; ++d) {
    if (ti.file_shape.dims[d] < 0)
      append(&declared, d ? ", ?" : "?");
    else
      append(&declared, d ? ", %lld" : "%lld", static_cast<long long>(ti.file_shape.dims[d]));
  }
  append(&declared, "]");
  return error_status(StatusCode::kInvalidModel,
                      "invalid model file: %s computes tensor '%s' with shape %s, but the file declares %s; re-export "
                      "the model with dtorch",
                      node_label(n).c_str(), ti.name, shape_str(s).c_str(), declared.c_str());
}

}  // namespace

bool shape_within(const Shape& s, DType dt, uint64_t cap) {
  if (s.ndim < 0 || s.ndim > kMaxDims) return false;
  uint64_t bytes = dtype_size(dt);
  for (int d = 0; d < s.ndim; ++d) {
    if (s.dims[d] < 0) return false;
    const uint64_t dim = s.dims[d] == 0 ? 1 : static_cast<uint64_t>(s.dims[d]);
    if (__builtin_mul_overflow(bytes, dim, &bytes) || bytes > cap) return false;
  }
  return bytes <= cap;
}

Text node_label(const NodeInfo& n) { return text("node '%s' (%s)", n.name[0] == '\0' ? n.op : n.name, n.op); }

Status at_node(const NodeInfo& n, const Status& st) {
  return error_status(st.code(), "%s: %s", node_label(n).c_str(), st.message());
}

Status check_input_size(const char* name, const Shape& s, DType dt, uint64_t cap) {
  if (shape_within(s, dt, cap)) return Status::Ok();
  return error_status(StatusCode::kInvalidArgument,
                      "input '%s' has shape %s, larger than the %llu-byte limit on one tensor "
                      "(SessionOptions::max_tensor_bytes)",
                      name, shape_str(s).c_str(), static_cast<ull>(cap));
}

Status init_views(const LoadedModel& m, TensorView* views, uint64_t max_tensor_bytes) {
  for (size_t t = 0; t < m.tensors.size(); ++t) {
    const TensorInfo& ti = m.tensors[t];
    views[t] = TensorView();
    views[t].dtype = ti.dtype;
    if (ti.role != TensorRole::kConstant) continue;
    views[t].shape = ti.file_shape;
    views[t].data = const_cast<uint8_t*>(ti.data);
    if (!shape_within(views[t].shape, views[t].dtype, max_tensor_bytes))
      return error_status(StatusCode::kInvalidModel,
                          "constant '%s' has shape %s, larger than the %llu-byte limit on one tensor "
                          "(SessionOptions::max_tensor_bytes)",
                          ti.name, shape_str(views[t].shape).c_str(), static_cast<ull>(max_tensor_bytes));
  }
  return Status::Ok();
}

void bind_inputs(const NodeInfo& n, const TensorView* views, TensorView* node_in) {
  for (size_t k = 0; k < n.inputs.size(); ++k) node_in[k] = n.inputs[k] < 0 ? TensorView() : views[n.inputs[k]];
}

void bind_outputs(const NodeInfo& n, const TensorView* views, TensorView* node_out) {
  for (size_t k = 0; k < n.outputs.size(); ++k) node_out[k] = views[n.outputs[k]];
}

Status infer_node(const LoadedModel& m, size_t i, TensorView* views, TensorView* node_in, Shape* out_shapes,
                  uint64_t max_tensor_bytes, uint64_t max_scratch_bytes, size_t* scratch_bytes) {
  const NodeInfo& n = m.nodes[i];
  bind_inputs(n, views, node_in);
  size_t scratch = 0;
  Status st = n.kernel->infer(n.attrs, node_in, static_cast<int>(n.inputs.size()), out_shapes,
                              static_cast<int>(n.outputs.size()), &scratch);
  if (!st.ok()) return at_node(n, st);
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    const Shape& sh = out_shapes[k];
    bool ok = sh.ndim >= 0 && sh.ndim <= kMaxDims;
    for (int d = 0; ok && d < sh.ndim; ++d) ok = sh.dims[d] >= 0;
    if (!ok) return error_status(StatusCode::kInternal, "%s: the kernel inferred an invalid shape", node_label(n).c_str());
    if (!shape_within(sh, m.tensors[n.outputs[k]].dtype, max_tensor_bytes))
      return error_status(StatusCode::kInvalidModel,
                          "%s (node %zu) output %zu has shape %s, larger than the %llu-byte limit on one tensor "
                          "(SessionOptions::max_tensor_bytes); check the model's attributes and the input shapes",
                          node_label(n).c_str(), i, k, shape_str(sh).c_str(), static_cast<ull>(max_tensor_bytes));
    DTORCH_RETURN_IF_ERROR(check_declared_shape(n, m.tensors[n.outputs[k]], sh));
    views[n.outputs[k]].shape = sh;
  }
  if (scratch > max_scratch_bytes)
    return error_status(StatusCode::kInvalidModel,
                        "%s (node %zu) needs %zu bytes of scratch, more than the %llu-byte arena limit "
                        "(SessionOptions::max_arena_bytes)",
                        node_label(n).c_str(), i, scratch, static_cast<ull>(max_scratch_bytes));
  *scratch_bytes = scratch;
  return Status::Ok();
}

Status prepare_node(const LoadedModel& m, size_t i, TensorView* args, void* dst, size_t* bytes) {
  const NodeInfo& n = m.nodes[i];
  if (n.kernel->prepare == nullptr) {
    *bytes = 0;
    return Status::Ok();
  }
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    args[k] = TensorView();
    const int32_t t = n.inputs[k];
    if (t < 0 || m.tensors[t].role != TensorRole::kConstant) continue;
    args[k].dtype = m.tensors[t].dtype;
    args[k].shape = m.tensors[t].file_shape;
    args[k].data = const_cast<uint8_t*>(m.tensors[t].data);
  }
  const Status st = n.kernel->prepare(n.attrs, args, static_cast<int>(n.inputs.size()), dst, bytes);
  if (!st.ok()) return at_node(n, st);
  return Status::Ok();
}

Status run_node(const LoadedModel& m, size_t i, const TensorView* views, TensorView* node_in, TensorView* node_out,
                const KernelContext& ctx) {
  const NodeInfo& n = m.nodes[i];
  bind_inputs(n, views, node_in);
  bind_outputs(n, views, node_out);
  const Status st = n.kernel->run(ctx, node_in, static_cast<int>(n.inputs.size()), node_out,
                                  static_cast<int>(n.outputs.size()));
  if (!st.ok()) return at_node(n, st);
  return Status::Ok();
}

}  // namespace dtorch
