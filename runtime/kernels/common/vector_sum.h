// A row sum on SIMD vectors that gives the same bits at any vector width (kernels/avx512: 16 lanes, kernels/avx2: 8),
// for the FMA sets' row kernels (kernels/common/vector_softmax.h, vector_layer_norm.h), over the vector operations V
// of kernels/common/vector_activation.h. Header-only.
//
// Element i goes to float partial sum i mod 16, the 16 partial sums are added into 16 doubles every 1024 elements,
// and those in order at the end. So a row of d elements rounds in float over at most 64 elements per partial sum
// (relative error within about 64 x 2^-24 of the exact sum of positive terms), and avx512 and avx2 add the same
// numbers in the same order.
#pragma once

#include <cstdint>

#include "kernels/common/isa.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

// The sum over the row of the values f(at, n) returns: a vector of the row's elements [at, at + n), n <= V::kLanes,
// with zeros in the lanes past n. f is called once per vector, at = 0, kLanes, 2 kLanes, ... in order.
template <class V, class F>
__attribute__((always_inline)) inline double sum16(int64_t len, F&& f) {
  using T = typename V::T;
  constexpr int64_t kL = V::kLanes, kSums = 16, kG = kSums / kL, kFlush = 1024;
  static_assert(kSums % kL == 0, "16 lanes must be whole vectors");
  double sums[kSums] = {};
  alignas(64) float lanes[kSums];
  T acc[kG];
  for (int64_t g = 0; g < kG; ++g) acc[g] = V::set1(0.0f);
  const auto flush = [&]() {
    for (int64_t g = 0; g < kG; ++g) {
      V::store(lanes + g * kL, acc[g]);
      acc[g] = V::set1(0.0f);
    }
    for (int64_t q = 0; q < kSums; ++q) sums[q] += lanes[q];
  };
  int64_t i = 0;
  for (; i + kSums <= len; i += kSums) {
    for (int64_t g = 0; g < kG; ++g) acc[g] = V::add(acc[g], f(i + g * kL, kL));
    if ((i + kSums) % kFlush == 0) flush();
  }
  for (int64_t g = 0; g < kG && i + g * kL < len; ++g) {  // the last partial group
    const int64_t at = i + g * kL;
    acc[g] = V::add(acc[g], f(at, len - at < kL ? len - at : kL));
  }
  flush();
  double sum = 0.0;
  for (int64_t q = 0; q < kSums; ++q) sum += sums[q];
  return sum;
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
