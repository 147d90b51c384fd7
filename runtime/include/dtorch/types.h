// Element types, shapes and tensor views shared by the runtime's public API and its kernels.
// A TensorView never owns memory: whoever created it keeps the data alive while the view is used.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dtorch/format.h"

namespace dtorch {

// Same numbering as the .dtm schema's DType.
enum class DType : uint8_t {
  kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2, kFloat64 = 3,
  kInt64 = 4, kInt32 = 5, kInt16 = 6, kInt8 = 7, kUInt8 = 8, kBool = 9,
};

size_t dtype_size(DType t);
const char* dtype_name(DType t);  // "float32", ... ("bool" for kBool)

constexpr int kMaxDims = 8;

struct Shape {
  int ndim = 0;  // int, not int32_t: one printf conversion (%d) on every target
  int64_t dims[kMaxDims] = {};

  // The element count, or -1 when a dimension is negative or the product overflows int64. The runtime
  // checks every shape it plans (SessionOptions::max_tensor_bytes) before any kernel sees it.
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i)
      if (dims[i] < 0 || __builtin_mul_overflow(n, dims[i], &n)) return -1;
    return n;
  }
  bool operator==(const Shape& o) const {
    if (ndim != o.ndim) return false;
    for (int i = 0; i < ndim; ++i)
      if (dims[i] != o.dims[i]) return false;
    return true;
  }
  bool operator!=(const Shape& o) const { return !(*this == o); }
};

// "[1, 3, 224, 224]" (for messages).
Text shape_str(const Shape& s);

// A contiguous row-major tensor in memory owned by someone else.
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::kFloat32;
  Shape shape;

  // Bytes of the data; SIZE_MAX when the shape is invalid or the size overflows (see Shape::numel).
  size_t nbytes() const {
    const int64_t n = shape.numel();
    size_t bytes = 0;
    if (n < 0 || __builtin_mul_overflow(static_cast<size_t>(n), dtype_size(dtype), &bytes)) return SIZE_MAX;
    return bytes;
  }
  template <typename T> T* as() const { return static_cast<T*>(data); }
};

// Which kernel sets a session may use (SessionOptions::kernels). Every policy gives identical bits for any
// thread count; they differ in whether SIMD sets that round differently from portable are allowed.
enum class KernelPolicy : uint8_t {
  kFast = 0,      // the fastest kernel this CPU runs, including sets within a documented tolerance (avx512)
  kExact = 1,     // only kernels bit-identical to portable (portable, x86): host bits == every board's bits
  kPortable = 2,  // only the portable reference kernels
};
// "fast", "exact", "portable"; parse returns false for anything else.
const char* kernel_policy_name(KernelPolicy p);
bool parse_kernel_policy(const char* s, KernelPolicy* out);

}  // namespace dtorch
