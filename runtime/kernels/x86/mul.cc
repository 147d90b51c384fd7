// mul, x86-64 AVX2 kernel set (kernels/x86/x86.h). Tolerance: bit-identical to the portable kernel (one float32
// multiply per element; a * b == b * a exactly, so the operands' order does not matter).
//
// The float32 cases networks run, 8 elements per vector: two operands of the output's shape; one operand a single
// value (attention's scaling of q and k); and a 4-D map times a per-channel scale of shape (N or 1, C, 1, 1), in
// either order (squeeze-and-excitation: EfficientNet, MobileNetV3). Every other case (other broadcasts, integers)
// runs the portable kernel. The output may alias input a, as portable's.
//
// Layouts: same-shape operands may all be blocked together (element-wise, the layout does not matter); the map of a
// channel scale may be blocked together with the output (16 channels per position: one scale vector per 16-channel
// group), so that the squeeze-and-excitation block no longer forces its convolutions' outputs back to NCHW.
#include <immintrin.h>

#include <cstdint>

#include "kernels/common/portable_kernel.h"
#include "kernels/common/util.h"
#include "kernels/x86/x86.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr char kOp[] = "mul";

void mul_same(const float* a, const float* b, float* o, int64_t i0, int64_t i1) {
  int64_t i = i0;
  for (; i + 8 <= i1; i += 8) _mm256_storeu_ps(o + i, _mm256_mul_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  for (; i < i1; ++i) o[i] = a[i] * b[i];
}

void mul_scalar(const float* a, float s, float* o, int64_t i0, int64_t i1) {
  const __m256 vs = _mm256_set1_ps(s);
  int64_t i = i0;
  for (; i + 8 <= i1; i += 8) _mm256_storeu_ps(o + i, _mm256_mul_ps(_mm256_loadu_ps(a + i), vs));
  for (; i < i1; ++i) o[i] = a[i] * s;
}

// How the operands of a float32 node relate, for the cases above.
enum class Form { kOther, kSame, kScalarB, kScalarA, kChannelB, kChannelA };

bool is_channel_scale(const Shape& s, const Shape& map) {  // (N or 1, C, 1, 1) against a 4-D map (N, C, H, W)
  return map.ndim == 4 && s.ndim == 4 && (s.dims[0] == map.dims[0] || s.dims[0] == 1) && s.dims[1] == map.dims[1] &&
         s.dims[2] == 1 && s.dims[3] == 1;
}

Form form_of(const TensorView* in, int n_in, const TensorView* out, int n_out) {
  if (n_in != 2 || n_out != 1 || in[0].dtype != DType::kFloat32 || in[1].dtype != DType::kFloat32 ||
      out[0].dtype != DType::kFloat32)
    return Form::kOther;
  const Shape &a = in[0].shape, &b = in[1].shape, &o = out[0].shape;
  if (a == o && b == o) return Form::kSame;
  if (a == o && b.numel() == 1 && b.ndim <= o.ndim) return Form::kScalarB;
  if (b == o && a.numel() == 1 && a.ndim <= o.ndim) return Form::kScalarA;
  if (a == o && is_channel_scale(b, o)) return Form::kChannelB;
  if (b == o && is_channel_scale(a, o)) return Form::kChannelA;
  return Form::kOther;
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  const KernelDef* p = kernels::portable_kernel<kOp>();
  if (p == nullptr) return op_error(StatusCode::kInternal, kOp, "the portable kernel is not registered");
  const Form form = form_of(in, n_in, out, n_out);
  if (form == Form::kOther || in[0].data == nullptr || in[1].data == nullptr || out[0].data == nullptr)
    return p->run(ctx, in, n_in, out, n_out);  // the portable kernel computes it, or reports the error
  float* o = out[0].as<float>();
  const int64_t n = out[0].shape.numel();
  if (n == 0) return Status::Ok();
  if (form == Form::kSame) {
    const float* a = in[0].as<const float>();
    const float* b = in[1].as<const float>();
    kernels::parallel_chunks(ctx.pool, n, 16384, [&](int64_t i0, int64_t i1) { mul_same(a, b, o, i0, i1); });
    return Status::Ok();
  }
  if (form == Form::kScalarA || form == Form::kScalarB) {
    const bool b_scalar = form == Form::kScalarB;
    const float* x = in[b_scalar ? 0 : 1].as<const float>();
    const float s = in[b_scalar ? 1 : 0].as<const float>()[0];
    kernels::parallel_chunks(ctx.pool, n, 16384, [&](int64_t i0, int64_t i1) { mul_scalar(x, s, o, i0, i1); });
    return Status::Ok();
  }
  // A map times a channel scale: planes of H x W positions, one scale per channel (NCHW) or per 16-channel group
  // (blocked, 16 floats a position).
  const int map_at = form == Form::kChannelB ? 0 : 1;
  const float* x = in[map_at].as<const float>();
  const float* s = in[1 - map_at].as<const float>();
  const Shape& sh = out[0].shape;
  const int64_t batch = sh.dims[0], c = sh.dims[1], hw = sh.dims[2] * sh.dims[3];
  const bool s_batched = in[1 - map_at].shape.dims[0] != 1;
  const bool blocked = (ctx.blocked_outputs & 1) != 0;
  const int64_t unit = blocked ? kLayoutBlock : 1;  // channels per plane
  const int64_t planes = batch * c / unit;
  const int64_t grain = hw * unit >= 16384 ? 1 : 16384 / (hw * unit);
  kernels::parallel_chunks(ctx.pool, planes, grain, [&](int64_t p0, int64_t p1) {
    for (int64_t pl = p0; pl < p1; ++pl) {
      const int64_t img = pl / (c / unit), ch = (pl % (c / unit)) * unit;
      const float* sc = s + (s_batched ? img * c : 0) + ch;
      const float* xp = x + pl * hw * unit;
      float* op = o + pl * hw * unit;
      if (!blocked) {
        mul_scalar(xp, sc[0], op, 0, hw);
        continue;
      }
      const __m256 s0 = _mm256_loadu_ps(sc), s1 = _mm256_loadu_ps(sc + 8);
      for (int64_t q = 0; q < hw; ++q) {
        _mm256_storeu_ps(op + q * 16, _mm256_mul_ps(_mm256_loadu_ps(xp + q * 16), s0));
        _mm256_storeu_ps(op + q * 16 + 8, _mm256_mul_ps(_mm256_loadu_ps(xp + q * 16 + 8), s1));
      }
    }
  });
  return Status::Ok();
}

// Same-shape operands and the output may be blocked together (tied); with a single value or a channel scale, the
// other operand and the output, together (the scale stays NCHW: run reads it as C floats).
LayoutCaps layouts(const Attrs&, const TensorView* in, int n_in, const TensorView* out, int n_out) {
  LayoutCaps caps;
  const Form f = form_of(in, n_in, out, n_out);
  caps.inputs = f == Form::kSame ? 3 : (f == Form::kScalarB || f == Form::kChannelB) ? 1
                                     : (f == Form::kScalarA || f == Form::kChannelA) ? 2 : 0;
  caps.outputs = caps.inputs != 0 ? 1 : 0;
  caps.tied = true;
  return caps;
}

}  // namespace
DTORCH_REGISTER_X86_LAYOUT_KERNEL(mul, DType::kFloat32, kernels::portable_infer<kOp>, run, layouts);
}  // namespace dtorch
