// reshape and expand: target entries read at run time from the dimensions of the optional input `like` (in[1]),
// where the attribute like_dims (one entry per `shape` entry) names a dimension of `like`; -1 keeps the entry.
// This is how a target that depends on a dynamic dimension stays symbolic when no 0 / -1 entry can say it.
#pragma once

#include <cstdint>

#include "kernels/common/util.h"

namespace dtorch {
namespace kernels {
inline namespace DTORCH_ISA {

inline Status apply_like_dims(const char* op, const Attrs& attrs, const TensorView* in, int n_in, int64_t* spec,
                              int n) {
  int64_t ld[kMaxDims];
  int m = 0;
  DTORCH_RETURN_IF_ERROR(get_ints_list(op, attrs, "like_dims", kMaxDims, ld, &m, false));
  const bool has_like = optional_present(in, n_in, 1);
  if (m == 0) {
    if (has_like) return op_error(StatusCode::kInvalidModel, op, "input 'like' is given without like_dims");
    return Status::Ok();
  }
  if (!has_like) return op_error(StatusCode::kInvalidModel, op, "like_dims %s needs the input 'like'", ints_str(ld, m).c_str());
  if (m != n)
    return op_error(StatusCode::kInvalidModel, op, "like_dims %s must have one entry per shape entry (%d)",
                    ints_str(ld, m).c_str(), n);
  const Shape& l = in[1].shape;
  for (int i = 0; i < n; ++i) {
    if (ld[i] < 0) continue;
    if (ld[i] >= l.ndim)
      return op_error(StatusCode::kInvalidModel, op, "like_dims %s reads dimension %lld of 'like', which is %s",
                      ints_str(ld, m).c_str(), static_cast<long long>(ld[i]), shape_str(l).c_str());
    spec[i] = l.dims[ld[i]];
  }
  return Status::Ok();
}

}  // namespace DTORCH_ISA
}  // namespace kernels
}  // namespace dtorch
