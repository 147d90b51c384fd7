// fuzz_one: load the bytes as a model and, if they load, run it once on zero-filled inputs.
#include "fuzz/fuzz_one.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "dtorch/dtorch.h"
#include "dtorch/runtime.h"

namespace dtorch {
namespace fuzz {
namespace {
volatile size_t g_sink;  // keeps the reads of loaded data and outputs from being optimized away

struct Freed {
  void operator()(void* p) const { std::free(p); }
};
using Block = std::unique_ptr<uint8_t, Freed>;

Block aligned_block(size_t bytes) {
  return Block(static_cast<uint8_t*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64)));
}

// The same bytes through the C API's heapless engine (core/engine.cc): an aligned copy, the arena it asks for
// (a NULL arena first, then at most two larger ones, each capped), and one run on zero-filled inputs.
void fuzz_engine(const uint8_t* data, size_t size) {
  constexpr size_t kMaxArena = size_t{64} << 20;
  Block bytes = aligned_block(size);
  if (!bytes) return;
  if (size > 0) std::memcpy(bytes.get(), data, size);
  dtorch_model* model = nullptr;
  dtorch_error err;
  size_t want = 0;
  if (dtorch_model_load(bytes.get(), size, nullptr, 0, &model, &want, &err) == DTORCH_OK) return;
  Block arena;
  for (int round = 0; round < 3 && model == nullptr && want > 0 && want <= kMaxArena; ++round) {
    arena = aligned_block(want);
    if (!arena) return;
    size_t next = 0;
    if (dtorch_model_load(bytes.get(), size, arena.get(), want, &model, &next, &err) == DTORCH_OK) break;
    if (next <= want) return;
    want = next;
  }
  if (model == nullptr) return;
  const size_t n_in = dtorch_num_inputs(model);
  std::vector<std::vector<uint8_t>> inputs(n_in);
  std::vector<const void*> ptrs(n_in);
  uint64_t total = 0;
  for (size_t i = 0; i < n_in; ++i) {
    dtorch_tensor_info info;
    if (dtorch_input_info(model, i, &info, &err) != DTORCH_OK) return;
    total += info.bytes;
    if (total > kMaxInputBytes) return;
    inputs[i].assign(info.bytes, 0);
    ptrs[i] = inputs[i].data();
  }
  if (dtorch_run(model, ptrs.data(), n_in, &err) != DTORCH_OK) return;
  size_t touched = 0;
  for (size_t k = 0; k < dtorch_num_outputs(model); ++k) {
    dtorch_tensor_info info;
    const uint8_t* p = static_cast<const uint8_t*>(dtorch_output(model, k));
    if (dtorch_output_info(model, k, &info, &err) != DTORCH_OK || p == nullptr) continue;
    for (size_t b = 0; b < info.bytes; ++b) touched += p[b];
  }
  g_sink = touched;
}
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
  fuzz_engine(data, size);
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
