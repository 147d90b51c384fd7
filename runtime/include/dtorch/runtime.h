// The public C++ API of the DTorch runtime: load a .dtm model and run it.
//
// Ownership: a Session owns the model bytes (read or memory-mapped from a file) or borrows a caller's
// buffer (CreateFromBuffer: the buffer must outlive the Session). Weights are used in place from those
// bytes. Input views passed to Run are read during Run only. A Run's outputs live in the RunResult it filled and
// stay valid until that RunResult runs again, is reset or destroyed.
// Memory: a RunResult holds one execution state (the plan for its input shapes, the arena, the output buffers).
// The first Run with a given set of input shapes plans and allocates them; later Runs with the same shapes and the
// same RunResult allocate nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dtorch/status.h"
#include "dtorch/types.h"
#include "dtorch/version.h"

namespace dtorch {


struct SessionOptions {
  int num_threads = 1;  // >= 1; conv/matmul kernels split their work; results are identical for any count
  // Caps that keep a model (or hostile file) from asking for absurd memory: any one tensor (inputs, constants,
  // every inferred output, a node's scratch) and the planned arena. A shape over a cap is refused with an
  // error naming the node; raise the caps for models that really need more.
  uint64_t max_tensor_bytes = uint64_t{1} << 30;  // 1 GiB
  uint64_t max_arena_bytes = uint64_t{4} << 30;   // 4 GiB
  // Which kernel sets may run (types.h): kFast (default) the fastest this CPU has; kExact only kernels with the
  // portable kernels' bits (use it to compare a host result with a board's bit for bit); kPortable only those.
  KernelPolicy kernels = KernelPolicy::kFast;
  // Kernel sets the session may not take (e.g. {"avx512"}: the avx2 set on an AVX-512 CPU, to time both); each
  // node then runs the best kernel of the others the policy allows. "portable" cannot be excluded (it is every
  // operator's fallback); a name no registered kernel has changes nothing.
  std::vector<std::string> exclude_kernel_sets;
  // Execution states a session keeps for later Runs once their RunResults are done with them (1 .. 1024). A Run
  // whose RunResult holds none takes an idle one, or makes one when every kept state is in use (Runs on several
  // threads at once); a state handed back when this many are idle is freed.
  int max_idle_states = 4;
  // Whether tensors between kernels that both take it may be stored in the blocked layout (NCHW16c, core/kernel.h:
  // convolution chains on the avx512 set). Results are the same bits either way; off keeps every tensor NCHW
  // (to compare, or to time the difference).
  bool blocked_layouts = true;
};

struct IOInfo {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> dims;            // -1 for a dynamic dimension
  std::vector<std::string> dim_names;   // "" for a fixed dimension, the axis name otherwise
};

struct ModelInfo {
  uint32_t format_version = 0;
  uint32_t min_runtime_version = 0;
  uint32_t opset = 0;
  std::string producer;
  std::vector<std::string> op_list;
  uint64_t arena_size = 0;              // as planned at export (example shapes)
  uint64_t weights_bytes = 0;
  size_t num_nodes = 0;
  bool has_test_vector = false;
  std::vector<std::pair<std::string, std::string>> metadata;
};

// Seconds on a monotonic clock (CLOCK_MONOTONIC): differences time runs; the origin is unspecified.
double monotonic_seconds();

class Session;
struct ExecState;  // executor.cc

// The outputs of a Run and the execution state they were computed in (plan, arena, output buffers). Reusing one
// RunResult for the next Run keeps its state (no planning, no allocation when the shapes repeat); destroying or
// resetting it hands the state back to the session for the next caller. A RunResult must not outlive its
// Session, and is used by one thread at a time (like any object without a lock).
class RunResult {
 public:
  RunResult() = default;
  ~RunResult();
  RunResult(RunResult&& other) noexcept;
  RunResult& operator=(RunResult&& other) noexcept;
  RunResult(const RunResult&) = delete;
  RunResult& operator=(const RunResult&) = delete;

  // After a successful Run: the model's outputs (num_outputs() of them, in outputs() order), else empty views.
  size_t num_outputs() const;
  TensorView output(size_t i) const;
  // Bytes of the arena this result's plan laid out (0 before a successful Run).
  uint64_t arena_bytes() const;
  // Hands the execution state back to its session now.
  void reset();

 private:
  friend class Session;
  Session* owner_ = nullptr;
  ExecState* state_ = nullptr;
  bool ok_ = false;  // the last Run into it succeeded
};

// Threads: every method of a Session may be called from any number of threads at once. The loaded model, its
// weights and prepared kernels are read-only after Create and shared by every Run; each Run works in the execution
// state of its own RunResult (SessionOptions::max_idle_states), so Runs on different threads run in parallel. With
// num_threads > 1 the session's thread pool serves one Run at a time: a Run that finds it busy runs its kernels on
// its own thread (the same bits: results never depend on how work is split). Separate Sessions share nothing.
class Session {
 public:
  static Status Create(const std::string& path, const SessionOptions& options, std::unique_ptr<Session>* out);
  static Status CreateFromBuffer(const void* data, size_t size, const SessionOptions& options,
                                 std::unique_ptr<Session>* out);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::vector<IOInfo>& inputs() const;
  const std::vector<IOInfo>& outputs() const;
  const ModelInfo& info() const;

  // Run with one view per model input, in inputs() order; the outputs land in *result. Checks dtypes and shapes
  // (fixed dims must match; dynamic dims may take any size >= 1) and reports which input and dimension is wrong.
  Status Run(const TensorView* inputs, size_t num_inputs, RunResult* result);
  // Run, and write each node's wall time in seconds (execution order, node_kernels() order) to node_seconds,
  // which must hold node_kernels().size() values. Allocates nothing more than Run.
  Status RunProfiled(const TensorView* inputs, size_t num_inputs, double* node_seconds, RunResult* result);

  // The bundled test vector (if any): copies of its inputs and expected outputs.
  Status TestVector(std::vector<std::vector<uint8_t>>* inputs, std::vector<Shape>* input_shapes,
                    std::vector<std::vector<uint8_t>>* outputs, std::vector<Shape>* output_shapes) const;

  // The kernel each node runs, in execution order: operator, the dtype its kernel was chosen for, kernel set
  // (e.g. conv2d, float32, avx512).
  struct NodeKernel {
    std::string op;
    DType dtype;
    std::string kernel_set;
  };
  std::vector<NodeKernel> node_kernels() const;

  // Bytes of the arena the latest planning (by any Run) laid out; RunResult::arena_bytes() is one result's.
  uint64_t arena_bytes() const;
  // How many tensors the latest planning keeps in the blocked layout (SessionOptions::blocked_layouts).
  uint64_t blocked_tensors() const;

  struct Impl;

 private:
  friend class RunResult;
  Status RunInto(const TensorView* inputs, size_t num_inputs, double* node_seconds, RunResult* result);
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtorch
