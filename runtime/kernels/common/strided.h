// A strided gather used by the data-movement kernels (permute-like views: slice, expand): output element
// at multi-index (i0, ..., in) is x[offset + sum_d i_d * strides[d]]. The output is contiguous. Any element type
// (the kernels call it through visit_dtype: float32, int64, int32, bool); elements are copied, never converted.
#pragma once

#include <cstdint>

#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

template <typename T>
inline void strided_copy(ThreadPool* pool, const Shape& o, const T* x, int64_t offset, const int64_t* strides, T* y) {
  if (o.numel() == 0) return;
  if (o.ndim == 0) {
    y[0] = x[offset];
    return;
  }
  const int last = o.ndim - 1;
  const int64_t cols = o.dims[last], cs = strides[last];
  const int64_t rows = o.numel() / cols;
  parallel_chunks(pool, rows, 64, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t off = offset, rem = r;
      for (int d = last - 1; d >= 0; --d) {
        off += (rem % o.dims[d]) * strides[d];
        rem /= o.dims[d];
      }
      T* yr = y + r * cols;
      if (cs == 1) {
        for (int64_t j = 0; j < cols; ++j) yr[j] = x[off + j];
      } else {
        for (int64_t j = 0; j < cols; ++j) yr[j] = x[off + j * cs];
      }
    }
  });
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
