// Attrs: read a node's attributes straight from the .dtm FlatBuffer. A node has few attributes, so a
// linear scan by name is simplest and allocates nothing. A missing attribute or one of another type
// gives the caller's fallback (get_float also accepts an int attribute).
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

int64_t Attrs::get_int(const char* name, int64_t fallback) const {
  const dtm::Attr* a = find_attr(node_, name);
  if (a == nullptr || a->type() != dtm::AttrType_int_) return fallback;
  return a->i();
}

double Attrs::get_float(const char* name, double fallback) const {
  const dtm::Attr* a = find_attr(node_, name);
  if (a == nullptr) return fallback;
  if (a->type() == dtm::AttrType_float_) return a->f();
  if (a->type() == dtm::AttrType_int_) return static_cast<double>(a->i());
  return fallback;
}

int Attrs::get_ints(const char* name, int64_t* out, int cap) const {
  const dtm::Attr* a = find_attr(node_, name);
  if (a == nullptr || a->type() != dtm::AttrType_ints) return -1;
  const auto* v = a->ints();
  if (v == nullptr) return 0;
  const int n = static_cast<int>(v->size());
  for (int i = 0; i < n && i < cap; ++i) out[i] = v->Get(static_cast<flatbuffers::uoffset_t>(i));
  return n;
}

int Attrs::get_floats(const char* name, double* out, int cap) const {
  const dtm::Attr* a = find_attr(node_, name);
  if (a == nullptr || a->type() != dtm::AttrType_floats) return -1;
  const auto* v = a->floats();
  if (v == nullptr) return 0;
  const int n = static_cast<int>(v->size());
  for (int i = 0; i < n && i < cap; ++i) out[i] = v->Get(static_cast<flatbuffers::uoffset_t>(i));
  return n;
}

const char* Attrs::get_string(const char* name, const char* fallback) const {
  const dtm::Attr* a = find_attr(node_, name);
  if (a == nullptr || a->type() != dtm::AttrType_string || a->s() == nullptr) return fallback;
  return a->s()->c_str();
}

}  // namespace dtorch
