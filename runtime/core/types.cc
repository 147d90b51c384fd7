// Element-type sizes and names (same numbering as the .dtm schema's DType).
#include "dtorch/types.h"

#include "dtorch/format.h"

namespace dtorch {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kFloat32: return 4;
    case DType::kFloat16: return 2;
    case DType::kBFloat16: return 2;
    case DType::kFloat64: return 8;
    case DType::kInt64: return 8;
    case DType::kInt32: return 4;
    case DType::kInt16: return 2;
    case DType::kInt8: return 1;
    case DType::kUInt8: return 1;
    case DType::kBool: return 1;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat64: return "float64";
    case DType::kInt64: return "int64";
    case DType::kInt32: return "int32";
    case DType::kInt16: return "int16";
    case DType::kInt8: return "int8";
    case DType::kUInt8: return "uint8";
    case DType::kBool: return "bool";
  }
  return "unknown";
}

Text shape_str(const Shape& s) {
  Text out = text("[");
  for (int i = 0; i < s.ndim && i < kMaxDims; ++i) append(&out, i ? ", %lld" : "%lld", static_cast<long long>(s.dims[i]));
  append(&out, "]");
  return out;
}

}  // namespace dtorch
