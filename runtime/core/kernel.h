// The kernel interface: every operator kernel is one file in kernels/<set>/ that defines an infer
// function (output shapes and scratch bytes from input shapes and attributes) and a run function
// (compute into caller-owned outputs), and ends with one DTORCH_REGISTER_KERNEL line.
// Kernels never allocate: outputs and scratch memory come from the executor's planned arena.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/ops_generated.h"
#include "dtorch/status.h"
#include "dtorch/types.h"

namespace dtorch {

class ThreadPool;

// Read-only access to a node's attributes (backed by the .dtm FlatBuffer; no copies, no allocation).
class Attrs {
 public:
  Attrs() = default;
  Attrs(const void* node, const OpSchema* schema) : node_(node), schema_(schema) {}
  // Whether the file gives the attribute.
  bool has(const char* name) const;
  // The file's value, else the catalogue's default (AttrSpec::default_*), else 0 / "" (an attribute without a
  // default is required, and the loader refuses a node without it). The loader has checked every type.
  int64_t get_int(const char* name) const;
  double get_float(const char* name) const;  // also reads an int attribute
  const char* get_string(const char* name) const;  // valid as long as the model bytes are
  // Copies up to `cap` values into `out`; returns how many the file's (else the default) list has, or -1 when the
  // file leaves it out and the catalogue has no default (its meaning is then the kernel's, e.g. stride = kernel).
  int get_ints(const char* name, int64_t* out, int cap) const;
  int get_floats(const char* name, double* out, int cap) const;

 private:
  const AttrSpec* spec(const char* name) const;
  const void* node_ = nullptr;       // const dtm::Node*
  const OpSchema* schema_ = nullptr;  // the node's operator (the defaults)
};

// Blocked layout ("NCHW16c"). A 4-D float32 tensor (N, C, H, W) with C a multiple of kLayoutBlock may live, between
// two kernels that both take it, as N x C/16 x H x W x 16: element (n, c, h, w) at
// (((n * C/16 + c / 16) * H + h) * W + w) * 16 + c % 16 -- the same bytes and the same logical shape (TensorView keeps
// (N, C, H, W)). A vector of 16 channels at one position is then one aligned load or store: convolutions broadcast
// each position's input and store their tiles without transposing, and their inputs' rows of 16-channel groups do
// not fall into the few L1 sets that 64 channel planes of a power-of-two-ish size share. Which tensors are blocked
// is the session's choice (executor.cc: a tensor is blocked when its producer and every consumer take it, it is
// neither a model input nor a model output, and SessionOptions::blocked_layouts is on), made again for every set of
// input shapes; a kernel sees it in KernelContext::blocked_inputs / blocked_outputs. Blocking never changes a
// result: a kernel gives the same bits for either layout of its tensors.
constexpr int64_t kLayoutBlock = 16;

// What a kernel can take for one node (its attributes and inferred shapes): bit i of `inputs` says input i may be
// blocked, bit k of `outputs` that output k may be (a kernel asks only for 4-D float32 tensors whose channel count is
// a multiple of kLayoutBlock; the session checks it again). `tied`: the tensors named take one layout together (an
// elementwise kernel that reads and writes them as flat arrays: all blocked, or none).
struct LayoutCaps {
  uint64_t inputs = 0;
  uint64_t outputs = 0;
  bool tied = false;
};
using LayoutFn = LayoutCaps (*)(const Attrs& attrs, const TensorView* inputs, int n_in, const TensorView* outputs,
                                int n_out);

// Whether a tensor may be stored blocked at all: 4-D float32 with whole 16-channel groups. Out of line (core/
// registry.cc): an inline copy emitted by an ISA kernel set's object could be the one the linker keeps.
bool blockable(const TensorView& t);

struct KernelContext {
  const Attrs* attrs = nullptr;
  ThreadPool* pool = nullptr;   // never null at run time; pool->size() >= 1
  void* scratch = nullptr;      // `scratch_bytes` from infer, 64-byte aligned
  size_t scratch_bytes = 0;
  const void* prepared = nullptr;  // what the kernel's prepare wrote at load (null: no prepare, or it declined)
  size_t prepared_bytes = 0;
  // Bit i: input i (outputs: output i) is in the blocked layout (kLayoutBlock). Only bits the kernel's LayoutCaps
  // allowed for this node are ever set; 0 for kernels without a layouts function.
  uint64_t blocked_inputs = 0;
  uint64_t blocked_outputs = 0;
};

// infer: fill `out_shapes` (n_out entries) and `*scratch_bytes`; return an error naming what is wrong
// (e.g. "conv2d: input has 4 channels but the weight expects 3").
using InferFn = Status (*)(const Attrs& attrs, const TensorView* inputs, int n_in, Shape* out_shapes, int n_out,
                           size_t* scratch_bytes);
// run: compute. Inputs that are absent (optional, -1 in the file) are a default TensorView (data == nullptr,
// rank 0) in both infer and run.
using RunFn = Status (*)(const KernelContext& ctx, const TensorView* inputs, int n_in, TensorView* outputs,
                         int n_out);

// prepare (optional): called once per node when a session loads, with the node's constant inputs (weights; every
// other input is a default TensorView, data == nullptr). First with dst == nullptr: set *bytes to what the kernel
// wants to keep (0: nothing, e.g. the weight is not a constant); then, if *bytes > 0, with dst (64-byte aligned,
// *bytes long) to fill, e.g. with weights re-packed for its inner loop. run finds it in ctx.prepared. A kernel must
// still run correctly without it (ctx.prepared == nullptr), and infer's scratch must cover that case.
using PrepareFn = Status (*)(const Attrs& attrs, const TensorView* inputs, int n_in, void* dst, size_t* bytes);

// How many inputs and outputs a node of the operator has (its schema). The loader refuses a node outside it,
// so a kernel may read every required input (it is never absent) and every output it declares.
struct KernelArity {
  int min_inputs;            // required inputs (slots 0 .. min_inputs-1 unless marked optional)
  int max_inputs;            // -1: variadic (any count >= min_inputs, up to kMaxNodeArity)
  uint64_t optional_inputs;  // bit i set: input i may be absent (-1 in the file, None in run_kernel)
  int num_outputs;
};

// Kernel sets: "portable" (kernels/portable/, rank 0, always built: the reference and the fallback) and
// per-architecture sets (kernels/<isa>/) that register under the same operator names only when built for that
// architecture and when the CPU they run on supports them, at the rank their kernel_set.json names (the build passes
// it as DTORCH_KERNEL_RANK; dtorch/edge/kernel_sets.py): the highest-ranked kernel the policy allows runs.
constexpr int kPortableKernelRank = 0;

struct KernelDef {
  const char* op;    // the operator name (= schema->name)
  DType dtype;       // the dtype of the first input this kernel handles
  InferFn infer;
  RunFn run;
  KernelArity arity;
  const char* kernel_set;  // "portable", "x86", ...
  int priority;            // find_kernel returns the highest-priority kernel of an (op, dtype)
  // Whether the kernel gives the portable kernel's bits on every input (the "exact" policy uses only these);
  // false for sets that use FMA or another accumulation order (within their documented tolerance).
  bool bit_exact = true;
  PrepareFn prepare = nullptr;  // see PrepareFn
  // The operator's schema (core/ops_generated.h, from the catalogue): attributes, dtypes, in-place rule. The
  // registration macros fill op and arity from it.
  const OpSchema* schema = nullptr;
  // Which of a node's tensors the kernel can take in the blocked layout (null: none; see LayoutCaps).
  LayoutFn layouts = nullptr;
};

// The arity of an operator, from its schema.
constexpr KernelArity schema_arity(const OpSchema& s) {
  return KernelArity{s.min_inputs, s.max_inputs, s.optional_inputs, s.num_outputs};
}

// Checks a node's input and output counts against the kernel's arity. `absent` has bit i set when input i
// is absent (only the first 64 inputs can be absent). The error names the operator, not the node (the
// caller adds where the node is).
Status check_kernel_arity(const KernelDef& def, int n_in, uint64_t absent, int n_out);

// The registry: kernels register themselves at static-initialization time. Several kernel sets may register
// the same (op, dtype) at different priorities; the same (op, dtype) twice at one priority (or twice in one
// set) is a build bug and stops the process at start-up.
//
// Each registration is a KernelEntry with static storage in the kernel's own file (constant-initialized, so it
// exists before any dynamic initializer runs) that register_kernel links into the registry's list: the registry
// itself holds two pointers, whatever the number of kernels, and nothing is allocated.
struct KernelEntry {
  KernelDef def;
  const KernelEntry* next;  // set by register_kernel
};
bool register_kernel(KernelEntry* entry);
// The kernel to run: the highest-priority one registered for (op, dtype) that the policy allows, or null.
const KernelDef* find_kernel(const char* op, DType dtype, KernelPolicy policy = KernelPolicy::kFast);
// The same, skipping the kernel sets named in exclude[0 .. n_exclude).
const KernelDef* find_kernel(const char* op, DType dtype, KernelPolicy policy, const char* const* exclude,
                             size_t n_exclude);
// The kernel of one kernel set (e.g. "portable": tests compare optimized sets against it; optimized kernels
// delegate the cases they do not handle to it), or null.
const KernelDef* find_kernel_in_set(const char* op, DType dtype, const char* kernel_set);
// All registered kernels of every set, in registration order (for --info and tests): walk from the first entry
// through ->next; null when none is registered.
const KernelEntry* registered_kernels();

#define DTORCH_KERNEL_CONCAT_(a, b) a##b
#define DTORCH_KERNEL_CONCAT(a, b) DTORCH_KERNEL_CONCAT_(a, b)
// The schema of operator `op` (an identifier: conv2d -> ::dtorch::ops::op_conv2d, generated from the catalogue).
#define DTORCH_OP_SCHEMA(op) ::dtorch::ops::DTORCH_KERNEL_CONCAT(op_, op)
// DTORCH_REGISTER_KERNEL(conv2d, DType::kFloat32, infer, run);
// The operator is named by its catalogue identifier; its name, arity, attributes and dtypes come from the schema.
// (The portable kernel set; per-architecture sets use their own macro, e.g. kernels/x86/x86.h.)
#define DTORCH_REGISTER_KERNEL(op, dtype, infer, run)                                                          \
  static ::dtorch::KernelEntry DTORCH_KERNEL_CONCAT(dtorch_kernel_entry_, __LINE__){                            \
      ::dtorch::KernelDef{DTORCH_OP_SCHEMA(op).name, dtype, infer, run,                                         \
                          ::dtorch::schema_arity(DTORCH_OP_SCHEMA(op)), "portable",                             \
                          ::dtorch::kPortableKernelRank, true, nullptr, &DTORCH_OP_SCHEMA(op)},                 \
      nullptr};                                                                                                 \
  static const bool DTORCH_KERNEL_CONCAT(dtorch_kernel_registered_, __LINE__) =                                 \
      ::dtorch::register_kernel(&DTORCH_KERNEL_CONCAT(dtorch_kernel_entry_, __LINE__))

// A small fixed-size thread pool (hosted builds; one thread elsewhere). parallel_for splits [0, n) into contiguous chunks in a fixed way that depends
// only on n and the pool size, and the threads (the caller included) claim chunks dynamically, each thread those of
// its own contiguous share first (thread 0, the caller, the first share), so kernels that split consecutive nodes
// alike mostly read what their own core wrote; each index is processed exactly once, by any thread. Kernels must
// make results independent of the split and of which thread runs a chunk (no cross-chunk reductions in float, no
// per-thread state keyed by the chunk).
class ThreadPool {
 public:
  // The caller's thread alone: no threads, nothing allocated (what the heapless engine runs kernels on). Defined
  // with the rest of the pool by the platform layer: hosted/threadpool.cc, or a bare-metal build's serial pool.
  ThreadPool();
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  int size() const;
  void parallel_for(int64_t n, void (*fn)(void* arg, int64_t begin, int64_t end), void* arg);

  template <typename F>
  void parallel_for(int64_t n, F&& f) {
    using Fn = std::remove_reference_t<F>;
    parallel_for(n, [](void* a, int64_t b, int64_t e) { (*static_cast<Fn*>(a))(b, e); }, &f);
  }

  struct Impl;

 private:
  Impl* impl_;
};

}  // namespace dtorch
