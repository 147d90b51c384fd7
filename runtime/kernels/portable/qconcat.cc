// qconcat: int8 x0, x1, ... -> one int8 tensor, sizes adding up along `axis` (runtime/OPS.md). Attributes: axis i,
// x_scales fs and x_zero_points is (one per input), y_scale, y_zero_point.
//
// An input whose scale and zero point are the output's is copied; any other is requantized element by element as
// TFLite's int8 -> int8 QUANTIZE (requantize) does, integer only (kernels/common/requant.h): (x - x_zero_points[i])
// times the fixed-point x_scales[i] / y_scale, + y_zero_point, saturated to [-128, 127]. (TFLite's int8
// CONCATENATION requires equal scales; its converter makes them so. DTorch takes any and requantizes.)
#include <cstdint>
#include <cstring>

#include "kernels/common/quant_params.h"
#include "kernels/common/requant.h"
#include "kernels/common/util.h"

namespace dtorch {
namespace {

using kernels::op_error;
namespace rq = kernels::requant;
constexpr const char* kOp = "qconcat";
constexpr int kMaxInputs = 64;  // a node's most inputs (core/model.h kMaxNodeArity; the catalogue's list lengths)

struct Params {
  int axis;
  Shape out;
  double y_scale;
  int32_t y_zp;
  double scale[kMaxInputs];
  int64_t zp[kMaxInputs];
};

Status check(const Attrs& attrs, const TensorView* in, int n_in, int n_out, Params* p) {
  DTORCH_RETURN_IF_ERROR(kernels::check_num_outputs(kOp, n_out, 1));
  if (n_in < 1 || n_in > kMaxInputs)
    return op_error(StatusCode::kInvalidModel, kOp, "needs 1 to %d inputs, got %d", kMaxInputs, n_in);
  const int ns = attrs.get_floats("x_scales", p->scale, kMaxInputs);
  const int nz = attrs.get_ints("x_zero_points", p->zp, kMaxInputs);
  if (ns != n_in || nz != n_in)
    return op_error(StatusCode::kInvalidModel, kOp, "x_scales and x_zero_points must have one value per input (%d), "
                    "got %d and %d", n_in, ns, nz);
  DTORCH_RETURN_IF_ERROR(kernels::read_scale(kOp, attrs, "y_scale", &p->y_scale));
  p->y_zp = static_cast<int32_t>(attrs.get_int("y_zero_point"));
  for (int i = 0; i < n_in; ++i) {
    if (!(p->scale[i] > 0.0) || p->scale[i] > 1e30)
      return op_error(StatusCode::kInvalidModel, kOp, "x_scales[%d] must be a finite number > 0, got %g", i,
                      p->scale[i]);
    if (p->zp[i] < rq::kQMin || p->zp[i] > rq::kQMax)
      return op_error(StatusCode::kInvalidModel, kOp, "x_zero_points[%d] must be in [-128, 127], got %lld", i,
                      (long long)p->zp[i]);
    if (!rq::multiplier_ok(p->scale[i] / p->y_scale))
      return op_error(StatusCode::kInvalidModel, kOp,
                      "x_scales[%d] / y_scale = %g is too large for a requantization multiplier (< 2^30)", i,
                      p->scale[i] / p->y_scale);
    DTORCH_RETURN_IF_ERROR(kernels::check_dtype(kOp, "every input", in[i], DType::kInt8));
  }
  const Shape& s0 = in[0].shape;
  if (s0.ndim < 1) return op_error(StatusCode::kInvalidArgument, kOp, "inputs must have at least 1 dimension");
  DTORCH_RETURN_IF_ERROR(kernels::normalize_axis(kOp, "axis", attrs.get_int("axis"), s0.ndim, &p->axis));
  Shape o = s0;
  for (int i = 1; i < n_in; ++i) {
    const Shape& s = in[i].shape;
    bool ok = s.ndim == s0.ndim;
    for (int d = 0; ok && d < s.ndim; ++d) ok = d == p->axis || s.dims[d] == s0.dims[d];
    if (!ok)
      return op_error(StatusCode::kInvalidArgument, kOp,
                      "input %d has shape %s, which does not match input 0's shape %s outside axis %d", i,
                      ::dtorch::shape_str(s).c_str(), ::dtorch::shape_str(s0).c_str(), p->axis);
    if (!kernels::checked_add(o.dims[p->axis], s.dims[p->axis], &o.dims[p->axis]))
      return op_error(StatusCode::kInvalidArgument, kOp, "the concatenated size along axis %d overflows", p->axis);
  }
  p->out = o;
  return Status::Ok();
}

Status infer(const Attrs& attrs, const TensorView* in, int n_in, Shape* out, int n_out, size_t* scratch_bytes) {
  *scratch_bytes = 0;
  Params p;
  DTORCH_RETURN_IF_ERROR(check(attrs, in, n_in, n_out, &p));
  out[0] = p.out;
  return Status::Ok();
}

Status run(const KernelContext& ctx, const TensorView* in, int n_in, TensorView* out, int n_out) {
  Params p;
  DTORCH_RETURN_IF_ERROR(check(*ctx.attrs, in, n_in, n_out, &p));
  if (out[0].shape != p.out || out[0].dtype != DType::kInt8)
    return op_error(StatusCode::kInternal, kOp, "output %s is not the int8 %s infer gave",
                    ::dtorch::shape_str(out[0].shape).c_str(), ::dtorch::shape_str(p.out).c_str());
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < p.axis; ++d) outer *= p.out.dims[d];
  for (int d = p.axis + 1; d < p.out.ndim; ++d) inner *= p.out.dims[d];
  const int64_t out_row = p.out.dims[p.axis] * inner;
  int8_t* dst = out[0].as<int8_t>();
  int64_t offset = 0;
  for (int i = 0; i < n_in; ++i) {
    const int64_t row = in[i].shape.dims[p.axis] * inner;
    const int8_t* src = in[i].as<const int8_t>();
    const bool same = p.scale[i] == p.y_scale && p.zp[i] == p.y_zp;
    const rq::Multiplier mul = rq::make_multiplier(p.scale[i] / p.y_scale);
    const int32_t zp = static_cast<int32_t>(p.zp[i]);
    if (row > 0) {
      kernels::parallel_chunks(ctx.pool, outer, row >= 4096 ? 1 : kernels::ceil_div(4096, row), [&](int64_t r0,
                                                                                                   int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          int8_t* d = dst + r * out_row + offset;
          const int8_t* s = src + r * row;
          if (same) {
            std::memcpy(d, s, static_cast<size_t>(row));
          } else {
            for (int64_t j = 0; j < row; ++j) d[j] = rq::requantize(s[j] - zp, mul, p.y_zp, rq::kQMin, rq::kQMax);
          }
        }
      });
    }
    offset += row;
  }
  return Status::Ok();
}

}  // namespace
DTORCH_REGISTER_KERNEL(qconcat, DType::kInt8, infer, run);
}  // namespace dtorch
