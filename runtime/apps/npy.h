// A small reader/writer for NumPy .npy files (format versions 1-3): little-endian or byte-sized dtypes,
// C order. The loaded array owns its data (64-byte aligned). Fortran order, big-endian data, object
// arrays and dtypes the runtime lacks give a clear error.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "dtorch/status.h"
#include "dtorch/types.h"

namespace dtorch {
namespace npy {

// Frees an Array's 64-byte aligned block.
struct AlignedDelete {
  void operator()(uint8_t* p) const;
};

// Move-only (unique_ptr, not shared_ptr: libc++'s shared_ptr control block is compiled with exceptions and RTTI,
// which a board build of dtorch-run leaves out).
struct Array {
  DType dtype = DType::kFloat32;
  Shape shape;
  std::unique_ptr<uint8_t, AlignedDelete> data;  // nbytes() bytes, 64-byte aligned
  size_t nbytes() const { return static_cast<size_t>(shape.numel()) * dtype_size(dtype); }
  TensorView view() const { return TensorView{data.get(), dtype, shape}; }
};

Status load(const std::string& path, Array* out);
// Writes atomically (temporary file, then rename).
Status save(const std::string& path, const TensorView& v);
// A fresh zero-filled array.
Array make(DType dtype, const Shape& shape);

}  // namespace npy
}  // namespace dtorch
