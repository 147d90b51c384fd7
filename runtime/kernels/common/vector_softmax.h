// softmax along a contiguous dim (inner size 1: the last dim, as attention and classifiers use it) on SIMD vectors,
// written once for the FMA kernel sets over the vector operations V of kernels/common/vector_activation.h (avx512:
// 16 lanes, avx2: 8), so both sets give the same bits. Header-only; each set's softmax.cc registers
// FmaSoftmax<V>. Other dims go to the bit-exact kernel (kernels/portable/softmax.cc, the specification).
//
// Per row, as portable: m = the row's maximum (0 when it is not finite: a row of -inf, or one holding +inf), then
// e = e^(x - m) (VectorActivations::exp: within a few units in the last place of portable's), stored, and y = e / sum.
// The sum: kernels/common/vector_sum.h's (16 float partial sums, then doubles; the same bits at any vector width);
// portable sums in one double. A NaN anywhere makes the sum and so the row
// NaN, as portable (which takes NaN as the maximum). Rows are split across threads; each row's operations depend
// only on its length. Tolerance: the sets' (1e-5 x the output's scale).
//
// Before: portable's std::exp per element made softmax 9.2 of ViT-Tiny's 37 ms (12 heads' 197 x 197 scores).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/common/softmax.h"
#include "kernels/common/portable_kernel.h"
#include "kernels/common/util.h"
#include "kernels/common/vector_activation.h"
#include "kernels/common/vector_sum.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

// The operator's name, at namespace scope: a template argument of portable_kernel / exact_kernel.
inline constexpr char kSoftmaxOp[] = "softmax";

template <class V>
struct FmaSoftmax {
  using T = typename V::T;
  static constexpr const char* kOp = kSoftmaxOp;
  static constexpr int64_t kL = V::kLanes;

  static const KernelDef* portable() { return portable_kernel<kSoftmaxOp>(); }
  static Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch) {
    return portable_infer<kSoftmaxOp>(attrs, in, n_in, out, n_out, scratch);
  }

  static void row(const float* x, float* y, int64_t len) {
    // The maximum, NaN ignored (a NaN reaches the sum instead).
    T mv = V::set1(-INFINITY);
    int64_t i = 0;
    for (; i + kL <= len; i += kL) mv = V::vmax(V::load(x + i), mv);
    alignas(64) float lanes[16];
    V::store(lanes, mv);
    float m = -INFINITY;
    for (int64_t q = 0; q < kL; ++q) m = lanes[q] > m ? lanes[q] : m;
    for (; i < len; ++i) m = x[i] > m ? x[i] : m;
    if (!std::isfinite(m)) m = 0.0f;
    const T vm = V::set1(m);
    // e^(x - m) into y, summed (the lanes past the row's end read back as the zeros load_n gives).
    const double sum = sum16<V>(len, [&](int64_t at, int64_t n) __attribute__((always_inline)) {
      if (n == kL) {
        const T e = VectorActivations<V>::exp(V::sub(V::load(x + at), vm));
        V::store(y + at, e);
        return e;
      }
      const T e = VectorActivations<V>::exp(V::sub(V::load_n(x + at, static_cast<int>(n)), vm));
      V::store_n(y + at, e, static_cast<int>(n));
      return V::load_n(y + at, static_cast<int>(n));
    });
    const T vs = V::set1(static_cast<float>(sum));
    i = 0;
    for (; i + kL <= len; i += kL) V::store(y + i, V::div(V::load(y + i), vs));
    if (i < len) V::store_n(y + i, V::div(V::load_n(y + i, static_cast<int>(len - i)), vs), static_cast<int>(len - i));
  }

  static Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
    SoftmaxRows rows;
    if (n_out != 1 || !softmax_check(kOp, *ctx.attrs, in, n_in, &rows).ok() || rows.inner != 1) {
      const KernelDef* p = portable();
      if (p == nullptr) return op_error(StatusCode::kInternal, kOp, "the portable kernel is not registered");
      return p->run(ctx, in, n_in, out, n_out);  // the portable kernel runs it or reports the error
    }
    const float* x = in[0].as<const float>();
    float* y = out[0].as<float>();
    const int64_t len = rows.len;
    parallel_chunks(ctx.pool, rows.outer, len >= 4096 ? 1 : 4096 / (len > 0 ? len : 1), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) row(x + r * len, y + r * len, len);
    });
    return Status::Ok();
  }
};

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
