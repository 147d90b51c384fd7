// Holding a node's attributes and dtypes against its operator's schema (core/op_schema.h). Runs at load, once
// per node; allocates only for an error message.
#include "core/op_schema.h"

#include <cmath>
#include <cstring>

#include "dtm_generated.h"

namespace dtorch {
namespace {

const char* kind_name(int kind) {
  switch (kind) {
    case static_cast<int>(AttrKind::kInt): return "int";
    case static_cast<int>(AttrKind::kFloat): return "float";
    case static_cast<int>(AttrKind::kInts): return "ints";
    case static_cast<int>(AttrKind::kFloats): return "floats";
    case static_cast<int>(AttrKind::kString): return "string";
    default: return "an unknown type";
  }
}

std::string allowed_names(const OpSchema& s) {
  if (s.n_attrs == 0) return "none";
  std::string out;
  for (int i = 0; i < s.n_attrs; ++i) {
    if (i > 0) out += ", ";
    out += s.attrs[i].name;
  }
  return out;
}

std::string bound_str(bool has, double v, bool is_int, const char* none) {
  if (!has) return none;
  return is_int ? format_str("%lld", static_cast<long long>(v)) : format_str("%g", v);
}

std::string range_str(const AttrSpec& a, bool is_int) {
  return format_str("[%s, %s]", bound_str(a.has_lo, a.lo, is_int, "-inf").c_str(),
                    bound_str(a.has_hi, a.hi, is_int, "inf").c_str());
}

Status bad(const OpSchema& s, const char* name, const std::string& what) {
  return error_status(StatusCode::kInvalidModel, "%s attribute '%s' %s", s.name, name, what.c_str());
}

// One numeric value (an int, a float, or one element of a list) against the spec's choices and bounds.
Status check_number(const OpSchema& s, const AttrSpec& a, double v, bool is_int, int64_t iv) {
  if (std::isnan(v) && (a.has_lo || a.has_hi)) return bad(s, a.name, "is NaN");
  if (a.int_choices != nullptr) {
    for (int i = 0; i < a.n_int_choices; ++i)
      if (a.int_choices[i] == iv) return Status::Ok();
    std::string allowed;
    for (int i = 0; i < a.n_int_choices; ++i)
      allowed += format_str(i ? ", %lld" : "%lld", static_cast<long long>(a.int_choices[i]));
    return bad(s, a.name, format_str("is %lld, expected one of %s", static_cast<long long>(iv), allowed.c_str()));
  }
  if ((a.has_lo && v < a.lo) || (a.has_hi && v > a.hi)) {
    const std::string got = is_int ? format_str("%lld", static_cast<long long>(iv)) : format_str("%g", v);
    return bad(s, a.name, format_str("is %s, outside %s", got.c_str(), range_str(a, is_int).c_str()));
  }
  return Status::Ok();
}

Status check_length(const OpSchema& s, const AttrSpec& a, uint32_t n) {
  if (static_cast<int64_t>(n) < a.min_len || (a.max_len >= 0 && static_cast<int64_t>(n) > a.max_len)) {
    const std::string want = a.min_len == a.max_len ? format_str("%d", a.min_len)
                                                    : format_str("%d to %s", a.min_len,
                                                                 a.max_len < 0 ? "any" : format_str("%d", a.max_len).c_str());
    return bad(s, a.name, format_str("has %u values, expected %s", n, want.c_str()));
  }
  return Status::Ok();
}

Status check_value(const OpSchema& s, const AttrSpec& a, const dtm::Attr& at) {
  switch (a.kind) {
    case AttrKind::kInt:
      return check_number(s, a, static_cast<double>(at.i()), true, at.i());
    case AttrKind::kFloat:
      return check_number(s, a, at.f(), false, 0);
    case AttrKind::kInts: {
      const auto* v = at.ints();
      const uint32_t n = v ? v->size() : 0;
      DTORCH_RETURN_IF_ERROR(check_length(s, a, n));
      for (uint32_t i = 0; i < n; ++i) DTORCH_RETURN_IF_ERROR(check_number(s, a, static_cast<double>(v->Get(i)), true, v->Get(i)));
      return Status::Ok();
    }
    case AttrKind::kFloats: {
      const auto* v = at.floats();
      const uint32_t n = v ? v->size() : 0;
      DTORCH_RETURN_IF_ERROR(check_length(s, a, n));
      for (uint32_t i = 0; i < n; ++i) DTORCH_RETURN_IF_ERROR(check_number(s, a, v->Get(i), false, 0));
      return Status::Ok();
    }
    case AttrKind::kString: {
      const flatbuffers::String* str = at.s();
      if (str == nullptr) return bad(s, a.name, "has no string value");
      if (std::strlen(str->c_str()) != str->size()) return bad(s, a.name, "contains a NUL byte");
      if (a.string_choices == nullptr) return Status::Ok();
      std::string allowed;
      for (int i = 0; i < a.n_string_choices; ++i) {
        if (std::strcmp(a.string_choices[i], str->c_str()) == 0) return Status::Ok();
        allowed += format_str(i ? ", \"%s\"" : "\"%s\"", a.string_choices[i]);
      }
      return bad(s, a.name, format_str("is \"%s\", expected one of %s", str->c_str(), allowed.c_str()));
    }
  }
  return bad(s, a.name, "has an unknown type");
}

}  // namespace

const AttrSpec* find_attr_spec(const OpSchema& schema, const char* name, size_t len) {
  if (name == nullptr || std::strlen(name) != len) return nullptr;
  for (int i = 0; i < schema.n_attrs; ++i)
    if (std::strcmp(schema.attrs[i].name, name) == 0) return &schema.attrs[i];
  return nullptr;
}

Status check_attrs(const OpSchema& schema, const void* node) {
  const auto* attrs = static_cast<const dtm::Node*>(node)->attrs();
  const uint32_t n = attrs ? attrs->size() : 0;
  uint64_t seen = 0;  // bit i: schema attribute i present (schemas have far fewer than 64 attributes)
  for (uint32_t k = 0; k < n; ++k) {
    const dtm::Attr* at = attrs->Get(k);
    const flatbuffers::String* nm = at->name();
    const AttrSpec* a = find_attr_spec(schema, nm->c_str(), nm->size());
    if (a == nullptr) {
      if (std::strlen(nm->c_str()) != nm->size())
        return error_status(StatusCode::kInvalidModel, "%s: an attribute name contains a NUL byte", schema.name);
      return error_status(StatusCode::kInvalidModel, "'%s' is not an attribute of %s (allowed: %s)", nm->c_str(),
                          schema.name, allowed_names(schema).c_str());
    }
    const int idx = static_cast<int>(a - schema.attrs);
    if (idx < 64 && (seen >> idx & 1))
      return bad(schema, a->name, "is given twice");
    if (idx < 64) seen |= uint64_t{1} << idx;
    const int kind = static_cast<int>(at->type());
    if (kind != static_cast<int>(a->kind)) {
      // An empty list is written as ints whatever its element type.
      const bool empty_list = a->kind == AttrKind::kFloats && kind == static_cast<int>(AttrKind::kInts) &&
                              (at->ints() == nullptr || at->ints()->size() == 0);
      if (!empty_list)
        return bad(schema, a->name, format_str("is %s, but %s takes %s", kind_name(kind), schema.name,
                                               kind_name(static_cast<int>(a->kind))));
      DTORCH_RETURN_IF_ERROR(check_length(schema, *a, 0));
      continue;
    }
    DTORCH_RETURN_IF_ERROR(check_value(schema, *a, *at));
  }
  for (int i = 0; i < schema.n_attrs && i < 64; ++i)
    if (schema.attrs[i].required && !(seen >> i & 1))
      return error_status(StatusCode::kInvalidModel, "%s: missing required attribute '%s' (%s)", schema.name,
                          schema.attrs[i].name, kind_name(static_cast<int>(schema.attrs[i].kind)));
  return Status::Ok();
}

const DTypeSignature* find_signature(const OpSchema& schema, DType key) {
  for (int i = 0; i < schema.n_signatures; ++i)
    if (schema.signatures[i].n_inputs > 0 && schema.signatures[i].inputs[0] == key) return &schema.signatures[i];
  return nullptr;
}

}  // namespace dtorch
