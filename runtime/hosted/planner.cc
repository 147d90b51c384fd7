// The arena planner and its checks (see planner.h).
#include "hosted/planner.h"

#include <algorithm>
#include <cstdint>

#include "dtorch/status.h"

namespace dtorch {

namespace {

struct Life {
  int first = -1;  // producing node
  int last = -1;   // last consumer (>= first)
};

// A region of the arena and the nodes during which it is in use.
struct Buffer {
  size_t size = 0;
  int first = 0;
  int last = 0;
  int64_t id = 0;  // tie-breaker: the tensor index (a node's scratch: num_tensors + node index)
  size_t offset = 0;
  bool fixed = false;  // placed already (a file's plan); only the others are placed
};

std::vector<Life> lifetimes(const std::vector<PlanNode>& nodes, const std::vector<PlanTensor>& tensors) {
  std::vector<Life> life(tensors.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const PlanNode& n = nodes[i];
    for (size_t k = 0; k < n.num_inputs; ++k)
      if (n.inputs[k] >= 0 && tensors[static_cast<size_t>(n.inputs[k])].planned)
        life[static_cast<size_t>(n.inputs[k])].last = static_cast<int>(i);
    for (size_t k = 0; k < n.num_outputs; ++k)
      if (tensors[static_cast<size_t>(n.outputs[k])].planned) life[static_cast<size_t>(n.outputs[k])].first = static_cast<int>(i);
  }
  for (Life& l : life) l.last = std::max(l.last, l.first);
  return life;
}

// The tensor whose buffer node i's first output takes over in place, or -1.
int32_t inplace_source(const std::vector<PlanNode>& nodes, size_t i, const std::vector<PlanTensor>& tensors,
                       const std::vector<Life>& life) {
  const PlanNode& n = nodes[i];
  if (n.inplace == InPlace::kNone || n.num_inputs == 0 || n.num_outputs == 0 || n.inputs[0] < 0) return -1;
  const int32_t src = n.inputs[0], out = n.outputs[0];
  const PlanTensor& a = tensors[static_cast<size_t>(src)];
  const PlanTensor& b = tensors[static_cast<size_t>(out)];
  if (src == out || !a.planned || !b.planned || life[static_cast<size_t>(src)].last != static_cast<int>(i)) return -1;
  if (a.bytes != b.bytes || a.dtype != b.dtype) return -1;
  if (n.inplace == InPlace::kSameShape && !(a.shape == b.shape)) return -1;
  return src;
}

// Heap sort: std::sort's introsort is ~5 KB of code per comparator in a board binary, the heap ~1 KB, at the same
// O(n log n).
template <typename Less>
void heap_sort(std::vector<size_t>* v, Less less) {
  std::make_heap(v->begin(), v->end(), less);
  std::sort_heap(v->begin(), v->end(), less);
}

bool live_together(const Buffer& a, const Buffer& b) { return a.first <= b.last && b.first <= a.last; }

bool overlap(size_t oa, size_t sa, size_t ob, size_t sb) { return sa > 0 && sb > 0 && oa < ob + sb && ob < oa + sa; }

// Places every buffer that is not fixed; returns the arena size (at least `min_arena`).
size_t place(std::vector<Buffer>* buffers, size_t min_arena) {
  std::vector<Buffer>& b = *buffers;
  std::vector<size_t> order, placed;  // placed: indices into b, kept sorted by offset
  size_t arena = min_arena;
  for (size_t i = 0; i < b.size(); ++i) {
    if (!b[i].fixed) {
      order.push_back(i);
      continue;
    }
    placed.push_back(i);
    arena = std::max(arena, b[i].offset + b[i].size);
  }
  const auto by_offset = [&](size_t x, size_t y) { return b[x].offset < b[y].offset; };
  heap_sort(&placed, by_offset);  // buffers at one offset may come in any order: the placement is the same
  // A total order (ids are unique), so any sort gives the same plan.
  const auto before = [&](size_t x, size_t y) {
    if (b[x].size != b[y].size) return b[x].size > b[y].size;
    if (b[x].first != b[y].first) return b[x].first < b[y].first;
    return b[x].id < b[y].id;
  };
  heap_sort(&order, before);
  for (size_t idx : order) {
    Buffer& cur = b[idx];
    size_t offset = 0;
    for (size_t p : placed) {  // sorted by offset
      if (b[p].size == 0 || !live_together(b[p], cur)) continue;
      if (offset + cur.size <= b[p].offset) break;
      offset = std::max(offset, align_up(b[p].offset + b[p].size, kArenaAlign));
    }
    cur.offset = offset;
    arena = std::max(arena, offset + cur.size);
    placed.insert(std::upper_bound(placed.begin(), placed.end(), idx, by_offset), idx);
  }
  return align_up(arena, kArenaAlign);
}

void add_scratch(const std::vector<PlanNode>& nodes, size_t num_tensors, std::vector<Buffer>* buffers,
                 std::vector<int64_t>* scratch_buffer) {
  scratch_buffer->assign(nodes.size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].scratch_bytes == 0) continue;
    Buffer b;
    b.size = nodes[i].scratch_bytes;
    b.first = b.last = static_cast<int>(i);
    b.id = static_cast<int64_t>(num_tensors + i);
    (*scratch_buffer)[i] = static_cast<int64_t>(buffers->size());
    buffers->push_back(b);
  }
}

void fill(const std::vector<Buffer>& buffers, const std::vector<int64_t>& tensor_buffer,
          const std::vector<int64_t>& scratch_buffer, size_t arena, ArenaPlan* plan) {
  const auto at = [&](int64_t j) { return j < 0 ? int64_t{-1} : static_cast<int64_t>(buffers[static_cast<size_t>(j)].offset); };
  plan->tensor_offset.resize(tensor_buffer.size());
  for (size_t t = 0; t < tensor_buffer.size(); ++t) plan->tensor_offset[t] = at(tensor_buffer[t]);
  plan->scratch_offset.resize(scratch_buffer.size());
  for (size_t i = 0; i < scratch_buffer.size(); ++i) plan->scratch_offset[i] = at(scratch_buffer[i]);
  plan->arena_size = arena;
}

}  // namespace

void plan_arena(const std::vector<PlanNode>& nodes, const std::vector<PlanTensor>& tensors, ArenaPlan* plan) {
  const std::vector<Life> life = lifetimes(nodes, tensors);
  std::vector<int64_t> buffer_of(tensors.size(), -1);
  std::vector<Buffer> buffers;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const PlanNode& n = nodes[i];
    for (size_t k = 0; k < n.num_outputs; ++k) {
      const size_t t = static_cast<size_t>(n.outputs[k]);
      if (!tensors[t].planned) continue;
      const int32_t src = k == 0 ? inplace_source(nodes, i, tensors, life) : -1;
      if (src >= 0 && buffer_of[static_cast<size_t>(src)] >= 0) {
        buffer_of[t] = buffer_of[static_cast<size_t>(src)];
        Buffer& b = buffers[static_cast<size_t>(buffer_of[t])];
        b.last = std::max(b.last, life[t].last);
        continue;
      }
      Buffer b;
      b.size = tensors[t].bytes;
      b.first = life[t].first;
      b.last = life[t].last;
      b.id = static_cast<int64_t>(t);
      buffer_of[t] = static_cast<int64_t>(buffers.size());
      buffers.push_back(b);
    }
  }
  std::vector<int64_t> scratch_buffer;
  add_scratch(nodes, tensors.size(), &buffers, &scratch_buffer);
  const size_t arena = place(&buffers, 0);
  fill(buffers, buffer_of, scratch_buffer, arena, plan);
}

namespace {

// check_tensor_plan; `exact`: the arena must be exactly what the tensors need (else it may hold more, e.g. scratch).
Text tensor_plan_error(const std::vector<PlanNode>& nodes, const std::vector<PlanTensor>& tensors,
                              const std::vector<int64_t>& offset, uint64_t arena_size, bool exact) {
  if (offset.size() != tensors.size())
    return text("it has %zu offsets for %zu tensors", offset.size(), tensors.size());
  const std::vector<Life> life = lifetimes(nodes, tensors);
  std::vector<size_t> planned;
  uint64_t need = 0;  // the largest end
  for (size_t t = 0; t < tensors.size(); ++t) {
    const int64_t off = offset[t];
    if (!tensors[t].planned) {
      if (off != -1) return text("tensor %zu is not an intermediate but has the arena offset %lld", t, static_cast<long long>(off));
      continue;
    }
    if (life[t].first < 0) return text("tensor %zu is an intermediate that no node produces", t);
    const uint64_t bytes = tensors[t].bytes;
    if (off >= 0 && static_cast<uint64_t>(off) % kArenaAlign != 0)
      return text("tensor %zu has the offset %lld, not a multiple of %zu", t, static_cast<long long>(off),
                        kArenaAlign);
    if (off < 0 || static_cast<uint64_t>(off) > arena_size || bytes > arena_size - static_cast<uint64_t>(off))
      return text("tensor %zu (%llu bytes) at the offset %lld lies outside the arena of %llu bytes", t,
                        static_cast<unsigned long long>(bytes), static_cast<long long>(off),
                        static_cast<unsigned long long>(arena_size));
    need = std::max(need, static_cast<uint64_t>(off) + bytes);
    planned.push_back(t);
  }
  const uint64_t want = (need + kArenaAlign - 1) / kArenaAlign * kArenaAlign;  // wraps to 0 only past 2^64 - 64
  if ((exact && arena_size != want) || arena_size > SIZE_MAX)
    return text("the arena size %llu is not what its offsets need (%llu bytes)",
                      static_cast<unsigned long long>(arena_size), static_cast<unsigned long long>(need));
  heap_sort(&planned, [&](size_t x, size_t y) {
    return life[x].first != life[y].first ? life[x].first < life[y].first : x < y;
  });
  for (size_t ia = 0; ia < planned.size(); ++ia) {
    const size_t a = planned[ia];
    for (size_t ib = ia + 1; ib < planned.size() && life[planned[ib]].first <= life[a].last; ++ib) {
      const size_t b = planned[ib];
      if (!overlap(static_cast<size_t>(offset[a]), tensors[a].bytes, static_cast<size_t>(offset[b]), tensors[b].bytes))
        continue;
      const size_t at = static_cast<size_t>(life[b].first);  // b's producer, where a may hand its buffer over
      const bool handover = offset[a] == offset[b] && life[a].last == life[b].first &&
                            nodes[at].outputs[0] == static_cast<int32_t>(b) &&
                            inplace_source(nodes, at, tensors, life) == static_cast<int32_t>(a);
      if (!handover)
        return text("tensors %zu (nodes %d..%d) and %zu (nodes %d..%d) are alive at the same time and overlap "
                          "in the arena",
                          a, life[a].first, life[a].last, b, life[b].first, life[b].last);
    }
  }
  return Text();
}

}  // namespace

Text check_tensor_plan(const std::vector<PlanNode>& nodes, const std::vector<PlanTensor>& tensors,
                              const std::vector<int64_t>& offset, uint64_t arena_size) {
  return tensor_plan_error(nodes, tensors, offset, arena_size, true);
}

void place_scratch(const std::vector<PlanNode>& nodes, const std::vector<PlanTensor>& tensors,
                   const std::vector<int64_t>& tensor_offset, size_t arena_size, ArenaPlan* plan) {
  const std::vector<Life> life = lifetimes(nodes, tensors);
  std::vector<int64_t> buffer_of(tensors.size(), -1);
  std::vector<Buffer> buffers;
  for (size_t t = 0; t < tensors.size(); ++t) {
    if (!tensors[t].planned || life[t].first < 0) continue;
    Buffer b;
    b.size = tensors[t].bytes;
    b.first = life[t].first;
    b.last = life[t].last;
    b.id = static_cast<int64_t>(t);
    b.offset = static_cast<size_t>(tensor_offset[t]);
    b.fixed = true;
    buffer_of[t] = static_cast<int64_t>(buffers.size());
    buffers.push_back(b);
  }
  std::vector<int64_t> scratch_buffer;
  add_scratch(nodes, tensors.size(), &buffers, &scratch_buffer);
  const size_t arena = place(&buffers, arena_size);
  fill(buffers, buffer_of, scratch_buffer, arena, plan);
}

bool verify_arena_plan(const std::vector<PlanNode>& nodes, const std::vector<PlanTensor>& tensors,
                       const ArenaPlan& plan) {
  if (tensor_plan_error(nodes, tensors, plan.tensor_offset, plan.arena_size, false).buf[0] != '\0') return false;
  if (plan.scratch_offset.size() != nodes.size()) return false;
  const std::vector<Life> life = lifetimes(nodes, tensors);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const size_t bytes = nodes[i].scratch_bytes;
    const int64_t off = plan.scratch_offset[i];
    if (bytes == 0) continue;
    if (off < 0 || static_cast<size_t>(off) % kArenaAlign != 0 || static_cast<size_t>(off) + bytes > plan.arena_size)
      return false;
    for (size_t t = 0; t < tensors.size(); ++t) {
      const bool live = tensors[t].planned && life[t].first <= static_cast<int>(i) && static_cast<int>(i) <= life[t].last;
      if (live && overlap(static_cast<size_t>(off), bytes, static_cast<size_t>(plan.tensor_offset[t]), tensors[t].bytes))
        return false;
    }
  }
  return true;
}

}  // namespace dtorch
