// softplus: log(1 + exp(beta x)) / beta, x where beta x > threshold; attrs beta f (1), threshold f (20), elementwise, same shape (runtime/OPS.md). The output may alias the input (in place).
#include <cmath>

#include "kernels/common/activation.h"
#include "kernels/common/unary.h"

namespace dtorch {
namespace {

constexpr const char* kOp = "softplus";

struct Params {
  float beta = 1.0f, threshold = 20.0f;
};

Status parse(const Attrs& attrs, Params* p) {
  p->beta = static_cast<float>(attrs.get_float("beta"));
  p->threshold = static_cast<float>(attrs.get_float("threshold"));
  if (p->beta == 0.0f) return kernels::op_error(StatusCode::kInvalidModel, kOp, "beta must not be 0");
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
  return kernels::unary_run(kOp, ctx, in, n_in, out, n_out, [p](float x) { return kernels::softplus_f(x, p.beta, p.threshold); });
}

}  // namespace
DTORCH_REGISTER_KERNEL(softplus, DType::kFloat32, infer, run);
}  // namespace dtorch
