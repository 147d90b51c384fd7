// The loader's output: a .dtm model whose every index, offset, size and shape has been checked, with
// each node bound to its kernel. Internal to the runtime (the public API is dtorch/runtime.h).
// Ownership: LoadedModel points into the model bytes (FlatBuffer, constant segments); those bytes must
// outlive it. It allocates only while loading.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/kernel.h"
#include "dtorch/runtime.h"
#include "dtorch/status.h"
#include "dtorch/types.h"

namespace dtorch {

namespace dtm {
struct Model;
struct Node;
}  // namespace dtm

enum class TensorRole : uint8_t { kIntermediate, kInput, kOutput, kConstant };

struct TensorInfo {
  const char* name = "";          // in the model bytes ("" when the file gives none)
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
  std::vector<int32_t> inputs;      // -1 = absent optional input
  std::vector<int32_t> outputs;
};

struct TestVectorRef {
  std::vector<const uint8_t*> input_data, output_data;
  std::vector<size_t> input_bytes, output_bytes;
  std::vector<Shape> input_shapes, output_shapes;
};

struct LoadedModel {
  const dtm::Model* model = nullptr;
  std::vector<TensorInfo> tensors;
  std::vector<NodeInfo> nodes;
  std::vector<int32_t> inputs, outputs;   // tensor indices
  std::vector<IOInfo> input_info, output_info;
  ModelInfo info;
  bool has_test_vector = false;
  TestVectorRef test_vector;
  int max_node_inputs = 0, max_node_outputs = 0;
  // The model inputs' shapes at export (Tensor.example_shape), one per input when every input has one that fits
  // its declared shape (else empty): the session infers every shape from them at load.
  std::vector<Shape> example_input_shapes;
  // The file's memory plan (MemoryPlan.offsets, one per tensor; -1 outside the arena) when it has one. The session
  // checks it against the example shapes at load (planner.h: check_tensor_plan) and runs on it at those shapes.
  bool has_plan = false;
  std::vector<int64_t> plan_offsets;
  uint64_t plan_arena_size = 0;
};

// Checks `data` (a whole .dtm file, 64-byte aligned) and fills `out`, binding each node to the kernel the policy
// picks. Never reads outside [data, data+size).
Status load_model(const uint8_t* data, size_t size, LoadedModel* out, KernelPolicy policy = KernelPolicy::kFast,
                  const char* const* exclude_sets = nullptr, size_t n_exclude = 0);

// Caps that keep hostile files from asking for absurd work.
constexpr int kMaxNodeArity = 64;
constexpr uint64_t kMaxFileSize = uint64_t{1} << 40;  // (uint64_t: size_t is 32 bits on armv7)

}  // namespace dtorch
