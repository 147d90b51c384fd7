// Shared plumbing of the unary elementwise kernels (relu, sigmoid, exp, hardtanh, ...): the same-shape
// infer and a run loop over a scalar function. The output may alias the input (in place): each element
// is read before it is written.
#pragma once

#include <cstdint>

#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

inline Status unary_infer(const char* op, const TensorView* in, int n_in, Shape* out, int n_out) {
  DTORCH_RETURN_IF_ERROR(check_num_inputs(op, n_in, 1, 1));
  DTORCH_RETURN_IF_ERROR(check_num_outputs(op, n_out, 1));
  DTORCH_RETURN_IF_ERROR(check_dtype(op, "input", in[0], DType::kFloat32));
  out[0] = in[0].shape;
  return Status::Ok();
}

template <typename F>
inline Status unary_run(const char* op, const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out,
                        int n_out, F f) {
  Shape expect;
  DTORCH_RETURN_IF_ERROR(unary_infer(op, in, n_in, &expect, n_out));
  if (out[0].shape.numel() != expect.numel())
    return op_error(StatusCode::kInternal, op, "output has shape %s, expected %s", shape_str(out[0].shape).c_str(),
                    shape_str(expect).c_str());
  const float* x = in[0].as<const float>();
  float* y = out[0].as<float>();
  parallel_chunks(ctx.pool, expect.numel(), 16384, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = f(x[i]);
  });
  return Status::Ok();
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
