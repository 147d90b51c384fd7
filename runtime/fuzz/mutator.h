// Deterministic structure-aware mutations of .dtm files, for the standalone fuzz driver (mutate_main.cc).
//
// A Seed is a valid .dtm file plus the positions of what a hostile file would corrupt: every table's vtable
// and vtable offset, vector and string lengths, tensor and segment indices, Segment {offset, size} structs
// and int64 dimensions/attributes (found once with the FlatBuffers accessors on the verified seed).
// mutate() copies a seed and applies one or more mutations chosen by the given Rng; the same seed and Rng
// state always give the same bytes (no std:: distributions, whose results differ between libraries).
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
};

// Fills `seed` from a valid .dtm file. Returns false (with *error set) if the bytes fail verification.
bool make_seed(const std::string& name, std::vector<uint8_t> bytes, Seed* seed, std::string* error);

// Writes a mutated copy of `seed` into `out` and a short description (e.g. "truncate@812 + vtable@40")
// into `what`.
void mutate(const Seed& seed, Rng* rng, std::vector<uint8_t>* out, std::string* what);

}  // namespace fuzz
}  // namespace dtorch
