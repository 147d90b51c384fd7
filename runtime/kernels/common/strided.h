// A strided gather used by the data-movement kernels (permute-like views: slice, expand): output element
// at multi-index (i0, ..., in) is x[offset + sum_d i_d * strides[d]]. The output is contiguous. Any element type
// (the kernels call it through visit_dtype: float32, int64, int32, bool); elements are copied, never converted.
#pragma once

#include <cstdint>
#include <cstring>

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
    // The row's outer multi-index, found once per chunk by division and then stepped like an odometer (a division
    // per dimension per row cost more than copying a row of 64 floats: ViT-Tiny's 97 permutes took 2.0 ms).
    int64_t idx[kMaxDims] = {};
    int64_t off = offset, rem = r0;
    for (int d = last - 1; d >= 0; --d) {
      idx[d] = rem % o.dims[d];
      rem /= o.dims[d];
      off += idx[d] * strides[d];
    }
    for (int64_t r = r0; r < r1; ++r) {
      T* yr = y + r * cols;
      const T* xr = x + off;
      if (cs == 1) {
        std::memcpy(yr, xr, static_cast<size_t>(cols) * sizeof(T));  // (the output never overlaps the input)
      } else {
        for (int64_t j = 0; j < cols; ++j) yr[j] = xr[j * cs];
      }
      for (int d = last - 1; d >= 0; --d) {  // the next row
        off += strides[d];
        if (++idx[d] < o.dims[d]) break;
        off -= idx[d] * strides[d];
        idx[d] = 0;
      }
    }
  });
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
