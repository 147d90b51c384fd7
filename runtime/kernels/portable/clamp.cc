// clamp: max(x, min) where has_min, then min(., max) where has_max; attrs min f, max f, has_min i, has_max i, elementwise, same shape (runtime/OPS.md). The output may alias the input (in place).
#include <cmath>

#include "kernels/common/activation.h"
#include "kernels/common/unary.h"

namespace dtorch {
namespace {

constexpr const char* kOp = "clamp";

Status infer(const Attrs&, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  return kernels::unary_infer(kOp, in, n_in, out, n_out);
}

// The loader has held the attributes against the catalogue (types, values, defaults).
Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  const bool has_min = ctx.attrs->get_int("has_min") != 0, has_max = ctx.attrs->get_int("has_max") != 0;
  const float lo = static_cast<float>(ctx.attrs->get_float("min")), hi = static_cast<float>(ctx.attrs->get_float("max"));
  return kernels::unary_run(kOp, ctx, in, n_in, out, n_out, [=](float x) {
    if (has_min && x < lo) x = lo;
    if (has_max && x > hi) x = hi;
    return x;
  });
}

}  // namespace
DTORCH_REGISTER_KERNEL(clamp, DType::kFloat32, infer, run);
}  // namespace dtorch
