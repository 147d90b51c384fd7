// where: out = cond ? x : y elementwise, NumPy broadcasting of all three (runtime/OPS.md). cond is bool (any nonzero
// byte is true); x and y share one dtype (float32, int64, int32 or bool), which out has. One kernel, keyed by cond's
// dtype (bool), serves every signature; it copies elements, so the output has the chosen input's exact bits.
#include "kernels/common/broadcast.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
constexpr const char* kOp = "where";

Status plan(const Attrs& attrs, const TensorView* in, int n_in, const TensorView* out, int n_out, Shape* shape) {
  DTORCH_RETURN_IF_ERROR(kernels::check_signature(DTORCH_OP_SCHEMA(where), attrs, in, n_in, out, n_out));
  Shape cx;
  if (!kernels::broadcast_shape(kOp, in[0].shape, in[1].shape, &cx).ok() ||
      !kernels::broadcast_shape(kOp, cx, in[2].shape, shape).ok())
    return op_error(StatusCode::kInvalidArgument, kOp, "the shapes of cond %s, x %s and y %s cannot be broadcast together",
                    ::dtorch::shape_str(in[0].shape).c_str(), ::dtorch::shape_str(in[1].shape).c_str(),
                    ::dtorch::shape_str(in[2].shape).c_str());
  return Status::Ok();
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  return plan(attrs, in, n_in, nullptr, n_out, &out[0]);
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  Shape o;
  DTORCH_RETURN_IF_ERROR(plan(*ctx.attrs, in, n_in, out, n_out, &o));
  if (out[0].shape != o)
    return op_error(StatusCode::kInternal, kOp, "output has shape %s, expected %s",
                    ::dtorch::shape_str(out[0].shape).c_str(), ::dtorch::shape_str(o).c_str());
  const Shape* shapes[3] = {&in[0].shape, &in[1].shape, &in[2].shape};
  const uint8_t* c = in[0].as<const uint8_t>();
  return kernels::visit_dtype(kOp, in[1].dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* x = in[1].as<const T>();
    const T* y = in[2].as<const T>();
    kernels::broadcast_apply<3>(ctx.pool, shapes, o, out[0].as<T>(),
                                [&](const int64_t* i) { return c[i[0]] != 0 ? x[i[1]] : y[i[2]]; });
    return Status::Ok();
  });
}

}  // namespace
DTORCH_REGISTER_KERNEL(where, DType::kBool, infer, run);
}  // namespace dtorch
