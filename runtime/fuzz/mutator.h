// Deterministic structure-aware mutations of .dtm files, for the standalone fuzz driver (mutate_main.cc).
//
// A Seed is a valid .dtm file plus the positions of what a hostile file would corrupt, found once with the
// FlatBuffers accessors on the verified seed:
// - the framing: every table's vtable and vtable offset, vector and string lengths, tensor and segment indices,
//   Segment {offset, size} structs and int64 dimensions/attributes (the byte-level kinds below aim there);
// - the semantic fields the loader holds against the operator catalogue (core/ops_generated.h) and the plan:
//   every Tensor (its dtype and role), Node, Attr (with the slot of the Node.attrs vector that points at it),
//   the int32 elements of Node.inputs/outputs, and the MemoryPlan (its arena_size and per-tensor offsets).
// mutate() copies a seed and applies one or more mutations chosen by the given Rng; the same seed and Rng
// state always give the same bytes (no std:: distributions, whose results differ between libraries).
//
// Kinds (the names in the `what` description and in the driver's per-kind counts):
//   byte level: truncate bitflip overwrite inflate32 inflate64 swap copy insert append
//   framing:    vtable soffset length index segment dim field
//   semantic:   dtype        a Tensor's dtype set to every other DType value or out of range (10, 127, -1, ...)
//               attr-type    the Attr value-type tag set to another AttrType or out of range
//               attr-int     Attr.i to 0, -1, the catalogue bound +-1, 2^31, 2^63-1, -2^63, ...
//               attr-float   Attr.f to 0, -0, -1, NaN, +-inf, denormals, +-DBL_MAX, ...
//               attr-ints    Attr.ints: one element made bad, the list shortened in place, or replaced by a longer
//                            or shorter copy (also on attributes that had no list)
//               attr-floats  the same for Attr.floats, with NaN/inf/negative elements
//               attr-string  Attr.s replaced by another catalogue string (an activation, "constant", ...) or a
//                            near miss, one byte corrupted, an embedded NUL, cut short
//               attr-name    Attr.name swapped to another catalogue attribute name, a byte corrupted, an embedded
//                            NUL, cut short, or with a suffix
//               attr-dup     a node's attribute given twice: one Node.attrs slot pointed at another attribute's
//                            table, or one attribute renamed to another's name
//               op-name      Node.op swapped to another catalogue operator name (in place when the length is the
//                            same, else as a new string), a byte corrupted, an embedded NUL ("relu\0evil"), a
//                            prefix, a suffix
//               plan-offset  a MemoryPlan offset shifted by +-1/+-64, set to another tensor's offset, to the arena's
//                            end or beyond, to -1 (not in the arena) or to huge values
//               plan-arena   MemoryPlan.arena_size shrunk, zero, huge
//               node-index   a node input/output pointed at another tensor of a different dtype or role
//                            (constant, model input, model output, intermediate)
// A semantic field that the seed leaves out (FlatBuffers omits default values: float32, AttrType int, 0) is
// added: a copy of the table's vtable with the field is appended to the file (after the segments, still inside
// the bytes the verifier checks) with the new value, and the table's vtable offset is pointed at it; new strings
// and vectors are appended the same way, so the mutated file still passes the FlatBuffers verifier and reaches
// the catalogue and plan checks.
// Ownership: plain values; nothing points into the seed bytes after make_seed() returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dtorch {
namespace fuzz {

// splitmix64: small, fast, and the same on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform-enough in [0, n); n > 0.
  uint64_t below(uint64_t n) { return next() % n; }
  bool one_in(uint64_t n) { return below(n) == 0; }

 private:
  uint64_t state_;
};

struct Region {
  uint32_t pos = 0;
  uint32_t len = 0;
};

struct Seed {
  std::string name;
  std::vector<uint8_t> bytes;
  uint32_t flatbuffer_size = 0;       // where the segments start (the FlatBuffer's end, rounded up to 64)
  std::vector<Region> vtables;        // [vtable bytes] of every table
  std::vector<uint32_t> tables;       // the soffset_t at the start of every table
  std::vector<uint32_t> fields;       // every present field of every table
  std::vector<uint32_t> lengths;      // uoffset_t length prefix of every vector and string
  std::vector<uint32_t> indices;      // int32 tensor / segment indices (nodes, model inputs/outputs, tensors)
  std::vector<uint32_t> segments;     // Segment structs: offset at pos, size at pos + 8
  std::vector<uint32_t> dims;         // int64 sizes: Dim.size, example shapes, Attr.i, Attr.ints, test shapes

  // The semantic fields (see the header comment).
  struct TensorRef {
    uint32_t table = 0;
    int8_t dtype = 0;  // dtm::DType in the seed
    int8_t role = 0;   // dtm::TensorKind in the seed
  };
  struct AttrRef {
    uint32_t table = 0;
    uint32_t node = 0;  // index into nodes
    uint32_t slot = 0;  // the uoffset_t element of Node.attrs that points at this table
  };
  std::vector<TensorRef> tensors;
  std::vector<uint32_t> nodes;         // Node tables
  std::vector<AttrRef> attrs;
  std::vector<uint32_t> node_indices;  // int32 elements of Node.inputs and Node.outputs
  uint32_t plan = 0;                   // the MemoryPlan table; 0 when the model has none
  std::vector<uint32_t> plan_offsets;  // int64 elements of MemoryPlan.offsets
};

// Fills `seed` from a valid .dtm file. Returns false (with *error set) if the bytes fail verification.
bool make_seed(const std::string& name, std::vector<uint8_t> bytes, Seed* seed, std::string* error);

// Writes a mutated copy of `seed` into `out` and a short description (e.g. "truncate@812 + dtype(7)@40") into
// `what`. When `kinds` is given, bit k is set for every kind k applied (see kind_name).
void mutate(const Seed& seed, Rng* rng, std::vector<uint8_t>* out, std::string* what, uint64_t* kinds = nullptr);

// The mutation kinds, numbered 0 .. num_kinds() - 1 (fewer than 64), by their short names; is_semantic(k) for
// the kinds that edit the fields the catalogue and plan checks look at.
int num_kinds();
const char* kind_name(int kind);
bool is_semantic(int kind);

}  // namespace fuzz
}  // namespace dtorch
