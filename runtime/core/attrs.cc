// Attrs: read a node's attributes straight from the .dtm FlatBuffer. A node has few attributes, so a
// linear scan by name is simplest and allocates nothing. A missing attribute gives the operator's catalogue
// default (ops_generated.h), so no kernel restates one (get_float also accepts an int attribute).
#include <cstring>

#include "core/kernel.h"
#include "dtm_generated.h"

namespace dtorch {
namespace {

const dtm::Attr* find_attr(const void* node, const char* name) {
  if (node == nullptr || name == nullptr) return nullptr;
  const auto* attrs = static_cast<const dtm::Node*>(node)->attrs();
  if (attrs == nullptr) return nullptr;
  for (flatbuffers::uoffset_t i = 0; i < attrs->size(); ++i) {
    const dtm::Attr* a = attrs->Get(i);
    if (a != nullptr && a->name() != nullptr && std::strcmp(a->name()->c_str(), name) == 0) return a;
  }
  return nullptr;
}

}  // namespace

bool Attrs::has(const char* name) const { return find_attr(node_, name) != nullptr; }

const AttrSpec* Attrs::spec(const char* name) const {
  return schema_ == nullptr ? nullptr : find_attr_spec(*schema_, name, std::strlen(name));
}

int64_t Attrs::get_int(const char* name) const {
  const dtm::Attr* a = find_attr(node_, name);
  if (a != nullptr && a->type() == dtm::AttrType_int_) return a->i();
  const AttrSpec* s = spec(name);
  return s != nullptr && s->has_default ? static_cast<int64_t>(s->default_num) : 0;
}

double Attrs::get_float(const char* name) const {
  const dtm::Attr* a = find_attr(node_, name);
  if (a != nullptr && a->type() == dtm::AttrType_float_) return a->f();
  if (a != nullptr && a->type() == dtm::AttrType_int_) return static_cast<double>(a->i());
  const AttrSpec* s = spec(name);
  return s != nullptr && s->has_default ? s->default_num : 0.0;
}

const char* Attrs::get_string(const char* name) const {
  const dtm::Attr* a = find_attr(node_, name);
  if (a != nullptr && a->type() == dtm::AttrType_string && a->s() != nullptr) return a->s()->c_str();
  const AttrSpec* s = spec(name);
  return s != nullptr && s->default_str != nullptr ? s->default_str : "";
}

namespace {

// The catalogue's default list of `name`, copied into `out` (up to cap): its length, or -1 when it has none.
template <typename T>
int default_list(const AttrSpec* s, T* out, int cap) {
  if (s == nullptr || !s->has_default) return -1;
  for (int i = 0; i < s->n_default && i < cap; ++i) out[i] = static_cast<T>(s->default_list[i]);
  return s->n_default;
}

// A list attribute's values copied into `out` (up to cap): its length.
template <typename T, typename Vec>
int copy_list(const Vec* v, T* out, int cap) {
  if (v == nullptr) return 0;
  const int n = static_cast<int>(v->size());
  for (int i = 0; i < n && i < cap; ++i) out[i] = v->Get(static_cast<flatbuffers::uoffset_t>(i));
  return n;
}

}  // namespace

int Attrs::get_ints(const char* name, int64_t* out, int cap) const {
  const dtm::Attr* a = find_attr(node_, name);
  if (a == nullptr || a->type() != dtm::AttrType_ints) return default_list(spec(name), out, cap);
  return copy_list(a->ints(), out, cap);
}

int Attrs::get_floats(const char* name, double* out, int cap) const {
  const dtm::Attr* a = find_attr(node_, name);
  if (a == nullptr || a->type() != dtm::AttrType_floats) return default_list(spec(name), out, cap);
  return copy_list(a->floats(), out, cap);
}

}  // namespace dtorch
