// The loader's output: a .dtm model whose every index, offset, size and shape has been checked, with
// each node bound to its kernel. Internal to the runtime (the public API is dtorch/runtime.h).
// Ownership: LoadedModel points into the model bytes (FlatBuffer, constant segments) and into the caller's tables
// (load_model); both must outlive it. Nothing here allocates: the same loader runs on a microcontroller.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/kernel.h"
#include "dtorch/status.h"
#include "dtorch/types.h"

namespace dtorch {

namespace dtm {
struct Model;
struct Node;
}  // namespace dtm

enum class TensorRole : uint8_t { kIntermediate, kInput, kOutput, kConstant };

// A view of n elements someone else owns (the model bytes, or the tables load_model fills).
template <typename T>
struct Span {
  T* ptr = nullptr;
  size_t n = 0;
  size_t size() const { return n; }
  bool empty() const { return n == 0; }
  T& operator[](size_t i) const { return ptr[i]; }
  T* data() const { return ptr; }
  T* begin() const { return ptr; }
  T* end() const { return ptr + n; }
};

struct TensorInfo {
  const char* name = "";            // in the model bytes ("" when the file gives none)
  DType dtype = DType::kFloat32;
  TensorRole role = TensorRole::kIntermediate;
  Shape file_shape;                 // -1 for a dynamic dimension
  const uint8_t* data = nullptr;    // constants: in the model bytes
  size_t nbytes = 0;                // constants
  int producer = -1;                // node index; -1 for inputs and constants
  int last_use = -1;                // index of the last node that reads it; -1 if none
};

struct NodeInfo {
  const dtm::Node* node = nullptr;
  const KernelDef* kernel = nullptr;
  Attrs attrs;
  const char* op = "";
  const char* name = "";            // in the model bytes ("" when the file gives none)
  Span<const int32_t> inputs;       // tensor indices, in the model bytes; -1 = absent optional input
  Span<const int32_t> outputs;
};

// One input or output of the bundled test vector: its bytes (in the model bytes) and shape.
struct TestTensor {
  const uint8_t* data = nullptr;
  size_t bytes = 0;
  Shape shape;
};

// Points into the model bytes and into the tables load_model filled (model_tables_bytes); allocates nothing.
struct LoadedModel {
  const dtm::Model* model = nullptr;
  Span<TensorInfo> tensors;
  Span<NodeInfo> nodes;
  Span<const int32_t> inputs, outputs;   // tensor indices (in the model bytes)
  uint64_t weights_bytes = 0;             // bytes of all constants
  bool has_test_vector = false;
  Span<TestTensor> test_inputs, test_outputs;
  int max_node_inputs = 0, max_node_outputs = 0;
  // The model inputs' shapes at export (Tensor.example_shape), one per input when every input has one that fits
  // its declared shape (else empty): the session infers every shape from them at load.
  Span<Shape> example_input_shapes;
  // The file's memory plan (MemoryPlan.offsets, one per tensor; -1 outside the arena) when it has one. The session
  // checks it against the example shapes at load (planner.h: check_tensor_plan) and runs on it at those shapes.
  bool has_plan = false;
  Span<const int64_t> plan_offsets;
  uint64_t plan_arena_size = 0;
};

// The bytes of the tables load_model fills for the model in `data` (checked as load_model checks it first: the
// FlatBuffer verifier, alignment, versions): per tensor, node and model input, from the file's counts alone.
Status model_tables_bytes(const uint8_t* data, size_t size, size_t* bytes);

// Checks `data` (a whole .dtm file, 64-byte aligned) and fills `out`, binding each node to the kernel the policy
// picks; its tables go to `tables` (8-byte aligned, tables_bytes >= model_tables_bytes), which must outlive `out`
// as the model bytes must. Never reads outside [data, data+size); allocates nothing.
Status load_model(const uint8_t* data, size_t size, void* tables, size_t tables_bytes, LoadedModel* out,
                  KernelPolicy policy = KernelPolicy::kFast, const char* const* exclude_sets = nullptr,
                  size_t n_exclude = 0);

// Caps that keep hostile files from asking for absurd work.
constexpr int kMaxNodeArity = 64;
constexpr uint64_t kMaxFileSize = uint64_t{1} << 40;  // (uint64_t: size_t is 32 bits on armv7)

}  // namespace dtorch
