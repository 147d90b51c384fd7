// gelu: x * Phi(x) (approximate "none", erf form) or its tanh approximation (approximate "tanh"),
// elementwise, same shape (runtime/OPS.md). The output may alias the input (in place).
#include <cstring>

#include "kernels/common/activation.h"
#include "kernels/common/unary.h"

namespace dtorch {
namespace {

constexpr const char* kOp = "gelu";

Status parse(const Attrs& attrs, bool* use_tanh) {
  const char* a = attrs.get_string("approximate");
  if (std::strcmp(a, "none") == 0) {
    *use_tanh = false;
  } else if (std::strcmp(a, "tanh") == 0) {
    *use_tanh = true;
  } else {
    return kernels::op_error(StatusCode::kUnsupported, kOp, "approximate must be \"none\" or \"tanh\", got \"%s\"", a);
  }
  return Status::Ok();
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  bool use_tanh = false;
  DTORCH_RETURN_IF_ERROR(parse(attrs, &use_tanh));
  return kernels::unary_infer(kOp, in, n_in, out, n_out);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  bool use_tanh = false;
  DTORCH_RETURN_IF_ERROR(parse(*ctx.attrs, &use_tanh));
  if (use_tanh) return kernels::unary_run(kOp, ctx, in, n_in, out, n_out, [](float x) { return kernels::gelu_tanh_f(x); });
  return kernels::unary_run(kOp, ctx, in, n_in, out, n_out, [](float x) { return kernels::gelu_f(x); });
}

}  // namespace
DTORCH_REGISTER_KERNEL(gelu, DType::kFloat32, infer, run);
}  // namespace dtorch
