// Mutations for the fuzz driver: generic byte-level ones (truncation, bit flips, byte overwrites, inflated
// integers, chunk shuffles and copies), structure-aware ones that aim at what the loader must check (vtables,
// table offsets, vector lengths, indices, segment offsets and sizes, dimensions), and semantic ones that keep
// the file valid FlatBuffers but make it lie to the catalogue and plan checks (dtypes, attributes, operator
// names, the memory plan, node indices); mutator.h lists them.
#include "fuzz/mutator.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

#include "core/kernel.h"
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
  void positions(const flatbuffers::Vector<T>* v, std::vector<uint32_t>* into) {
    for (flatbuffers::uoffset_t i = 0; v != nullptr && i < v->size(); ++i) into->push_back(pos(v->Data() + i * sizeof(T)));
  }
  template <typename T>
  void elements(const flatbuffers::Vector<T>* v, std::vector<uint32_t>* into) {
    length(v);
    positions(v, into);
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
        s_->tensors.push_back(Seed::TensorRef{table(t), static_cast<int8_t>(t->dtype()), static_cast<int8_t>(t->kind())});
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
        s_->nodes.push_back(table(n));
        length(n->op());
        length(n->name());
        elements(n->inputs(), &s_->indices);
        elements(n->outputs(), &s_->indices);
        positions(n->inputs(), &s_->node_indices);
        positions(n->outputs(), &s_->node_indices);
        if (const auto* as = n->attrs()) {
          length(as);
          for (flatbuffers::uoffset_t k = 0; k < as->size(); ++k) {
            const dtm::Attr* a = as->Get(k);
            s_->attrs.push_back(Seed::AttrRef{table(a), i, pos(as->Data() + k * sizeof(flatbuffers::uoffset_t))});
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
      s_->plan = table(p);
      length(p->algorithm());
      elements(p->offsets(), &s_->plan_offsets);
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

// --- semantic edits: fields of a valid file, which stays valid FlatBuffers -------------------------------

// The position of field `slot` (a VT_* offset) of the table at `table` in the current bytes; 0 when the table
// lacks it (or its vtable no longer makes sense after an earlier mutation).
uint64_t field_pos(const std::vector<uint8_t>& b, uint64_t table, uint16_t slot) {
  if (table + 4 > b.size()) return 0;
  const int64_t vt = static_cast<int64_t>(table) - read_at<int32_t>(b, table);
  if (vt < 0 || static_cast<uint64_t>(vt) + 4 > b.size()) return 0;
  const uint16_t vlen = read_at<uint16_t>(b, static_cast<uint64_t>(vt));
  if (slot + 2u > vlen || static_cast<uint64_t>(vt) + vlen > b.size()) return 0;
  const uint16_t fo = read_at<uint16_t>(b, static_cast<uint64_t>(vt) + slot);
  return fo == 0 ? 0 : table + fo;
}

// Appends `len` zero bytes starting at a multiple of `align`, and `skew` bytes past one (for a vector whose
// elements, after the 4-byte length, must be 8-byte aligned); returns where they start.
uint64_t append_zeros(std::vector<uint8_t>* b, size_t len, size_t align, size_t skew = 0) {
  while ((b->size() + skew) % align != 0) b->push_back(0);
  const uint64_t at = b->size();
  b->resize(at + len, 0);
  return at;
}

// The position of field `slot`, adding it when the table lacks it (FlatBuffers leaves default values out): a
// copy of the table's vtable that also has the slot is appended, after `size` zero bytes for the value, and the
// table's vtable offset is pointed at the copy. 0 when that is impossible (the value would lie more than 64 KiB
// past the table, or an earlier mutation broke the vtable).
uint64_t ensure_field(std::vector<uint8_t>* b, uint64_t table, uint16_t slot, size_t size) {
  if (const uint64_t f = field_pos(*b, table, slot)) return f;
  if (table + 4 > b->size()) return 0;
  const int64_t vt = static_cast<int64_t>(table) - read_at<int32_t>(*b, table);
  if (vt < 0 || static_cast<uint64_t>(vt) + 4 > b->size()) return 0;
  const uint16_t vlen = read_at<uint16_t>(*b, static_cast<uint64_t>(vt));
  if (vlen < 4 || vlen % 2 != 0 || static_cast<uint64_t>(vt) + vlen > b->size()) return 0;
  if ((b->size() + size + 16) - table > 0xFFFF) return 0;
  std::vector<uint8_t> vtable(b->begin() + vt, b->begin() + vt + vlen);
  vtable.resize(std::max<size_t>(vlen, slot + 2u), 0);
  const uint64_t value = append_zeros(b, size, std::max<size_t>(size, 2));
  const uint16_t new_len = static_cast<uint16_t>(vtable.size()), field_off = static_cast<uint16_t>(value - table);
  std::memcpy(vtable.data(), &new_len, 2);
  std::memcpy(vtable.data() + slot, &field_off, 2);
  const uint64_t at = append_zeros(b, vtable.size(), 2);
  std::memcpy(b->data() + at, vtable.data(), vtable.size());
  write_at<int32_t>(b, table, static_cast<int32_t>(static_cast<int64_t>(table) - static_cast<int64_t>(at)));
  return value;
}

template <typename T>
bool set_field(std::vector<uint8_t>* b, uint64_t table, uint16_t slot, T value) {
  const uint64_t f = ensure_field(b, table, slot, sizeof(T));
  return f != 0 && write_at<T>(b, f, value);
}

template <typename T>
T get_field(const std::vector<uint8_t>& b, uint64_t table, uint16_t slot, T absent) {
  const uint64_t f = field_pos(b, table, slot);
  return f == 0 ? absent : read_at<T>(b, f);
}

// Points the offset field `slot` of `table` at a new string or vector made of `payload` (with `count` as its
// length) appended to the file.
bool set_offset_field(std::vector<uint8_t>* b, uint64_t table, uint16_t slot, const void* payload, size_t bytes,
                      uint32_t count, bool nul) {
  const uint64_t f = ensure_field(b, table, slot, 4);
  if (f == 0) return false;
  const uint64_t at = append_zeros(b, 4 + bytes + (nul ? 1 : 0), 8, 4);  // elements 8-byte aligned
  std::memcpy(b->data() + at, &count, 4);
  if (bytes != 0) std::memcpy(b->data() + at + 4, payload, bytes);
  return write_at<uint32_t>(b, f, static_cast<uint32_t>(at - f));
}

bool set_string_field(std::vector<uint8_t>* b, uint64_t table, uint16_t slot, const std::string& v) {
  return set_offset_field(b, table, slot, v.data(), v.size(), static_cast<uint32_t>(v.size()), true);
}

template <typename T>
bool set_vector_field(std::vector<uint8_t>* b, uint64_t table, uint16_t slot, const std::vector<T>& v) {
  return set_offset_field(b, table, slot, v.data(), v.size() * sizeof(T), static_cast<uint32_t>(v.size()), false);
}

// Where the string or vector that offset field `slot` points at starts (its length), or 0.
uint64_t target_of(const std::vector<uint8_t>& b, uint64_t table, uint16_t slot) {
  const uint64_t f = field_pos(b, table, slot);
  if (f == 0) return 0;
  const uint64_t t = f + read_at<uint32_t>(b, f);
  return t + 4 <= b.size() ? t : 0;
}

template <typename T>
std::vector<T> read_vector(const std::vector<uint8_t>& b, uint64_t table, uint16_t slot) {
  std::vector<T> out;
  const uint64_t t = target_of(b, table, slot);
  const uint64_t n = t == 0 ? 0 : read_at<uint32_t>(b, t);
  for (uint64_t i = 0; i < n && t + 4 + (i + 1) * sizeof(T) <= b.size() && i < 4096; ++i)
    out.push_back(read_at<T>(b, t + 4 + i * sizeof(T)));
  return out;
}

std::string read_string(const std::vector<uint8_t>& b, uint64_t table, uint16_t slot) {
  const std::vector<char> chars = read_vector<char>(b, table, slot);
  return std::string(chars.begin(), chars.end());
}

// The names and strings of the catalogue, from the schemas of the registered kernels (sorted, so the order of
// registration does not change what a seed and Rng state give).
struct CatalogueNames {
  std::vector<std::string> ops, attrs, strings;
};

const CatalogueNames& catalogue_names() {
  static const CatalogueNames names = [] {
    CatalogueNames n;
    for (const KernelEntry* e = registered_kernels(); e != nullptr; e = e->next) {
      const OpSchema* s = e->def.schema;
      if (s == nullptr) continue;
      n.ops.push_back(s->name);
      for (int a = 0; a < s->n_attrs; ++a) {
        n.attrs.push_back(s->attrs[a].name);
        for (int c = 0; c < s->attrs[a].n_string_choices; ++c) n.strings.push_back(s->attrs[a].string_choices[c]);
      }
    }
    for (std::vector<std::string>* v : {&n.ops, &n.attrs, &n.strings}) {
      std::sort(v->begin(), v->end());
      v->erase(std::unique(v->begin(), v->end()), v->end());
      if (v->empty()) v->push_back("relu");
    }
    return n;
  }();
  return names;
}

// One edit of a name or string field: another `known` name (in place when it has the same length, else as a
// new string), a byte corrupted, an embedded NUL, cut short, a suffix, a NUL and a suffix. Returns how.
const char* edit_string(std::vector<uint8_t>* b, Rng* rng, uint64_t table, uint16_t slot,
                        const std::vector<std::string>& known) {
  const std::string old = read_string(*b, table, slot);
  const uint64_t t = target_of(*b, table, slot);
  const uint64_t r = rng->below(8);
  if (r <= 2 || old.empty() || t == 0) {  // another known name, or a near miss when none is left
    std::vector<const std::string*> same, other;
    for (const std::string& k : known) {
      if (k == old) continue;
      (k.size() == old.size() ? same : other).push_back(&k);
    }
    if (t != 0 && !same.empty() && rng->one_in(2)) {
      const std::string& k = *same[rng->below(same.size())];
      std::memcpy(b->data() + t + 4, k.data(), k.size());
      return "swap";
    }
    if (!other.empty() && r != 2) return set_string_field(b, table, slot, *other[rng->below(other.size())]) ? "swap" : "none";
    const char* const near[] = {"", " ", "RELU", "none ", "constant\n", "\xff\xfe", "\xc0\x80", "gelu_tanh_",
                                "activation\t"};
    return set_string_field(b, table, slot, pick(rng, near)) ? "near" : "none";
  }
  const uint64_t i = rng->below(old.size());
  switch (r) {
    case 3: {
      const uint8_t values[] = {0x80, 0xFF, 'A', '_', static_cast<uint8_t>(old[i] ^ 0x20), static_cast<uint8_t>(old[i] + 1)};
      (*b)[t + 4 + i] = pick(rng, values);
      return "byte";
    }
    case 4:
      (*b)[t + 4 + i] = 0;
      return "nul";
    case 5:  // a prefix: a shorter length and its terminator
      write_at<uint32_t>(b, t, static_cast<uint32_t>(i));
      (*b)[t + 4 + i] = 0;
      return "prefix";
    case 6: {
      const char* const suffixes[] = {"x", "_", "2d", " ", "relu"};
      return set_string_field(b, table, slot, old + pick(rng, suffixes)) ? "suffix" : "none";
    }
    default:
      return set_string_field(b, table, slot, old + std::string("\0evil", 5)) ? "nul-suffix" : "none";
  }
}

int64_t bad_attr_int(Rng* rng, int64_t old) {
  const int64_t values[] = {0, -1, 1, 2, 3, 7, 8, 16777216, 16777217, -16777217, std::numeric_limits<int32_t>::max(),
                            std::numeric_limits<int32_t>::min(), int64_t{1} << 32, int64_t{1} << 40,
                            std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), add64(old, 1),
                            add64(old, -1), static_cast<int64_t>(0 - static_cast<uint64_t>(old))};
  return pick(rng, values);
}

double bad_float(Rng* rng, double old) {
  const double values[] = {0.0, -0.0, -1.0, 1.0, 0.5, 1e-300, 5e-324, 1e300, -1e300, std::numeric_limits<double>::max(),
                           -std::numeric_limits<double>::max(), std::numeric_limits<double>::quiet_NaN(),
                           -std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(), 16777217.0, 1e20, 4294967296.0, old * 2, -old};
  return pick(rng, values);
}

// A list attribute edited: one element made bad, the list cut short in place, or a new list of another length
// (copies of the old elements, one of them bad). Returns how.
template <typename T, typename Bad>
const char* edit_list(std::vector<uint8_t>* b, Rng* rng, uint64_t table, uint16_t slot, Bad bad) {
  std::vector<T> v = read_vector<T>(*b, table, slot);
  const uint64_t t = target_of(*b, table, slot);
  const uint64_t r = rng->below(3);
  if (r == 0 && !v.empty()) {
    const uint64_t i = rng->below(v.size());
    write_at<T>(b, t + 4 + i * sizeof(T), bad(rng, v[i]));
    return "elem";
  }
  if (r == 1 && !v.empty()) {
    write_at<uint32_t>(b, t, static_cast<uint32_t>(rng->below(v.size())));
    return "shorter";
  }
  const size_t n = v.size();
  const size_t lengths[] = {0, 1, 2, 3, 4, n + 1, n + 2, 2 * n, 17, 64};
  const size_t len = pick(rng, lengths);
  std::vector<T> nv(len);
  for (size_t i = 0; i < len; ++i) nv[i] = n == 0 ? T(1) : v[i % n];
  if (len != 0 && rng->one_in(2)) nv[rng->below(len)] = bad(rng, nv[0]);
  return set_vector_field(b, table, slot, nv) ? "relist" : "none";
}

// Whether tensor c differs from a in dtype or role (what a node-index edit looks for).
bool differs(const Seed::TensorRef& a, const Seed::TensorRef& c) { return a.dtype != c.dtype || a.role != c.role; }

// --- the mutations ------------------------------------------------------------------------------------

enum Kind {
  kTruncate, kBitFlip, kOverwrite, kInflate32, kInflate64, kSwapChunks, kCopyChunk, kInsertChunk, kAppend,
  kVTable, kTableOffset, kLength, kIndex, kSegment, kDim, kField,
  kDType, kAttrType, kAttrInt, kAttrFloat, kAttrInts, kAttrFloats, kAttrString, kAttrName, kAttrDup, kOpName,
  kPlanOffset, kPlanArena, kNodeIndex, kNumKinds
};
constexpr int kFirstSemantic = kDType;
static_assert(kNumKinds < 64, "kinds are reported as bits of a uint64_t");

const char* const kKindNames[kNumKinds] = {
    "truncate",  "bitflip",    "overwrite",   "inflate32",   "inflate64", "swap",     "copy",     "insert",
    "append",    "vtable",     "soffset",     "length",      "index",     "segment",  "dim",      "field",
    "dtype",     "attr-type",  "attr-int",    "attr-float",  "attr-ints", "attr-floats", "attr-string",
    "attr-name", "attr-dup",   "op-name",     "plan-offset", "plan-arena", "node-index"};

// An attribute, preferring (three times in four) one whose value `kind` edits is really there: its offset field
// (ints, floats, s) present, or its type tag int / float, so most edits change a value the loader reads.
const Seed::AttrRef& pick_attr(const Seed& s, Rng* rng, const std::vector<uint8_t>& b, Kind kind) {
  auto wanted = [&](const Seed::AttrRef& a) {
    switch (kind) {
      case kAttrInt: return get_field<int8_t>(b, a.table, dtm::Attr::VT_TYPE, 0) == dtm::AttrType_int_;
      case kAttrFloat: return get_field<int8_t>(b, a.table, dtm::Attr::VT_TYPE, 0) == dtm::AttrType_float_;
      case kAttrInts: return target_of(b, a.table, dtm::Attr::VT_INTS) != 0;
      case kAttrFloats: return target_of(b, a.table, dtm::Attr::VT_FLOATS) != 0;
      case kAttrString: return target_of(b, a.table, dtm::Attr::VT_S) != 0;
      default: return true;
    }
  };
  const Seed::AttrRef* a = &s.attrs[rng->below(s.attrs.size())];
  for (int i = 0; i < 8 && !wanted(*a) && !rng->one_in(4); ++i) a = &s.attrs[rng->below(s.attrs.size())];
  return *a;
}

// Applies semantic kind `kind`: *at is where, *how a short detail. False when the seed has nothing of that kind
// (no attributes, no plan, one attribute per node), and nothing changed.
bool mutate_semantic(Kind kind, const Seed& s, Rng* rng, std::vector<uint8_t>* b, uint64_t* at, std::string* how) {
  const bool attr_kind = kind >= kAttrType && kind <= kAttrDup;
  if ((attr_kind && s.attrs.empty()) || (kind == kDType && s.tensors.empty()) ||
      (kind == kOpName && s.nodes.empty()) || (kind == kPlanOffset && s.plan_offsets.empty()) ||
      (kind == kPlanArena && s.plan == 0) || (kind == kNodeIndex && (s.node_indices.empty() || s.tensors.empty())))
    return false;
  const Seed::AttrRef a = attr_kind ? pick_attr(s, rng, *b, kind) : Seed::AttrRef{};
  *at = a.table;
  switch (kind) {
    case kDType:
    case kAttrType: {  // another value of the enum, or one outside it
      const bool dtype = kind == kDType;
      const uint64_t table = dtype ? s.tensors[rng->below(s.tensors.size())].table : a.table;
      const uint16_t slot = dtype ? static_cast<uint16_t>(dtm::Tensor::VT_DTYPE) : static_cast<uint16_t>(dtm::Attr::VT_TYPE);
      const int n = dtype ? dtm::DType_MAX + 1 : dtm::AttrType_MAX + 1;
      const int8_t old = get_field<int8_t>(*b, table, slot, 0);
      const int8_t outside[] = {static_cast<int8_t>(n), static_cast<int8_t>(n + 1), 64, 127, -1, -128};
      const int8_t v = rng->one_in(3) || old < 0 || old >= n
                           ? pick(rng, outside)
                           : static_cast<int8_t>((old + 1 + static_cast<int>(rng->below(n - 1))) % n);
      *at = table;
      *how = std::to_string(v);
      return set_field<int8_t>(b, table, slot, v);
    }
    case kAttrInt: {
      const int64_t v = bad_attr_int(rng, get_field<int64_t>(*b, a.table, dtm::Attr::VT_I, 0));
      *how = std::to_string(v);
      return set_field<int64_t>(b, a.table, dtm::Attr::VT_I, v);
    }
    case kAttrFloat: {
      const double v = bad_float(rng, get_field<double>(*b, a.table, dtm::Attr::VT_F, 0.0));
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%g", v);
      *how = buf;
      return set_field<double>(b, a.table, dtm::Attr::VT_F, v);
    }
    case kAttrInts:
      *how = edit_list<int64_t>(b, rng, a.table, dtm::Attr::VT_INTS, bad_attr_int);
      break;
    case kAttrFloats:
      *how = edit_list<double>(b, rng, a.table, dtm::Attr::VT_FLOATS, bad_float);
      break;
    case kAttrString:
      *how = edit_string(b, rng, a.table, dtm::Attr::VT_S, catalogue_names().strings);
      break;
    case kAttrName:
      *how = edit_string(b, rng, a.table, dtm::Attr::VT_NAME, catalogue_names().attrs);
      break;
    case kAttrDup: {  // another attribute of the same node: its table in this slot, or its name on this one
      std::vector<const Seed::AttrRef*> same;
      for (const Seed::AttrRef& o : s.attrs)
        if (o.node == a.node && o.table != a.table) same.push_back(&o);
      if (same.empty()) return false;
      const Seed::AttrRef& o = *same[rng->below(same.size())];
      if (o.table > a.slot && rng->one_in(2)) {
        *at = a.slot;
        *how = "slot";
        return write_at<uint32_t>(b, a.slot, o.table - a.slot);
      }
      *how = "name";
      return set_string_field(b, a.table, dtm::Attr::VT_NAME, read_string(*b, o.table, dtm::Attr::VT_NAME));
    }
    case kOpName:
      *at = s.nodes[rng->below(s.nodes.size())];
      *how = edit_string(b, rng, *at, dtm::Node::VT_OP, catalogue_names().ops);
      break;
    case kPlanOffset: {
      *at = s.plan_offsets[rng->below(s.plan_offsets.size())];
      const int64_t old = read_at<int64_t>(*b, *at);
      int64_t other = old;
      for (int i = 0; i < 8 && other == old; ++i) other = read_at<int64_t>(*b, s.plan_offsets[rng->below(s.plan_offsets.size())]);
      const int64_t arena = static_cast<int64_t>(get_field<uint64_t>(*b, s.plan, dtm::MemoryPlan::VT_ARENA_SIZE, 0));
      const int64_t values[] = {add64(old, 1), add64(old, -1), add64(old, 64), add64(old, -64), other, other, arena,
                                add64(arena, -1), add64(arena, -64), add64(arena, 64), add64(arena, arena), -1, -2, 0,
                                std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(),
                                int64_t{1} << 40, 63};
      const int64_t v = pick(rng, values);
      *how = std::to_string(v);
      return write_at<int64_t>(b, *at, v);
    }
    case kPlanArena: {
      *at = s.plan;
      const uint64_t old = get_field<uint64_t>(*b, s.plan, dtm::MemoryPlan::VT_ARENA_SIZE, 0);
      const uint64_t values[] = {0, 1, 63, 64, old / 2, old - 64, old - 1, old + 1, old * 2,
                                 std::numeric_limits<uint64_t>::max(), uint64_t{1} << 40, uint64_t{1} << 62,
                                 uint64_t{1} << 63};
      const uint64_t v = pick(rng, values);
      *how = std::to_string(v);
      return set_field<uint64_t>(b, s.plan, dtm::MemoryPlan::VT_ARENA_SIZE, v);
    }
    case kNodeIndex: {  // another tensor that differs in dtype or role from the one the seed has there
      *at = s.node_indices[rng->below(s.node_indices.size())];
      const int32_t old = read_at<int32_t>(s.bytes, *at);
      std::vector<int32_t> others;
      for (size_t t = 0; t < s.tensors.size(); ++t)
        if (old < 0 || static_cast<size_t>(old) >= s.tensors.size() || differs(s.tensors[t], s.tensors[old]))
          others.push_back(static_cast<int32_t>(t));
      if (others.empty()) return false;
      const int32_t v = others[rng->below(others.size())];
      *how = std::to_string(v);
      return write_at<int32_t>(b, *at, v);
    }
    default:
      return false;
  }
  return *how != "none";
}

// Applies one mutation; returns its description and sets the kind's bit in *kinds.
std::string mutate_once(const Seed& s, Rng* rng, std::vector<uint8_t>* b, uint64_t* kinds) {
  Kind kind = static_cast<Kind>(rng->below(kNumKinds));
  // A semantic kind that the seed has nothing for (no attributes, no plan) gives way to another draw.
  for (int tries = 0; kind >= kFirstSemantic && tries < 8; ++tries) {
    uint64_t where = 0;
    std::string how;
    if (mutate_semantic(kind, s, rng, b, &where, &how)) {
      *kinds |= uint64_t{1} << kind;
      return std::string(kKindNames[kind]) + "(" + how + ")@" + std::to_string(where);
    }
    kind = static_cast<Kind>(rng->below(kNumKinds));
  }
  if (kind >= kFirstSemantic) kind = kBitFlip;
  *kinds |= uint64_t{1} << kind;
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
    default:  // the semantic kinds, applied above
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

void mutate(const Seed& seed, Rng* rng, std::vector<uint8_t>* out, std::string* what, uint64_t* kinds) {
  *out = seed.bytes;
  what->clear();
  uint64_t applied = 0;
  const uint64_t count = rng->one_in(4) ? 2 + rng->below(3) : 1;
  for (uint64_t i = 0; i < count; ++i) {
    if (!what->empty()) *what += " + ";
    *what += mutate_once(seed, rng, out, &applied);
  }
  if (kinds != nullptr) *kinds = applied;
}

int num_kinds() { return kNumKinds; }
const char* kind_name(int kind) { return kind >= 0 && kind < kNumKinds ? kKindNames[kind] : "unknown"; }
bool is_semantic(int kind) { return kind >= kFirstSemantic && kind < kNumKinds; }

}  // namespace fuzz
}  // namespace dtorch
