// Operator schemas: what the catalogue (dtorch/catalogue, generated into core/ops_generated.h) says about one
// operator, in the form the loader checks model files against. Each kernel registration points at its
// operator's schema (KernelDef::schema), so a pruned build carries only the schemas of the operators it has.
// All of it is constant data with static storage; nothing here allocates.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dtorch/status.h"
#include "dtorch/types.h"

namespace dtorch {

// The .dtm attribute types, in dtm::AttrType order.
enum class AttrKind : uint8_t { kInt = 0, kFloat = 1, kInts = 2, kFloats = 3, kString = 4 };

// Whether a node's output may take its first input's buffer when that input dies at the node.
enum class InPlace : uint8_t {
  kNone,
  kAlways,     // unary elementwise: same size out as in
  kSameShape,  // binary elementwise: only when the output's shape equals the first input's
};

struct AttrSpec {
  const char* name;
  AttrKind kind;
  bool required;
  bool has_lo, has_hi;  // inclusive bounds of the value (of each element of a list)
  double lo, hi;
  int min_len, max_len;                 // element count of a list attribute; max_len -1 = unbounded
  const char* const* string_choices;    // legal values of a string attribute (null: any)
  int n_string_choices;
  const int64_t* int_choices;           // legal values of an int attribute (null: any in [lo, hi])
  int n_int_choices;
  // The catalogue's default when the file leaves the attribute out (Attrs returns it; kernels never restate it).
  bool has_default;                     // false: required, or absent means "not given" (e.g. stride = kernel)
  double default_num;                   // int and float attributes (int64 defaults are far inside 2^53)
  const char* default_str;              // string attributes
  const double* default_list;           // ints and floats attributes: n_default values
  int n_default;
};

// One dtype combination a kernel implements. A variadic last input slot repeats its dtype. The first input's dtype
// is the registry key; several signatures may share it (one kernel serves them all, e.g. where's, keyed by its bool
// condition, or cast's, keyed by its input), and a node must match one in full.
struct DTypeSignature {
  const DType* inputs;
  int n_inputs;
  const DType* outputs;
  int n_outputs;
};

struct OpSchema {
  const char* name;
  int min_inputs;            // required inputs (slots 0 .. min_inputs-1 unless marked optional)
  int max_inputs;            // -1: variadic (any count >= min_inputs)
  uint64_t optional_inputs;  // bit i set: input i may be absent
  int num_outputs;
  const AttrSpec* attrs;
  int n_attrs;
  const DTypeSignature* signatures;
  int n_signatures;
  InPlace inplace;
  // The string attribute that names output 0's dtype (cast's "to"), or null: output 0 must be declared with it.
  const char* dtype_attr;
};

// The attribute spec of `name` (exactly `len` bytes; a name with an embedded NUL never matches), or null.
const AttrSpec* find_attr_spec(const OpSchema& schema, const char* name, size_t len);

// Checks a node's attributes (a dtm::Node) against the schema: every attribute is known, of its catalogue type,
// with a legal value, given once; every required attribute is there. The error names the attribute, what came
// and what is allowed (the caller adds which node).
Status check_attrs(const OpSchema& schema, const void* node);

// The first signature whose first input dtype is `key`, or null.
const DTypeSignature* find_signature(const OpSchema& schema, DType key);

// The dtype a signature wants in input slot i (a variadic last slot repeats).
inline DType signature_input(const DTypeSignature& s, int i) { return s.inputs[i < s.n_inputs ? i : s.n_inputs - 1]; }

// The dtypes of one node: its inputs (bit i of `absent` set: input i is absent, its dtype ignored; inputs past 64 are
// present), its outputs (outputs == null: not known yet, e.g. in a kernel's infer) and, for an operator with a dtype
// attribute (OpSchema::dtype_attr), that attribute's value (null: not given).
struct NodeDTypes {
  const DType* inputs;
  int n_inputs;
  uint64_t absent;
  const DType* outputs;
  int n_outputs;
  const char* dtype_attr_value;
};

// Why a node's dtypes match none of its operator's signatures (match_signature).
struct DTypeMismatch {
  enum Kind : uint8_t {
    kNoKey,       // no signature has the first present input's dtype (got)
    kInput,       // input `index` is `got`; the nearest signature wants `want`
    kOutput,      // output `index` is declared `got`; the signature the inputs match writes `want`
    kDTypeAttr,   // output 0 is declared `got`, but the dtype attribute names another dtype (dtype_attr_value)
    kNoSignature  // the inputs match, the outputs are as the dtype attribute says, but no signature writes them
  } kind = kNoKey;
  int index = 0;
  DType got = DType::kFloat32, want = DType::kFloat32;
  DType key = DType::kFloat32;  // the first present input's dtype
};

// The signature the node matches, or null with *why (when non-null) saying what does not fit: the signature keyed
// by the first present input's dtype whose every present input, every output (when known) and, with a dtype
// attribute, output 0 match. A node without present inputs matches nothing.
const DTypeSignature* match_signature(const OpSchema& schema, const NodeDTypes& node, DTypeMismatch* why);

// A one-line description of a mismatch ("input 1 is int64, but where takes float32 there (where's bool signatures:
// ...)"); `slot` names the offending input or output more precisely when non-empty (e.g. "tensor 3 ('x')").
// Allocates: error paths only.
Text describe_mismatch(const OpSchema& schema, const NodeDTypes& node, const DTypeMismatch& why, const char* slot);

// "(bool, float32, float32) -> float32" (error paths only).
Text signature_str(const DTypeSignature& s);

}  // namespace dtorch
