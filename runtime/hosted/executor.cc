// Session: owns the model bytes (memory map, aligned copy, or a borrowed buffer), the validated model, the thread
// pool, and the idle execution states (ExecState: one plan, its arena and output buffers). At load, the file's
// example input shapes go through every node and the file's memory plan is checked at them (planner.h:
// check_tensor_plan). The first Run of an execution state with a given set of input shapes infers every shape, lays
// out one arena -- the file's plan at the example shapes (kernel scratch fitted around it), the planner's
// (greedy-by-size) for other sizes -- and allocates the arena and the output buffers; later Runs of that state with
// the same shapes only bind the caller's input views and run the kernels, allocating nothing. Each Run works in the
// state its RunResult holds (taken from the idle list, or made, when it holds none), so Runs on several threads
// share only what is read-only after load (runtime.h).
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#define DTORCH_HAVE_MMAP 1
#else
#include <cstdio>
#endif

#include "core/exec.h"
#include "hosted/lock.h"
#include "core/model.h"
#include "hosted/planner.h"
#include "dtm_generated.h"
#include "dtorch/runtime.h"

#ifndef DTORCH_VERIFY_PLAN
#ifdef NDEBUG
#define DTORCH_VERIFY_PLAN 0
#else
#define DTORCH_VERIFY_PLAN 1
#endif
#endif

namespace dtorch {
namespace {

// A 64-byte aligned heap block (through the counted global operator new).
struct AlignedBlock {
  void* p = nullptr;
  size_t n = 0;
  AlignedBlock() = default;
  AlignedBlock(const AlignedBlock&) = delete;
  AlignedBlock& operator=(const AlignedBlock&) = delete;
  ~AlignedBlock() { reset(); }
  void reset() {
    if (p != nullptr) ::operator delete(p, std::align_val_t(kArenaAlign));
    p = nullptr;
    n = 0;
  }
  bool allocate(size_t bytes) {
    reset();
    n = std::max<size_t>(bytes, kArenaAlign);
    p = ::operator new(n, std::align_val_t(kArenaAlign), std::nothrow);
    return p != nullptr;
  }
};

using ull = unsigned long long;

}  // namespace

// One Run's working memory: the plan for one set of input shapes, its arena and the output buffers.
struct ExecState {
  bool planned = false;
  std::vector<Shape> planned_shapes;                  // per model input
  std::vector<TensorView> views;                      // per tensor
  std::vector<size_t> scratch_offset, scratch_bytes;  // per node
  std::vector<PlanNode> plan_nodes;                   // per node (the session's, with this plan's scratch)
  AlignedBlock arena;
  size_t arena_size = 0;
  std::vector<AlignedBlock> out_blocks;        // per model output
  std::vector<TensorView> node_in, node_out;   // per-node argument arrays (sized once)
  std::vector<Shape> out_shapes;               // a node's inferred output shapes (sized once)
  std::vector<uint64_t> blocked_in, blocked_out;  // per node: KernelContext::blocked_inputs / blocked_outputs
  uint64_t blocked_count = 0;                     // tensors blocked
};

struct Session::Impl {
  // The model bytes.
  const uint8_t* bytes = nullptr;
  size_t size = 0;
  AlignedBlock owned;
#ifdef DTORCH_HAVE_MMAP
  void* map = nullptr;
  size_t map_size = 0;
#endif
  AlignedBlock tables;                         // what load_model's LoadedModel points into
  LoadedModel m;
  std::vector<IOInfo> input_info, output_info;  // describe()
  ModelInfo info;
  std::vector<int64_t> plan_offsets;           // m.plan_offsets, for the planner
  ThreadPool* pool = nullptr;
  uint64_t max_tensor_bytes = 0, max_arena_bytes = 0;  // SessionOptions
  bool blocked_layouts = true;
  std::vector<AlignedBlock> prepared;          // per node: what its kernel's prepare kept (load time)
  std::vector<size_t> prepared_bytes;
  std::vector<PlanNode> plan_nodes;            // per node (set once at load; scratch_bytes 0)

  // Idle execution states, at most max_idle (capacity reserved at load, so handing one back allocates nothing).
  pthread_mutex_t states_mu = PTHREAD_MUTEX_INITIALIZER;
  std::vector<ExecState*> idle;
  size_t max_idle = 0;
  std::atomic<uint64_t> last_arena_size{0};
  std::atomic<uint64_t> last_blocked_tensors{0};

  ~Impl() {
    for (ExecState* st : idle) delete st;
    delete pool;
#ifdef DTORCH_HAVE_MMAP
    if (map != nullptr) munmap(map, map_size);
#endif
  }

  void describe();
  Status prepare_kernels();
  void set_plan_nodes();
  ExecState* acquire();  // an idle state, or a new one (null: out of memory)
  void release(ExecState* st);

  Status check_inputs(const TensorView* in, size_t n) const;
  Status plan(ExecState& s, const TensorView* in) const;  // infer_shapes + layout
  Status infer_shapes(ExecState& s, const Shape* in) const;
  Status layout(ExecState& s, const Shape* in) const;
  void choose_layouts(ExecState& s) const;
  std::vector<PlanTensor> plan_tensors(const ExecState& s) const;
  Status check_file_plan(const ExecState& s) const;
  Status execute(ExecState& s, const TensorView* in, double* node_seconds) const;
  // check_inputs, plan when the input shapes changed, execute (node_seconds may be null).
  Status run(ExecState& s, const TensorView* in, size_t n, double* node_seconds);
};

ExecState* Session::Impl::acquire() {
  {
    Lock lock(&states_mu);
    if (!idle.empty()) {
      ExecState* st = idle.back();
      idle.pop_back();
      return st;
    }
  }
  return new (std::nothrow) ExecState();
}

void Session::Impl::release(ExecState* st) {
  if (st == nullptr) return;
  {
    Lock lock(&states_mu);
    if (idle.size() < max_idle) {
      idle.push_back(st);
      return;
    }
  }
  delete st;
}

Status Session::Impl::check_inputs(const TensorView* in, size_t n) const {
  if (n != m.inputs.size())
    return error_status(StatusCode::kInvalidArgument, "the model has %zu input(s) but %zu were given", m.inputs.size(),
                        n);
  for (size_t i = 0; i < n; ++i) {
    const IOInfo& io = input_info[i];
    const TensorView& v = in[i];
    if (v.dtype != io.dtype)
      return error_status(StatusCode::kInvalidArgument,
                          "input '%s' has dtype %s but the model expects %s; convert it first (e.g. .astype(numpy.%s))",
                          io.name.c_str(), dtype_name(v.dtype), dtype_name(io.dtype), dtype_name(io.dtype));
    if (v.shape.ndim != static_cast<int32_t>(io.dims.size()))
      return error_status(StatusCode::kInvalidArgument, "input '%s' has %d dimensions %s but the model expects %zu",
                          io.name.c_str(), v.shape.ndim, shape_str(v.shape).c_str(), io.dims.size());
    for (size_t d = 0; d < io.dims.size(); ++d) {
      const int64_t got = v.shape.dims[d];
      if (io.dims[d] >= 0 && got != io.dims[d])
        return error_status(StatusCode::kInvalidArgument,
                            "input '%s' dimension %zu: expected size %lld but got %lld; this dimension is fixed in the "
                            "model. To accept other sizes, export with dynamic_axes={'%s': {%zu: 'name'}} (dt.export), or "
                            "import the ONNX model with that dimension dynamic (dtorch-edge import --dynamic NAME)",
                            io.name.c_str(), d, static_cast<long long>(io.dims[d]), static_cast<long long>(got),
                            io.name.c_str(), d);
      if (io.dims[d] < 0 && got < 1)
        return error_status(StatusCode::kInvalidArgument, "input '%s' dimension %zu (dynamic '%s') must be >= 1, got %lld",
                            io.name.c_str(), d, io.dim_names[d].c_str(), static_cast<long long>(got));
    }
    DTORCH_RETURN_IF_ERROR(check_input_size(io.name.c_str(), v.shape, v.dtype, max_tensor_bytes));
    if (v.data == nullptr && v.shape.numel() > 0)
      return error_status(StatusCode::kInvalidArgument, "input '%s' has no data (null pointer)", io.name.c_str());
  }
  // A dynamic dimension named in several places (two inputs' batch) takes one size.
  for (size_t i = 0; i < n; ++i) {
    const IOInfo& io = input_info[i];
    for (size_t d = 0; d < io.dims.size(); ++d) {
      if (io.dims[d] >= 0) continue;
      for (size_t j = 0; j <= i; ++j) {
        const IOInfo& jo = input_info[j];
        for (size_t e = 0; e < (j == i ? d : jo.dims.size()); ++e) {
          if (jo.dims[e] >= 0 || jo.dim_names[e] != io.dim_names[d] || in[j].shape.dims[e] == in[i].shape.dims[d]) continue;
          return error_status(StatusCode::kInvalidArgument,
                              "input '%s' dimension %zu (dynamic '%s') is %lld, but input '%s' dimension %zu gives '%s' "
                              "the size %lld; a dynamic dimension has one size in every input that names it",
                              io.name.c_str(), d, io.dim_names[d].c_str(), static_cast<long long>(in[i].shape.dims[d]),
                              jo.name.c_str(), e, io.dim_names[d].c_str(), static_cast<long long>(in[j].shape.dims[e]));
        }
      }
    }
  }
  return Status::Ok();
}

Status Session::Impl::plan(ExecState& s, const TensorView* in) const {
  std::vector<Shape> shapes(m.inputs.size());
  for (size_t i = 0; i < m.inputs.size(); ++i) shapes[i] = in[i].shape;
  DTORCH_RETURN_IF_ERROR(infer_shapes(s, shapes.data()));
  choose_layouts(s);
  return layout(s, shapes.data());
}

// Which tensors are blocked (core/kernel.h, kLayoutBlock) at the shapes infer_shapes found: an intermediate tensor
// whose shape allows it is blocked when its producer's kernel can write it blocked and every consumer's kernel can
// read it blocked; tensors a kernel ties together (an elementwise node's inputs and output) are blocked only all
// together. Model inputs and outputs stay NCHW: the caller sees the layout it gave and expects.
void Session::Impl::choose_layouts(ExecState& s) const {
  const size_t nt = m.tensors.size(), nn = m.nodes.size();
  s.blocked_in.assign(nn, 0);
  s.blocked_out.assign(nn, 0);
  s.blocked_count = 0;
  if (!blocked_layouts) return;
  bool any = false;
  for (size_t i = 0; i < nn && !any; ++i) any = m.nodes[i].kernel->layouts != nullptr;
  if (!any) return;
  std::vector<uint8_t> ok(nt, 0);
  for (size_t t = 0; t < nt; ++t) ok[t] = m.tensors[t].role == TensorRole::kIntermediate && blockable(s.views[t]);
  // Tied tensors: a union-find over tensor indices.
  std::vector<int32_t> parent(nt);
  for (size_t t = 0; t < nt; ++t) parent[t] = static_cast<int32_t>(t);
  auto find = [&](int32_t t) {
    while (parent[t] != t) t = parent[t] = parent[parent[t]];
    return t;
  };
  std::vector<TensorView>& node_in = s.node_in;
  std::vector<TensorView>& node_out = s.node_out;
  for (size_t i = 0; i < nn; ++i) {
    const NodeInfo& n = m.nodes[i];
    LayoutCaps caps;
    if (n.kernel->layouts != nullptr) {
      for (size_t k = 0; k < n.inputs.size(); ++k) node_in[k] = n.inputs[k] < 0 ? TensorView() : s.views[n.inputs[k]];
      for (size_t k = 0; k < n.outputs.size(); ++k) node_out[k] = s.views[n.outputs[k]];
      caps = n.kernel->layouts(n.attrs, node_in.data(), static_cast<int>(n.inputs.size()), node_out.data(),
                               static_cast<int>(n.outputs.size()));
    }
    int32_t first = -1;
    auto take = [&](int32_t t, uint64_t mask, size_t k) {
      if (t < 0) return;
      if (k >= 64 || !((mask >> k) & 1)) {
        ok[t] = 0;
        return;
      }
      if (!caps.tied) return;
      if (first < 0) first = t;
      parent[find(t)] = find(first);
    };
    for (size_t k = 0; k < n.inputs.size(); ++k) take(n.inputs[k], caps.inputs, k);
    for (size_t k = 0; k < n.outputs.size(); ++k) take(n.outputs[k], caps.outputs, k);
  }
  // A tensor is blocked when it and every tensor tied to it are ok.
  std::vector<uint8_t> group_ok(nt, 1), blocked(nt, 0);
  for (size_t t = 0; t < nt; ++t)
    if (!ok[t]) group_ok[find(static_cast<int32_t>(t))] = 0;
  for (size_t t = 0; t < nt; ++t) {
    blocked[t] = ok[t] && group_ok[find(static_cast<int32_t>(t))];
    s.blocked_count += blocked[t];
  }
  for (size_t i = 0; i < nn; ++i) {
    const NodeInfo& n = m.nodes[i];
    for (size_t k = 0; k < n.inputs.size() && k < 64; ++k)
      if (n.inputs[k] >= 0 && blocked[n.inputs[k]]) s.blocked_in[i] |= uint64_t{1} << k;
    for (size_t k = 0; k < n.outputs.size() && k < 64; ++k)
      if (blocked[n.outputs[k]]) s.blocked_out[i] |= uint64_t{1} << k;
  }
}

// Shapes, node by node, from the model inputs' shapes: every kernel's infer, checked against the shapes the file
// declares, and each node's scratch. Allocates nothing but the per-tensor views.
Status Session::Impl::infer_shapes(ExecState& s, const Shape* in) const {
  s.planned = false;
  s.arena.reset();
  std::vector<TensorView>& views = s.views;
  const size_t nt = m.tensors.size(), nn = m.nodes.size();
  views.assign(nt, TensorView());
  DTORCH_RETURN_IF_ERROR(init_views(m, views.data(), max_tensor_bytes));
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const TensorInfo& ti = m.tensors[m.inputs[i]];
    DTORCH_RETURN_IF_ERROR(check_input_size(ti.name, in[i], ti.dtype, max_tensor_bytes));
    views[m.inputs[i]].shape = in[i];
  }

  s.scratch_bytes.assign(nn, 0);
  s.scratch_offset.assign(nn, 0);
  s.node_in.assign(static_cast<size_t>(std::max(1, m.max_node_inputs)), TensorView());
  s.node_out.assign(static_cast<size_t>(std::max(1, m.max_node_outputs)), TensorView());
  s.out_shapes.assign(static_cast<size_t>(std::max(1, m.max_node_outputs)), Shape());
  for (size_t i = 0; i < nn; ++i)
    DTORCH_RETURN_IF_ERROR(infer_node(m, i, views.data(), s.node_in.data(), s.out_shapes.data(), max_tensor_bytes,
                                      max_arena_bytes, &s.scratch_bytes[i]));
  return Status::Ok();
}

// The planner's view of the model at the shapes infer_shapes found.
std::vector<PlanTensor> Session::Impl::plan_tensors(const ExecState& s) const {
  std::vector<PlanTensor> t(m.tensors.size());
  for (size_t i = 0; i < t.size(); ++i) {
    t[i].planned = m.tensors[i].role == TensorRole::kIntermediate;
    t[i].bytes = s.views[i].nbytes();
    t[i].dtype = s.views[i].dtype;
    t[i].shape = s.views[i].shape;
  }
  return t;
}

void Session::Impl::set_plan_nodes() {
  plan_nodes.assign(m.nodes.size(), PlanNode());
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const NodeInfo& n = m.nodes[i];
    plan_nodes[i].inplace = n.kernel->schema->inplace;
    plan_nodes[i].inputs = n.inputs.data();
    plan_nodes[i].num_inputs = n.inputs.size();
    plan_nodes[i].outputs = n.outputs.data();
    plan_nodes[i].num_outputs = n.outputs.size();
  }
}

// At the example shapes (infer_shapes has run on them): the file's plan, or what is wrong with it.
Status Session::Impl::check_file_plan(const ExecState& s) const {
  const Text why = check_tensor_plan(plan_nodes, plan_tensors(s), plan_offsets, m.plan_arena_size);
  if (why.buf[0] == '\0') return Status::Ok();
  return error_status(StatusCode::kInvalidModel,
                      "invalid model file: its memory plan for the example input shapes is wrong: %s; re-export the "
                      "model with dtorch", why.c_str());
}

// The arena for the shapes infer_shapes found: the file's plan at the example shapes (checked at load), else the
// planner's; then the allocation.
Status Session::Impl::layout(ExecState& s, const Shape* in) const {
  const size_t nt = m.tensors.size(), nn = m.nodes.size();
  if (s.plan_nodes.size() != nn) s.plan_nodes = plan_nodes;
  std::vector<PlanNode>& plan_nodes = s.plan_nodes;
  for (size_t i = 0; i < nn; ++i) plan_nodes[i].scratch_bytes = s.scratch_bytes[i];
  const std::vector<PlanTensor> tensors = plan_tensors(s);
  bool at_example = m.has_plan;
  for (size_t i = 0; at_example && i < m.inputs.size(); ++i) at_example = in[i] == m.example_input_shapes[i];
  ArenaPlan p;
  if (at_example)
    place_scratch(plan_nodes, tensors, plan_offsets, static_cast<size_t>(m.plan_arena_size), &p);
  else
    plan_arena(plan_nodes, tensors, &p);
  s.arena_size = p.arena_size;
  const size_t arena_size = s.arena_size;
#if DTORCH_VERIFY_PLAN
  if (!verify_arena_plan(plan_nodes, tensors, p))
    return Status(StatusCode::kInternal, "the memory plan has overlapping live buffers (a runtime bug)");
#endif

  // Memory.
  if (arena_size > max_arena_bytes)
    return error_status(StatusCode::kInvalidArgument,
                        "these input shapes need a %zu-byte arena, more than the %llu-byte limit "
                        "(SessionOptions::max_arena_bytes); use smaller inputs or raise the limit",
                        static_cast<size_t>(arena_size), static_cast<ull>(max_arena_bytes));
  if (!s.arena.allocate(arena_size))
    return error_status(StatusCode::kInvalidArgument,
                        "cannot allocate the %zu-byte arena for these input shapes; use smaller inputs",
                        static_cast<size_t>(arena_size));
  uint8_t* base = static_cast<uint8_t*>(s.arena.p);
  std::vector<TensorView>& views = s.views;
  for (size_t t = 0; t < nt; ++t)
    if (p.tensor_offset[t] >= 0) views[t].data = base + p.tensor_offset[t];
  for (size_t i = 0; i < nn; ++i)
    if (p.scratch_offset[i] >= 0) s.scratch_offset[i] = static_cast<size_t>(p.scratch_offset[i]);
  s.out_blocks = std::vector<AlignedBlock>(m.outputs.size());
  for (size_t k = 0; k < m.outputs.size(); ++k) {
    const int32_t t = m.outputs[k];
    if (!s.out_blocks[k].allocate(views[t].nbytes()))
      return error_status(StatusCode::kInvalidArgument, "cannot allocate %zu bytes for output '%s'", views[t].nbytes(),
                          m.tensors[t].name);
    if (m.tensors[t].producer >= 0) views[t].data = s.out_blocks[k].p;
  }
  s.planned_shapes.assign(in, in + m.inputs.size());
  s.planned = true;
  return Status::Ok();
}

// The public descriptions of the model (runtime.h: IOInfo, ModelInfo), from the file.
void Session::Impl::describe() {
  const dtm::Model* model = m.model;
  const auto* tensors = model->tensors();
  auto io_of = [&](int32_t t) {
    IOInfo io;
    io.name = m.tensors[t].name;
    io.dtype = m.tensors[t].dtype;
    const auto* shape = tensors->Get(static_cast<flatbuffers::uoffset_t>(t))->shape();
    for (int d = 0; d < m.tensors[t].file_shape.ndim; ++d) {
      io.dims.push_back(m.tensors[t].file_shape.dims[d]);
      const auto* nm = shape->Get(static_cast<flatbuffers::uoffset_t>(d))->name();
      io.dim_names.push_back(io.dims.back() >= 0 ? std::string()
                             : nm && nm->size() ? nm->str()
                                                : std::string(text("%s_dim%d", io.name.c_str(), d).c_str()));
    }
    return io;
  };
  for (int32_t t : m.inputs) input_info.push_back(io_of(t));
  for (int32_t t : m.outputs) output_info.push_back(io_of(t));
  plan_offsets.assign(m.plan_offsets.begin(), m.plan_offsets.end());
  info.format_version = model->format_version();
  info.min_runtime_version = model->min_runtime_version();
  info.opset = model->opset();
  info.producer = model->producer() ? model->producer()->str() : "";
  info.num_nodes = m.nodes.size();
  info.weights_bytes = m.weights_bytes;
  info.arena_size = model->plan() ? model->plan()->arena_size() : 0;
  info.has_test_vector = m.has_test_vector;
  if (model->op_list() != nullptr) {
    for (flatbuffers::uoffset_t i = 0; i < model->op_list()->size(); ++i)
      info.op_list.push_back(model->op_list()->Get(i)->str());
  } else {
    for (const NodeInfo& n : m.nodes) {
      const std::string key = text("%s:%s", n.op, dtype_name(n.kernel->dtype)).c_str();
      bool seen = false;
      for (const auto& k : info.op_list) seen = seen || k == key;
      if (!seen) info.op_list.push_back(key);
    }
  }
  if (model->metadata() != nullptr)
    for (flatbuffers::uoffset_t i = 0; i < model->metadata()->size(); ++i) {
      const dtm::KeyValue* kv = model->metadata()->Get(i);
      info.metadata.emplace_back(kv->key()->str(), kv->value() ? kv->value()->str() : "");
    }
}

// Load time: each kernel with a prepare hook sees its node's constant inputs and may keep a block (e.g. weights
// packed for its inner loop). Allocates only here.
Status Session::Impl::prepare_kernels() {
  prepared = std::vector<AlignedBlock>(m.nodes.size());
  prepared_bytes.assign(m.nodes.size(), 0);
  std::vector<TensorView> args(static_cast<size_t>(std::max(1, m.max_node_inputs)));
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const NodeInfo& n = m.nodes[i];
    size_t bytes = 0;
    DTORCH_RETURN_IF_ERROR(prepare_node(m, i, args.data(), nullptr, &bytes));
    if (bytes == 0) continue;
    if (bytes > max_tensor_bytes)
      return error_status(StatusCode::kInvalidArgument,
                          "%s: prepared weights of %zu bytes exceed the %llu-byte limit on one tensor "
                          "(SessionOptions::max_tensor_bytes)",
                          node_label(n).c_str(), bytes, static_cast<ull>(max_tensor_bytes));
    if (!prepared[i].allocate(bytes))
      return error_status(StatusCode::kInvalidArgument, "%s: cannot allocate %zu bytes for prepared weights",
                          node_label(n).c_str(), bytes);
    DTORCH_RETURN_IF_ERROR(prepare_node(m, i, args.data(), prepared[i].p, &bytes));
    prepared_bytes[i] = bytes;
  }
  return Status::Ok();
}

Status Session::Impl::execute(ExecState& s, const TensorView* in, double* node_seconds) const {
  std::vector<TensorView>& views = s.views;
  std::vector<TensorView>& node_in = s.node_in;
  std::vector<TensorView>& node_out = s.node_out;
  for (size_t i = 0; i < m.inputs.size(); ++i) views[m.inputs[i]].data = in[i].data;
  uint8_t* base = static_cast<uint8_t*>(s.arena.p);
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const NodeInfo& n = m.nodes[i];
    KernelContext ctx;
    ctx.attrs = &n.attrs;
    ctx.pool = pool;
    ctx.scratch = s.scratch_bytes[i] ? base + s.scratch_offset[i] : nullptr;
    ctx.scratch_bytes = s.scratch_bytes[i];
    ctx.prepared = prepared_bytes[i] ? prepared[i].p : nullptr;
    ctx.prepared_bytes = prepared_bytes[i];
    ctx.blocked_inputs = s.blocked_in[i];
    ctx.blocked_outputs = s.blocked_out[i];
    const double t0 = node_seconds != nullptr ? monotonic_seconds() : 0.0;
    DTORCH_RETURN_IF_ERROR(run_node(m, i, views.data(), node_in.data(), node_out.data(), ctx));
    if (node_seconds != nullptr)
      node_seconds[i] = monotonic_seconds() - t0;
  }
  // Outputs that no node produces (a model input or constant passed through) are copied.
  for (size_t k = 0; k < m.outputs.size(); ++k) {
    const int32_t t = m.outputs[k];
    if (m.tensors[t].producer < 0 && views[t].nbytes() > 0) std::memcpy(s.out_blocks[k].p, views[t].data, views[t].nbytes());
  }
  return Status::Ok();
}

// --- Session ------------------------------------------------------------------------------------

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

static Status finish_create(std::unique_ptr<Session::Impl> impl, const SessionOptions& options,
                            std::unique_ptr<Session>* out, Session* (*make)(std::unique_ptr<Session::Impl>)) {
  if (options.num_threads < 1 || options.num_threads > 1024)
    return error_status(StatusCode::kInvalidArgument, "num_threads must be between 1 and 1024, got %d",
                        options.num_threads);
  if (options.max_tensor_bytes == 0 || options.max_arena_bytes == 0)
    return Status(StatusCode::kInvalidArgument, "max_tensor_bytes and max_arena_bytes must be > 0");
  if (options.kernels != KernelPolicy::kFast && options.kernels != KernelPolicy::kExact &&
      options.kernels != KernelPolicy::kPortable)
    return Status(StatusCode::kInvalidArgument, "kernels must be KernelPolicy::kFast, kExact or kPortable");
  if (options.max_idle_states < 1 || options.max_idle_states > 1024)
    return error_status(StatusCode::kInvalidArgument, "max_idle_states must be between 1 and 1024, got %d",
                        options.max_idle_states);
  impl->max_idle = static_cast<size_t>(options.max_idle_states);
  impl->idle.reserve(impl->max_idle);
  impl->max_tensor_bytes = options.max_tensor_bytes;
  impl->max_arena_bytes = options.max_arena_bytes;
  impl->blocked_layouts = options.blocked_layouts;
  std::vector<const char*> exclude;
  for (const std::string& set : options.exclude_kernel_sets) {
    if (set.empty() || set == "portable")
      return error_status(StatusCode::kInvalidArgument, "exclude_kernel_sets: '%s' cannot be excluded (%s)",
                          set.c_str(), set.empty() ? "an empty name" : "the portable kernels are every operator's "
                          "fallback; kernels=\"portable\" runs only them");
    exclude.push_back(set.c_str());
  }
  size_t tables_bytes = 0;
  DTORCH_RETURN_IF_ERROR(model_tables_bytes(impl->bytes, impl->size, &tables_bytes));
  if (!impl->tables.allocate(tables_bytes))
    return error_status(StatusCode::kIOError, "cannot allocate %zu bytes for the model's tables", tables_bytes);
  DTORCH_RETURN_IF_ERROR(load_model(impl->bytes, impl->size, impl->tables.p, impl->tables.n, &impl->m,
                                    options.kernels, exclude.data(), exclude.size()));
  impl->describe();
  // The file's own example shapes must go through every node and give the shapes it declares: a file whose
  // declared tensors disagree with its kernels is refused here, before anything runs.
  impl->set_plan_nodes();
  // The state these checks infer shapes in becomes the first idle one.
  auto first = std::make_unique<ExecState>();
  if (impl->m.example_input_shapes.size() == impl->m.inputs.size()) {
    const Status st = impl->infer_shapes(*first, impl->m.example_input_shapes.data());
    if (!st.ok() && st.code() != StatusCode::kInvalidArgument) return st;
    if (!st.ok())
      return error_status(StatusCode::kInvalidModel,
                          "invalid model file: its own example input shapes do not run: %s; re-export the model "
                          "with dtorch", st.message());
    // ... and its memory plan must hold at those shapes.
    if (impl->m.has_plan) DTORCH_RETURN_IF_ERROR(impl->check_file_plan(*first));
  }
  DTORCH_RETURN_IF_ERROR(impl->prepare_kernels());
  impl->pool = new ThreadPool(options.num_threads);
  impl->idle.push_back(first.release());
  out->reset(make(std::move(impl)));
  return Status::Ok();
}

Status Session::Create(const std::string& path, const SessionOptions& options, std::unique_ptr<Session>* out) {
  auto impl = std::make_unique<Impl>();
#ifdef DTORCH_HAVE_MMAP
  // O_NONBLOCK: opening a FIFO without a writer would block forever; on a regular file it changes nothing.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return error_status(StatusCode::kIOError, "cannot open model file '%s': %s", path.c_str(), std::strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    ::close(fd);
    const char* kind = S_ISDIR(sb.st_mode) ? "a directory" : S_ISFIFO(sb.st_mode) ? "a FIFO (named pipe)"
                       : S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode) ? "a device" : "not a regular file";
    return error_status(StatusCode::kIOError, "model path '%s' is %s; give the .dtm file itself", path.c_str(), kind);
  }
  const size_t size = static_cast<size_t>(sb.st_size);
  if (size == 0) {
    ::close(fd);
    return error_status(StatusCode::kInvalidModel, "invalid model file: '%s' is empty", path.c_str());
  }
  void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p != MAP_FAILED) {
    impl->map = p;
    impl->map_size = size;
    impl->bytes = static_cast<const uint8_t*>(p);
    impl->size = size;
  } else {  // fall back to reading the file
    if (!impl->owned.allocate(size)) {
      ::close(fd);
      return error_status(StatusCode::kIOError, "cannot allocate %zu bytes to read '%s'", size, path.c_str());
    }
    size_t got = 0;
    while (got < size) {
      const ssize_t r = ::read(fd, static_cast<uint8_t*>(impl->owned.p) + got, size - got);
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    if (got != size) {
      ::close(fd);
      return error_status(StatusCode::kIOError, "cannot read model file '%s'", path.c_str());
    }
    impl->bytes = static_cast<const uint8_t*>(impl->owned.p);
    impl->size = size;
  }
  ::close(fd);
#else
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return error_status(StatusCode::kIOError, "cannot open model file '%s'", path.c_str());
  std::fseek(f, 0, SEEK_END);
  const long len = std::ftell(f);
  std::fseek(f, 0, SEEK_SET);
  if (len <= 0 || !impl->owned.allocate(static_cast<size_t>(len)) ||
      std::fread(impl->owned.p, 1, static_cast<size_t>(len), f) != static_cast<size_t>(len)) {
    std::fclose(f);
    return error_status(StatusCode::kIOError, "cannot read model file '%s'", path.c_str());
  }
  std::fclose(f);
  impl->bytes = static_cast<const uint8_t*>(impl->owned.p);
  impl->size = static_cast<size_t>(len);
#endif
  return finish_create(std::move(impl), options, out, [](std::unique_ptr<Impl> i) { return new Session(std::move(i)); });
}

Status Session::CreateFromBuffer(const void* data, size_t size, const SessionOptions& options,
                                 std::unique_ptr<Session>* out) {
  auto impl = std::make_unique<Impl>();
  if (data == nullptr || size == 0)
    return Status(StatusCode::kInvalidModel, "invalid model file: the buffer is empty");
  if (reinterpret_cast<uintptr_t>(data) % kArenaAlign == 0) {
    impl->bytes = static_cast<const uint8_t*>(data);
  } else {  // weights must be 64-byte aligned: copy once
    if (!impl->owned.allocate(size))
      return error_status(StatusCode::kIOError, "cannot allocate %zu bytes for the model", size);
    std::memcpy(impl->owned.p, data, size);
    impl->bytes = static_cast<const uint8_t*>(impl->owned.p);
  }
  impl->size = size;
  return finish_create(std::move(impl), options, out, [](std::unique_ptr<Impl> i) { return new Session(std::move(i)); });
}

const std::vector<IOInfo>& Session::inputs() const { return impl_->input_info; }
const std::vector<IOInfo>& Session::outputs() const { return impl_->output_info; }
const ModelInfo& Session::info() const { return impl_->info; }
std::vector<Session::NodeKernel> Session::node_kernels() const {
  std::vector<NodeKernel> out;
  out.reserve(impl_->m.nodes.size());
  for (const auto& n : impl_->m.nodes) out.push_back(NodeKernel{n.op, n.kernel->dtype, n.kernel->kernel_set});
  return out;
}

uint64_t Session::arena_bytes() const { return impl_->last_arena_size.load(std::memory_order_relaxed); }
uint64_t Session::blocked_tensors() const { return impl_->last_blocked_tensors.load(std::memory_order_relaxed); }

Status Session::Impl::run(ExecState& s, const TensorView* in, size_t n, double* node_seconds) {
  DTORCH_RETURN_IF_ERROR(check_inputs(in, n));
  bool same = s.planned;
  for (size_t i = 0; same && i < n; ++i) same = s.planned_shapes[i] == in[i].shape;
  if (!same) {
    DTORCH_RETURN_IF_ERROR(plan(s, in));
    last_arena_size.store(s.arena_size, std::memory_order_relaxed);
    last_blocked_tensors.store(s.blocked_count, std::memory_order_relaxed);
  }
  return execute(s, in, node_seconds);
}

Status Session::RunInto(const TensorView* inputs, size_t num_inputs, double* node_seconds, RunResult* result) {
  if (result == nullptr) return Status(StatusCode::kInvalidArgument, "Run needs a RunResult for the outputs");
  if (result->owner_ != this) {  // a new result, or one another session filled: take one of this session's states
    result->reset();
    result->state_ = impl_->acquire();
    if (result->state_ == nullptr)
      return Status(StatusCode::kInvalidArgument, "cannot allocate an execution state for this run");
    result->owner_ = this;
  }
  result->ok_ = false;
  const Status st = impl_->run(*result->state_, inputs, num_inputs, node_seconds);
  result->ok_ = st.ok();
  return st;
}

Status Session::Run(const TensorView* inputs, size_t num_inputs, RunResult* result) {
  return RunInto(inputs, num_inputs, nullptr, result);
}

Status Session::RunProfiled(const TensorView* inputs, size_t num_inputs, double* node_seconds, RunResult* result) {
  if (node_seconds == nullptr) return Status(StatusCode::kInvalidArgument, "RunProfiled needs a node_seconds array");
  return RunInto(inputs, num_inputs, node_seconds, result);
}

// --- RunResult ----------------------------------------------------------------------------------

RunResult::~RunResult() { reset(); }

RunResult::RunResult(RunResult&& other) noexcept : owner_(other.owner_), state_(other.state_), ok_(other.ok_) {
  other.owner_ = nullptr;
  other.state_ = nullptr;
  other.ok_ = false;
}

RunResult& RunResult::operator=(RunResult&& other) noexcept {
  if (this != &other) {
    reset();
    owner_ = other.owner_;
    state_ = other.state_;
    ok_ = other.ok_;
    other.owner_ = nullptr;
    other.state_ = nullptr;
    other.ok_ = false;
  }
  return *this;
}

void RunResult::reset() {
  if (owner_ != nullptr) owner_->impl_->release(state_);
  owner_ = nullptr;
  state_ = nullptr;
  ok_ = false;
}

size_t RunResult::num_outputs() const { return owner_ != nullptr ? owner_->impl_->m.outputs.size() : 0; }

TensorView RunResult::output(size_t i) const {
  if (!ok_ || i >= num_outputs()) return TensorView();
  const ExecState& s = *state_;
  TensorView v = s.views[owner_->impl_->m.outputs[i]];
  v.data = s.out_blocks[i].p;
  return v;
}

uint64_t RunResult::arena_bytes() const { return ok_ ? state_->arena_size : 0; }

Status Session::TestVector(std::vector<std::vector<uint8_t>>* inputs, std::vector<Shape>* input_shapes,
                           std::vector<std::vector<uint8_t>>* outputs, std::vector<Shape>* output_shapes) const {
  const LoadedModel& m = impl_->m;
  if (!m.has_test_vector)
    return Status(StatusCode::kInvalidArgument,
                  "the model has no bundled test vector; export with dt.export(..., bundle_example=True)");
  inputs->clear();
  outputs->clear();
  input_shapes->clear();
  output_shapes->clear();
  for (const TestTensor& t : m.test_inputs) {
    inputs->emplace_back(t.data, t.data + t.bytes);
    input_shapes->push_back(t.shape);
  }
  for (const TestTensor& t : m.test_outputs) {
    outputs->emplace_back(t.data, t.data + t.bytes);
    output_shapes->push_back(t.shape);
  }
  return Status::Ok();
}

}  // namespace dtorch
