// Mutations for the fuzz driver: generic byte-level ones (truncation, bit flips, byte overwrites, inflated
// integers, chunk shuffles and copies) and structure-aware ones that aim at what the loader must check
// (vtables, table offsets, vector lengths, indices, segment offsets and sizes, dimensions).
#include "fuzz/mutator.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "dtm_generated.h"

namespace dtorch {
namespace fuzz {
namespace {

// --- finding the structure of a verified seed -----------------------------------------------------

class Walker {
 public:
  Walker(const uint8_t* base, Seed* seed) : base_(base), s_(seed) {}

  uint32_t pos(const void* p) const { return static_cast<uint32_t>(static_cast<const uint8_t*>(p) - base_); }

  // Records a table (its vtable and fields); returns its position.
  uint32_t table(const void* t) {
    const uint32_t p = pos(t);
    int32_t soff;
    std::memcpy(&soff, base_ + p, 4);
    const uint32_t vt = static_cast<uint32_t>(static_cast<int64_t>(p) - soff);
    uint16_t vlen;
    std::memcpy(&vlen, base_ + vt, 2);
    s_->tables.push_back(p);
    s_->vtables.push_back(Region{vt, vlen});
    for (uint16_t o = 4; o + 2 <= vlen; o += 2) {
      uint16_t fo;
      std::memcpy(&fo, base_ + vt + o, 2);
      if (fo != 0) s_->fields.push_back(p + fo);
    }
    return p;
  }

  // The position of a present scalar field, given its vtable offset (VT_*); 0 when absent.
  uint32_t field(const void* t, uint16_t vt_off) const {
    const uint32_t p = pos(t);
    int32_t soff;
    std::memcpy(&soff, base_ + p, 4);
    const uint32_t vt = static_cast<uint32_t>(static_cast<int64_t>(p) - soff);
    uint16_t vlen, fo = 0;
    std::memcpy(&vlen, base_ + vt, 2);
    if (vt_off + 2 <= vlen) std::memcpy(&fo, base_ + vt + vt_off, 2);
    return fo == 0 ? 0 : p + fo;
  }

  template <typename V>
  void length(const V* v) {
    if (v != nullptr) s_->lengths.push_back(pos(v));
  }
  template <typename T>
  void elements(const flatbuffers::Vector<T>* v, std::vector<uint32_t>* into) {
    if (v == nullptr) return;
    length(v);
    for (flatbuffers::uoffset_t i = 0; i < v->size(); ++i) into->push_back(pos(v->Data() + i * sizeof(T)));
  }
  void shapes(const flatbuffers::Vector<flatbuffers::Offset<dtm::Shape>>* v) {
    if (v == nullptr) return;
    length(v);
    for (flatbuffers::uoffset_t i = 0; i < v->size(); ++i) {
      table(v->Get(i));
      elements(v->Get(i)->dims(), &s_->dims);
    }
  }

  void model(const dtm::Model* m) {
    table(m);
    length(m->producer());
    if (const auto* ts = m->tensors()) {
      length(ts);
      for (flatbuffers::uoffset_t i = 0; i < ts->size(); ++i) {
        const dtm::Tensor* t = ts->Get(i);
        table(t);
        length(t->name());
        if (const uint32_t f = field(t, dtm::Tensor::VT_SEGMENT)) s_->indices.push_back(f);
        elements(t->example_shape(), &s_->dims);
        if (const auto* sh = t->shape()) {
          length(sh);
          for (flatbuffers::uoffset_t d = 0; d < sh->size(); ++d) {
            table(sh->Get(d));
            length(sh->Get(d)->name());
            if (const uint32_t f = field(sh->Get(d), dtm::Dim::VT_SIZE)) s_->dims.push_back(f);
          }
        }
      }
    }
    if (const auto* ns = m->nodes()) {
      length(ns);
      for (flatbuffers::uoffset_t i = 0; i < ns->size(); ++i) {
        const dtm::Node* n = ns->Get(i);
        table(n);
        length(n->op());
        length(n->name());
        elements(n->inputs(), &s_->indices);
        elements(n->outputs(), &s_->indices);
        if (const auto* as = n->attrs()) {
          length(as);
          for (flatbuffers::uoffset_t k = 0; k < as->size(); ++k) {
            const dtm::Attr* a = as->Get(k);
            table(a);
            length(a->name());
            length(a->s());
            length(a->floats());
            if (const uint32_t f = field(a, dtm::Attr::VT_I)) s_->dims.push_back(f);
            elements(a->ints(), &s_->dims);
          }
        }
      }
    }
    elements(m->inputs(), &s_->indices);
    elements(m->outputs(), &s_->indices);
    if (const auto* ol = m->op_list()) {
      length(ol);
      for (flatbuffers::uoffset_t i = 0; i < ol->size(); ++i) length(ol->Get(i));
    }
    if (const auto* segs = m->segments()) {
      length(segs);
      for (flatbuffers::uoffset_t i = 0; i < segs->size(); ++i) s_->segments.push_back(pos(segs->Get(i)));
    }
    if (const dtm::MemoryPlan* p = m->plan()) {
      table(p);
      length(p->algorithm());
      length(p->offsets());
    }
    if (const dtm::TestVector* tv = m->test_vector()) {
      table(tv);
      elements(tv->inputs(), &s_->indices);
      elements(tv->outputs(), &s_->indices);
      shapes(tv->input_shapes());
      shapes(tv->output_shapes());
    }
    if (const auto* md = m->metadata()) {
      length(md);
      for (flatbuffers::uoffset_t i = 0; i < md->size(); ++i) {
        table(md->Get(i));
        length(md->Get(i)->key());
        length(md->Get(i)->value());
      }
    }
  }

 private:
  const uint8_t* base_;
  Seed* s_;
};

// --- writing values ---------------------------------------------------------------------------------

template <typename T>
bool write_at(std::vector<uint8_t>* b, uint64_t pos, T value) {
  if (pos + sizeof(T) > b->size()) return false;
  std::memcpy(b->data() + pos, &value, sizeof(T));
  return true;
}

template <typename T>
T read_at(const std::vector<uint8_t>& b, uint64_t pos) {
  T v{};
  if (pos + sizeof(T) <= b.size()) std::memcpy(&v, b.data() + pos, sizeof(T));
  return v;
}

template <typename T, size_t N>
T pick(Rng* rng, const T (&values)[N]) {
  return values[rng->below(N)];
}

uint32_t huge32(Rng* rng, uint32_t old, size_t file_size) {
  const uint32_t fs = static_cast<uint32_t>(file_size);
  const uint32_t values[] = {0x7FFFFFFFu, 0xFFFFFFFFu, 0x80000000u, 0xFFFFFFFEu, 0x40000000u, 0x10000u,
                             0xFFFFu,     fs,          fs + 1,      fs - 1,      fs * 2,      old * 16 + 1,
                             old + 1,     old - 1,     old + 4,     old - 4,     ~old,        0};
  return pick(rng, values);
}

uint64_t huge64(Rng* rng, uint64_t old, size_t file_size) {
  const uint64_t fs = file_size;
  const uint64_t values[] = {std::numeric_limits<uint64_t>::max(),
                             static_cast<uint64_t>(std::numeric_limits<int64_t>::max()),
                             uint64_t{1} << 63, uint64_t{1} << 62, uint64_t{1} << 40, uint64_t{1} << 32,
                             uint64_t{1} << 31, fs, fs + 1, fs + 64, old + 1, old - 1, old + 64, old - 64,
                             old << 20, ~old, 0};
  return pick(rng, values);
}

// Wrapping arithmetic on values read from the file (signed overflow would be UB in the driver itself).
int64_t add64(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }
int32_t add32(int32_t a, int32_t b) { return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b)); }

int64_t bad_dim(Rng* rng, int64_t old) {
  const int64_t values[] = {0, -1, -2, 1, 2, 3, 7, 64, 1000, int64_t{1} << 20, int64_t{1} << 31,
                            int64_t{1} << 32, int64_t{1} << 40, std::numeric_limits<int64_t>::max(),
                            std::numeric_limits<int64_t>::min(), std::numeric_limits<int32_t>::max(),
                            add64(old, 1), add64(old, -1), add64(old, old), add64(0, -static_cast<int64_t>(static_cast<uint64_t>(old) >> 1))};
  return pick(rng, values);
}

int32_t bad_index(Rng* rng, int32_t old) {
  const int32_t values[] = {-1, -2, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(),
                            0,  1,  add32(old, 1), add32(old, -1), add32(old, 1000), static_cast<int32_t>(rng->below(64))};
  return pick(rng, values);
}

template <typename T>
uint32_t any_of(Rng* rng, const std::vector<T>& v, size_t fallback_size) {
  if (v.empty()) return static_cast<uint32_t>(fallback_size == 0 ? 0 : rng->below(fallback_size));
  return static_cast<uint32_t>(v[rng->below(v.size())]);
}

// --- the mutations ------------------------------------------------------------------------------------

enum Kind {
  kTruncate, kBitFlip, kOverwrite, kInflate32, kInflate64, kSwapChunks, kCopyChunk, kInsertChunk, kAppend,
  kVTable, kTableOffset, kLength, kIndex, kSegment, kDim, kField, kNumKinds
};

const char* const kKindNames[kNumKinds] = {"truncate", "bitflip", "overwrite", "inflate32", "inflate64",
                                           "swap",     "copy",    "insert",    "append",    "vtable",
                                           "soffset",  "length",  "index",     "segment",   "dim",
                                           "field"};

// Applies one mutation; returns its description.
std::string mutate_once(const Seed& s, Rng* rng, std::vector<uint8_t>* b) {
  const Kind kind = static_cast<Kind>(rng->below(kNumKinds));
  const size_t n = b->size();
  uint64_t at = n == 0 ? 0 : rng->below(n);
  switch (kind) {
    case kTruncate: {
      const uint64_t r = rng->below(4);
      uint64_t keep = at;                                                       // anywhere
      if (r == 1 && n > 0) keep = n - 1 - std::min<uint64_t>(rng->below(128), n - 1);  // near the end
      if (r == 2) {  // inside the FlatBuffer
        const uint64_t fb = std::min<uint64_t>(s.flatbuffer_size, n);
        keep = fb == 0 ? 0 : rng->below(fb);
      }
      if (r == 3) keep = std::min<uint64_t>(n, rng->below(n / 64 + 1) * 64);  // a segment boundary
      b->resize(keep);
      at = keep;
      break;
    }
    case kBitFlip: {
      const uint64_t flips = 1 + rng->below(8);
      for (uint64_t i = 0; i < flips && n > 0; ++i) (*b)[rng->below(n)] ^= static_cast<uint8_t>(1u << rng->below(8));
      break;
    }
    case kOverwrite: {
      const uint8_t values[] = {0x00, 0xFF, 0x7F, 0x80};
      const uint8_t v = pick(rng, values);
      const uint64_t len = rng->one_in(2) ? 1 : 1 + rng->below(16);
      for (uint64_t i = 0; i < len && at + i < n; ++i) (*b)[at + i] = v;
      break;
    }
    case kInflate32:
      if (!rng->one_in(4)) at &= ~uint64_t{3};
      write_at<uint32_t>(b, at, huge32(rng, read_at<uint32_t>(*b, at), n));
      break;
    case kInflate64:
      if (!rng->one_in(4)) at &= ~uint64_t{7};
      write_at<uint64_t>(b, at, huge64(rng, read_at<uint64_t>(*b, at), n));
      break;
    case kSwapChunks: {
      if (n < 8) break;
      const uint64_t len = 1 + rng->below(std::min<uint64_t>(256, n / 4));
      const uint64_t a = rng->below(n - len), c = rng->below(n - len);
      std::vector<uint8_t> tmp(b->begin() + a, b->begin() + a + len);
      std::memmove(b->data() + a, b->data() + c, len);
      std::memcpy(b->data() + c, tmp.data(), len);
      at = a;
      break;
    }
    case kCopyChunk:
    case kInsertChunk: {
      if (n < 8) break;
      const uint64_t len = 1 + rng->below(std::min<uint64_t>(256, n / 4));
      const uint64_t src = rng->below(n - len), dst = rng->below(n - len);
      std::vector<uint8_t> chunk(b->begin() + src, b->begin() + src + len);
      if (kind == kCopyChunk) {
        std::memcpy(b->data() + dst, chunk.data(), len);
      } else {
        b->insert(b->begin() + dst, chunk.begin(), chunk.end());
      }
      at = dst;
      break;
    }
    case kAppend: {
      const uint64_t len = 1 + rng->below(128);
      for (uint64_t i = 0; i < len; ++i) b->push_back(static_cast<uint8_t>(rng->next()));
      at = n;
      break;
    }
    case kVTable: {
      if (s.vtables.empty()) break;
      const Region vt = s.vtables[rng->below(s.vtables.size())];
      const uint64_t slots = vt.len / 2;  // vtable size, object size, then one entry per field
      const uint64_t slot = rng->below(std::max<uint64_t>(slots, 1));
      at = vt.pos + 2 * slot;
      const uint16_t old = read_at<uint16_t>(*b, at);
      const uint16_t other = slots > 2 ? read_at<uint16_t>(*b, vt.pos + 2 * (2 + rng->below(slots - 2))) : 0;
      const uint16_t values[] = {0,
                                 0xFFFF,
                                 0x8000,
                                 1,
                                 2,
                                 3,
                                 static_cast<uint16_t>(old + 1),
                                 static_cast<uint16_t>(old - 1),
                                 static_cast<uint16_t>(old + 4),
                                 static_cast<uint16_t>(old + 8),
                                 static_cast<uint16_t>(old * 2),
                                 other};
      write_at<uint16_t>(b, at, pick(rng, values));
      break;
    }
    case kTableOffset: {
      at = any_of(rng, s.tables, n);
      const int32_t old = read_at<int32_t>(*b, at);
      const int32_t values[] = {0, 1, 4, add32(old, 2), add32(old, -2), add32(old, 4), add32(old, -4), add32(old, 64),
                                std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(),
                                -static_cast<int32_t>(at), static_cast<int32_t>(at) - static_cast<int32_t>(n)};
      write_at<int32_t>(b, at, pick(rng, values));
      break;
    }
    case kLength:
      at = any_of(rng, s.lengths, n);
      write_at<uint32_t>(b, at, huge32(rng, read_at<uint32_t>(*b, at), n));
      break;
    case kIndex:
      at = any_of(rng, s.indices, n);
      write_at<int32_t>(b, at, bad_index(rng, read_at<int32_t>(*b, at)));
      break;
    case kSegment: {
      at = any_of(rng, s.segments, n);
      const bool size_field = rng->one_in(2);
      const uint64_t off = read_at<uint64_t>(*b, at), sz = read_at<uint64_t>(*b, at + 8);
      uint64_t v = huge64(rng, size_field ? sz : off, n);
      if (rng->one_in(3)) {  // the pair just past the end, or wrapping around
        const uint64_t wrap = std::numeric_limits<uint64_t>::max() - (size_field ? off : sz) + 1 + rng->below(128);
        const uint64_t values[] = {size_field ? n - off + 1 : (n + 63) / 64 * 64, wrap, size_field ? sz + 1 : off + 1};
        v = pick(rng, values);
      }
      if (size_field) at += 8;
      write_at<uint64_t>(b, at, v);
      break;
    }
    case kDim:
      at = any_of(rng, s.dims, n);
      write_at<int64_t>(b, at, bad_dim(rng, read_at<int64_t>(*b, at)));
      break;
    case kField:
      at = any_of(rng, s.fields, n);
      if (rng->one_in(2)) {
        write_at<uint32_t>(b, at, huge32(rng, read_at<uint32_t>(*b, at), n));
      } else {
        write_at<uint64_t>(b, at, huge64(rng, read_at<uint64_t>(*b, at), n));
      }
      break;
    case kNumKinds:
      break;
  }
  return std::string(kKindNames[kind]) + "@" + std::to_string(at);
}

}  // namespace

bool make_seed(const std::string& name, std::vector<uint8_t> bytes, Seed* seed, std::string* error) {
  *seed = Seed();
  seed->name = name;
  seed->bytes = std::move(bytes);
  const uint8_t* base = seed->bytes.data();
  const size_t n = seed->bytes.size();
  if (n < 8 || n > 0x7FFFFFFFu || !flatbuffers::BufferHasIdentifier(base, dtm::ModelIdentifier())) {
    *error = name + " is not a .dtm file (no \"DTM1\" identifier)";
    return false;
  }
  flatbuffers::Verifier verifier(base, n);
  if (!dtm::VerifyModelBuffer(verifier)) {
    *error = name + " fails FlatBuffer verification; seeds must be valid models";
    return false;
  }
  const dtm::Model* model = dtm::GetModel(base);
  uint64_t first_segment = n;
  if (const auto* segs = model->segments())
    for (flatbuffers::uoffset_t i = 0; i < segs->size(); ++i)
      first_segment = std::min<uint64_t>(first_segment, segs->Get(i)->offset());
  seed->flatbuffer_size = static_cast<uint32_t>(first_segment);
  Walker(base, seed).model(model);
  return true;
}

void mutate(const Seed& seed, Rng* rng, std::vector<uint8_t>* out, std::string* what) {
  *out = seed.bytes;
  what->clear();
  const uint64_t count = rng->one_in(4) ? 2 + rng->below(3) : 1;
  for (uint64_t i = 0; i < count; ++i) {
    if (!what->empty()) *what += " + ";
    *what += mutate_once(seed, rng, out);
  }
}

}  // namespace fuzz
}  // namespace dtorch
