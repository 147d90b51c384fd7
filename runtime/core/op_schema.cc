// Holding a node's attributes and dtypes against its operator's schema (core/op_schema.h). Runs at load, once
// per node; allocates nothing (messages are formatted in place).
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

Text allowed_names(const OpSchema& s) {
  if (s.n_attrs == 0) return text("none");
  Text out;
  for (int i = 0; i < s.n_attrs; ++i) append(&out, i ? ", %s" : "%s", s.attrs[i].name);
  return out;
}

Text bound_str(bool has, double v, bool is_int, const char* none) {
  if (!has) return text("%s", none);
  return is_int ? text("%lld", static_cast<long long>(v)) : text("%g", v);
}

Text range_str(const AttrSpec& a, bool is_int) {
  return text("[%s, %s]", bound_str(a.has_lo, a.lo, is_int, "-inf").c_str(),
                    bound_str(a.has_hi, a.hi, is_int, "inf").c_str());
}

Status bad(const OpSchema& s, const char* name, const char* what) {
  return error_status(StatusCode::kInvalidModel, "%s attribute '%s' %s", s.name, name, what);
}

// One numeric value (an int, a float, or one element of a list) against the spec's choices and bounds.
Status check_number(const OpSchema& s, const AttrSpec& a, double v, bool is_int, int64_t iv) {
  if (std::isnan(v) && (a.has_lo || a.has_hi)) return bad(s, a.name, "is NaN");
  if (a.int_choices != nullptr) {
    for (int i = 0; i < a.n_int_choices; ++i)
      if (a.int_choices[i] == iv) return Status::Ok();
    Text allowed;
    for (int i = 0; i < a.n_int_choices; ++i)
      append(&allowed, i ? ", %lld" : "%lld", static_cast<long long>(a.int_choices[i]));
    return bad(s, a.name, text("is %lld, expected one of %s", static_cast<long long>(iv), allowed.c_str()).c_str());
  }
  if ((a.has_lo && v < a.lo) || (a.has_hi && v > a.hi)) {
    const Text got = is_int ? text("%lld", static_cast<long long>(iv)) : text("%g", v);
    return bad(s, a.name, text("is %s, outside %s", got.c_str(), range_str(a, is_int).c_str()).c_str());
  }
  return Status::Ok();
}

Status check_length(const OpSchema& s, const AttrSpec& a, uint32_t n) {
  if (static_cast<int64_t>(n) < a.min_len || (a.max_len >= 0 && static_cast<int64_t>(n) > a.max_len)) {
    const Text want = a.min_len == a.max_len ? text("%d", a.min_len)
                                             : text("%d to %s", a.min_len,
                                                    a.max_len < 0 ? "any" : text("%d", a.max_len).c_str());
    return bad(s, a.name, text("has %u values, expected %s", static_cast<unsigned>(n), want.c_str()).c_str());
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
      Text allowed;
      for (int i = 0; i < a.n_string_choices; ++i) {
        if (std::strcmp(a.string_choices[i], str->c_str()) == 0) return Status::Ok();
        append(&allowed, i ? ", \"%s\"" : "\"%s\"", a.string_choices[i]);
      }
      return bad(s, a.name, text("is \"%s\", expected one of %s", str->c_str(), allowed.c_str()).c_str());
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
        return bad(schema, a->name, text("is %s, but %s takes %s", kind_name(kind), schema.name,
                                         kind_name(static_cast<int>(a->kind))).c_str());
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

namespace {

bool present(const NodeDTypes& n, int i) { return i >= 64 || ((n.absent >> i) & 1) == 0; }

// How many present inputs have the signature's dtype, and whether all do.
int inputs_matched(const DTypeSignature& s, const NodeDTypes& n, bool* all) {
  int k = 0;
  *all = true;
  for (int i = 0; i < n.n_inputs; ++i) {
    if (!present(n, i)) continue;
    if (n.inputs[i] == signature_input(s, i))
      ++k;
    else
      *all = false;
  }
  return k;
}

DType signature_output(const DTypeSignature& s, int k) { return s.outputs[k < s.n_outputs ? k : s.n_outputs - 1]; }

bool outputs_match(const DTypeSignature& s, const NodeDTypes& n) {
  for (int k = 0; k < n.n_outputs; ++k)
    if (n.outputs[k] != signature_output(s, k)) return false;
  return true;
}

// Whether output 0 of the signature is the dtype the node's dtype attribute names (true without one).
bool attr_matches(const OpSchema& schema, const DTypeSignature& s, const NodeDTypes& n) {
  return schema.dtype_attr == nullptr ||
         (n.dtype_attr_value != nullptr && std::strcmp(dtype_name(s.outputs[0]), n.dtype_attr_value) == 0);
}

}  // namespace

const DTypeSignature* match_signature(const OpSchema& schema, const NodeDTypes& n, DTypeMismatch* why) {
  DTypeMismatch w;
  int first = -1;
  for (int i = 0; i < n.n_inputs && first < 0; ++i)
    if (present(n, i)) first = i;
  if (first < 0 && (n.outputs == nullptr || n.n_outputs == 0)) {
    if (why != nullptr) *why = w;
    return nullptr;
  }
  w.key = first >= 0 ? n.inputs[first] : n.outputs[0];
  w.got = w.key;
  const DTypeSignature* nearest = nullptr;  // the most inputs matched, when none matches them all
  const DTypeSignature* fits = nullptr;     // the first whose inputs all match
  int best = -1;
  for (int j = 0; j < schema.n_signatures; ++j) {
    const DTypeSignature& s = schema.signatures[j];
    if (s.n_inputs == 0 || s.inputs[0] != w.key) continue;
    bool all = false;
    const int k = inputs_matched(s, n, &all);
    if (!all) {
      if (k > best) best = k, nearest = &s;
      continue;
    }
    if (fits == nullptr) fits = &s;
    if ((n.outputs == nullptr || outputs_match(s, n)) && attr_matches(schema, s, n)) return &s;
  }
  if (why == nullptr) return nullptr;
  if (fits == nullptr && nearest == nullptr) {
    *why = w;  // kNoKey
    return nullptr;
  }
  if (schema.dtype_attr != nullptr && n.outputs != nullptr && n.n_outputs > 0 &&
      (n.dtype_attr_value == nullptr || std::strcmp(dtype_name(n.outputs[0]), n.dtype_attr_value) != 0)) {
    w.kind = DTypeMismatch::kDTypeAttr;
    w.got = n.outputs[0];
  } else if (fits == nullptr) {
    w.kind = DTypeMismatch::kInput;
    for (int i = 0; i < n.n_inputs; ++i)
      if (present(n, i) && n.inputs[i] != signature_input(*nearest, i)) {
        w.index = i;
        w.got = n.inputs[i];
        w.want = signature_input(*nearest, i);
        break;
      }
  } else if (schema.dtype_attr != nullptr) {
    w.kind = DTypeMismatch::kNoSignature;
  } else {
    w.kind = DTypeMismatch::kOutput;
    for (int k = 0; k < n.n_outputs; ++k)
      if (n.outputs[k] != signature_output(*fits, k)) {
        w.index = k;
        w.got = n.outputs[k];
        w.want = signature_output(*fits, k);
        break;
      }
  }
  *why = w;
  return nullptr;
}

Text signature_str(const DTypeSignature& s) {
  Text out = text("(");
  for (int i = 0; i < s.n_inputs; ++i) append(&out, i ? ", %s" : "%s", dtype_name(s.inputs[i]));
  append(&out, ") -> ");
  for (int k = 0; k < s.n_outputs; ++k) append(&out, k ? ", %s" : "%s", dtype_name(s.outputs[k]));
  return out;
}

Text describe_mismatch(const OpSchema& schema, const NodeDTypes& n, const DTypeMismatch& why, const char* slot) {
  const char* op = schema.name;
  const Text at = slot[0] == '\0' ? Text() : text(" (%s)", slot);
  Text same_key;  // every signature of the key, when there are several
  int n_key = 0;
  for (int j = 0; j < schema.n_signatures; ++j) {
    const DTypeSignature& s = schema.signatures[j];
    if (s.n_inputs == 0 || s.inputs[0] != why.key) continue;
    append(&same_key, n_key++ ? "; %s" : "%s", signature_str(s).c_str());
  }
  const Text others =
      n_key > 1 ? text(" (%s's %s signatures: %s)", op, dtype_name(why.key), same_key.c_str()) : Text();
  switch (why.kind) {
    case DTypeMismatch::kNoKey: {
      Text keys;
      for (int j = 0; j < schema.n_signatures; ++j) {
        const char* k = dtype_name(schema.signatures[j].inputs[0]);
        bool seen = false;
        for (int i = 0; i < j && !seen; ++i) seen = schema.signatures[i].inputs[0] == schema.signatures[j].inputs[0];
        if (!seen) append(&keys, keys.buf[0] == '\0' ? "%s" : ", %s", k);
      }
      return text("%s has no kernel for %s inputs (it takes %s)", op, dtype_name(why.key), keys.c_str());
    }
    case DTypeMismatch::kInput:
      return text("input %d%s is %s, but %s takes %s there%s", why.index, at.c_str(), dtype_name(why.got), op,
                        dtype_name(why.want), others.c_str());
    case DTypeMismatch::kOutput:
      return text("output %d%s is declared %s, but the %s kernel writes %s", why.index, at.c_str(),
                        dtype_name(why.got), op, dtype_name(why.want));
    case DTypeMismatch::kDTypeAttr: {
      const char* v = n.dtype_attr_value != nullptr ? n.dtype_attr_value : "";
      return text("output 0%s is declared %s, but %s with %s=\"%s\" writes %s", at.c_str(), dtype_name(why.got),
                        op, schema.dtype_attr, v, v);
    }
    case DTypeMismatch::kNoSignature: {
      Text ins;
      for (int i = 0; i < n.n_inputs; ++i)
        if (present(n, i)) append(&ins, ins.buf[0] == '\0' ? "%s" : ", %s", dtype_name(n.inputs[i]));
      Text outs;
      if (n.outputs != nullptr)
        for (int k = 0; k < n.n_outputs; ++k) append(&outs, k ? ", %s" : "%s", dtype_name(n.outputs[k]));
      else if (n.dtype_attr_value != nullptr)
        outs = text("%s", n.dtype_attr_value);
      return text("(%s) -> %s is not a signature of %s%s", ins.c_str(), outs.c_str(), op, others.c_str());
    }
  }
  return text("%s: the node's dtypes match none of its signatures", op);
}

}  // namespace dtorch
