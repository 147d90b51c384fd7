// The comparisons equal, less and greater: a and b of one dtype (their catalogue signatures: float32, int64, int32)
// with NumPy broadcasting -> bool (0 / 1 bytes). Floats compare as IEEE does (NaN is unequal to everything, and
// neither less nor greater); integers compare exactly. Each output element is computed once, whatever the threads.
#pragma once

#include <cstdint>

#include "kernels/common/broadcast.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

inline Status compare_infer(const OpSchema& schema, const Attrs& attrs, const TensorView* in, int n_in, Shape* out,
                            int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  DTORCH_RETURN_IF_ERROR(check_signature(schema, attrs, in, n_in, nullptr, n_out));
  return broadcast_shape(schema.name, in[0].shape, in[1].shape, &out[0]);
}

// `cmp(a, b)` on every broadcast pair.
template <typename Cmp>
inline Status compare_run(const OpSchema& schema, const KernelContext& ctx, const TensorView* in, int n_in,
                          TensorView* out, int n_out, Cmp cmp) {
  Shape expect;
  size_t scratch = 0;
  DTORCH_RETURN_IF_ERROR(compare_infer(schema, *ctx.attrs, in, n_in, &expect, n_out, &scratch));
  DTORCH_RETURN_IF_ERROR(check_signature(schema, *ctx.attrs, in, n_in, out, n_out));
  if (out[0].shape != expect)
    return op_error(StatusCode::kInternal, schema.name, "output has shape %s, expected %s",
                    shape_str(out[0].shape).c_str(), shape_str(expect).c_str());
  const Shape* shapes[2] = {&in[0].shape, &in[1].shape};
  uint8_t* y = out[0].as<uint8_t>();
  return visit_dtype(schema.name, in[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* a = in[0].as<const T>();
    const T* b = in[1].as<const T>();
    broadcast_apply<2>(ctx.pool, shapes, out[0].shape, y,
                       [&](const int64_t* i) { return static_cast<uint8_t>(cmp(a[i[0]], b[i[1]]) ? 1 : 0); });
    return Status::Ok();
  });
}

}  // inline namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
