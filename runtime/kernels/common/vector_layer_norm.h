// layer_norm on SIMD vectors, written once for the FMA kernel sets over the vector operations V of
// kernels/common/vector_activation.h (avx512: 16 lanes, avx2: 8), so both sets give the same bits. Header-only;
// each set's layer_norm.cc registers FmaLayerNorm<V>. The portable kernel (kernels/portable/layer_norm.cc) is the
// specification, checks every node and runs what this one does not take.
//
// Per row of d elements, as portable: mean = sum / d, then the biased variance of x - mean, invstd =
// 1 / sqrt(var + eps) in double, and y = ((x - m) * invstd) * w + b in float, portable's operations in its order (m
// the float mean). The two sums are kernels/common/vector_sum.h's (16 float partial sums, then doubles) where
// portable adds each element in double in order, and the variance sums float (x - m)^2: so m and invstd may differ
// from portable's in their last bits, within the sets' tolerance (1e-5 x the output's scale). Rows are split across
// threads; each row's operations depend only on d.
//
// Before: portable's double loops took 2.0 of ViT-Tiny's 27 ms (25 rows-of-192 layer norms of 197 tokens).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/kernel.h"
#include "kernels/common/portable_kernel.h"
#include "kernels/common/util.h"
#include "kernels/common/vector_sum.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

// The operator's name, at namespace scope: a template argument of portable_kernel / exact_kernel.
inline constexpr char kLayerNormOp[] = "layer_norm";

template <class V>
struct FmaLayerNorm {
  using T = typename V::T;
  static constexpr const char* kOp = kLayerNormOp;
  static constexpr int64_t kL = V::kLanes;

  static const KernelDef* portable() { return portable_kernel<kLayerNormOp>(); }
  static Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch) {
    return portable_infer<kLayerNormOp>(attrs, in, n_in, out, n_out, scratch);
  }

  __attribute__((always_inline)) static T load(const float* p, int64_t n) {
    return n == kL ? V::load(p) : V::load_n(p, static_cast<int>(n));
  }

  static void row(const float* x, const float* w, const float* b, float* y, int64_t d, double eps) {
    const double mean = sum16<V>(d, [&](int64_t at, int64_t n) __attribute__((always_inline)) {
                          return load(x + at, n);
                        }) / static_cast<double>(d);
    const float m = static_cast<float>(mean);
    const T vm = V::set1(m);
    const double sq = sum16<V>(d, [&](int64_t at, int64_t n) __attribute__((always_inline)) {
      const T t = V::sub(load(x + at, n), vm);
      if (n == kL) return V::mul(t, t);
      alignas(64) float lanes[kL];  // (x - m)^2 of the row's last elements, zeros past its end
      V::store(lanes, V::mul(t, t));
      return V::load_n(lanes, static_cast<int>(n));
    });
    const T inv = V::set1(static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(d) + eps)));
    for (int64_t i = 0; i < d; i += kL) {
      const int64_t n = d - i < kL ? d - i : kL;
      T v = V::mul(V::sub(load(x + i, n), vm), inv);
      if (w != nullptr) v = V::mul(v, load(w + i, n));
      if (b != nullptr) v = V::add(v, load(b + i, n));
      if (n == kL)
        V::store(y + i, v);
      else
        V::store_n(y + i, v, static_cast<int>(n));
    }
  }

  static Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
    const KernelDef* p = portable();
    if (p == nullptr) return op_error(StatusCode::kInternal, kOp, "the portable kernel is not registered");
    const int64_t nd = ctx.attrs->get_int("normalized_ndim");
    bool ok = n_out == 1 && n_in >= 1 && n_in <= 3 && in[0].dtype == DType::kFloat32 && nd >= 1 &&
              nd <= in[0].shape.ndim;
    int64_t d = 1;
    for (int i = 0; ok && i < nd; ++i) d *= in[0].shape.dims[in[0].shape.ndim - nd + i];
    for (int k = 1; ok && k < 3; ++k)
      ok = !optional_present(in, n_in, k) || (in[k].dtype == DType::kFloat32 && in[k].shape.numel() == d);
    if (!ok || d == 0) return p->run(ctx, in, n_in, out, n_out);  // portable runs it or reports the error
    const double eps = ctx.attrs->get_float("eps");
    const float* x = in[0].as<const float>();
    const float* w = optional_present(in, n_in, 1) ? in[1].as<const float>() : nullptr;
    const float* b = optional_present(in, n_in, 2) ? in[2].as<const float>() : nullptr;
    float* y = out[0].as<float>();
    const int64_t rows = in[0].shape.numel() / d;
    parallel_chunks(ctx.pool, rows, d >= 4096 ? 1 : 4096 / d, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) row(x + r * d, w, b, y + r * d, d, eps);
    });
    return Status::Ok();
  }
};

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
