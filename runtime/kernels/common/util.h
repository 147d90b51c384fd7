// Shared helpers for kernels: error messages that name the operator, input/attribute checks, shape
// helpers. Everything here is header-only and allocates nothing (messages are formatted in place: Status, Text),
// so these helpers are safe to call from a kernel's run function, on every target.
#pragma once

#include <cstdarg>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "core/kernel.h"
#include "kernels/common/isa.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

// "<op>: <formatted message>" with the given code.
inline Status op_error(StatusCode code, const char* op, const char* fmt, ...) DTORCH_PRINTF_LIKE(3, 4);
inline Status op_error(StatusCode code, const char* op, const char* fmt, ...) {
  Text what;
  va_list ap;
  va_start(ap, fmt);
  vformat(what.buf, Text::kBytes, fmt, ap);
  va_end(ap);
  return error_status(code, "%s: %s", op, what.c_str());
}

// shape_str (dtorch/types.h): "[1, 3, 224, 224]" (error paths only).

inline Text ints_str(const int64_t* v, int n) {
  Text out = text("[");
  for (int i = 0; i < n; ++i) append(&out, i ? ", %lld" : "%lld", static_cast<long long>(v[i]));
  append(&out, "]");
  return out;
}

inline Status check_num_inputs(const char* op, int n_in, int lo, int hi) {
  if (n_in < lo || n_in > hi) {
    if (lo == hi) return op_error(StatusCode::kInvalidModel, op, "expects %d input(s), got %d", lo, n_in);
    return op_error(StatusCode::kInvalidModel, op, "expects %d to %d inputs, got %d", lo, hi, n_in);
  }
  return Status::Ok();
}

inline Status check_num_outputs(const char* op, int n_out, int expected) {
  if (n_out != expected)
    return op_error(StatusCode::kInvalidModel, op, "expects %d output(s), got %d", expected, n_out);
  return Status::Ok();
}

// The input is present (not an absent optional input, -1 in the file) and has the given dtype.
inline Status check_dtype(const char* op, const char* what, const TensorView& t, DType want) {
  if (t.dtype != want)
    return op_error(StatusCode::kInvalidArgument, op, "%s must be %s, got %s", what, dtype_name(want),
                    dtype_name(t.dtype));
  return Status::Ok();
}

// The input and output counts against the operator's schema, and the dtypes of the inputs (and of the outputs, when
// `out` is non-null: run, not infer) against its signatures, as the loader holds every node; for kernels that serve
// several signatures (where, cast, the data-movement kernels), since run_kernel calls a kernel without the loader.
// *sig (when given): the matching signature. At most 16 inputs, no absent one.
inline Status check_signature(const OpSchema& schema, const Attrs& attrs, const TensorView* in, int n_in,
                              const TensorView* out, int n_out, const DTypeSignature** sig = nullptr) {
  constexpr int kMax = 16;
  DTORCH_RETURN_IF_ERROR(check_num_inputs(schema.name, n_in, schema.min_inputs,
                                          schema.max_inputs < 0 || schema.max_inputs > kMax ? kMax : schema.max_inputs));
  DTORCH_RETURN_IF_ERROR(check_num_outputs(schema.name, n_out, schema.num_outputs));
  DType ins[kMax], outs[kMax];
  for (int i = 0; i < n_in; ++i) ins[i] = in[i].dtype;
  for (int k = 0; out != nullptr && k < n_out; ++k) outs[k] = out[k].dtype;
  const NodeDTypes node{ins, n_in, 0, out != nullptr ? outs : nullptr, out != nullptr ? n_out : 0,
                        schema.dtype_attr != nullptr ? attrs.get_string(schema.dtype_attr) : nullptr};
  DTypeMismatch why;
  const DTypeSignature* found = match_signature(schema, node, &why);
  if (sig != nullptr) *sig = found;
  if (found == nullptr)
    return op_error(StatusCode::kInvalidArgument, schema.name, "%s", describe_mismatch(schema, node, why, "").c_str());
  return Status::Ok();
}

// Calls f(T{}) with T the C++ element type of `dt` (float32: float, int64: int64_t, int32: int32_t, int8: int8_t,
// bool: uint8_t, read as != 0 and written as 0 / 1) and returns its Status; an error naming the op for any other dtype. For kernels
// that serve several dtypes with one template (where, cast, the data-movement kernels).
template <typename F>
inline Status visit_dtype(const char* op, DType dt, F&& f) {
  switch (dt) {
    case DType::kFloat32: return f(float{});
    case DType::kInt64: return f(int64_t{});
    case DType::kInt32: return f(int32_t{});
    case DType::kInt8: return f(int8_t{});
    case DType::kBool: return f(uint8_t{});
    default: break;
  }
  return op_error(StatusCode::kInvalidArgument, op, "has no kernel for %s tensors", dtype_name(dt));
}

// Integer arithmetic wraps around (two's complement), as ONNX Runtime's and NumPy's do, without C++'s undefined
// behaviour: the operation runs on the unsigned type of the same width (the integer arithmetic kernels, arange).
template <typename T>
inline T wrap_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <typename T>
inline T wrap_sub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
}
template <typename T>
inline T wrap_mul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
}

inline Status check_rank(const char* op, const char* what, const TensorView& t, int rank) {
  if (t.shape.ndim != rank)
    return op_error(StatusCode::kInvalidArgument, op, "%s must have %d dimensions, got shape %s", what, rank,
                    shape_str(t.shape).c_str());
  return Status::Ok();
}

// An optional 1-D per-channel tensor (weight, bias, mean, ...): absent, or `dtype` (float32 unless said) of shape (n).
// Infer passes views whose data may be null; `present` tells whether the input exists at all.
inline Status check_vector(const char* op, const char* what, const TensorView& t, int64_t n,
                           DType dtype = DType::kFloat32) {
  DTORCH_RETURN_IF_ERROR(check_dtype(op, what, t, dtype));
  if (t.shape.ndim != 1 || t.shape.dims[0] != n)
    return op_error(StatusCode::kInvalidArgument, op, "%s must have shape [%lld], got %s", what,
                    static_cast<long long>(n), shape_str(t.shape).c_str());
  return Status::Ok();
}

// Whether optional input `i` is present. Convention with the executor: an absent optional input (-1 in
// the file) is passed as a default TensorView (data == nullptr, ndim == 0) to both infer and run. Every
// optional input of the catalogue has rank >= 1 when present, so the two cannot be confused.
inline bool optional_present(const TensorView* inputs, int n_in, int i) {
  return i < n_in && (inputs[i].data != nullptr || inputs[i].shape.ndim > 0);
}

// Reads an ints attribute that must have exactly `count` values: the file's, else the catalogue's default, else
// `fallback` (count values: what the kernel takes when the catalogue says "not given", e.g. stride = the kernel),
// else an error (a required attribute).
inline Status get_ints_exact(const char* op, const Attrs& attrs, const char* name, int count, int64_t* out,
                             const int64_t* fallback) {
  int64_t tmp[kMaxDims * 2];
  const int n = attrs.get_ints(name, tmp, kMaxDims * 2);
  if (n < 0) {
    if (fallback == nullptr)
      return op_error(StatusCode::kInvalidModel, op, "missing required attribute '%s' (%d ints)", name, count);
    for (int i = 0; i < count; ++i) out[i] = fallback[i];
    return Status::Ok();
  }
  if (n != count)
    return op_error(StatusCode::kInvalidModel, op, "attribute '%s' must have %d values, got %d", name, count, n);
  for (int i = 0; i < count; ++i) out[i] = tmp[i];
  return Status::Ok();
}

// Reads an ints attribute of at most `cap` values; *count = how many (error when absent and required).
inline Status get_ints_list(const char* op, const Attrs& attrs, const char* name, int cap, int64_t* out, int* count,
                            bool required) {
  const int n = attrs.get_ints(name, out, cap);
  if (n < 0) {
    if (required) return op_error(StatusCode::kInvalidModel, op, "missing required attribute '%s'", name);
    *count = 0;
    return Status::Ok();
  }
  if (n > cap)
    return op_error(StatusCode::kInvalidModel, op, "attribute '%s' has %d values, at most %d are supported", name, n,
                    cap);
  *count = n;
  return Status::Ok();
}

// A dimension index that may be negative (Python style) -> [0, ndim); error when out of range.
inline Status normalize_axis(const char* op, const char* what, int64_t axis, int ndim, int* out) {
  const int64_t n = ndim > 0 ? ndim : 1;
  if (axis < -n || axis >= n)
    return op_error(StatusCode::kInvalidArgument, op, "%s %lld is out of range for a tensor with %d dimensions",
                    what, static_cast<long long>(axis), ndim);
  *out = static_cast<int>(axis < 0 ? axis + n : axis);
  return Status::Ok();
}

// Shape arithmetic that cannot overflow: false (and *out untouched) when the result does not fit int64.
// The executor guarantees every input shape a kernel sees is small (SessionOptions::max_tensor_bytes), but
// attribute values come straight from the file and may be anything.
inline bool checked_mul(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }
inline bool checked_add(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }

// The largest kernel size, stride, dilation, padding or output size an attribute may hold.
constexpr int64_t kMaxAttrValue = int64_t{1} << 24;

// Every one of `n` values of attribute `name` is at most `hi` (kernels check their own lower bounds first,
// with messages that say what the value means).
inline Status check_attr_max(const char* op, const char* name, const int64_t* v, int n, int64_t hi) {
  for (int i = 0; i < n; ++i)
    if (v[i] > hi)
      return op_error(StatusCode::kInvalidModel, op, "%s %lld is out of range (at most %lld)", name,
                      static_cast<long long>(v[i]), static_cast<long long>(hi));
  return Status::Ok();
}

// The element count of a shape computed from attributes, or an error when it overflows.
inline Status checked_numel(const char* op, const Shape& s, int64_t* out) {
  int64_t n = 1;
  for (int i = 0; i < s.ndim; ++i)
    if (s.dims[i] < 0 || !checked_mul(n, s.dims[i], &n))
      return op_error(StatusCode::kInvalidArgument, op, "shape %s is invalid or has too many elements",
                      shape_str(s).c_str());
  *out = n;
  return Status::Ok();
}

// Row-major strides (in elements) of a shape.
inline void contiguous_strides(const Shape& s, int64_t* strides) {
  int64_t st = 1;
  for (int i = s.ndim - 1; i >= 0; --i) {
    strides[i] = st;
    st *= s.dims[i];
  }
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Floor division for possibly negative numerators (b > 0).
inline int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

// Splits [0, n) over the pool in chunks of `grain` items (whole chunks per thread). Each index is
// handled exactly once and every output it writes is computed the same way whatever the thread count.
template <typename F>
void parallel_chunks(ThreadPool* pool, int64_t n, int64_t grain, F&& fn) {
  if (n <= 0) return;
  const int64_t chunks = ceil_div(n, grain);
  if (pool == nullptr || pool->size() <= 1 || chunks <= 1) {
    fn(int64_t{0}, n);
    return;
  }
  auto body = [&](int64_t cb, int64_t ce) {
    const int64_t b = cb * grain;
    const int64_t e = ce * grain < n ? ce * grain : n;
    if (b < e) fn(b, e);
  };
  pool->parallel_for(chunks, std::move(body));
}

// Splits n positions into min(n, 4 x threads) contiguous blocks and runs f(p0, p1) for each block's positions:
// with the pool's own-share-first claiming, thread i takes the i-th fraction of the positions. Kernels that call f
// over every channel plane (channel_conv.h for_units, the x86 add) thus split consecutive nodes alike.
template <class F>
void position_blocks(ThreadPool* pool, int64_t n, F&& f) {
  const int64_t threads = pool == nullptr ? 1 : pool->size(), blocks = n < 4 * threads ? n : 4 * threads;
  parallel_chunks(pool, blocks, 1, [&](int64_t bb, int64_t be) {
    for (int64_t b = bb; b < be; ++b) f(b * n / blocks, (b + 1) * n / blocks);
  });
}

// Row-wise work over planes (an image's channels, or its 16-channel blocks): units of one output row of one plane,
// u in [0, images * per_image * rows). One thread: plane by plane. Threads: per image, blocks of rows (at least 4, so
// per-plane setup such as loading a plane's weights happens once per block), each block's rows plane by plane, so
// that each thread's share (ThreadPool: a thread claims its own share of the parts first) holds the same rows of
// every plane, as the channel-major convolutions split their positions (channel_conv.h, for_units): the next node
// then reads them from the cache of the core that wrote them.
struct PlaneRows {
  int64_t per_image, rows, rpb;  // planes per image, rows per plane, rows per block
  PlaneRows(ThreadPool* pool, int64_t per_image_, int64_t rows_) : per_image(per_image_), rows(rows_), rpb(rows_) {
    const int64_t threads = pool == nullptr ? 1 : pool->size();
    if (threads > 1) {
      const int64_t even = ceil_div(rows, 4 * threads);
      rpb = even > 4 ? even : rows < 4 ? rows : 4;
    }
  }
  // Where a unit is: its plane (image * per_image + pi), pi (the plane within the image), its row, and its block's
  // rows [lo, hi). at(u) places unit u (divisions), next() moves to unit u + 1 without any.
  struct Pos {
    int64_t plane, pi, row, lo, hi;
  };
  Pos at(int64_t u) const {
    const int64_t img = u / (per_image * rows), rem = u % (per_image * rows);
    const int64_t rb = rem / (per_image * rpb), in = rem % (per_image * rpb);
    const int64_t lo = rb * rpb, hi = rows < lo + rpb ? rows : lo + rpb, nr = hi - lo;
    return Pos{img * per_image + in / nr, in / nr, lo + in % nr, lo, hi};
  }
  void next(Pos* p) const {
    if (++p->row < p->hi) return;
    p->row = p->lo;
    ++p->plane;
    if (++p->pi < per_image) return;  // the block's rows of the image's next plane
    p->pi = 0;
    p->plane -= per_image;
    if (p->hi < rows) {  // the image's next block, from its first plane
      p->lo = p->hi;
      p->hi = rows < p->lo + rpb ? rows : p->lo + rpb;
    } else {  // the next image's first block
      p->plane += per_image;
      p->lo = 0;
      p->hi = rows < rpb ? rows : rpb;
    }
    p->row = p->lo;
  }
};

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
