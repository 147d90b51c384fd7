// thread-test: many threads run one Session at once, and every result equals the single-threaded one, bit for bit.
// Built by `scons thread-test` (build/host/thread-test) and, under ThreadSanitizer, by `scons tsan=1 thread-test`
// (build/tsan/thread-test; tests/runtime/test_threads.py, its own CI step).
//
//   thread-test MODEL.dtm [THREADS [RUNS [SESSION_THREADS [fast|exact|portable]]]]
//
// Inputs: every dynamic dimension takes the sizes 1 .. 5 (so the threads' plans differ), four pseudo-random input
// sets per size. The reference is a separate one-thread Session, run case by case before any thread starts. Then
// THREADS threads (default 8) do RUNS runs each (default 100) on one Session with SESSION_THREADS pool threads
// (default 1), cycling through the cases: a third of the runs with a fresh RunResult, the rest reusing the thread's
// own; between runs they also read the session's metadata. Prints PASS and exits 0, or names the first wrong
// result and exits 1.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dtorch/runtime.h"

namespace {

struct Case {
  std::vector<std::vector<uint8_t>> inputs;  // per model input, 64 bytes of slack for alignment
  std::vector<dtorch::TensorView> views;
  std::vector<std::vector<uint8_t>> want;    // per output: the reference bytes
  std::vector<dtorch::Shape> want_shapes;
};

uint64_t next(uint64_t* s) {  // splitmix64
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Fills a view's bytes: floats in [-1, 1), integers in [0, 3) (valid indices for small tables), bools 0/1.
void fill(dtorch::TensorView* v, uint64_t seed) {
  const int64_t n = v->shape.numel();
  uint8_t* p = static_cast<uint8_t*>(v->data);
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t r = next(&seed);
    switch (v->dtype) {
      case dtorch::DType::kFloat32: {
        const float f = static_cast<float>(static_cast<double>(r >> 11) / 9007199254740992.0 * 2.0 - 1.0);
        std::memcpy(p + i * 4, &f, 4);
        break;
      }
      case dtorch::DType::kFloat64: {
        const double d = static_cast<double>(r >> 11) / 9007199254740992.0 * 2.0 - 1.0;
        std::memcpy(p + i * 8, &d, 8);
        break;
      }
      default: {
        const size_t es = dtorch::dtype_size(v->dtype);
        std::memset(p + i * static_cast<int64_t>(es), 0, es);
        p[i * static_cast<int64_t>(es)] = static_cast<uint8_t>(v->dtype == dtorch::DType::kBool ? r % 2 : r % 3);
      }
    }
  }
}

bool same(const dtorch::TensorView& got, const std::vector<uint8_t>& want, const dtorch::Shape& want_shape) {
  return got.shape == want_shape && got.nbytes() == want.size() &&
         (want.empty() || std::memcmp(got.data, want.data(), want.size()) == 0);
}

int fail(const std::string& msg) {
  std::fprintf(stderr, "thread-test: error: %s\n", msg.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: thread-test MODEL.dtm [THREADS [RUNS [SESSION_THREADS [fast|exact|portable]]]]\n");
    return 2;
  }
  const int threads = argc > 2 ? std::atoi(argv[2]) : 8;
  const int runs = argc > 3 ? std::atoi(argv[3]) : 100;
  dtorch::SessionOptions options;
  options.num_threads = argc > 4 ? std::atoi(argv[4]) : 1;
  if (argc > 5 && !dtorch::parse_kernel_policy(argv[5], &options.kernels)) {
    std::fprintf(stderr, "thread-test: error: unknown kernel policy '%s'\n", argv[5]);
    return 2;
  }
  if (threads < 1 || runs < 1) return fail("THREADS and RUNS must be >= 1");

  dtorch::SessionOptions ref_options = options;
  ref_options.num_threads = 1;
  std::unique_ptr<dtorch::Session> ref, session;
  dtorch::Status st = dtorch::Session::Create(argv[1], ref_options, &ref);
  if (st.ok()) st = dtorch::Session::Create(argv[1], options, &session);
  if (!st.ok()) return fail(st.message());

  // A Run without a RunResult is refused, not a crash.
  if (session->Run(nullptr, 0, nullptr).ok()) return fail("Run accepted a null RunResult");

  // The cases and their single-threaded results.
  std::vector<Case> cases;
  bool dynamic = false;
  for (const dtorch::IOInfo& io : ref->inputs())
    for (int64_t d : io.dims) dynamic = dynamic || d < 0;
  for (int size = 1; size <= (dynamic ? 5 : 1); ++size) {
    for (int seed = 0; seed < 4; ++seed) {
      Case c;
      for (size_t i = 0; i < ref->inputs().size(); ++i) {
        const dtorch::IOInfo& io = ref->inputs()[i];
        dtorch::TensorView v;
        v.dtype = io.dtype;
        v.shape.ndim = static_cast<int32_t>(io.dims.size());
        for (size_t d = 0; d < io.dims.size(); ++d) v.shape.dims[d] = io.dims[d] < 0 ? size : io.dims[d];
        c.inputs.emplace_back(v.nbytes() + 64, 0);
        c.views.push_back(v);
      }
      for (size_t i = 0; i < c.views.size(); ++i) {
        uintptr_t p = reinterpret_cast<uintptr_t>(c.inputs[i].data());
        c.views[i].data = reinterpret_cast<void*>((p + 63) & ~uintptr_t{63});
        fill(&c.views[i], static_cast<uint64_t>(size * 1000 + seed * 10 + static_cast<int>(i)));
      }
      dtorch::RunResult r;
      st = ref->Run(c.views.data(), c.views.size(), &r);
      if (!st.ok()) return fail(std::string("reference run: ") + st.message());
      for (size_t k = 0; k < r.num_outputs(); ++k) {
        const dtorch::TensorView o = r.output(k);
        const uint8_t* b = static_cast<const uint8_t*>(o.data);
        c.want.emplace_back(b, b + o.nbytes());
        c.want_shapes.push_back(o.shape);
      }
      cases.push_back(std::move(c));
    }
  }

  std::atomic<int> wrong{0};
  std::mutex report_mu;
  std::string first_error;
  auto report = [&](const std::string& msg) {
    std::lock_guard<std::mutex> lock(report_mu);
    if (first_error.empty()) first_error = msg;
  };
  std::atomic<int> ready{0};
  auto worker = [&](int t) {
    ready.fetch_add(1);
    while (ready.load() < threads) std::this_thread::yield();  // start together
    dtorch::RunResult own;
    for (int k = 0; k < runs; ++k) {
      const size_t ci = static_cast<size_t>(t * 7 + k) % cases.size();
      const Case& c = cases[ci];
      dtorch::RunResult fresh;
      dtorch::RunResult& r = k % 3 == 0 ? fresh : own;
      const dtorch::Status s = session->Run(c.views.data(), c.views.size(), &r);
      if (!s.ok()) {
        wrong.fetch_add(1);
        report("thread " + std::to_string(t) + " run " + std::to_string(k) + ": " + s.message());
        continue;
      }
      for (size_t o = 0; o < c.want.size(); ++o)
        if (!same(r.output(o), c.want[o], c.want_shapes[o])) {
          wrong.fetch_add(1);
          report("thread " + std::to_string(t) + " run " + std::to_string(k) + ": case " + std::to_string(ci) +
                 " output " + std::to_string(o) + " differs from the single-threaded result");
          break;
        }
      // Read-only calls interleaved with the runs.
      if (session->inputs().size() != ref->inputs().size() || session->node_kernels().empty() ||
          session->info().num_nodes == 0)
        report("thread " + std::to_string(t) + ": the session's metadata changed");
      (void)session->arena_bytes();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t);
  for (std::thread& th : pool) th.join();
  if (wrong.load() != 0 || !first_error.empty()) {
    std::fprintf(stdout, "thread-test FAIL: %d of %d runs wrong; first: %s\n", wrong.load(), threads * runs,
                 first_error.c_str());
    return 1;
  }
  std::fprintf(stdout, "thread-test PASS: %d threads x %d runs on one session (%d pool threads, %zu cases), every "
               "result equal to the single-threaded one\n", threads, runs, options.num_threads, cases.size());
  return 0;
}
