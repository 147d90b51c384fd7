// dtorch-run: run a .dtm model on .npy files with the DTorch runtime.
//
//   dtorch-run model.dtm --input x.npy [--input y.npy] --output out.npy [--output ...] [--threads N]
//              [--kernels fast|exact|portable]   (kernel policy, SessionOptions::kernels; default fast)
//              [--exclude-kernel-set SET]...     (SessionOptions::exclude_kernel_sets: e.g. avx512, to run avx2)
//              [--layouts blocked|nchw]          (SessionOptions::blocked_layouts; default blocked: where kernels
//                                                 take it; nchw keeps every tensor NCHW, same bits)
//   dtorch-run model.dtm --bench N [--input x.npy ...]     latency: min/median/p90/p99/max in ms
//   dtorch-run model.dtm --bench N --profile                 and per node: median ms, share, kernel set
//   dtorch-run model.dtm --self-test                         run the bundled test vector: PASS/FAIL
//   dtorch-run model.dtm --info                              versions, inputs/outputs, ops, memory, build
//   dtorch-run --build-info                                  board, toolchain, runtime and op-set hashes, ops
//   dtorch-run model.dtm ... --json                          machine-readable: a {"event": "first_output"} line as
//                                                            soon as the first output exists, then one report line
//                                                            (latency, memory high-water marks, self-test, outputs)
//   dtorch-run model.dtm --repeat N [--input x.npy ...]      run N times, nothing timed or printed (the emulator's
//                                                            instruction counter compares N and N + K runs)
// A board build (dtorch-edge build) refuses a model whose bundle manifest.json (beside the model, or --manifest)
// names another runtime or op set, and the runtime refuses a model with an operator it was built without.
//
// Exit status: 0 ok, 1 for an error or a failed self-test, 2 for a usage error; every error is one line
// on stderr.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dtorch/runtime.h"
#include "heap_meter.h"
#include "npy.h"
#include "self_test.h"

// The build's identity (a board build generates dtorch_build_info.h: dtorch/edge/build_plan.py); a development
// build (plain `scons`, the Python package) has none and checks no manifest.
#if defined(DTORCH_HAVE_BUILD_INFO)
#include "dtorch_build_info.h"
#else
#define DTORCH_BUILD_BOARD "dev"
#define DTORCH_BUILD_TOOLCHAIN "dev"
#define DTORCH_BUILD_RUNTIME_HASH ""
#define DTORCH_BUILD_OPSET_HASH ""
#define DTORCH_BUILD_OPS "all"
#endif

using namespace dtorch;

namespace {

const char kUsage[] =
    "usage: dtorch-run MODEL.dtm [--input X.npy]... [--output Y.npy]... [--threads N] [--kernels fast|exact|portable] "
    "[--exclude-kernel-set SET]... [--layouts blocked|nchw] "
    "[--bench N [--profile]] [--repeat N] [--self-test] [--info] [--build-info] [--manifest manifest.json] [--json]";

int fail(const std::string& msg, int code = 1) {
  std::string line = "dtorch-run: error: " + msg;
  std::replace(line.begin(), line.end(), '\n', ' ');
  print_to(stderr, "%s\n", line.c_str());
  return code;
}

std::string dims_str(const IOInfo& io) {
  std::string s = "[";
  for (size_t i = 0; i < io.dims.size(); ++i)
    s += (i ? ", " : "") + (io.dims[i] < 0 ? io.dim_names[i] : std::to_string(io.dims[i]));
  return s + "]";
}

// Ascending. Heap sort: std::sort's introsort is ~5 KB of code in a board binary, this ~1 KB.
void sort_doubles(double* v, size_t n) {
  std::make_heap(v, v + n);
  std::sort_heap(v, v + n);
}

bool parse_int(const char* s, int lo, int hi, int* out) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

void print_info(const Session& s) {
  const ModelInfo& i = s.info();
  print_to(stdout, "format version: %u (this runtime reads %u; runtime %s)\n", i.format_version, kFormatVersion,
              kRuntimeVersion);
  print_to(stdout, "min runtime version: %u\n", i.min_runtime_version);
  print_to(stdout, "producer: %s\n", i.producer.c_str());
  print_to(stdout, "opset: %u\n", i.opset);
  for (const IOInfo& io : s.inputs())
    print_to(stdout, "input: %s %s %s\n", io.name.c_str(), dtype_name(io.dtype), dims_str(io).c_str());
  for (const IOInfo& io : s.outputs())
    print_to(stdout, "output: %s %s %s\n", io.name.c_str(), dtype_name(io.dtype), dims_str(io).c_str());
  print_to(stdout, "nodes: %zu\n", i.num_nodes);
  std::string ops;
  for (const auto& o : i.op_list) ops += (ops.empty() ? "" : " ") + o;
  print_to(stdout, "ops: %s\n", ops.c_str());
  print_to(stdout, "arena bytes (planned at export): %llu\n", static_cast<unsigned long long>(i.arena_size));
  print_to(stdout, "weights bytes: %llu\n", static_cast<unsigned long long>(i.weights_bytes));
  print_to(stdout, "test vector: %s\n", i.has_test_vector ? "yes" : "no");
  for (const auto& kv : i.metadata) print_to(stdout, "metadata: %s = %s\n", kv.first.c_str(), kv.second.c_str());
  // Which kernel set runs each operator under this session's policy (e.g. conv2d: avx512).
  std::vector<std::pair<std::string, std::string>> seen;
  for (const auto& k : s.node_kernels()) {
    const std::pair<std::string, std::string> nk(k.op, k.kernel_set);
    if (std::find(seen.begin(), seen.end(), nk) == seen.end()) seen.push_back(nk);
  }
  std::string ks;
  for (const auto& nk : seen) ks += (ks.empty() ? "" : " ") + nk.first + ":" + nk.second;
  print_to(stdout, "kernels: %s\n", ks.c_str());
}

// A JSON string literal (the names we print are UTF-8; control characters are escaped).
std::string json_str(const std::string& v) {
  std::string out = "\"";
  for (const char ch : v) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      dtorch::format(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string json_num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  dtorch::format(buf, sizeof(buf), "%.6g", v);
  return buf;
}

// The process's peak resident set (VmHWM of /proc/self/status) in bytes, or -1 where it cannot be read. Under QEMU
// user mode this is the emulator process's own figure.
long long process_peak_rss_bytes() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  long long kb = -1;
  while (std::fgets(line, sizeof(line), f) != nullptr)
    if (std::strncmp(line, "VmHWM:", 6) == 0) kb = std::strtoll(line + 6, nullptr, 10);
  std::fclose(f);
  return kb < 0 ? -1 : kb * 1024;
}

long long file_bytes(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return -1;
  long long n = -1;
  if (std::fseek(f, 0, SEEK_END) == 0) n = std::ftell(f);
  std::fclose(f);
  return n;
}

void print_build_info() {
  print_to(stdout, "build: board %s, toolchain %s, runtime %s\n", DTORCH_BUILD_BOARD, DTORCH_BUILD_TOOLCHAIN,
              kRuntimeVersion);
  print_to(stdout, "runtime hash: %s\n", DTORCH_BUILD_RUNTIME_HASH[0] ? DTORCH_BUILD_RUNTIME_HASH : "(development build)");
  print_to(stdout, "op set hash: %s\n", DTORCH_BUILD_OPSET_HASH[0] ? DTORCH_BUILD_OPSET_HASH : "(development build)");
  print_to(stdout, "compiled ops: %s\n", DTORCH_BUILD_OPS);
}

// The string value of "key" in a flat JSON object (the bundle manifest's top level; no escapes in the values we
// read: hex digests). Empty when absent.
std::string json_string(const std::string& text, const std::string& key) {
  const std::string quoted = "\"" + key + "\"";
  size_t p = text.find(quoted);
  if (p == std::string::npos) return "";
  p = text.find(':', p + quoted.size());
  if (p == std::string::npos) return "";
  p = text.find('"', p);
  if (p == std::string::npos) return "";
  const size_t e = text.find('"', p + 1);
  return e == std::string::npos ? "" : text.substr(p + 1, e - p - 1);
}

// A bundle's manifest.json must name this binary's runtime and op set (a board build only).
bool check_manifest(const std::string& path, bool explicit_path, std::string* err) {
  if (DTORCH_BUILD_RUNTIME_HASH[0] == '\0') return true;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    if (explicit_path) *err = "cannot open manifest '" + path + "': " + std::strerror(errno);
    return !explicit_path;
  }
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0 && text.size() < (size_t{1} << 24)) text.append(buf, n);
  std::fclose(f);
  const std::string rh = json_string(text, "runtime_hash"), oh = json_string(text, "opset_hash");
  if (rh != DTORCH_BUILD_RUNTIME_HASH || oh != DTORCH_BUILD_OPSET_HASH) {
    *err = "the bundle manifest '" + path + "' is for runtime " + (rh.empty() ? "(none)" : rh.substr(0, 16)) +
           " / op set " + (oh.empty() ? "(none)" : oh.substr(0, 16)) + " but this dtorch-run is runtime " +
           std::string(DTORCH_BUILD_RUNTIME_HASH).substr(0, 16) + " / op set " +
           std::string(DTORCH_BUILD_OPSET_HASH).substr(0, 16) +
           "; rebuild the bundle (dtorch-edge build) or run it with the dtorch-run it was built with";
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_path;
  std::vector<std::string> input_paths, output_paths, exclude_sets;
  const double t_start = monotonic_seconds();
  int threads = 1, bench = 0, repeat = 0;
  KernelPolicy kernels = KernelPolicy::kFast;
  bool blocked_layouts = true;
  bool self_test = false, info = false, profile = false, build_info = false, json = false;
  std::string manifest_path;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    auto value = [&](const char* flag) -> const char* {
      if (a + 1 >= argc) return nullptr;
      (void)flag;
      return argv[++a];
    };
    if (arg == "--input" || arg == "--output" || arg == "--threads" || arg == "--bench" || arg == "--kernels" ||
        arg == "--manifest" || arg == "--repeat" || arg == "--exclude-kernel-set" || arg == "--layouts") {
      const char* v = value(arg.c_str());
      if (v == nullptr) return fail(arg + " needs a value; " + kUsage, 2);
      if (arg == "--input") input_paths.push_back(v);
      else if (arg == "--exclude-kernel-set") exclude_sets.push_back(v);
      else if (arg == "--manifest") manifest_path = v;
      else if (arg == "--output") output_paths.push_back(v);
      else if (arg == "--threads" && !parse_int(v, 1, 1024, &threads))
        return fail(std::string("--threads needs an integer in 1..1024, got '") + v + "'", 2);
      else if (arg == "--bench" && !parse_int(v, 1, 100000000, &bench))
        return fail(std::string("--bench needs a positive number of runs, got '") + v + "'", 2);
      else if (arg == "--repeat" && !parse_int(v, 1, 100000000, &repeat))
        return fail(std::string("--repeat needs a positive number of runs, got '") + v + "'", 2);
      else if (arg == "--kernels" && !parse_kernel_policy(v, &kernels))
        return fail(std::string("--kernels needs fast, exact or portable, got '") + v + "'", 2);
      else if (arg == "--layouts" && std::string(v) != "blocked" && std::string(v) != "nchw")
        return fail(std::string("--layouts needs blocked or nchw, got '") + v + "'", 2);
      else if (arg == "--layouts")
        blocked_layouts = std::string(v) == "blocked";
    } else if (arg == "--self-test") {
      self_test = true;
    } else if (arg == "--info") {
      info = true;
    } else if (arg == "--profile") {
      profile = true;
    } else if (arg == "--build-info") {
      build_info = true;
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "-h" || arg == "--help") {
      print_to(stdout, "%s\n", kUsage);
      return 0;
    } else if (!arg.empty() && arg[0] == '-') {
      return fail("unknown option '" + arg + "'; " + kUsage, 2);
    } else if (model_path.empty()) {
      model_path = arg;
    } else {
      return fail("more than one model given ('" + model_path + "' and '" + arg + "'); " + kUsage, 2);
    }
  }
  if (build_info) {
    print_build_info();
    if (model_path.empty()) return 0;
  }
  if (model_path.empty()) return fail(std::string("no model given; ") + kUsage, 2);
  {
    // A bundle (dist/<board>/) carries manifest.json beside the model; --manifest names another.
    std::string path = manifest_path;
    if (path.empty()) {
      const size_t slash = model_path.find_last_of('/');
      path = (slash == std::string::npos ? std::string() : model_path.substr(0, slash + 1)) + "manifest.json";
    }
    std::string err;
    if (!check_manifest(path, !manifest_path.empty(), &err)) return fail(err);
  }
  if (profile && bench == 0) return fail(std::string("--profile needs --bench N (the number of runs); ") + kUsage, 2);
  if (!info && !self_test && bench == 0 && repeat == 0 && input_paths.empty())
    return fail(std::string("nothing to do: give --input/--output, --bench N, --repeat N, --self-test or --info; ") +
                    kUsage,
                2);
  if (json && info) return fail(std::string("--info prints text; leave out --json (or --info)"), 2);

  SessionOptions options;
  options.num_threads = threads;
  options.kernels = kernels;
  options.blocked_layouts = blocked_layouts;
  options.exclude_kernel_sets = exclude_sets;
  std::unique_ptr<Session> session;
  Status st = Session::Create(model_path, options, &session);
  if (!st.ok()) return fail(st.message());
  if (info) {
    print_info(*session);
    if (!build_info) print_build_info();
  }

  const size_t n_in = session->inputs().size(), n_out = session->outputs().size();
  std::vector<npy::Array> arrays;
  for (const std::string& p : input_paths) {
    npy::Array a;
    st = npy::load(p, &a);
    if (!st.ok()) return fail(st.message());
    arrays.push_back(std::move(a));
  }
  if (!input_paths.empty() && arrays.size() != n_in)
    return fail("the model has " + std::to_string(n_in) + " input(s) but " + std::to_string(arrays.size()) +
                " --input file(s) were given");
  if (output_paths.size() > n_out)
    return fail("the model has " + std::to_string(n_out) + " output(s) but " + std::to_string(output_paths.size()) +
                " --output file(s) were given");
  std::vector<TensorView> views;
  for (const auto& a : arrays) views.push_back(a.view());

  // --json: the report's fields (each ", \"key\": value"), printed as one object at the end; and the moment the
  // first output exists, as its own line at once (an emulator runner times a fresh process to it).
  std::string report;
  bool first_done = false;
  auto first_output = [&]() {
    if (first_done) return;
    first_done = true;
    if (!json) return;
    const double ms = 1e3 * (monotonic_seconds() - t_start);
    print_to(stdout, "{\"event\": \"first_output\", \"ms\": %s}\n", json_num(ms).c_str());
    std::fflush(stdout);
  };

  RunResult result;  // every run below reuses its execution state
  if (!views.empty()) {
    st = session->Run(views.data(), views.size(), &result);
    if (!st.ok()) return fail(st.message());
    first_output();
    for (size_t k = 0; k < output_paths.size(); ++k) {
      st = npy::save(output_paths[k], result.output(k));
      if (!st.ok()) return fail(st.message());
    }
    if (json) {
      std::string outs;
      for (size_t k = 0; k < n_out; ++k)
        outs += std::string(k ? ", " : "") + "{\"name\": " + json_str(session->outputs()[k].name) +
                ", \"dtype\": " + json_str(dtype_name(result.output(k).dtype)) +
                ", \"shape\": " + shape_str(result.output(k).shape).c_str() + "}";
      report += ", \"outputs\": [" + outs + "]";
    } else if (output_paths.empty()) {
      for (size_t k = 0; k < n_out; ++k)
        print_to(stdout, "output %s: %s %s\n", session->outputs()[k].name.c_str(), dtype_name(result.output(k).dtype),
                    shape_str(result.output(k).shape).c_str());
    }
  }

  apps::TestVector tv;
  if (self_test || ((bench > 0 || repeat > 0) && views.empty())) {
    st = apps::load_test_vector(*session, &tv);
    if (!st.ok())
      return fail((bench > 0 || repeat > 0) && !self_test
                      ? std::string(bench > 0 ? "--bench" : "--repeat") + " needs --input files (" + st.message() + ")"
                      : st.message());
  }

  int exit_code = 0;
  if (self_test) {
    st = session->Run(tv.views.data(), tv.views.size(), &result);
    if (!st.ok()) return fail(st.message());
    first_output();
    const apps::SelfTestResult check = apps::check_test_vector(*session, result, tv);
    if (!check.failure.empty()) {
      print_to(stdout, "self-test FAIL: %s\n", check.failure.c_str());
      return 1;
    }
    if (json)
      report += std::string(", \"self_test\": {\"pass\": ") + (check.pass ? "true" : "false") +
                ", \"max_abs_error\": " + json_num(check.max_abs_error) + "}";
    else
      print_to(stdout, "self-test %s: max abs error %.3g\n", check.pass ? "PASS" : "FAIL", check.max_abs_error);
    if (!check.pass) exit_code = 1;
  }

  const std::vector<TensorView>& bv = views.empty() ? tv.views : views;
  if (bench > 0) {
    st = session->Run(bv.data(), bv.size(), &result);  // warm-up (plans memory)
    if (!st.ok()) return fail(st.message());
    first_output();
    std::vector<double> ms(static_cast<size_t>(bench));
    for (int r = 0; r < bench; ++r) {
      const double t0 = monotonic_seconds();
      st = session->Run(bv.data(), bv.size(), &result);
      const double t1 = monotonic_seconds();
      if (!st.ok()) return fail(st.message());
      ms[static_cast<size_t>(r)] = 1e3 * (t1 - t0);
    }
    sort_doubles(&ms[0], ms.size());
    auto pct = [&](double q) { return ms[static_cast<size_t>(q * static_cast<double>(ms.size() - 1) + 0.5)]; };
    if (json)
      report += ", \"latency_ms\": {\"runs\": " + std::to_string(bench) + ", \"threads\": " +
                std::to_string(threads) + ", \"min\": " + json_num(ms.front()) + ", \"p50\": " + json_num(pct(0.5)) +
                ", \"p90\": " + json_num(pct(0.9)) + ", \"p99\": " + json_num(pct(0.99)) +
                ", \"max\": " + json_num(ms.back()) + "}";
    else
      print_to(stdout, "bench: %d runs, threads %d: min %.3f ms, median %.3f ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms\n",
                  bench, threads, ms.front(), pct(0.5), pct(0.9), pct(0.99), ms.back());
    if (profile) {
      const auto kernels = session->node_kernels();
      const size_t nn = kernels.size();
      std::vector<double> per_run(nn), all(nn * static_cast<size_t>(bench));
      for (int r = 0; r < bench; ++r) {
        st = session->RunProfiled(bv.data(), bv.size(), per_run.data(), &result);
        if (!st.ok()) return fail(st.message());
        for (size_t i = 0; i < nn; ++i) all[i * static_cast<size_t>(bench) + static_cast<size_t>(r)] = per_run[i];
      }
      std::vector<double> med(nn);
      double total = 0;
      for (size_t i = 0; i < nn; ++i) {
        auto b = all.begin() + static_cast<std::ptrdiff_t>(i * static_cast<size_t>(bench));
        sort_doubles(&*b, static_cast<size_t>(bench));
        med[i] = b[bench / 2] * 1e3;
        total += med[i];
      }
      if (json) {
        std::string nodes;
        for (size_t i = 0; i < nn; ++i)
          nodes += std::string(i ? ", " : "") + "{\"op\": " + json_str(kernels[i].op) +
                   ", \"kernel_set\": " + json_str(kernels[i].kernel_set) + ", \"ms\": " + json_num(med[i]) + "}";
        report += ", \"profile\": [" + nodes + "]";
      } else {
        print_to(stdout, "profile: median per node over %d runs (ms, share of their sum %.3f ms)\n", bench, total);
        for (size_t i = 0; i < nn; ++i)
          print_to(stdout, "  node %3zu  %-22s %-9s %9.3f ms  %5.1f%%\n", i, kernels[i].op.c_str(),
                      kernels[i].kernel_set.c_str(), med[i], total > 0 ? 100.0 * med[i] / total : 0.0);
      }
    }
  }

  for (int r = 0; r < repeat; ++r) {  // nothing timed, nothing printed: the same instructions every time
    st = session->Run(bv.data(), bv.size(), &result);
    if (!st.ok()) return fail(st.message());
    first_output();
  }

  if (json) {
    const long long model_bytes = file_bytes(model_path), rss = process_peak_rss_bytes();
    const size_t heap_peak = apps::heap_bytes_peak();
    print_to(stdout, "{\"event\": \"report\", \"threads\": %d, \"kernels\": %s%s, \"memory\": {\"arena_bytes\": %llu, "
                "\"heap_peak_bytes\": %zu, \"model_bytes\": %lld, \"runtime_peak_bytes\": %lld, "
                "\"process_peak_rss_bytes\": %s}}\n",
                threads, json_str(kernel_policy_name(kernels)).c_str(),
                report.c_str(), static_cast<unsigned long long>(result.arena_bytes()), heap_peak, model_bytes,
                static_cast<long long>(heap_peak) + (model_bytes > 0 ? model_bytes : 0),
                rss < 0 ? "null" : std::to_string(rss).c_str());
    std::fflush(stdout);
  }
  return exit_code;
}
