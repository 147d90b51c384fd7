// greedy-by-size arena planning and its verifier (see planner.h).
#include "core/planner.h"

#include <algorithm>

namespace dtorch {

size_t plan_greedy_by_size(std::vector<PlanBuffer>* buffers) {
  std::vector<PlanBuffer>& b = *buffers;
  std::vector<size_t> order(b.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // A total order (ids are unique), so any sort gives the same plan. Heap sort: std::sort's introsort is ~5 KB of
  // code per comparator in a board binary, the heap ~1 KB, at the same O(n log n).
  const auto before = [&](size_t x, size_t y) {
    if (b[x].size != b[y].size) return b[x].size > b[y].size;
    if (b[x].first != b[y].first) return b[x].first < b[y].first;
    return b[x].id < b[y].id;
  };
  std::make_heap(order.begin(), order.end(), before);
  std::sort_heap(order.begin(), order.end(), before);
  std::vector<size_t> placed;      // indices into b, kept sorted by offset
  std::vector<size_t> conflicts;
  size_t arena = 0;
  for (size_t idx : order) {
    PlanBuffer& cur = b[idx];
    conflicts.clear();
    for (size_t p : placed)
      if (b[p].first <= cur.last && cur.first <= b[p].last) conflicts.push_back(p);
    size_t offset = 0;
    for (size_t p : conflicts) {  // sorted by offset
      if (b[p].size == 0) continue;
      if (offset + cur.size <= b[p].offset) break;
      offset = std::max(offset, align_up(b[p].offset + b[p].size, kArenaAlign));
    }
    cur.offset = offset;
    arena = std::max(arena, offset + cur.size);
    placed.insert(std::upper_bound(placed.begin(), placed.end(), idx,
                                   [&](size_t x, size_t y) { return b[x].offset < b[y].offset; }),
                  idx);
  }
  return align_up(arena, kArenaAlign);
}

bool verify_plan(const std::vector<PlanBuffer>& b, size_t arena_size) {
  for (size_t i = 0; i < b.size(); ++i) {
    if (b[i].offset % kArenaAlign != 0 || b[i].offset + b[i].size > arena_size) return false;
    for (size_t j = i + 1; j < b.size(); ++j) {
      const bool live_together = b[i].first <= b[j].last && b[j].first <= b[i].last;
      const bool overlap = b[i].size > 0 && b[j].size > 0 && b[i].offset < b[j].offset + b[j].size &&
                           b[j].offset < b[i].offset + b[i].size;
      if (live_together && overlap) return false;
    }
  }
  return true;
}

}  // namespace dtorch
