// hardtanh: clamp(x, min_val, max_val) (relu6 is hardtanh(0, 6)); attrs min_val f, max_val f, elementwise, same shape (runtime/OPS.md). The output may alias the input (in place).
#include <cmath>

#include "kernels/common/activation.h"
#include "kernels/common/unary.h"

namespace dtorch {
namespace {

constexpr const char* kOp = "hardtanh";

struct Params {
  float lo = -1.0f, hi = 1.0f;
};

Status parse(const Attrs& attrs, Params* p) {
  p->lo = static_cast<float>(attrs.get_float("min_val"));
  p->hi = static_cast<float>(attrs.get_float("max_val"));
  if (!(p->lo <= p->hi))
    return kernels::op_error(StatusCode::kInvalidModel, kOp, "min_val (%g) must not be greater than max_val (%g)",
                             static_cast<double>(p->lo), static_cast<double>(p->hi));
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
  return kernels::unary_run(kOp, ctx, in, n_in, out, n_out, [p](float x) { return kernels::hardtanh_f(x, p.lo, p.hi); });
}

}  // namespace
DTORCH_REGISTER_KERNEL(hardtanh, DType::kFloat32, infer, run);
}  // namespace dtorch
