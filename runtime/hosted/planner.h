// The arena planner: the one implementation of DTorch's memory plan. The runtime plans with it for input shapes
// the file's plan was not made for, and the exporter (dtorch/_export/planner.py, through the Python binding)
// writes the file's plan with it; the Python side only verifies.
//
// Lifetimes: a planned tensor lives from its producing node to its last consumer (inclusive; a tensor nobody
// reads lives at its producer only). In place: a node's first output takes over its first input's buffer when
// the input is planned, dies at this node, has the same dtype and byte size, and the node's catalogue rule allows
// it (InPlace::kAlways, or kSameShape with equal shapes). Each node's scratch lives at that node only.
// Placement ("greedy-by-size"): buffers largest first (ties: earlier first node, then lower id), each at the
// lowest 64-byte-aligned offset that fits beside the buffers already placed whose lifetimes intersect it.
// Arena size = largest end offset rounded up to 64.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/op_schema.h"
#include "dtorch/types.h"

namespace dtorch {

constexpr size_t kArenaAlign = 64;

inline size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// One node as the planner sees it.
struct PlanNode {
  InPlace inplace = InPlace::kNone;
  const int32_t* inputs = nullptr;  // tensor indices; -1 = absent optional input
  size_t num_inputs = 0;
  const int32_t* outputs = nullptr;
  size_t num_outputs = 0;
  size_t scratch_bytes = 0;
};

// One tensor as the planner sees it.
struct PlanTensor {
  bool planned = false;  // an intermediate: lives in the arena (inputs, outputs and constants do not)
  size_t bytes = 0;
  DType dtype = DType::kFloat32;
  Shape shape;
};

struct ArenaPlan {
  std::vector<int64_t> tensor_offset;   // per tensor; -1 outside the arena
  std::vector<int64_t> scratch_offset;  // per node; -1 when it has no scratch
  size_t arena_size = 0;
};

// Plans every planned tensor and every node's scratch in one arena.
void plan_arena(const std::vector<PlanNode>& nodes, const std::vector<PlanTensor>& tensors, ArenaPlan* plan);

// Checks a tensor plan made elsewhere (a model file's): every planned tensor has an aligned offset with its bytes
// inside `arena_size`, every other tensor has -1, and no two tensors alive at the same time overlap, except a
// tensor and the in-place output (as plan_arena would make it) that takes its buffer over where it dies. Returns
// an empty Text, or what is wrong (naming tensor indices).
Text check_tensor_plan(const std::vector<PlanNode>& nodes, const std::vector<PlanTensor>& tensors,
                              const std::vector<int64_t>& tensor_offset, uint64_t arena_size);

// Keeps a checked tensor plan and places each node's scratch beside the tensors alive at that node (same rule
// as plan_arena); fills `plan`, whose arena is at least `arena_size`.
void place_scratch(const std::vector<PlanNode>& nodes, const std::vector<PlanTensor>& tensors,
                   const std::vector<int64_t>& tensor_offset, size_t arena_size, ArenaPlan* plan);

// The full check of a finished plan (tensors and scratch): for debug builds (DTORCH_VERIFY_PLAN).
bool verify_arena_plan(const std::vector<PlanNode>& nodes, const std::vector<PlanTensor>& tensors,
                       const ArenaPlan& plan);

}  // namespace dtorch
