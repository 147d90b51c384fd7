// add, x86-64 AVX2 kernel set (kernels/x86/x86.h). Tolerance: bit-identical to the portable kernel (one float32 add
// per element, then its fused ReLU as portable's relu_f: x < 0 ? +0 : x, so NaN and -0 pass through).
//
// The float32 case that dominates a network, two operands of the output's shape (a residual connection, with or
// without its fused ReLU), runs 8 elements per vector, threads splitting the elements; every other case
// (broadcasting, other activations, integers) runs the portable kernel. The output may alias input a, as portable's.
// Same-shape operands may be blocked (layouts below): element-wise, the layout does not matter.
#include <immintrin.h>

#include <cstdint>

#include "kernels/common/activation.h"
#include "kernels/common/util.h"
#include "kernels/x86/x86.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr char kOp[] = "add";

template <bool kRelu>
void add_range(const float* a, const float* b, float* o, int64_t i0, int64_t i1) {
  const __m256 zero = _mm256_setzero_ps();
  int64_t i = i0;
  for (; i + 8 <= i1; i += 8) {
    __m256 v = _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
    if (kRelu) v = _mm256_max_ps(zero, v);  // (0 > v) ? 0 : v: NaN and -0 pass, as relu_f
    _mm256_storeu_ps(o + i, v);
  }
  for (; i < i1; ++i) {
    const float v = a[i] + b[i];
    o[i] = kRelu ? kernels::relu_f(v) : v;
  }
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  const KernelDef* p = kernels::portable_kernel<kOp>();
  if (p == nullptr) return op_error(StatusCode::kInternal, kOp, "the portable kernel is not registered");
  kernels::Activation act;
  const bool same = n_in == 2 && n_out == 1 && in[0].dtype == DType::kFloat32 && in[1].dtype == DType::kFloat32 &&
                    out[0].dtype == DType::kFloat32 && in[0].shape == out[0].shape && in[1].shape == out[0].shape &&
                    in[0].data != nullptr && in[1].data != nullptr && out[0].data != nullptr;
  if (!same || !kernels::parse_activation(kOp, *ctx.attrs, &act).ok() ||
      (act.kind != kernels::ActKind::kNone && act.kind != kernels::ActKind::kRelu))
    return p->run(ctx, in, n_in, out, n_out);  // the portable kernel computes it, or reports the error
  const float* a = in[0].as<const float>();
  const float* b = in[1].as<const float>();
  float* o = out[0].as<float>();
  const int64_t n = out[0].shape.numel();
  const bool relu = act.kind == kernels::ActKind::kRelu;
  auto range = [&](int64_t i0, int64_t i1) {
    if (relu)
      add_range<true>(a, b, o, i0, i1);
    else
      add_range<false>(a, b, o, i0, i1);
  };
  const Shape& s = out[0].shape;
  if (ctx.pool->size() > 1 && s.ndim == 4 && s.dims[2] * s.dims[3] >= ctx.pool->size()) {
    // An image's positions split among the threads the way the convolutions split theirs (position_blocks, each
    // block over every channel plane), so each thread adds what its core wrote.
    const int64_t hw = s.dims[2] * s.dims[3];
    const int64_t unit = (ctx.blocked_outputs & 1) != 0 ? kLayoutBlock : 1;  // floats per position of a plane
    const int64_t planes = n / (hw * unit);
    kernels::position_blocks(ctx.pool, hw, [&](int64_t p0, int64_t p1) {
      for (int64_t pl = 0; pl < planes; ++pl) range((pl * hw + p0) * unit, (pl * hw + p1) * unit);
    });
    return Status::Ok();
  }
  kernels::parallel_chunks(ctx.pool, n, 16384, range);
  return Status::Ok();
}

// Two operands of the output's shape are added element by element whatever the layout (the fused activation too):
// all three may be blocked (core/kernel.h), together.
LayoutCaps layouts(const Attrs&, const TensorView* in, int n_in, const TensorView* out, int n_out) {
  LayoutCaps caps;
  if (n_in == 2 && n_out == 1 && in[0].shape == out[0].shape && in[1].shape == out[0].shape &&
      in[0].dtype == out[0].dtype && in[1].dtype == out[0].dtype) {
    caps.inputs = 3;
    caps.outputs = 1;
    caps.tied = true;
  }
  return caps;
}

}  // namespace
DTORCH_REGISTER_X86_LAYOUT_KERNEL(add, DType::kFloat32, kernels::portable_infer<kOp>, run, layouts);
}  // namespace dtorch
