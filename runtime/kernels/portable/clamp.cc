// clamp: max(x, min) where has_min, then min(., max) where has_max; attrs min f, max f, has_min i, has_max i, elementwise, same shape (runtime/OPS.md). The output may alias the input (in place).
#include <cmath>

#include "kernels/common/activation.h"
#include "kernels/common/unary.h"

namespace dtorch {
namespace {

constexpr const char* kOp = "clamp";

struct Params {
  bool has_min = false, has_max = false;
  float lo = 0.0f, hi = 0.0f;
};

Status parse(const Attrs& attrs, Params* p) {
  p->has_min = attrs.get_int("has_min", attrs.has("min") ? 1 : 0) != 0;
  p->has_max = attrs.get_int("has_max", attrs.has("max") ? 1 : 0) != 0;
  p->lo = static_cast<float>(attrs.get_float("min", 0.0));
  p->hi = static_cast<float>(attrs.get_float("max", 0.0));
  return Status::Ok();
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  Params p;
  DTORCH_RETURN_IF_ERROR(parse(attrs, &p));
  return kernels::unary_infer(kOp, in, n_in, out, n_out);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  Params p;
  DTORCH_RETURN_IF_ERROR(parse(*ctx.attrs, &p));
  return kernels::unary_run(kOp, ctx, in, n_in, out, n_out, [p](float x) {
    if (p.has_min && x < p.lo) x = p.lo;
    if (p.has_max && x > p.hi) x = p.hi;
    return x;
  });
}

}  // namespace
DTORCH_REGISTER_KERNEL(clamp, DType::kFloat32, infer, run);
}  // namespace dtorch
