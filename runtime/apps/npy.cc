// .npy reading and writing (see npy.h).
#include "npy.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

namespace dtorch {
namespace npy {
namespace {

const char kMagic[] = "\x93NUMPY";

bool little_endian_host() {
  const uint16_t one = 1;
  uint8_t b;
  std::memcpy(&b, &one, 1);
  return b == 1;
}

struct Descr {
  const char* text;
  DType dtype;
};
const Descr kDescrs[] = {{"<f4", DType::kFloat32}, {"<f8", DType::kFloat64}, {"<f2", DType::kFloat16},
                         {"<i8", DType::kInt64},   {"<i4", DType::kInt32},   {"<i2", DType::kInt16},
                         {"|i1", DType::kInt8},    {"|u1", DType::kUInt8},   {"|b1", DType::kBool}};

const char* descr_of(DType t) {
  for (const Descr& d : kDescrs)
    if (d.dtype == t) return d.text;
  return nullptr;
}

Status bad(const std::string& path, const std::string& why) {
  return Status(StatusCode::kInvalidArgument, "cannot read '" + path + "' as a .npy array: " + why);
}

// The value text after 'key': in a header dict, or "" when absent.
std::string field(const std::string& header, const std::string& key) {
  const std::string k = "'" + key + "'";
  size_t p = header.find(k);
  if (p == std::string::npos) return "";
  p = header.find(':', p + k.size());
  if (p == std::string::npos) return "";
  ++p;
  while (p < header.size() && header[p] == ' ') ++p;
  size_t e = p;
  if (p < header.size() && header[p] == '(') {
    e = header.find(')', p);
    return e == std::string::npos ? "" : header.substr(p, e - p + 1);
  }
  if (p < header.size() && (header[p] == '\'' || header[p] == '"')) {
    e = header.find(header[p], p + 1);
    return e == std::string::npos ? "" : header.substr(p + 1, e - p - 1);
  }
  while (e < header.size() && header[e] != ',' && header[e] != '}') ++e;
  return header.substr(p, e - p);
}

std::unique_ptr<uint8_t, AlignedDelete> aligned_bytes(size_t n) {
  void* p = ::operator new(n < 64 ? 64 : n, std::align_val_t(64));
  std::memset(p, 0, n < 64 ? 64 : n);
  return std::unique_ptr<uint8_t, AlignedDelete>(static_cast<uint8_t*>(p));
}

}  // namespace

void AlignedDelete::operator()(uint8_t* p) const { ::operator delete(p, std::align_val_t(64)); }

Array make(DType dtype, const Shape& shape) {
  Array a;
  a.dtype = dtype;
  a.shape = shape;
  a.data = aligned_bytes(a.nbytes());
  return a;
}

Status load(const std::string& path, Array* out) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return Status(StatusCode::kIOError, "cannot open input file '" + path + "'");
  std::vector<uint8_t> bytes;
  uint8_t buf[1 << 16];
  size_t r;
  while ((r = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.insert(bytes.end(), buf, buf + r);
  std::fclose(f);
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0)
    return bad(path, "it does not start with the .npy magic (save it with numpy.save)");
  const int major = bytes[6];
  size_t hlen = 0, start = 0;
  if (major == 1) {
    hlen = bytes[8] | (static_cast<size_t>(bytes[9]) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return bad(path, "truncated header");
    hlen = bytes[8] | (static_cast<size_t>(bytes[9]) << 8) | (static_cast<size_t>(bytes[10]) << 16) |
           (static_cast<size_t>(bytes[11]) << 24);
    start = 12;
  } else {
    return bad(path, "unknown .npy format version " + std::to_string(major));
  }
  if (start + hlen > bytes.size()) return bad(path, "truncated header");
  const std::string header(reinterpret_cast<const char*>(bytes.data() + start), hlen);
  const std::string descr = field(header, "descr"), fortran = field(header, "fortran_order"),
                    shape = field(header, "shape");
  if (descr.empty() || fortran.empty() || shape.empty()) return bad(path, "the header lacks descr/fortran_order/shape");
  if (fortran.find("True") != std::string::npos)
    return bad(path, "the array is in Fortran order; save numpy.ascontiguousarray(a) instead");
  bool found = false;
  for (const Descr& d : kDescrs)
    if (descr == d.text || (descr[0] == '=' && descr.substr(1) == std::string(d.text).substr(1) && little_endian_host())) {
      out->dtype = d.dtype;
      found = true;
    }
  if (!found)
    return bad(path, "dtype '" + descr + "' is not supported (use little-endian float32/float64/float16/int64/int32/"
                     "int16/int8/uint8/bool)");
  if (!little_endian_host() && descr[0] == '<') return bad(path, "little-endian data on a big-endian host");
  Shape s;
  size_t p = 1;
  while (p < shape.size()) {
    while (p < shape.size() && (shape[p] == ' ' || shape[p] == ',')) ++p;
    if (p >= shape.size() || shape[p] == ')') break;
    char* end = nullptr;
    const long long v = std::strtoll(shape.c_str() + p, &end, 10);
    if (end == shape.c_str() + p || v < 0) return bad(path, "malformed shape " + shape);
    if (s.ndim >= kMaxDims) return bad(path, "more than " + std::to_string(kMaxDims) + " dimensions");
    s.dims[s.ndim++] = v;
    p = static_cast<size_t>(end - shape.c_str());
  }
  out->shape = s;
  const size_t want = out->nbytes(), have = bytes.size() - start - hlen;
  if (have < want)
    return bad(path, "the data is " + std::to_string(have) + " bytes but the shape needs " + std::to_string(want) +
                         " (truncated file?)");
  out->data = aligned_bytes(want);
  if (want > 0) std::memcpy(out->data.get(), bytes.data() + start + hlen, want);
  return Status::Ok();
}

Status save(const std::string& path, const TensorView& v) {
  const char* descr = descr_of(v.dtype);
  if (descr == nullptr)
    return Status(StatusCode::kInvalidArgument, std::string("cannot write dtype ") + dtype_name(v.dtype) + " to .npy");
  std::string shape = "(";
  for (int i = 0; i < v.shape.ndim; ++i) shape += std::to_string(v.shape.dims[i]) + (v.shape.ndim == 1 ? "," : (i + 1 < v.shape.ndim ? ", " : ""));
  shape += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return Status(StatusCode::kIOError, "cannot write output file '" + path + "'");
  const uint8_t pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<uint8_t>(header.size() & 0xff),
                           static_cast<uint8_t>(header.size() >> 8)};
  bool ok = std::fwrite(pre, 1, 10, f) == 10 && std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
            (v.nbytes() == 0 || std::fwrite(v.data, 1, v.nbytes(), f) == v.nbytes());
  ok = (std::fflush(f) == 0) && ok;
#if defined(__unix__) || defined(__APPLE__)
  ok = (fsync(fileno(f)) == 0) && ok;
#endif
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status(StatusCode::kIOError, "cannot write output file '" + path + "'");
  }
  return Status::Ok();
}

}  // namespace npy
}  // namespace dtorch
