// The arena planner ("greedy-by-size", the same algorithm as the Python exporter's planner): place
// buffers with lifetimes [first, last] (node indices, inclusive) in one arena so that buffers whose
// lifetimes intersect never overlap. Buffers are taken by size, largest first (ties: earlier `first`,
// then lower `id`), each at the lowest 64-byte-aligned offset that fits beside the buffers already
// placed whose lifetimes intersect it. Arena size = largest end offset rounded up to 64.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dtorch {

struct PlanBuffer {
  size_t size = 0;
  int first = 0;
  int last = 0;
  int64_t id = 0;     // tie-breaker (tensor index; node scratch gets num_tensors + node index)
  size_t offset = 0;  // result
};

constexpr size_t kArenaAlign = 64;

inline size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// Fills each buffer's offset; returns the arena size.
size_t plan_greedy_by_size(std::vector<PlanBuffer>* buffers);

// True when no two buffers with intersecting lifetimes overlap in memory, every offset is aligned and
// every buffer lies inside the arena.
bool verify_plan(const std::vector<PlanBuffer>& buffers, size_t arena_size);

}  // namespace dtorch
