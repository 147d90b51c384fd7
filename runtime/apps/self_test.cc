// The bundled test vector, loaded and checked (self_test.h).
#include "self_test.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace dtorch {
namespace apps {
namespace {

double to_double(const void* p, DType t, size_t i) {
  switch (t) {
    case DType::kFloat32: return static_cast<const float*>(p)[i];
    case DType::kFloat64: return static_cast<const double*>(p)[i];
    case DType::kInt64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DType::kInt32: return static_cast<const int32_t*>(p)[i];
    case DType::kInt16: return static_cast<const int16_t*>(p)[i];
    case DType::kInt8: return static_cast<const int8_t*>(p)[i];
    case DType::kUInt8: return static_cast<const uint8_t*>(p)[i];
    case DType::kBool: return static_cast<const uint8_t*>(p)[i];
    default: return std::nan("");
  }
}

}  // namespace

Status load_test_vector(const Session& session, TestVector* tv) {
  std::vector<std::vector<uint8_t>> in;
  std::vector<Shape> in_shapes;
  DTORCH_RETURN_IF_ERROR(session.TestVector(&in, &in_shapes, &tv->expected, &tv->expected_shapes));
  for (size_t k = 0; k < in.size(); ++k) {
    npy::Array a = npy::make(session.inputs()[k].dtype, in_shapes[k]);
    if (!in[k].empty()) std::memcpy(a.data.get(), in[k].data(), std::min(in[k].size(), a.nbytes()));
    tv->views.push_back(a.view());
    tv->inputs.push_back(std::move(a));
  }
  return Status::Ok();
}

SelfTestResult check_test_vector(const Session& session, const RunResult& result, const TestVector& tv) {
  SelfTestResult r;
  for (size_t k = 0; k < session.outputs().size(); ++k) {
    const TensorView got = result.output(k);
    if (k >= tv.expected_shapes.size() || got.shape != tv.expected_shapes[k]) {
      r.pass = false;
      r.failure = "output '" + session.outputs()[k].name + "' has shape " + shape_str(got.shape).c_str() + ", expected " +
                  (k < tv.expected_shapes.size() ? shape_str(tv.expected_shapes[k]).c_str() : "none");
      return r;
    }
    const size_t n = static_cast<size_t>(got.shape.numel());
    double scale = 0.0, err = 0.0;
    for (size_t i = 0; i < n; ++i) {
      const double e = to_double(tv.expected[k].data(), got.dtype, i), g = to_double(got.data, got.dtype, i);
      scale = std::max(scale, std::fabs(e));
      const double d = std::fabs(e - g);
      err = std::isnan(d) ? INFINITY : std::max(err, d);
    }
    const bool is_float = got.dtype == DType::kFloat32 || got.dtype == DType::kFloat64;
    const double tol = is_float ? 1e-5 * std::max(scale, 1e-30) : 0.0;
    if (!(err <= tol)) r.pass = false;
    r.max_abs_error = std::max(r.max_abs_error, err);
  }
  return r;
}

}  // namespace apps
}  // namespace dtorch
