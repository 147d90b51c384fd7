// The .dtm loader: verify the FlatBuffer, then check everything the verifier cannot (versions, indices,
// segments, shapes, topological order, kernels) so that the executor can trust the model. Every check
// fails with a Status that says what is wrong; nothing here reads outside the given bytes.
#include <cstdarg>
#include <cstdint>
#include <cstring>

#include "core/carve.h"
#include "core/model.h"
#include "core/op_schema.h"
#include "dtm_generated.h"
#include "dtorch/version.h"

namespace dtorch {
namespace {

// "invalid model file: <formatted>; re-export the model with dtorch"
Status invalid(const char* fmt, ...) DTORCH_PRINTF_LIKE(1, 2);
Status invalid(const char* fmt, ...) {
  Text what;
  va_list ap;
  va_start(ap, fmt);
  vformat(what.buf, Text::kBytes, fmt, ap);
  va_end(ap);
  return error_status(StatusCode::kInvalidModel, "invalid model file: %s; re-export the model with dtorch",
                      what.c_str());
}

Text tensor_label(const LoadedModel& m, int t) {
  const char* name = m.tensors[t].name;
  return name[0] == '\0' ? text("tensor %d", t) : text("tensor %d ('%s')", t, name);
}

Text node_label(const NodeInfo& n, int i) {
  return n.name[0] == '\0' ? text("node %d ('%s')", i, n.op) : text("node %d ('%s', %s)", i, n.op, n.name);
}

using ull = unsigned long long;

// Strict UTF-8 (no overlong forms, no surrogates), so names can become Python str.
bool valid_utf8(const flatbuffers::String* str) {
  if (str == nullptr) return true;
  const auto* p = reinterpret_cast<const uint8_t*>(str->data());
  const size_t n = str->size();
  for (size_t i = 0; i < n;) {
    const uint8_t c = p[i];
    size_t len;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += len;
  }
  return true;
}

// Every string in the model is valid UTF-8.
bool all_strings_utf8(const dtm::Model* model) {
  if (!valid_utf8(model->producer())) return false;
  if (const auto* ts = model->tensors())
    for (flatbuffers::uoffset_t i = 0; i < ts->size(); ++i) {
      if (!valid_utf8(ts->Get(i)->name())) return false;
      if (const auto* sh = ts->Get(i)->shape())
        for (flatbuffers::uoffset_t d = 0; d < sh->size(); ++d)
          if (!valid_utf8(sh->Get(d)->name())) return false;
    }
  if (const auto* ns = model->nodes())
    for (flatbuffers::uoffset_t i = 0; i < ns->size(); ++i) {
      const dtm::Node* n = ns->Get(i);
      if (!valid_utf8(n->op()) || !valid_utf8(n->name())) return false;
      if (const auto* as = n->attrs())
        for (flatbuffers::uoffset_t k = 0; k < as->size(); ++k)
          if (!valid_utf8(as->Get(k)->name()) || !valid_utf8(as->Get(k)->s())) return false;
    }
  if (const auto* ol = model->op_list())
    for (flatbuffers::uoffset_t i = 0; i < ol->size(); ++i)
      if (!valid_utf8(ol->Get(i))) return false;
  if (const auto* md = model->metadata())
    for (flatbuffers::uoffset_t i = 0; i < md->size(); ++i)
      if (!valid_utf8(md->Get(i)->key()) || !valid_utf8(md->Get(i)->value())) return false;
  return true;
}

// The FlatBuffers verifier checks the alignment of a vector's length but not of its elements: a vector of
// 8-byte scalars or structs may start at a 4-byte boundary, and reading it is undefined behaviour.
template <typename V>
bool aligned8(const V* v, const uint8_t* base) {
  return v == nullptr || (reinterpret_cast<uintptr_t>(v->Data()) - reinterpret_cast<uintptr_t>(base)) % 8 == 0;
}

bool vectors_aligned(const dtm::Model* model, const uint8_t* base) {
  if (!aligned8(model->segments(), base)) return false;
  if (model->plan() != nullptr && !aligned8(model->plan()->offsets(), base)) return false;
  if (const auto* ts = model->tensors())
    for (flatbuffers::uoffset_t i = 0; i < ts->size(); ++i)
      if (!aligned8(ts->Get(i)->example_shape(), base)) return false;
  if (const auto* ns = model->nodes())
    for (flatbuffers::uoffset_t i = 0; i < ns->size(); ++i)
      if (const auto* as = ns->Get(i)->attrs())
        for (flatbuffers::uoffset_t k = 0; k < as->size(); ++k)
          if (!aligned8(as->Get(k)->ints(), base) || !aligned8(as->Get(k)->floats(), base)) return false;
  if (const dtm::TestVector* tv = model->test_vector()) {
    for (const auto* shapes : {tv->input_shapes(), tv->output_shapes()})
      if (shapes != nullptr)
        for (flatbuffers::uoffset_t k = 0; k < shapes->size(); ++k)
          if (!aligned8(shapes->Get(k)->dims(), base)) return false;
  }
  return true;
}

bool mul_overflow(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_mul_overflow(a, b, out); }

// Bytes of a fully static shape, or false on a dynamic dim / overflow.
bool static_nbytes(const Shape& s, DType dt, uint64_t* out) {
  uint64_t n = dtype_size(dt);
  for (int i = 0; i < s.ndim; ++i) {
    if (s.dims[i] < 0 || mul_overflow(n, static_cast<uint64_t>(s.dims[i]), &n)) return false;
  }
  *out = n;
  return true;
}

Status read_shape(const flatbuffers::Vector<int64_t>* dims, const char* what, Shape* out) {
  out->ndim = 0;
  if (dims == nullptr) return Status::Ok();
  if (dims->size() > static_cast<flatbuffers::uoffset_t>(kMaxDims))
    return invalid("%s has rank %u (at most %d supported)", what, static_cast<unsigned>(dims->size()), kMaxDims);
  out->ndim = static_cast<int32_t>(dims->size());
  for (flatbuffers::uoffset_t i = 0; i < dims->size(); ++i) {
    out->dims[i] = dims->Get(i);
    if (out->dims[i] < 0) return invalid("%s has a negative dimension", what);
  }
  return Status::Ok();
}

Status check_segment(const dtm::Model* model, int64_t seg, const char* what, uint64_t* offset, uint64_t* size) {
  const auto* segs = model->segments();
  if (segs == nullptr || seg < 0 || seg >= static_cast<int64_t>(segs->size()))
    return invalid("%s refers to segment %lld, which does not exist", what, static_cast<long long>(seg));
  const dtm::Segment* s = segs->Get(static_cast<flatbuffers::uoffset_t>(seg));
  *offset = s->offset();
  *size = s->size();
  return Status::Ok();
}

// The node against its operator's schema (the catalogue): attributes, and the dtypes of its inputs and outputs
// against the signatures of the kernel it was bound to (those keyed by its first present input's dtype; with a
// dtype attribute, output 0 as the attribute says), so a kernel never writes a dtype the plan did not size.
Status check_node_schema(const LoadedModel& m, const NodeInfo& n, int ni) {
  const OpSchema& schema = *n.kernel->schema;
  const Status attrs = check_attrs(schema, n.node);
  if (!attrs.ok()) return invalid("%s: %s", node_label(n, ni).c_str(), attrs.message());
  DType ins[kMaxNodeArity], outs[kMaxNodeArity];
  for (size_t k = 0; k < n.inputs.size(); ++k) ins[k] = DType::kFloat32;
  uint64_t absent = 0;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    if (n.inputs[k] < 0)
      absent |= uint64_t{1} << k;  // the arity check allows absent inputs among the first 64 only
    else
      ins[k] = m.tensors[n.inputs[k]].dtype;
  }
  for (size_t k = 0; k < n.outputs.size(); ++k) outs[k] = m.tensors[n.outputs[k]].dtype;
  const NodeDTypes dts{ins, static_cast<int>(n.inputs.size()), absent, outs, static_cast<int>(n.outputs.size()),
                       schema.dtype_attr != nullptr ? n.attrs.get_string(schema.dtype_attr) : nullptr};
  DTypeMismatch why;
  if (match_signature(schema, dts, &why) != nullptr) return Status::Ok();
  if (why.kind == DTypeMismatch::kNoKey)  // the registry refuses such kernels at start-up
    return Status(StatusCode::kInternal, "a kernel is registered for a dtype its schema does not list");
  Text slot;
  if (why.kind == DTypeMismatch::kInput)
    slot = tensor_label(m, n.inputs[why.index]);
  else if (why.kind != DTypeMismatch::kNoSignature)
    slot = tensor_label(m, n.outputs[why.index]);
  return invalid("%s: %s", node_label(n, ni).c_str(), describe_mismatch(schema, dts, why, slot.c_str()).c_str());
}

// The checks every load starts with, none of which needs memory: identifier, the FlatBuffer verifier, alignment,
// versions, strings.
Status verify_model(const uint8_t* data, size_t size, const dtm::Model** out) {
  if (data == nullptr || size < 8)
    return invalid("the file is %zu bytes, too short to be a .dtm model (truncated?)", size);
  if (static_cast<uint64_t>(size) > kMaxFileSize) return invalid("the file is larger than 1 TiB");
  if (!flatbuffers::BufferHasIdentifier(data, dtm::ModelIdentifier()))
    return Status(StatusCode::kInvalidModel,
                  "not a .dtm model: the file identifier is not \"DTM1\" (is this the right file? export one with "
                  "dtorch.export)");
  flatbuffers::Verifier verifier(data, size, /*max_depth=*/64, /*max_tables=*/4000000);
  if (!dtm::VerifyModelBuffer(verifier))
    return invalid("the FlatBuffer failed verification (the file is truncated or corrupt)");
  if (reinterpret_cast<uintptr_t>(data) % 8 != 0)
    return Status(StatusCode::kInvalidArgument, "the model bytes must start at an 8-byte aligned address");
  const dtm::Model* model = dtm::GetModel(data);
  if (!vectors_aligned(model, data))
    return invalid("a vector of 8-byte values (segments, shapes, int or float attributes, memory plan offsets) is "
                   "not 8-byte aligned in the file");

  // Versions first: a newer file may mean things this runtime cannot check.
  const uint32_t fv = model->format_version(), minv = model->min_runtime_version();
  const char* producer = model->producer() ? model->producer()->c_str() : "unknown producer";
  if (fv == 0) return invalid("format_version is 0 (not set)");
  if (fv > kFormatVersion)
    return error_status(StatusCode::kVersionMismatch,
                        "the model file has format version %u (written by %s), newer than this runtime's format "
                        "version %u (dtorch runtime %s); update the runtime or export with an older dtorch",
                        static_cast<unsigned>(fv), producer, kFormatVersion, kRuntimeVersion);
  if (minv > kFormatVersion)
    return error_status(StatusCode::kVersionMismatch,
                        "the model file needs runtime version >= %u (written by %s), but this runtime is version %u "
                        "(dtorch runtime %s); update the runtime",
                        static_cast<unsigned>(minv), producer, kFormatVersion, kRuntimeVersion);

  if (!all_strings_utf8(model)) return invalid("a name or string in the file is not valid UTF-8");
  const size_t nt = model->tensors() ? model->tensors()->size() : 0;
  const size_t nn = model->nodes() ? model->nodes()->size() : 0;
  if (nt > (size_t{1} << 24)) return invalid("too many tensors");
  if (nn > (size_t{1} << 24)) return invalid("too many nodes");
  *out = model;
  return Status::Ok();
}

struct Tables {
  Span<TensorInfo> tensors;
  Span<NodeInfo> nodes;
  Span<Shape> example_shapes;
  Span<TestTensor> test_inputs, test_outputs;
  Span<uint8_t> defined, is_output;
};

// Lays the tables out in `c` (Carve::fits says whether they fit).
void carve_tables(const dtm::Model* model, Carve* c, Tables* t) {
  const size_t nt = model->tensors() ? model->tensors()->size() : 0;
  const size_t nn = model->nodes() ? model->nodes()->size() : 0;
  const size_t ni = model->inputs() ? model->inputs()->size() : 0;
  const size_t no = model->outputs() ? model->outputs()->size() : 0;
  t->tensors = c->span<TensorInfo>(nt);
  t->nodes = c->span<NodeInfo>(nn);
  t->example_shapes = c->span<Shape>(ni);
  t->test_inputs = c->span<TestTensor>(ni);
  t->test_outputs = c->span<TestTensor>(no);
  t->defined = c->span<uint8_t>(nt);
  t->is_output = c->span<uint8_t>(nt);
}

template <typename T>
Span<const T> span_of(const flatbuffers::Vector<T>* v) {
  Span<const T> s;
  if (v != nullptr) {
    s.ptr = v->data();
    s.n = v->size();
  }
  return s;
}

}  // namespace

#if !FLATBUFFERS_LITTLEENDIAN
#error "the runtime reads the model's index vectors in place, which needs a little-endian target"
#endif

Status model_tables_bytes(const uint8_t* data, size_t size, size_t* bytes) {
  const dtm::Model* model = nullptr;
  DTORCH_RETURN_IF_ERROR(verify_model(data, size, &model));
  Carve c{nullptr, 0};
  Tables t;
  carve_tables(model, &c, &t);
  *bytes = c.used;
  return Status::Ok();
}

Status load_model(const uint8_t* data, size_t size, void* tables, size_t tables_bytes, LoadedModel* out,
                  KernelPolicy policy, const char* const* exclude_sets, size_t n_exclude) {
  LoadedModel& m = *out;
  m = LoadedModel();
  const dtm::Model* model = nullptr;
  DTORCH_RETURN_IF_ERROR(verify_model(data, size, &model));
  if (tables == nullptr || reinterpret_cast<uintptr_t>(tables) % 8 != 0)
    return Status(StatusCode::kInvalidArgument, "the model's tables must start at an 8-byte aligned address");
  Carve carve{static_cast<uint8_t*>(tables), tables_bytes};
  Tables tb;
  carve_tables(model, &carve, &tb);
  if (!carve.fits())
    return error_status(StatusCode::kInvalidArgument, "the model's tables need %zu bytes, %zu were given",
                        carve.used, tables_bytes);
  m.model = model;

  // Segments: inside the file, 64-byte aligned.
  const auto* segs = model->segments();
  if (segs != nullptr) {
    for (flatbuffers::uoffset_t i = 0; i < segs->size(); ++i) {
      const dtm::Segment* s = segs->Get(i);
      uint64_t end = 0;
      if (s->offset() % 64 != 0)
        return invalid("segment %u starts at offset %llu, not a multiple of 64", static_cast<unsigned>(i),
                       static_cast<ull>(s->offset()));
      if (__builtin_add_overflow(s->offset(), s->size(), &end) || end > size)
        return invalid("segment %u [%llu, +%llu) lies outside the file (%zu bytes; truncated?)", static_cast<unsigned>(i),
                       static_cast<ull>(s->offset()), static_cast<ull>(s->size()), size);
    }
  }

  // Tensors.
  const auto* tensors = model->tensors();
  const size_t nt = tb.tensors.size();
  m.tensors = tb.tensors;
  for (size_t t = 0; t < nt; ++t) {
    const dtm::Tensor* ft = tensors->Get(static_cast<flatbuffers::uoffset_t>(t));
    TensorInfo& ti = m.tensors[t];
    ti = TensorInfo();
    ti.name = ft->name() ? ft->name()->c_str() : "";
    tb.defined[t] = 0;
    tb.is_output[t] = 0;
    const int dt = static_cast<int>(ft->dtype());
    const Text label = tensor_label(m, static_cast<int>(t));
    if (dt < 0 || dt > static_cast<int>(DType::kBool)) return invalid("%s has unknown dtype %d", label.c_str(), dt);
    ti.dtype = static_cast<DType>(dt);
    const int kind = static_cast<int>(ft->kind());
    if (kind < dtm::TensorKind_MIN || kind > dtm::TensorKind_MAX)
      return invalid("%s has unknown kind %d", label.c_str(), kind);
    const auto* shape = ft->shape();
    if (shape != nullptr && shape->size() > static_cast<flatbuffers::uoffset_t>(kMaxDims))
      return invalid("%s has rank %u (at most %d supported)", label.c_str(), static_cast<unsigned>(shape->size()),
                     kMaxDims);
    ti.file_shape.ndim = shape ? static_cast<int32_t>(shape->size()) : 0;
    for (int d = 0; d < ti.file_shape.ndim; ++d) {
      const int64_t v = shape->Get(static_cast<flatbuffers::uoffset_t>(d))->size();
      if (v < -1)
        return invalid("%s dimension %d has size %lld (expected >= 0, or -1 for a dynamic dimension)", label.c_str(),
                       d, static_cast<long long>(v));
      ti.file_shape.dims[d] = v;
    }
    if (kind == dtm::TensorKind_constant) {
      ti.role = TensorRole::kConstant;
      uint64_t off = 0, bytes = 0, want = 0;
      DTORCH_RETURN_IF_ERROR(check_segment(model, ft->segment(), label.c_str(), &off, &bytes));
      if (!static_nbytes(ti.file_shape, ti.dtype, &want))
        return invalid("constant %s has a dynamic or too large shape", label.c_str());
      if (want != bytes)
        return invalid("constant %s needs %llu bytes for its shape and dtype but its segment holds %llu",
                       label.c_str(), static_cast<ull>(want), static_cast<ull>(bytes));
      ti.data = data + off;
      ti.nbytes = static_cast<size_t>(bytes);
      m.weights_bytes += bytes;
    }
  }

  // Model inputs and outputs.
  uint8_t* defined = tb.defined.data();
  uint8_t* is_output = tb.is_output.data();
  m.inputs = span_of(model->inputs());
  m.outputs = span_of(model->outputs());
  if (m.outputs.empty()) return invalid("the model has no outputs");
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const int32_t t = m.inputs[i];
    if (t < 0 || static_cast<size_t>(t) >= nt) return invalid("model input %zu refers to tensor %d of %zu", i, static_cast<int>(t), nt);
    if (m.tensors[t].role != TensorRole::kIntermediate || defined[t])
      return invalid("model input %zu (%s) is listed twice or is a constant", i, tensor_label(m, t).c_str());
    m.tensors[t].role = TensorRole::kInput;
    defined[t] = 1;
  }
  for (size_t i = 0; i < m.outputs.size(); ++i) {
    const int32_t t = m.outputs[i];
    if (t < 0 || static_cast<size_t>(t) >= nt) return invalid("model output %zu refers to tensor %d of %zu", i, static_cast<int>(t), nt);
    if (is_output[t]) return invalid("model output %zu (%s) is listed twice", i, tensor_label(m, t).c_str());
    is_output[t] = 1;
    if (m.tensors[t].role == TensorRole::kIntermediate) m.tensors[t].role = TensorRole::kOutput;
  }
  for (size_t t = 0; t < nt; ++t)
    if (m.tensors[t].role == TensorRole::kConstant) defined[t] = 1;

  // Nodes: indices in range, inputs defined before use, each tensor produced once, a kernel for each.
  const auto* nodes = model->nodes();
  const size_t nn = tb.nodes.size();
  m.nodes = tb.nodes;
  for (size_t i = 0; i < nn; ++i) {
    const dtm::Node* fn = nodes->Get(static_cast<flatbuffers::uoffset_t>(i));
    NodeInfo& n = m.nodes[i];
    n = NodeInfo();
    n.node = fn;
    n.op = fn->op()->c_str();
    n.name = fn->name() ? fn->name()->c_str() : "";
    const int ni = static_cast<int>(i);
    if (std::strlen(n.op) != fn->op()->size())
      return invalid("node %d has an operator name with an embedded NUL byte ('%s\\0...'); operator names are "
                     "the catalogue's names, matched whole", ni, n.op);
    n.inputs = span_of(fn->inputs());
    n.outputs = span_of(fn->outputs());
    if (n.inputs.size() > static_cast<size_t>(kMaxNodeArity) || n.outputs.size() > static_cast<size_t>(kMaxNodeArity))
      return invalid("%s has more than %d inputs or outputs", node_label(n, ni).c_str(), kMaxNodeArity);
    if (n.outputs.empty()) return invalid("%s has no outputs", node_label(n, ni).c_str());
    int first_present = -1;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const int32_t t = n.inputs[k];
      if (t == -1) continue;
      if (t < 0 || static_cast<size_t>(t) >= nt)
        return invalid("%s input %zu refers to tensor %d of %zu", node_label(n, ni).c_str(), k, static_cast<int>(t), nt);
      if (!defined[t])
        return invalid("%s reads %s before any node produces it (nodes must be in topological order)",
                       node_label(n, ni).c_str(), tensor_label(m, t).c_str());
      if (first_present < 0) first_present = t;
      m.tensors[t].last_use = ni;
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const int32_t t = n.outputs[k];
      if (t < 0 || static_cast<size_t>(t) >= nt)
        return invalid("%s output %zu refers to tensor %d of %zu", node_label(n, ni).c_str(), k, static_cast<int>(t), nt);
      if (defined[t])
        return invalid("%s writes %s, which is a model input, a constant or already produced by an earlier node",
                       node_label(n, ni).c_str(), tensor_label(m, t).c_str());
      defined[t] = 1;
      m.tensors[t].producer = ni;
    }
    const DType kdt = m.tensors[first_present >= 0 ? first_present : n.outputs[0]].dtype;
    n.kernel = find_kernel(n.op, kdt, policy, exclude_sets, n_exclude);
    if (n.kernel == nullptr)
      return error_status(StatusCode::kUnsupported, "model needs operator '%s' (%s), which this runtime was built "
                          "without", n.op, dtype_name(kdt));
    n.attrs = Attrs(fn, n.kernel->schema);
    uint64_t absent = 0;
    for (size_t k = 0; k < n.inputs.size(); ++k)
      if (n.inputs[k] < 0) absent |= uint64_t{1} << k;
    const Status arity = check_kernel_arity(*n.kernel, static_cast<int>(n.inputs.size()), absent,
                                            static_cast<int>(n.outputs.size()));
    if (!arity.ok()) return invalid("%s: %s", node_label(n, ni).c_str(), arity.message());
    DTORCH_RETURN_IF_ERROR(check_node_schema(m, n, ni));
    if (static_cast<int>(n.inputs.size()) > m.max_node_inputs) m.max_node_inputs = static_cast<int>(n.inputs.size());
    if (static_cast<int>(n.outputs.size()) > m.max_node_outputs)
      m.max_node_outputs = static_cast<int>(n.outputs.size());
  }
  for (int32_t t : m.outputs)
    if (!defined[t]) return invalid("model output %s is never produced by any node", tensor_label(m, t).c_str());

  // The inputs' example shapes, when every input has one that fits its declared shape.
  m.example_input_shapes = tb.example_shapes;
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const int32_t t = m.inputs[i];
    const auto* ex = tensors->Get(static_cast<flatbuffers::uoffset_t>(t))->example_shape();
    const Shape& declared = m.tensors[t].file_shape;
    Shape& s = m.example_input_shapes[i];
    bool fits = ex != nullptr && read_shape(ex, "an example shape", &s).ok() && s.ndim == declared.ndim;
    for (int d = 0; fits && d < s.ndim; ++d)
      fits = s.dims[d] >= 0 && (declared.dims[d] < 0 || declared.dims[d] == s.dims[d]);
    if (!fits) {
      m.example_input_shapes = Span<Shape>();
      break;
    }
  }

  // The memory plan: one offset per tensor, checked against the example shapes by the session.
  if (model->plan() != nullptr && model->plan()->offsets() != nullptr && model->plan()->offsets()->size() > 0) {
    const auto* offs = model->plan()->offsets();
    if (offs->size() != nt)
      return invalid("the memory plan has %u offsets for %zu tensors", static_cast<unsigned>(offs->size()), nt);
    if (m.example_input_shapes.size() != m.inputs.size())
      return invalid("the file has a memory plan but no example input shapes to check it at");
    m.plan_offsets = span_of(offs);
    m.plan_arena_size = model->plan()->arena_size();
    m.has_plan = true;
  }

  // The bundled test vector.
  const dtm::TestVector* tv = model->test_vector();
  if (tv != nullptr) {
    auto read_side = [&](const flatbuffers::Vector<int32_t>* segidx,
                         const flatbuffers::Vector<flatbuffers::Offset<dtm::Shape>>* shapes,
                         Span<const int32_t> tensors_of, const char* side, Span<TestTensor> out) -> Status {
      const size_t n = tensors_of.size();
      if (segidx == nullptr || shapes == nullptr || segidx->size() != n || shapes->size() != n)
        return invalid("the test vector needs one %s segment and shape per model %s", side, side);
      for (size_t k = 0; k < n; ++k) {
        const Text what = text("test vector %s %zu", side, k);
        uint64_t off = 0, bytes = 0, want = 0;
        DTORCH_RETURN_IF_ERROR(
            check_segment(model, segidx->Get(static_cast<flatbuffers::uoffset_t>(k)), what.c_str(), &off, &bytes));
        Shape s;
        DTORCH_RETURN_IF_ERROR(
            read_shape(shapes->Get(static_cast<flatbuffers::uoffset_t>(k))->dims(), what.c_str(), &s));
        if (!static_nbytes(s, m.tensors[tensors_of[k]].dtype, &want) || want != bytes)
          return invalid("%s has %llu bytes, which does not match its shape", what.c_str(), static_cast<ull>(bytes));
        out[k].data = data + off;
        out[k].bytes = static_cast<size_t>(bytes);
        out[k].shape = s;
      }
      return Status::Ok();
    };
    DTORCH_RETURN_IF_ERROR(read_side(tv->inputs(), tv->input_shapes(), m.inputs, "input", tb.test_inputs));
    DTORCH_RETURN_IF_ERROR(read_side(tv->outputs(), tv->output_shapes(), m.outputs, "output", tb.test_outputs));
    m.test_inputs = tb.test_inputs;
    m.test_outputs = tb.test_outputs;
    m.has_test_vector = true;
  }
  return Status::Ok();
}

}  // namespace dtorch
