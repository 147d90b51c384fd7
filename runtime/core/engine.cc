// The heapless engine behind the C API (dtorch/dtorch.h): the loader's tables, every tensor, kernel scratch,
// prepared weights and the outputs laid out in one caller-given arena, then the nodes run one after another on the
// caller's thread. The same loader, kernels and per-node steps (core/exec.h) as the hosted Session; what differs is
// that the shapes are the file's and the tensors sit where the file's memory plan puts them.
//
// Arena layout (the arena is 64-byte aligned; each piece 8-byte aligned, data pieces 64-byte aligned), in order:
//   the dtorch_model itself | the loader's tables | per-tensor views, per-node arrays | prepared weights |
//   the outputs | the tensors (the file's plan: plan.arena_size bytes) | one scratch block (the largest node's:
//   each node's scratch lives only while it runs).
#include <cstring>
#include <new>

#include "core/carve.h"
#include "core/exec.h"
#include "dtm_generated.h"
#include "dtorch/dtorch.h"

using dtorch::Carve;
using dtorch::DType;
using dtorch::KernelContext;
using dtorch::LoadedModel;
using dtorch::Shape;
using dtorch::Status;
using dtorch::StatusCode;
using dtorch::TensorRole;
using dtorch::TensorView;
using dtorch::Text;

struct dtorch_model {
  LoadedModel m;
  dtorch::ThreadPool pool;          // the caller's thread alone
  TensorView* views = nullptr;      // per tensor, at the shapes the model runs at
  TensorView* node_in = nullptr;    // m.max_node_inputs
  TensorView* node_out = nullptr;   // m.max_node_outputs
  Shape* out_shapes = nullptr;      // m.max_node_outputs
  size_t* scratch_bytes = nullptr;  // per node
  void** prepared = nullptr;        // per node (null: nothing prepared)
  size_t* prepared_bytes = nullptr;
  void** outputs = nullptr;         // per model output
  uint8_t* scratch = nullptr;
  size_t used = 0;                  // bytes of the arena in use
  bool ran = false;                 // the last dtorch_run succeeded
};

namespace {

using ull = unsigned long long;

// No tensor may be larger than a quarter of the address space (so that sums of a few sizes never wrap on 32-bit
// targets) nor than 1 TiB.
constexpr uint64_t kMaxTensorBytes =
    (SIZE_MAX / 4) < (uint64_t{1} << 40) ? static_cast<uint64_t>(SIZE_MAX / 4) : (uint64_t{1} << 40);

int fail(dtorch_error* err, const Status& st) {
  if (err != nullptr) {
    err->code = static_cast<int>(st.code());
    dtorch::copy_cut(err->message, sizeof(err->message), st.message());
  }
  return static_cast<int>(st.code());
}

int ok(dtorch_error* err) {
  if (err != nullptr) {
    err->code = DTORCH_OK;
    err->message[0] = '\0';
  }
  return DTORCH_OK;
}

Status too_small(size_t needed, size_t given, bool exact) {
  return dtorch::error_status(StatusCode::kInvalidArgument,
                              "the arena is %zu bytes; this model needs %s%zu (give it an arena of that size)", given,
                              exact ? "" : "at least ", needed);
}

// Whether the bundled test vector's input shapes fit the declared ones (and so can be what the model runs at).
bool test_vector_fits(const LoadedModel& m) {
  if (!m.has_test_vector || m.test_inputs.size() != m.inputs.size()) return false;
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const Shape& want = m.tensors[m.inputs[i]].file_shape;
    const Shape& got = m.test_inputs[i].shape;
    if (got.ndim != want.ndim) return false;
    for (int d = 0; d < got.ndim; ++d)
      if (got.dims[d] < 1 || (want.dims[d] >= 0 && want.dims[d] != got.dims[d])) return false;
  }
  return true;
}

// The shapes the model runs at (dtorch.h): its bundled test vector's, else the file's example input shapes, else
// its declared ones when they are fixed.
Status input_shapes(const LoadedModel& m, TensorView* views) {
  const bool from_test = test_vector_fits(m);
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const dtorch::TensorInfo& ti = m.tensors[m.inputs[i]];
    Shape s = ti.file_shape;
    if (from_test) {
      s = m.test_inputs[i].shape;
    } else if (m.example_input_shapes.size() == m.inputs.size()) {
      s = m.example_input_shapes[i];
    } else {
      for (int d = 0; d < s.ndim; ++d)
        if (s.dims[d] < 0)
          return dtorch::error_status(StatusCode::kUnsupported,
                                      "input '%s' dimension %d is dynamic and the file gives no example shape; the C "
                                      "API runs a model at its exported shapes: export with example inputs "
                                      "(dt.export) or fixed shapes",
                                      ti.name, d);
    }
    DTORCH_RETURN_IF_ERROR(dtorch::check_input_size(ti.name, s, ti.dtype, kMaxTensorBytes));
    views[m.inputs[i]].shape = s;
  }
  return Status::Ok();
}

// Where each intermediate tensor lives in the tensor region: the file's plan, when the model runs at the example
// shapes it was made for (its bounds checked: every planned tensor inside plan.arena_size, 64-byte aligned; the hosted
// Session also checks that no two live tensors overlap), else one buffer per tensor.
Status place_tensors(const LoadedModel& m, const TensorView* views, int64_t* offsets_or_null, size_t* region) {
  bool use_plan = m.has_plan && m.example_input_shapes.size() == m.inputs.size();
  for (size_t i = 0; use_plan && i < m.inputs.size(); ++i) use_plan = views[m.inputs[i]].shape == m.example_input_shapes[i];
  size_t end = 0;
  for (size_t t = 0; t < m.tensors.size(); ++t) {
    const bool planned = m.tensors[t].role == TensorRole::kIntermediate;
    const size_t bytes = views[t].nbytes();
    int64_t off = -1;
    if (use_plan) {
      off = m.plan_offsets[t];
      if (!planned) {
        if (off != -1)
          return dtorch::error_status(StatusCode::kInvalidModel,
                                      "invalid model file: its memory plan places tensor %zu, which is not an "
                                      "intermediate, at offset %lld; re-export the model with dtorch",
                                      t, static_cast<long long>(off));
        continue;
      }
      if (off < 0 || off % 64 != 0 || static_cast<uint64_t>(off) > m.plan_arena_size ||
          bytes > m.plan_arena_size - static_cast<uint64_t>(off))
        return dtorch::error_status(StatusCode::kInvalidModel,
                                    "invalid model file: its memory plan puts tensor %zu (%zu bytes) at offset %lld, "
                                    "outside its %llu-byte arena or unaligned; re-export the model with dtorch",
                                    t, bytes, static_cast<long long>(off), static_cast<ull>(m.plan_arena_size));
    } else {
      if (!planned) continue;
      off = static_cast<int64_t>((end + 63) / 64 * 64);
      end = static_cast<size_t>(off) + bytes;
    }
    if (offsets_or_null != nullptr) offsets_or_null[t] = off;
  }
  *region = use_plan ? static_cast<size_t>(m.plan_arena_size) : end;
  return Status::Ok();
}

Status load(const uint8_t* bytes, size_t size, uint8_t* arena, size_t arena_bytes, dtorch::KernelPolicy policy,
            dtorch_model** out, size_t* needed) {
  size_t tables_bytes = 0;
  DTORCH_RETURN_IF_ERROR(dtorch::model_tables_bytes(bytes, size, &tables_bytes));
  Carve c{arena, arena_bytes};
  void* head = c.take(sizeof(dtorch_model), 64);
  void* tables = c.take(tables_bytes, 8);
  if (!c.fits()) {
    *needed = c.used;
    return too_small(c.used, arena_bytes, false);
  }
  dtorch_model* e = new (head) dtorch_model();
  LoadedModel& m = e->m;
  DTORCH_RETURN_IF_ERROR(dtorch::load_model(bytes, size, tables, tables_bytes, &m, policy));

  const size_t nt = m.tensors.size(), nn = m.nodes.size(), no = m.outputs.size();
  const size_t max_in = m.max_node_inputs > 0 ? static_cast<size_t>(m.max_node_inputs) : 1;
  const size_t max_out = m.max_node_outputs > 0 ? static_cast<size_t>(m.max_node_outputs) : 1;
  e->views = c.array<TensorView>(nt);
  e->node_in = c.array<TensorView>(max_in);
  e->node_out = c.array<TensorView>(max_out);
  e->out_shapes = c.array<Shape>(max_out);
  e->scratch_bytes = c.array<size_t>(nn);
  e->prepared = c.array<void*>(nn);
  e->prepared_bytes = c.array<size_t>(nn);
  e->outputs = c.array<void*>(no);
  int64_t* offsets = c.array<int64_t>(nt);
  if (!c.fits()) {
    *needed = c.used;
    return too_small(c.used, arena_bytes, false);
  }

  // Shapes and scratch, node by node, at the shapes the model runs at.
  DTORCH_RETURN_IF_ERROR(dtorch::init_views(m, e->views, kMaxTensorBytes));
  DTORCH_RETURN_IF_ERROR(input_shapes(m, e->views));
  size_t max_scratch = 0;
  for (size_t i = 0; i < nn; ++i) {
    DTORCH_RETURN_IF_ERROR(dtorch::infer_node(m, i, e->views, e->node_in, e->out_shapes, kMaxTensorBytes,
                                              kMaxTensorBytes, &e->scratch_bytes[i]));
    if (e->scratch_bytes[i] > max_scratch) max_scratch = e->scratch_bytes[i];
  }
  // Prepared weights (sizes now, contents once everything fits).
  for (size_t i = 0; i < nn; ++i) {
    DTORCH_RETURN_IF_ERROR(dtorch::prepare_node(m, i, e->node_in, nullptr, &e->prepared_bytes[i]));
    if (e->prepared_bytes[i] > kMaxTensorBytes)
      return dtorch::error_status(StatusCode::kInvalidModel, "%s: prepared weights of %zu bytes are too large",
                                  dtorch::node_label(m.nodes[i]).c_str(), e->prepared_bytes[i]);
    e->prepared[i] = e->prepared_bytes[i] > 0 ? c.take(e->prepared_bytes[i], 64) : nullptr;
  }
  for (size_t k = 0; k < no; ++k) e->outputs[k] = c.take(e->views[m.outputs[k]].nbytes(), 64);
  size_t region = 0;
  DTORCH_RETURN_IF_ERROR(place_tensors(m, e->views, offsets, &region));
  uint8_t* tensors = static_cast<uint8_t*>(c.take(region, 64));
  e->scratch = static_cast<uint8_t*>(c.take(max_scratch, 64));
  if (!c.fits()) {
    *needed = c.used;
    if (c.overflow)
      return dtorch::error_status(StatusCode::kInvalidModel, "the model needs more memory than this target can address");
    return too_small(c.used, arena_bytes, true);
  }
  e->used = c.used;
  *needed = c.used;

  for (size_t t = 0; t < nt; ++t)
    if (m.tensors[t].role == TensorRole::kIntermediate) e->views[t].data = tensors + offsets[t];
  for (size_t k = 0; k < no; ++k)
    if (m.tensors[m.outputs[k]].producer >= 0) e->views[m.outputs[k]].data = e->outputs[k];
  for (size_t i = 0; i < nn; ++i) {
    if (e->prepared_bytes[i] == 0) continue;
    size_t got = e->prepared_bytes[i];
    DTORCH_RETURN_IF_ERROR(dtorch::prepare_node(m, i, e->node_in, e->prepared[i], &got));
    if (got != e->prepared_bytes[i])
      return dtorch::error_status(StatusCode::kInternal, "%s: the kernel's prepare changed its size (%zu, then %zu)",
                                  dtorch::node_label(m.nodes[i]).c_str(), e->prepared_bytes[i], got);
  }
  *out = e;
  return Status::Ok();
}

// The name, dtype and shape of which[i] (the model's inputs or outputs, `side` naming them in the error).
int tensor_info(const dtorch_model* e, dtorch::Span<const int32_t> which, const char* side, size_t i,
                dtorch_tensor_info* info, dtorch_error* err) {
  if (e == nullptr || info == nullptr || i >= which.size())
    return fail(err, dtorch::error_status(StatusCode::kInvalidArgument, "no %s %zu (the model has %zu)", side, i,
                                          which.size()));
  const int32_t t = which[i];
  const TensorView& v = e->views[t];
  info->name = e->m.tensors[t].name;
  info->dtype = static_cast<int>(v.dtype);
  info->ndim = v.shape.ndim;
  for (int d = 0; d < DTORCH_MAX_DIMS; ++d) info->dims[d] = d < v.shape.ndim ? v.shape.dims[d] : 0;
  info->bytes = v.nbytes();
  return ok(err);
}

}  // namespace

namespace dtorch {

Status engine_arena_bytes(const uint8_t* bytes, size_t size, KernelPolicy policy, void* (*allocate)(size_t),
                          void (*release)(void*), size_t* needed) {
  size_t want = 0;
  dtorch_model* e = nullptr;
  Status st = load(bytes, size, nullptr, 0, policy, &e, &want);
  for (int round = 0; round < 3 && !st.ok() && want > 0; ++round) {
    uint8_t* arena = static_cast<uint8_t*>(allocate(want));
    if (arena == nullptr) return Status(StatusCode::kInvalidArgument, "cannot allocate a trial arena");
    size_t next = 0;
    st = load(bytes, size, arena, want, policy, &e, &next);
    release(arena);
    if (st.ok() || next <= want) break;
    want = next;
  }
  if (!st.ok()) return st;
  *needed = want;
  return Status::Ok();
}

}  // namespace dtorch

extern "C" {

const char* dtorch_code_name(int code) {
  if (code < 0 || code > static_cast<int>(StatusCode::kInternal)) return "unknown";
  return dtorch::status_code_name(static_cast<StatusCode>(code));
}

int dtorch_model_load(const void* model_bytes, size_t model_size, void* arena, size_t arena_bytes, dtorch_model** out,
                      size_t* needed, dtorch_error* err) {
  size_t need = 0;
  if (out != nullptr) *out = nullptr;
  if (needed != nullptr) *needed = 0;
  if (out == nullptr && arena != nullptr)
    return fail(err, Status(StatusCode::kInvalidArgument, "dtorch_model_load needs somewhere to put the model (out)"));
  if (arena == nullptr && arena_bytes != 0)
    return fail(err, Status(StatusCode::kInvalidArgument, "the arena is NULL but arena_bytes is not 0"));
  if (arena != nullptr && reinterpret_cast<uintptr_t>(arena) % 64 != 0)
    return fail(err, Status(StatusCode::kInvalidArgument,
                            "the arena must start at a 64-byte aligned address (e.g. alignas(64), aligned_alloc)"));
  if (model_bytes != nullptr && reinterpret_cast<uintptr_t>(model_bytes) % 64 != 0)
    return fail(err, Status(StatusCode::kInvalidArgument,
                            "the model bytes must start at a 64-byte aligned address (its weights are used in place)"));
  dtorch_model* e = nullptr;
  const Status st = load(static_cast<const uint8_t*>(model_bytes), model_size, static_cast<uint8_t*>(arena),
                         arena_bytes, dtorch::KernelPolicy::kFast, &e, &need);
  if (needed != nullptr) *needed = need;
  if (!st.ok()) return fail(err, st);
  *out = e;
  return ok(err);
}

size_t dtorch_arena_size(const dtorch_model* model) { return model != nullptr ? model->used : 0; }

size_t dtorch_num_inputs(const dtorch_model* model) { return model != nullptr ? model->m.inputs.size() : 0; }

size_t dtorch_num_outputs(const dtorch_model* model) { return model != nullptr ? model->m.outputs.size() : 0; }

int dtorch_input_info(const dtorch_model* model, size_t i, dtorch_tensor_info* info, dtorch_error* err) {
  return tensor_info(model, model != nullptr ? model->m.inputs : dtorch::Span<const int32_t>(), "input", i, info, err);
}

int dtorch_output_info(const dtorch_model* model, size_t i, dtorch_tensor_info* info, dtorch_error* err) {
  return tensor_info(model, model != nullptr ? model->m.outputs : dtorch::Span<const int32_t>(), "output", i, info,
                     err);
}

int dtorch_run(dtorch_model* model, const void* const* inputs, size_t num_inputs, dtorch_error* err) {
  if (model == nullptr) return fail(err, Status(StatusCode::kInvalidArgument, "dtorch_run: the model is NULL"));
  model->ran = false;
  const LoadedModel& m = model->m;
  if (num_inputs != m.inputs.size())
    return fail(err, dtorch::error_status(StatusCode::kInvalidArgument, "the model has %zu input(s) but %zu were given",
                                          m.inputs.size(), num_inputs));
  for (size_t i = 0; i < num_inputs; ++i) {
    TensorView& v = model->views[m.inputs[i]];
    const void* p = inputs != nullptr ? inputs[i] : nullptr;
    if (p == nullptr && v.nbytes() > 0)
      return fail(err, dtorch::error_status(StatusCode::kInvalidArgument, "input %zu ('%s') has no data (NULL)", i,
                                            m.tensors[m.inputs[i]].name));
    v.data = const_cast<void*>(p);
  }
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    KernelContext ctx;
    ctx.attrs = &m.nodes[i].attrs;
    ctx.pool = &model->pool;
    ctx.scratch = model->scratch_bytes[i] ? model->scratch : nullptr;
    ctx.scratch_bytes = model->scratch_bytes[i];
    ctx.prepared = model->prepared[i];
    ctx.prepared_bytes = model->prepared_bytes[i];
    const Status st = dtorch::run_node(m, i, model->views, model->node_in, model->node_out, ctx);
    if (!st.ok()) return fail(err, st);
  }
  // Outputs that no node produces (a model input or constant passed through) are copied.
  for (size_t k = 0; k < m.outputs.size(); ++k) {
    const TensorView& v = model->views[m.outputs[k]];
    if (m.tensors[m.outputs[k]].producer < 0 && v.nbytes() > 0) std::memcpy(model->outputs[k], v.data, v.nbytes());
  }
  model->ran = true;
  return ok(err);
}

const void* dtorch_output(const dtorch_model* model, size_t i) {
  if (model == nullptr || !model->ran || i >= model->m.outputs.size()) return nullptr;
  return model->outputs[i];
}

const void* dtorch_test_input(const dtorch_model* model, size_t i) {
  if (model == nullptr || i >= model->m.test_inputs.size() || !test_vector_fits(model->m)) return nullptr;
  return model->m.test_inputs[i].data;
}

const void* dtorch_test_output(const dtorch_model* model, size_t i) {
  if (model == nullptr || i >= model->m.test_outputs.size() || !test_vector_fits(model->m)) return nullptr;
  return model->m.test_outputs[i].data;
}

}  // extern "C"
