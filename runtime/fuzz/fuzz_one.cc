// fuzz_one: load the bytes as a model and, if they load, run it once on zero-filled inputs.
#include "fuzz/fuzz_one.h"

#include <memory>
#include <vector>

#include "dtorch/runtime.h"

namespace dtorch {
namespace fuzz {
namespace {
volatile size_t g_sink;  // keeps the reads of loaded data and outputs from being optimized away
}  // namespace

const char* stage_name(Stage s) {
  switch (s) {
    case Stage::kRejectedAtLoad: return "rejected at load";
    case Stage::kRejectedAtRun: return "rejected at run";
    case Stage::kRan: return "loaded and ran";
    case Stage::kInputsTooLarge: return "loaded, inputs too large to run";
  }
  return "unknown";
}

Outcome fuzz_one(const uint8_t* data, size_t size) {
  Outcome out;
  std::unique_ptr<Session> session;
  SessionOptions options;
  Status st = Session::CreateFromBuffer(data, size, options, &session);
  if (!st.ok()) {
    out.stage = Stage::kRejectedAtLoad;
    out.code = st.code();
    out.message = st.message();
    return out;
  }

  // Everything a caller may read after loading must be readable.
  const ModelInfo& info = session->info();
  size_t touched = info.producer.size() + info.op_list.size() + info.metadata.size();
  if (info.has_test_vector) {
    std::vector<std::vector<uint8_t>> tv_in, tv_out;
    std::vector<Shape> tv_in_shapes, tv_out_shapes;
    st = session->TestVector(&tv_in, &tv_in_shapes, &tv_out, &tv_out_shapes);
    if (st.ok()) touched += tv_in.size() + tv_out.size();
  }

  // Zero-filled inputs of the declared shapes; a dynamic dimension (-1) gets size 1.
  const std::vector<IOInfo>& ins = session->inputs();
  std::vector<TensorView> views(ins.size());
  std::vector<std::vector<uint8_t>> buffers(ins.size());
  uint64_t total = 0;
  for (size_t i = 0; i < ins.size(); ++i) {
    TensorView& v = views[i];
    v.dtype = ins[i].dtype;
    v.shape.ndim = static_cast<int32_t>(ins[i].dims.size());
    uint64_t bytes = dtype_size(v.dtype);
    for (size_t d = 0; d < ins[i].dims.size() && d < static_cast<size_t>(kMaxDims); ++d) {
      const int64_t dim = ins[i].dims[d] < 0 ? 1 : ins[i].dims[d];
      v.shape.dims[d] = dim;
      if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(dim), &bytes)) bytes = kMaxInputBytes + 1;
    }
    if (__builtin_add_overflow(total, bytes, &total) || total > kMaxInputBytes) {
      out.stage = Stage::kInputsTooLarge;
      return out;
    }
    buffers[i].assign(static_cast<size_t>(bytes), 0);
    v.data = buffers[i].data();
  }

  RunResult result;
  st = session->Run(views.data(), views.size(), &result);
  if (!st.ok()) {
    out.stage = Stage::kRejectedAtRun;
    out.code = st.code();
    out.message = st.message();
    return out;
  }
  // Read every output byte, so that an output view pointing outside its memory is reported.
  for (size_t k = 0; k < session->outputs().size(); ++k) {
    const TensorView o = result.output(k);
    const uint8_t* p = static_cast<const uint8_t*>(o.data);
    const size_t n = o.nbytes();
    for (size_t b = 0; p != nullptr && b < n; ++b) touched += p[b];
  }
  g_sink = touched;
  out.stage = Stage::kRan;
  return out;
}

}  // namespace fuzz
}  // namespace dtorch
