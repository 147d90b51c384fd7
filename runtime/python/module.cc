// dtorch.runtime._C: the pybind11 binding of the C++ runtime.
//   run_kernel(op, attrs, inputs, threads=1, output_dtypes=None, num_outputs=1, kernel_set=None, kernels="fast")
//       -> list[np.ndarray]: runs one kernel on NumPy arrays (the kernel tests use it); kernel_set=None runs the
//       kernel a session would (the highest priority), "portable"/"x86"/... the one of that kernel set;
//       output_dtypes=None: those of the signature the inputs select (bool for equal, `to` for cast, ...)
//   plan_arena(nodes, tensors) -> (tensor offsets, scratch offsets, arena_size): the arena planner
//   registered_kernels() -> list[(op, dtype)]  (each pair once, whatever the number of kernel sets)
//   registered_kernel_sets() -> list[(op, dtype, kernel_set, priority)]
//   Session: the model session behind dtorch.runtime.InferenceSession (see dtorch/runtime/__init__.py)
// Errors raise InvalidModelError / VersionMismatchError (ValueError), UnsupportedError
// (NotImplementedError), ValueError (invalid argument), OSError (I/O) or RuntimeError (internal).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/kernel.h"
#include "core/exec.h"
#include "hosted/planner.h"
#include "dtm_generated.h"
#include "dtorch/runtime.h"

namespace py = pybind11;
using namespace dtorch;

namespace {

struct StatusError {
  Status status;
};

[[noreturn]] void throw_status(const Status& st) { throw StatusError{st}; }

py::object g_invalid_model, g_version_mismatch, g_unsupported;

void raise_python(const Status& st) {
  PyObject* type = PyExc_RuntimeError;
  switch (st.code()) {
    case StatusCode::kInvalidArgument: type = PyExc_ValueError; break;
    case StatusCode::kInvalidModel: type = g_invalid_model.ptr(); break;
    case StatusCode::kVersionMismatch: type = g_version_mismatch.ptr(); break;
    case StatusCode::kUnsupported: type = g_unsupported.ptr(); break;
    case StatusCode::kIOError: type = PyExc_OSError; break;
    default: break;
  }
  PyErr_SetString(type, st.message());
}

// --- dtypes -----------------------------------------------------------------------------------
bool dtype_from_numpy(const py::dtype& dt, DType* out) {
  const std::string name = py::str(dt.attr("name"));
  static const std::pair<const char*, DType> table[] = {
      {"float32", DType::kFloat32}, {"float16", DType::kFloat16}, {"bfloat16", DType::kBFloat16},
      {"float64", DType::kFloat64}, {"int64", DType::kInt64},     {"int32", DType::kInt32},
      {"int16", DType::kInt16},     {"int8", DType::kInt8},       {"uint8", DType::kUInt8},
      {"bool", DType::kBool}};
  for (const auto& e : table)
    if (name == e.first) {
      *out = e.second;
      return true;
    }
  return false;
}

bool dtype_from_name(const std::string& name, DType* out) {
  for (int i = 0; i <= static_cast<int>(DType::kBool); ++i)
    if (name == dtype_name(static_cast<DType>(i))) {
      *out = static_cast<DType>(i);
      return true;
    }
  return false;
}

py::dtype numpy_dtype(DType t) {
  if (t == DType::kBFloat16) return py::dtype::from_args(py::module_::import("ml_dtypes").attr("bfloat16"));
  const char* name = t == DType::kBool ? "bool" : dtype_name(t);
  return py::dtype(std::string(name));
}

// The runtime dtype of a NumPy builtin dtype, by kind and size (no string made or compared): the per-run fast path.
// Other dtypes (ml_dtypes' bfloat16, a kind 'V' user type) go by name through dtype_from_numpy.
bool dtype_from_kind(const py::dtype& dt, DType* out) {
  const py::ssize_t size = dt.itemsize();
  DType t;
  switch (dt.kind()) {
    case 'f': t = size == 2 ? DType::kFloat16 : size == 4 ? DType::kFloat32 : DType::kFloat64; break;
    case 'i':
      t = size == 1 ? DType::kInt8 : size == 2 ? DType::kInt16 : size == 4 ? DType::kInt32 : DType::kInt64;
      break;
    case 'u': t = DType::kUInt8; break;
    case 'b': t = DType::kBool; break;
    default: return false;
  }
  if (static_cast<py::ssize_t>(dtype_size(t)) != size) return false;  // e.g. float128, uint16
  *out = t;
  return true;
}

// Whether NumPy stores dt's values in this machine's byte order ('=' native, '|' not applicable; NumPy writes a
// native '<' or '>' as '=').
bool native_order(const py::dtype& dt) {
  const char b = dt.byteorder();
  return b == '=' || b == '|' || b == (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? '<' : '>');
}

// A C-contiguous, native-byte-order array of a supported dtype, and a view of it.
py::array as_view(py::handle obj, const std::string& what, TensorView* view) {
  if (py::isinstance<py::array>(obj)) {  // the common case, checked without calling into Python
    py::array arr = py::reinterpret_borrow<py::array>(obj);
    const py::dtype dt = arr.dtype();
    if ((arr.flags() & py::array::c_style) != 0 && arr.ndim() <= kMaxDims && native_order(dt) &&
        dtype_from_kind(dt, &view->dtype)) {
      view->shape.ndim = static_cast<int32_t>(arr.ndim());
      for (py::ssize_t i = 0; i < arr.ndim(); ++i) view->shape.dims[i] = arr.shape(i);
      view->data = const_cast<void*>(arr.data());
      return arr;
    }
  }
  if (!py::isinstance<py::array>(obj))
    throw_status(Status(StatusCode::kInvalidArgument,
                        what + " must be a numpy.ndarray, got " + std::string(py::str(py::type::of(obj).attr("__name__"))) +
                            "; wrap it with numpy.asarray(..., dtype=numpy.float32)"));
  // asarray(order="C"), not ascontiguousarray, which makes a 0-d (scalar) array 1-d
  py::array arr = py::module_::import("numpy").attr("asarray")(obj, py::arg("order") = "C");
  if (!arr.dtype().attr("isnative").cast<bool>())
    throw_status(Status(StatusCode::kInvalidArgument,
                        what + " has non-native byte order; convert it with .astype(a.dtype.newbyteorder('='))"));
  if (!dtype_from_numpy(arr.dtype(), &view->dtype))
    throw_status(Status(StatusCode::kInvalidArgument, what + " has dtype " + std::string(py::str(arr.dtype())) +
                                                          ", which the runtime does not support"));
  if (arr.ndim() > kMaxDims)
    throw_status(Status(StatusCode::kInvalidArgument, what + " has " + std::to_string(arr.ndim()) +
                                                          " dimensions; the runtime supports at most " +
                                                          std::to_string(kMaxDims)));
  view->shape.ndim = static_cast<int32_t>(arr.ndim());
  for (py::ssize_t i = 0; i < arr.ndim(); ++i) view->shape.dims[i] = arr.shape(i);
  view->data = const_cast<void*>(arr.data());
  return arr;
}

// --- the arena planner ----------------------------------------------------------------------------
using PyPlanNode = std::tuple<std::string, std::vector<int32_t>, std::vector<int32_t>, size_t>;
using PyPlanTensor = std::tuple<bool, size_t, std::string, std::vector<int64_t>>;

py::tuple plan_arena_py(const std::vector<PyPlanNode>& nodes, const std::vector<PyPlanTensor>& tensors) {
  const int64_t nt = static_cast<int64_t>(tensors.size());
  std::vector<PlanTensor> pt(tensors.size());
  for (size_t t = 0; t < tensors.size(); ++t) {
    const auto& [planned, bytes, dtype, shape] = tensors[t];
    if (shape.size() > static_cast<size_t>(kMaxDims))
      throw_status(error_status(StatusCode::kInvalidArgument, "tensor %zu has more than %d dimensions", t, kMaxDims));
    if (!dtype_from_numpy(py::dtype(dtype), &pt[t].dtype))
      throw_status(error_status(StatusCode::kInvalidArgument, "tensor %zu has the unknown dtype '%s'", t, dtype.c_str()));
    pt[t].planned = planned;
    pt[t].bytes = bytes;
    pt[t].shape.ndim = static_cast<int32_t>(shape.size());
    std::copy(shape.begin(), shape.end(), pt[t].shape.dims);
  }
  std::vector<PlanNode> pn(nodes.size());
  std::vector<bool> produced(tensors.size(), false);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto& [rule, ins, outs, scratch] = nodes[i];
    if (rule == "always") pn[i].inplace = InPlace::kAlways;
    else if (rule == "same_shape") pn[i].inplace = InPlace::kSameShape;
    else if (rule != "none")
      throw_status(error_status(StatusCode::kInvalidArgument, "node %zu: unknown in-place rule '%s'", i, rule.c_str()));
    for (int32_t t : ins)
      if (t < -1 || t >= nt || (t >= 0 && pt[static_cast<size_t>(t)].planned && !produced[static_cast<size_t>(t)]))
        throw_status(error_status(StatusCode::kInvalidArgument, "node %zu reads tensor %d, which is not a tensor or "
                                  "not produced yet", i, t));
    for (int32_t t : outs) {
      if (t < 0 || t >= nt || produced[static_cast<size_t>(t)])
        throw_status(error_status(StatusCode::kInvalidArgument, "node %zu writes tensor %d, which is not a tensor or "
                                  "already produced", i, t));
      produced[static_cast<size_t>(t)] = true;
    }
    pn[i].inputs = ins.data();
    pn[i].num_inputs = ins.size();
    pn[i].outputs = outs.data();
    pn[i].num_outputs = outs.size();
    pn[i].scratch_bytes = scratch;
  }
  for (size_t t = 0; t < tensors.size(); ++t)
    if (pt[t].planned && !produced[t])
      throw_status(error_status(StatusCode::kInvalidArgument, "planned tensor %zu is produced by no node", t));
  ArenaPlan plan;
  plan_arena(pn, pt, &plan);
  if (!verify_arena_plan(pn, pt, plan)) throw_status(Status(StatusCode::kInternal, "plan verification failed"));
  return py::make_tuple(plan.tensor_offset, plan.scratch_offset, plan.arena_size);
}

// --- run_kernel ---------------------------------------------------------------------------------
struct AlignedBuffer {
  void* p = nullptr;
  explicit AlignedBuffer(size_t n) {
    if (posix_memalign(&p, 64, std::max<size_t>(n, 64)) != 0) throw std::bad_alloc();
  }
  ~AlignedBuffer() { std::free(p); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
};

flatbuffers::Offset<dtm::Attr> build_attr(flatbuffers::FlatBufferBuilder& fbb, const std::string& name,
                                          py::handle v) {
  auto n = fbb.CreateString(name);
  if (py::isinstance<py::bool_>(v) || py::isinstance<py::int_>(v))
    return dtm::CreateAttr(fbb, n, dtm::AttrType_int_, v.cast<int64_t>());
  if (py::isinstance<py::float_>(v)) return dtm::CreateAttr(fbb, n, dtm::AttrType_float_, 0, v.cast<double>());
  if (py::isinstance<py::str>(v)) {
    auto s = fbb.CreateString(v.cast<std::string>());
    return dtm::CreateAttr(fbb, n, dtm::AttrType_string, 0, 0.0, 0, 0, s);
  }
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    py::sequence seq = py::reinterpret_borrow<py::sequence>(v);
    bool any_float = false;
    for (py::handle e : seq) {
      if (py::isinstance<py::float_>(e)) any_float = true;
      else if (!py::isinstance<py::int_>(e))
        throw_status(Status(StatusCode::kInvalidArgument,
                            "attribute '" + name + "': list elements must be int or float"));
    }
    if (any_float) {
      std::vector<double> f;
      for (py::handle e : seq) f.push_back(e.cast<double>());
      auto fv = fbb.CreateVector(f);
      return dtm::CreateAttr(fbb, n, dtm::AttrType_floats, 0, 0.0, 0, fv);
    }
    std::vector<int64_t> i;
    for (py::handle e : seq) i.push_back(e.cast<int64_t>());
    auto iv = fbb.CreateVector(i);
    return dtm::CreateAttr(fbb, n, dtm::AttrType_ints, 0, 0.0, iv);
  }
  throw_status(Status(StatusCode::kInvalidArgument, "attribute '" + name + "' has type " +
                                                        std::string(py::str(py::type::of(v).attr("__name__"))) +
                                                        "; expected int, float, str or a list of ints/floats"));
}

// NCHW <-> the blocked layout (core/kernel.h) of a blockable tensor's data.
void to_blocked(const TensorView& t, const float* src, float* dst, bool inverse) {
  const int64_t n = t.shape.dims[0], c = t.shape.dims[1], hw = t.shape.dims[2] * t.shape.dims[3];
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) {
        const int64_t plain = (i * c + ch) * hw + p;
        const int64_t blocked =
            ((i * (c / kLayoutBlock) + ch / kLayoutBlock) * hw + p) * kLayoutBlock + ch % kLayoutBlock;
        if (inverse)
          dst[plain] = src[blocked];
        else
          dst[blocked] = src[plain];
      }
}

// The arena the C API's engine needs for a model (core/exec.h: engine_arena_bytes), with the kernels of `kernels`.
size_t engine_arena(py::bytes model, const std::string& kernels) {
  KernelPolicy policy = KernelPolicy::kFast;
  if (!parse_kernel_policy(kernels.c_str(), &policy))
    throw_status(Status(StatusCode::kInvalidArgument,
                        "kernels must be 'fast', 'exact' or 'portable', got '" + kernels + "'"));
  const std::string data = model;  // a 64-byte aligned copy: the engine uses weights in place
  void* copy = ::operator new(data.size() + 64, std::align_val_t(64));
  std::memcpy(copy, data.data(), data.size());
  size_t needed = 0;
  const Status st = engine_arena_bytes(
      static_cast<const uint8_t*>(copy), data.size(), policy,
      [](size_t n) { return ::operator new((n + 63) / 64 * 64, std::align_val_t(64), std::nothrow); },
      [](void* p) { ::operator delete(p, std::align_val_t(64)); }, &needed);
  ::operator delete(copy, std::align_val_t(64));
  if (!st.ok()) throw_status(st);
  return needed;
}

py::list run_kernel(const std::string& op, const py::dict& attrs, const py::list& inputs, int threads,
                    py::object output_dtypes, int num_outputs, py::object kernel_set, const std::string& kernels,
                    bool prepare, const std::vector<int>& blocked_inputs, const std::vector<int>& blocked_outputs) {
  KernelPolicy policy = KernelPolicy::kFast;
  if (!parse_kernel_policy(kernels.c_str(), &policy))
    throw_status(Status(StatusCode::kInvalidArgument,
                        "kernels must be 'fast', 'exact' or 'portable', got '" + kernels + "'"));
  if (threads < 1) throw_status(Status(StatusCode::kInvalidArgument, "threads must be >= 1"));
  if (num_outputs < 1 || num_outputs > 16)
    throw_status(Status(StatusCode::kInvalidArgument, "num_outputs must be in 1..16"));
  // One Node FlatBuffer with the attributes sorted by name.
  std::vector<std::pair<std::string, py::handle>> items;
  for (auto kv : attrs) items.emplace_back(kv.first.cast<std::string>(), kv.second);
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<dtm::Attr>> attr_offsets;
  for (const auto& kv : items) attr_offsets.push_back(build_attr(fbb, kv.first, kv.second));
  fbb.Finish(dtm::CreateNodeDirect(fbb, op.c_str(), nullptr, nullptr, &attr_offsets, op.c_str()));
  const dtm::Node* node = flatbuffers::GetRoot<dtm::Node>(fbb.GetBufferPointer());

  // Inputs (None = absent optional input).
  std::vector<TensorView> in(inputs.size());
  std::vector<py::array> keep;
  int first = -1, first_float = -1;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].is_none()) continue;
    keep.push_back(as_view(inputs[i], "input " + std::to_string(i), &in[i]));
    if (first < 0) first = static_cast<int>(i);
    const DType d = in[i].dtype;
    if (first_float < 0 && (d == DType::kFloat32 || d == DType::kFloat16 || d == DType::kBFloat16 ||
                            d == DType::kFloat64))
      first_float = static_cast<int>(i);
  }
  if (first < 0) throw_status(Status(StatusCode::kInvalidArgument, "run_kernel needs at least one input array"));
  const KernelDef* k = nullptr;
  if (kernel_set.is_none()) {
    k = find_kernel(op.c_str(), in[first].dtype, policy);
    if (k == nullptr)
      throw_status(Status(StatusCode::kUnsupported, "no kernel for operator '" + op + "' (" +
                                                        dtype_name(in[first].dtype) + ") in this runtime build"));
  } else {
    const std::string set = kernel_set.cast<std::string>();
    k = find_kernel_in_set(op.c_str(), in[first].dtype, set.c_str());
    if (k == nullptr)
      throw_status(Status(StatusCode::kUnsupported,
                          "no kernel for operator '" + op + "' (" + dtype_name(in[first].dtype) +
                              ") in kernel set '" + set +
                              "' (not built for this architecture, not supported by this CPU, or no such set)"));
  }

  // As the loader does: the attributes against the catalogue, whose defaults the kernel then reads.
  const Status attr_check = check_attrs(*k->schema, node);
  if (!attr_check.ok()) throw_status(Status(StatusCode::kInvalidArgument, attr_check.message()));
  const Attrs node_attrs(node, k->schema);

  uint64_t absent = 0;
  for (size_t i = 0; i < inputs.size() && i < 64; ++i)
    if (inputs[i].is_none()) absent |= uint64_t{1} << i;
  if (inputs.size() > 64)
    throw_status(Status(StatusCode::kInvalidArgument, "run_kernel: at most 64 inputs are supported"));
  const Status arity = check_kernel_arity(*k, static_cast<int>(inputs.size()), absent, num_outputs);
  if (!arity.ok()) throw_status(Status(StatusCode::kInvalidArgument, std::string("run_kernel: ") + arity.message()));

  // Default output dtypes: the signature the inputs (and a dtype attribute such as cast's `to`) select, else the
  // first floating input's dtype, else the first input's.
  std::vector<DType> out_dtypes(num_outputs, in[first_float >= 0 ? first_float : first].dtype);
  {
    std::vector<DType> in_dtypes(in.size());
    for (size_t i = 0; i < in.size(); ++i) in_dtypes[i] = in[i].dtype;
    const OpSchema& schema = *k->schema;
    const NodeDTypes dts{in_dtypes.data(), static_cast<int>(in_dtypes.size()), absent, nullptr, 0,
                         schema.dtype_attr != nullptr ? node_attrs.get_string(schema.dtype_attr) : nullptr};
    if (const DTypeSignature* sig = match_signature(schema, dts, nullptr))
      for (int i = 0; i < num_outputs && i < sig->n_outputs; ++i) out_dtypes[i] = sig->outputs[i];
  }
  if (!output_dtypes.is_none()) {
    auto names = output_dtypes.cast<std::vector<std::string>>();
    if (static_cast<int>(names.size()) != num_outputs)
      throw_status(Status(StatusCode::kInvalidArgument, "output_dtypes needs one entry per output"));
    for (int i = 0; i < num_outputs; ++i)
      if (!dtype_from_name(names[i], &out_dtypes[i]))
        throw_status(Status(StatusCode::kInvalidArgument, "unknown dtype '" + names[i] + "'"));
  }

  std::vector<Shape> out_shapes(num_outputs);
  size_t scratch_bytes = 0;
  Status st = k->infer(node_attrs, in.data(), static_cast<int>(in.size()), out_shapes.data(), num_outputs,
                       &scratch_bytes);
  if (!st.ok()) throw_status(st);
  py::list result;
  std::vector<TensorView> out(num_outputs);
  for (int i = 0; i < num_outputs; ++i) {
    if (out_shapes[i].ndim < 0 || out_shapes[i].ndim > kMaxDims)
      throw_status(Status(StatusCode::kInternal, op + ": infer returned an invalid rank"));
    if (out_shapes[i].numel() < 0)
      throw_status(Status(StatusCode::kInvalidArgument, op + ": the output shape " + std::to_string(i) +
                                                            " is too large"));
    std::vector<py::ssize_t> dims(out_shapes[i].dims, out_shapes[i].dims + out_shapes[i].ndim);
    py::array a(numpy_dtype(out_dtypes[i]), dims);
    out[i].data = a.mutable_data();
    out[i].dtype = out_dtypes[i];
    out[i].shape = out_shapes[i];
    result.append(a);
  }
  AlignedBuffer scratch(scratch_bytes);
  // As a session does at load, with every given input treated as a constant (prepare=False skips it, to test the
  // kernel's unprepared path).
  size_t prepared_bytes = 0;
  if (prepare && k->prepare != nullptr) {
    st = k->prepare(node_attrs, in.data(), static_cast<int>(in.size()), nullptr, &prepared_bytes);
    if (!st.ok()) throw_status(st);
  }
  AlignedBuffer prepared(prepared_bytes);
  if (prepared_bytes > 0) {
    st = k->prepare(node_attrs, in.data(), static_cast<int>(in.size()), prepared.p, &prepared_bytes);
    if (!st.ok()) throw_status(st);
  }
  // Blocked layouts: the kernel must offer them (its LayoutFn, as a session asks); the arrays stay NCHW for the
  // caller and are converted around the run.
  uint64_t bin = 0, bout = 0;
  for (int i : blocked_inputs) {
    if (i < 0 || i >= static_cast<int>(in.size()) || in[i].data == nullptr || !blockable(in[i]))
      throw_status(Status(StatusCode::kInvalidArgument, "blocked_inputs: input " + std::to_string(i) +
                                                            " is not a 4-D float32 tensor with C % 16 == 0"));
    bin |= uint64_t{1} << i;
  }
  for (int i : blocked_outputs) {
    if (i < 0 || i >= num_outputs || !blockable(out[i]))
      throw_status(Status(StatusCode::kInvalidArgument, "blocked_outputs: output " + std::to_string(i) +
                                                            " is not a 4-D float32 tensor with C % 16 == 0"));
    bout |= uint64_t{1} << i;
  }
  std::vector<std::unique_ptr<AlignedBuffer>> blocked_copies;
  std::vector<TensorView> run_out = out;
  if (bin != 0 || bout != 0) {
    const LayoutCaps caps = k->layouts == nullptr ? LayoutCaps{}
                                                  : k->layouts(node_attrs, in.data(), static_cast<int>(in.size()),
                                                               out.data(), num_outputs);
    if ((bin & ~caps.inputs) != 0 || (bout & ~caps.outputs) != 0)
      throw_status(Status(StatusCode::kUnsupported, "run_kernel: kernel " + op + " (" + k->kernel_set +
                                                        ") does not take these tensors blocked here"));
    if (caps.tied && !((bin == 0 && bout == 0) || (bin == caps.inputs && bout == caps.outputs)))
      throw_status(Status(StatusCode::kUnsupported, "run_kernel: kernel " + op + " (" + k->kernel_set +
                                                        ") takes its tensors blocked all together or not at all"));
    for (size_t i = 0; i < in.size(); ++i) {
      if (!((bin >> i) & 1)) continue;
      blocked_copies.push_back(std::make_unique<AlignedBuffer>(in[i].nbytes()));
      to_blocked(in[i], in[i].as<const float>(), static_cast<float*>(blocked_copies.back()->p), false);
      in[i].data = blocked_copies.back()->p;
    }
    for (int i = 0; i < num_outputs; ++i) {
      if (!((bout >> i) & 1)) continue;
      blocked_copies.push_back(std::make_unique<AlignedBuffer>(out[i].nbytes()));
      run_out[i].data = blocked_copies.back()->p;
    }
  }
  ThreadPool pool(threads);
  KernelContext ctx;
  ctx.blocked_inputs = bin;
  ctx.blocked_outputs = bout;
  ctx.attrs = &node_attrs;
  ctx.pool = &pool;
  ctx.scratch = scratch.p;
  ctx.scratch_bytes = scratch_bytes;
  ctx.prepared = prepared_bytes > 0 ? prepared.p : nullptr;
  ctx.prepared_bytes = prepared_bytes;
  {
    py::gil_scoped_release release;
    st = k->run(ctx, in.data(), static_cast<int>(in.size()), run_out.data(), num_outputs);
  }
  if (!st.ok()) throw_status(st);
  for (int i = 0; i < num_outputs; ++i)
    if ((bout >> i) & 1) to_blocked(out[i], run_out[i].as<const float>(), out[i].as<float>(), true);
  return result;
}

py::list list_kernels() {
  std::vector<std::pair<std::string, std::string>> v;
  for (const KernelEntry* e = registered_kernels(); e != nullptr; e = e->next)
    v.emplace_back(e->def.op, dtype_name(e->def.dtype));
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  py::list out;
  for (const auto& p : v) out.append(py::make_tuple(p.first, p.second));
  return out;
}

py::list list_kernel_sets() {
  std::vector<std::tuple<std::string, std::string, std::string, int>> v;
  for (const KernelEntry* e = registered_kernels(); e != nullptr; e = e->next)
    v.emplace_back(e->def.op, dtype_name(e->def.dtype), e->def.kernel_set, e->def.priority);
  std::sort(v.begin(), v.end());
  py::list out;
  for (const auto& t : v) out.append(py::make_tuple(std::get<0>(t), std::get<1>(t), std::get<2>(t), std::get<3>(t)));
  return out;
}


// --- Session ------------------------------------------------------------------------------------
class PySession {
 public:
  static SessionOptions options(int threads, const std::string& kernels, const std::vector<std::string>& exclude,
                                bool blocked_layouts) {
    SessionOptions o;
    o.num_threads = threads;
    o.blocked_layouts = blocked_layouts;
    o.exclude_kernel_sets = exclude;
    if (!parse_kernel_policy(kernels.c_str(), &o.kernels))
      throw_status(Status(StatusCode::kInvalidArgument,
                          "kernels must be 'fast', 'exact' or 'portable', got '" + kernels + "'"));
    return o;
  }
  static PySession from_file(const std::string& path, int threads, const std::string& kernels,
                             const std::vector<std::string>& exclude, bool blocked_layouts) {
    PySession s;
    const SessionOptions o = options(threads, kernels, exclude, blocked_layouts);
    Status st = Session::Create(path, o, &s.session_);
    if (!st.ok()) throw_status(st);
    return s;
  }
  static PySession from_bytes(py::buffer data, int threads, const std::string& kernels,
                              const std::vector<std::string>& exclude, bool blocked_layouts) {
    PySession s;
    py::buffer_info bi = data.request();
    const SessionOptions o = options(threads, kernels, exclude, blocked_layouts);
    s.keep_ = data;  // CreateFromBuffer may borrow an aligned buffer
    Status st = Session::CreateFromBuffer(bi.ptr, static_cast<size_t>(bi.size * bi.itemsize), o, &s.session_);
    if (!st.ok()) throw_status(st);
    return s;
  }

  static py::dict io_dict(const IOInfo& io) {
    py::dict d;
    d["name"] = io.name;
    d["dtype"] = std::string(dtype_name(io.dtype));
    d["dims"] = io.dims;
    d["dim_names"] = io.dim_names;
    return d;
  }
  py::list inputs() const {
    py::list l;
    for (const auto& io : session_->inputs()) l.append(io_dict(io));
    return l;
  }
  py::list outputs() const {
    py::list l;
    for (const auto& io : session_->outputs()) l.append(io_dict(io));
    return l;
  }
  py::dict info() const {
    const ModelInfo& i = session_->info();
    py::dict d;
    d["format_version"] = i.format_version;
    d["min_runtime_version"] = i.min_runtime_version;
    d["opset"] = i.opset;
    d["producer"] = i.producer;
    d["op_list"] = i.op_list;
    d["arena_size"] = i.arena_size;
    d["weights_bytes"] = i.weights_bytes;
    d["num_nodes"] = i.num_nodes;
    d["has_test_vector"] = i.has_test_vector;
    d["metadata"] = i.metadata;
    return d;
  }
  uint64_t arena_bytes() const { return session_->arena_bytes(); }
  uint64_t blocked_tensors() const { return session_->blocked_tensors(); }
  py::list node_kernels() const {
    py::list l;
    for (const auto& k : session_->node_kernels()) l.append(py::make_tuple(k.op, dtype_name(k.dtype), k.kernel_set));
    return l;
  }

  py::list run(const py::list& arrays) {
    std::vector<TensorView> views(arrays.size());
    std::vector<py::array> keep;
    const auto& ins = session_->inputs();
    for (size_t i = 0; i < arrays.size(); ++i)
      keep.push_back(as_view(arrays[i], "input '" + (i < ins.size() ? ins[i].name : std::to_string(i)) + "'", &views[i]));
    // Runs from several Python threads run at once (runtime.h): each works in the execution state of its own
    // RunResult, which goes back to the session's idle states once the outputs are copied out. The GIL is
    // released for the run only.
    RunResult result;
    Status st;
    {
      py::gil_scoped_release release;
      st = session_->Run(views.data(), views.size(), &result);
    }
    if (!st.ok()) throw_status(st);
    py::list out;
    for (size_t i = 0; i < result.num_outputs(); ++i) {
      const TensorView v = result.output(i);
      std::vector<py::ssize_t> dims(v.shape.dims, v.shape.dims + v.shape.ndim);
      py::array a(cached_dtype(v.dtype), dims);
      if (v.nbytes() > 0) std::memcpy(a.mutable_data(), v.data, v.nbytes());
      out.append(a);
    }
    return out;
  }

  py::object test_vector() const {
    std::vector<std::vector<uint8_t>> in, out;
    std::vector<Shape> in_s, out_s;
    Status st = session_->TestVector(&in, &in_s, &out, &out_s);
    if (!st.ok()) return py::none();
    auto to_arrays = [](const std::vector<std::vector<uint8_t>>& data, const std::vector<Shape>& shapes,
                        const std::vector<IOInfo>& io) {
      py::list l;
      for (size_t k = 0; k < data.size(); ++k) {
        std::vector<py::ssize_t> dims(shapes[k].dims, shapes[k].dims + shapes[k].ndim);
        py::array a(numpy_dtype(io[k].dtype), dims);
        if (!data[k].empty()) std::memcpy(a.mutable_data(), data[k].data(), data[k].size());
        l.append(a);
      }
      return l;
    };
    return py::make_tuple(to_arrays(in, in_s, session_->inputs()), to_arrays(out, out_s, session_->outputs()));
  }

 private:
  // The NumPy dtype of an output's runtime dtype, made once per session (py::dtype from a name parses it).
  const py::dtype& cached_dtype(DType t) {
    const size_t i = static_cast<size_t>(t);
    if (i >= dtypes_.size()) dtypes_.resize(i + 1);
    if (!dtypes_[i]) dtypes_[i] = numpy_dtype(t);
    return dtypes_[i];
  }

  std::unique_ptr<Session> session_;
  py::object keep_;
  std::vector<py::dtype> dtypes_;
};

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "The DTorch C++ runtime (host build).";
  g_invalid_model = py::reinterpret_steal<py::object>(
      PyErr_NewExceptionWithDoc("dtorch.runtime.InvalidModelError",
                                "The .dtm file is corrupt, truncated or inconsistent.", PyExc_ValueError, nullptr));
  g_version_mismatch = py::reinterpret_steal<py::object>(PyErr_NewExceptionWithDoc(
      "dtorch.runtime.VersionMismatchError", "The .dtm file and this runtime are not compatible.", PyExc_ValueError,
      nullptr));
  g_unsupported = py::reinterpret_steal<py::object>(PyErr_NewExceptionWithDoc(
      "dtorch.runtime.UnsupportedError", "The model needs something this runtime build lacks (e.g. an operator).",
      PyExc_NotImplementedError, nullptr));
  m.attr("InvalidModelError") = g_invalid_model;
  m.attr("VersionMismatchError") = g_version_mismatch;
  m.attr("UnsupportedError") = g_unsupported;
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      raise_python(e.status);
    }
  });
  m.attr("FORMAT_VERSION") = kFormatVersion;
  m.attr("RUNTIME_VERSION") = kRuntimeVersion;
  m.def("run_kernel", &run_kernel, py::arg("op"), py::arg("attrs"), py::arg("inputs"), py::kw_only(),
        py::arg("threads") = 1, py::arg("output_dtypes") = py::none(), py::arg("num_outputs") = 1,
        py::arg("kernel_set") = py::none(), py::arg("kernels") = "fast", py::arg("prepare") = true,
        py::arg("blocked_inputs") = std::vector<int>{}, py::arg("blocked_outputs") = std::vector<int>{},
        "Run one kernel on NumPy arrays (None = absent optional input); returns the outputs. kernel_set=None "
        "runs the kernel a session with policy `kernels` ('fast', 'exact', 'portable') runs; a name ('portable', "
        "'x86', 'avx512') runs that set's. blocked_inputs / blocked_outputs: indices the kernel gets in the "
        "blocked layout (NCHW16c; the arrays stay NCHW, converted around the run), refused unless it offers them.");
  m.def("plan_arena", &plan_arena_py, py::arg("nodes"), py::arg("tensors"),
        "The runtime's arena planner (hosted/planner.h), the one the exporter writes into .dtm files. nodes: "
        "(inplace rule 'none'|'always'|'same_shape', input tensor indices (-1 absent), output tensor indices, "
        "scratch bytes); tensors: (planned, bytes, numpy dtype name, shape). Returns (offsets per tensor with -1 "
        "outside the arena, scratch offsets per node with -1 for none, arena_size).");
  m.def("engine_arena_bytes", &engine_arena, py::arg("model"), py::arg("kernels") = "fast",
        "The arena bytes the C API (dtorch/dtorch.h) needs to load and run the model with those kernels.");
  m.def("registered_kernels", &list_kernels, "All (op, dtype) pairs this build has kernels for, sorted.");
  m.def("registered_kernel_sets", &list_kernel_sets,
        "Every registered kernel as (op, dtype, kernel_set, priority), sorted; sets the CPU lacks are absent.");
  py::class_<PySession>(m, "Session", "A loaded .dtm model (use dtorch.runtime.InferenceSession).")
      .def_static("from_file", &PySession::from_file, py::arg("path"), py::arg("threads") = 1,
                  py::arg("kernels") = "fast", py::arg("exclude_kernel_sets") = std::vector<std::string>{},
                  py::arg("blocked_layouts") = true)
      .def_static("from_bytes", &PySession::from_bytes, py::arg("data"), py::arg("threads") = 1,
                  py::arg("kernels") = "fast", py::arg("exclude_kernel_sets") = std::vector<std::string>{},
                  py::arg("blocked_layouts") = true)
      .def("node_kernels", [](const PySession& s) { return s.node_kernels(); })
      .def("inputs", &PySession::inputs)
      .def("outputs", &PySession::outputs)
      .def("info", &PySession::info)
      .def("arena_bytes", &PySession::arena_bytes)
      .def("blocked_tensors", &PySession::blocked_tensors)
      .def("run", &PySession::run, py::arg("inputs"))
      .def("test_vector", &PySession::test_vector);
}
