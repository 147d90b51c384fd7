// elu: x for x > 0, alpha * (exp(x) - 1) otherwise; attr alpha f (default 1), elementwise, same shape (runtime/OPS.md). The output may alias the input (in place).
#include <cmath>

#include "kernels/common/activation.h"
#include "kernels/common/unary.h"

namespace dtorch {
namespace {

constexpr const char* kOp = "elu";

struct Params {
  float alpha = 1.0f;
};

Status parse(const Attrs& attrs, Params* p) {
  p->alpha = static_cast<float>(attrs.get_float("alpha", 1.0));
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
  return kernels::unary_run(kOp, ctx, in, n_in, out, n_out, [p](float x) { return kernels::elu_f(x, p.alpha); });
}

}  // namespace
DTORCH_REGISTER_KERNEL(elu, DType::kFloat32, infer, run);
}  // namespace dtorch
