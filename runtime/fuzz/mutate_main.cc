// fuzz-smoke: a standalone, deterministic mutation fuzzer for the .dtm loader (no libFuzzer needed).
// Built with AddressSanitizer + UndefinedBehaviorSanitizer by `scons asan=1 fuzz-smoke`.
//
//   fuzz-smoke [--iterations N] [--seed S] [--max-seconds T] [--timeout T] [--crash-dir DIR] SEED.dtm...
//   fuzz-smoke --replay FILE...            feed files as they are (reproducers) and print each outcome
//   fuzz-smoke --only I --seed S SEED...   run only iteration I (what a failed run printed)
//   fuzz-smoke --verbose ...               print every iteration's mutation and outcome (triage)
//   fuzz-smoke --keep ...                  also save every input in --crash-dir as crash-sS-iI.dtm (with --only: a
//                                          reproducer of an input that is handled wrongly without crashing)
//   fuzz-smoke --fork ...                  run each input in a child process and keep going after a crash
//                                          (triage: saves every crashing input, exits 3 if there was one)
//
// Each iteration picks a seed file and mutates it (mutator.h; iteration I of seed S always gives the same
// bytes), then feeds it to fuzz_one() (fuzz_one.h), the function behind the libFuzzer target. Every outcome
// is counted: loaded and ran, or rejected at load / at run with each StatusCode, in all and for each mutation
// kind (a second summary line, "by kind (refused/ran): dtype=140/2 ..."). Every seed must itself load
// and run. A sanitizer report, a crash or an input that runs longer than --timeout seconds writes the input
// to --crash-dir (default: the current directory) and exits non-zero.
//
// Exit status: 0 all inputs handled (a one-line summary on stdout), 1 a seed is not a valid model,
// 2 a usage error, 4 an input timed out; sanitizer reports exit with the sanitizer's exit code.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/fuzz_one.h"
#include "fuzz/mutator.h"

#if defined(__has_include)
#if __has_include(<sanitizer/common_interface_defs.h>)
#include <sanitizer/common_interface_defs.h>
#define DTORCH_HAVE_SANITIZER_API 1
#endif
#endif

using dtorch::StatusCode;
using dtorch::fuzz::Outcome;
using dtorch::fuzz::Stage;

// Requests over 64 MiB (no seed needs a tenth of that) must come back as a null pointer that the runtime reports as an error, not as an
// allocator abort; UBSan stops at the first report with a stack trace.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1:max_allocation_size_mb=64"; }
// UBSan aborts (SIGABRT, caught below to save the input) because with gcc its runtime is a separate library
// that does not call the death callback set in ASan's.
extern "C" const char* __ubsan_default_options() { return "print_stacktrace=1:halt_on_error=1:abort_on_error=1"; }

namespace {

const char kUsage[] =
    "usage: fuzz-smoke [--iterations N] [--seed S] [--max-seconds T] [--timeout T] [--crash-dir DIR] [--only I] [--fork] [--verbose] [--keep] "
    "SEED.dtm... | fuzz-smoke --replay FILE...";

// The input being run, for the crash handlers (written with async-signal-safe calls only).
const uint8_t* g_data = nullptr;
size_t g_size = 0;
char g_path[4096] = "";
char g_what[1024] = "";

void write_str(const char* s) {
  ssize_t r = ::write(2, s, std::strlen(s));
  (void)r;
}

void save_current_input() {
  if (g_data == nullptr || g_path[0] == '\0') return;
  const int fd = ::open(g_path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  if (fd >= 0) {
    size_t done = 0;
    while (done < g_size) {
      const ssize_t r = ::write(fd, g_data + done, g_size - done);
      if (r <= 0) break;
      done += static_cast<size_t>(r);
    }
    ::close(fd);
  }
  write_str("fuzz-smoke: the input that failed (");
  write_str(g_what);
  write_str(") is saved as ");
  write_str(g_path);
  write_str("; replay it with: fuzz-smoke --replay ");
  write_str(g_path);
  write_str("\n");
}

void on_abort(int sig) {
  save_current_input();
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void on_timeout(int) {
  write_str("fuzz-smoke: error: an input ran longer than the --timeout\n");
  save_current_input();
  ::_exit(4);
}

bool read_file(const std::string& path, std::vector<uint8_t>* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  out->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return true;
}

bool parse_u64(const char* s, uint64_t* out) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (end == s || *end != '\0' || s[0] == '-') return false;
  *out = v;
  return true;
}

const char* code_key(StatusCode c) {
  switch (c) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid_argument";
    case StatusCode::kInvalidModel: return "invalid_model";
    case StatusCode::kUnsupported: return "unsupported";
    case StatusCode::kVersionMismatch: return "version_mismatch";
    case StatusCode::kIOError: return "io_error";
    case StatusCode::kInternal: return "internal";
  }
  return "unknown";
}
constexpr int kNumCodes = static_cast<int>(StatusCode::kInternal) + 1;

struct Counts {
  uint64_t total = 0, ran = 0, too_large = 0, crashes = 0;
  uint64_t at_load[kNumCodes] = {}, at_run[kNumCodes] = {};
  uint64_t kind_refused[64] = {}, kind_ran[64] = {};  // per mutation kind (mutator.h), inputs it took part in

  void add(const Outcome& o, uint64_t kinds) {
    ++total;
    if (o.stage == Stage::kRan) ++ran;
    if (o.stage == Stage::kInputsTooLarge) ++too_large;
    if (o.stage == Stage::kRejectedAtLoad) ++at_load[static_cast<int>(o.code)];
    if (o.stage == Stage::kRejectedAtRun) ++at_run[static_cast<int>(o.code)];
    for (int k = 0; k < dtorch::fuzz::num_kinds(); ++k) {
      if (!(kinds >> k & 1)) continue;
      if (o.stage == Stage::kRan) ++kind_ran[k];
      if (o.stage == Stage::kRejectedAtLoad || o.stage == Stage::kRejectedAtRun) ++kind_refused[k];
    }
  }
  // "truncate=812/3 ... dtype=140/2 ...": refused/ran for each kind.
  std::string by_kind() const {
    std::string s;
    for (int k = 0; k < dtorch::fuzz::num_kinds(); ++k)
      s += std::string(s.empty() ? "" : " ") + dtorch::fuzz::kind_name(k) + "=" + std::to_string(kind_refused[k]) + "/" +
           std::to_string(kind_ran[k]);
    return s;
  }
  uint64_t rejected() const { return total - ran - too_large - crashes; }
  std::string by_code(const uint64_t* counts) const {
    std::string s;
    for (int c = 0; c < kNumCodes; ++c)
      if (counts[c] != 0)
        s += std::string(s.empty() ? "" : " ") + code_key(static_cast<StatusCode>(c)) + "=" + std::to_string(counts[c]);
    return s.empty() ? "none" : s;
  }
};

// Runs one input with the crash handlers pointed at it.
Outcome run_input(const std::vector<uint8_t>& bytes, const std::string& path, const std::string& what,
                  unsigned timeout_s) {
  g_data = bytes.data();
  g_size = bytes.size();
  std::snprintf(g_path, sizeof(g_path), "%s", path.c_str());
  std::snprintf(g_what, sizeof(g_what), "%s", what.c_str());
  if (timeout_s > 0) ::alarm(timeout_s);
  // An exactly-sized heap copy, so the sanitizer sees any read past the end of the file.
  const std::vector<uint8_t> copy(bytes);
  const Outcome o = dtorch::fuzz::fuzz_one(copy.data(), copy.size());
  if (timeout_s > 0) ::alarm(0);
  g_data = nullptr;
  return o;
}

// --fork: the child runs the input and exits with 64 + stage * 8 + code; anything else is a crash.
bool run_forked(const std::vector<uint8_t>& bytes, const std::string& path, const std::string& what,
                unsigned timeout_s, Outcome* o) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const Outcome r = run_input(bytes, path, what, timeout_s);
    ::_exit(64 + static_cast<int>(r.stage) * 8 + static_cast<int>(r.code));
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return false;
  const int e = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (e < 64 || e >= 64 + 4 * 8) {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                static_cast<std::streamsize>(bytes.size()));
    std::fprintf(stderr, "fuzz-smoke: crash (%s %d) on %s; saved as %s\n", WIFEXITED(status) ? "exit" : "signal",
                 WIFEXITED(status) ? e : WTERMSIG(status), what.c_str(), path.c_str());
    return false;
  }
  o->stage = static_cast<Stage>((e - 64) / 8);
  o->code = static_cast<StatusCode>((e - 64) % 8);
  return true;
}

int replay(const std::vector<std::string>& files, unsigned timeout_s) {
  for (const std::string& f : files) {
    std::vector<uint8_t> bytes;
    if (!read_file(f, &bytes)) {
      std::fprintf(stderr, "fuzz-smoke: error: cannot read '%s'\n", f.c_str());
      return 2;
    }
    const Outcome o = run_input(bytes, "", "replay of " + f, timeout_s);  // the file is already saved
    std::printf("%s: %s%s%s%s\n", f.c_str(), dtorch::fuzz::stage_name(o.stage), o.code == StatusCode::kOk ? "" : " (",
                o.code == StatusCode::kOk ? "" : dtorch::status_code_name(o.code), o.code == StatusCode::kOk ? "" : ")");
    if (!o.message.empty()) std::printf("  %s\n", o.message.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t iterations = 1000, seed = 1, max_seconds = 0, timeout_s = 10, only = 0;
  bool have_only = false, replay_mode = false, fork_mode = false, verbose = false, keep = false;
  std::string crash_dir = ".";
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--replay") {
      replay_mode = true;
    } else if (a == "--fork") {
      fork_mode = true;
    } else if (a == "--verbose") {
      verbose = true;
    } else if (a == "--keep") {
      keep = true;
    } else if (a == "--iterations" && has_value && parse_u64(argv[i + 1], &iterations)) {
      ++i;
    } else if (a == "--seed" && has_value && parse_u64(argv[i + 1], &seed)) {
      ++i;
    } else if (a == "--max-seconds" && has_value && parse_u64(argv[i + 1], &max_seconds)) {
      ++i;
    } else if (a == "--timeout" && has_value && parse_u64(argv[i + 1], &timeout_s)) {
      ++i;
    } else if (a == "--only" && has_value && parse_u64(argv[i + 1], &only)) {
      have_only = true;
      ++i;
    } else if (a == "--crash-dir" && has_value) {
      crash_dir = argv[++i];
    } else if (a == "-h" || a == "--help") {
      std::printf("%s\n", kUsage);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "fuzz-smoke: error: bad option or value '%s'\n%s\n", a.c_str(), kUsage);
      return 2;
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "fuzz-smoke: error: no input files\n%s\n", kUsage);
    return 2;
  }
  if (timeout_s > 3600) timeout_s = 3600;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_timeout;
  sigaction(SIGALRM, &sa, nullptr);
  sa.sa_handler = on_abort;
  sigaction(SIGABRT, &sa, nullptr);
#ifdef DTORCH_HAVE_SANITIZER_API
  __sanitizer_set_death_callback(save_current_input);
#endif
  if (replay_mode) return replay(files, static_cast<unsigned>(timeout_s));

  // Seeds: each must be a valid model that loads and runs, or the mutations prove nothing.
  std::vector<dtorch::fuzz::Seed> seeds(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    std::vector<uint8_t> bytes;
    std::string error;
    if (!read_file(files[i], &bytes)) {
      std::fprintf(stderr, "fuzz-smoke: error: cannot read seed '%s'\n", files[i].c_str());
      return 2;
    }
    const Outcome o = run_input(bytes, crash_dir + "/seed-failure.dtm", "seed " + files[i],
                                static_cast<unsigned>(timeout_s));
    if (o.stage != Stage::kRan) {
      std::fprintf(stderr, "fuzz-smoke: error: seed '%s' does not load and run (%s: %s); seeds must be valid models\n",
                   files[i].c_str(), dtorch::fuzz::stage_name(o.stage), o.message.c_str());
      return 1;
    }
    if (!dtorch::fuzz::make_seed(files[i], std::move(bytes), &seeds[i], &error)) {
      std::fprintf(stderr, "fuzz-smoke: error: %s\n", error.c_str());
      return 1;
    }
  }

  Counts counts;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  std::vector<uint8_t> input;
  std::string what;
  for (uint64_t it = have_only ? only : 0; it < (have_only ? only + 1 : iterations); ++it) {
    if (max_seconds > 0 && elapsed() >= static_cast<double>(max_seconds)) break;
    dtorch::fuzz::Rng rng(seed * 0x100000001B3ull ^ (it + 1) * 0x9E3779B97F4A7C15ull);
    const dtorch::fuzz::Seed& s = seeds[rng.below(seeds.size())];
    uint64_t kinds = 0;
    dtorch::fuzz::mutate(s, &rng, &input, &what, &kinds);
    const std::string tag = "seed " + std::to_string(seed) + " iteration " + std::to_string(it);
    const std::string path = crash_dir + "/crash-s" + std::to_string(seed) + "-i" + std::to_string(it) + ".dtm";
    if (keep)
      std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(input.data()),
                                                  static_cast<std::streamsize>(input.size()));
    Outcome o;
    if (!fork_mode) {
      o = run_input(input, path, tag + ": " + s.name + ": " + what, static_cast<unsigned>(timeout_s));
    } else if (!run_forked(input, path, tag + ": " + s.name + ": " + what, static_cast<unsigned>(timeout_s), &o)) {
      ++counts.total;
      ++counts.crashes;
      continue;
    }
    counts.add(o, kinds);
    if (have_only || verbose)
      std::printf("%s: %s: %s: %s%s%s\n", tag.c_str(), s.name.c_str(), what.c_str(), dtorch::fuzz::stage_name(o.stage),
                  o.message.empty() ? "" : ": ", o.message.c_str());
  }
  std::printf("fuzz-smoke: %llu mutations of %zu seeds (seed %llu, %.1f s): ran=%llu rejected=%llu too_large=%llu | "
              "load: %s | run: %s | %s\n",
              static_cast<unsigned long long>(counts.total), seeds.size(), static_cast<unsigned long long>(seed),
              elapsed(), static_cast<unsigned long long>(counts.ran), static_cast<unsigned long long>(counts.rejected()),
              static_cast<unsigned long long>(counts.too_large), counts.by_code(counts.at_load).c_str(),
              counts.by_code(counts.at_run).c_str(),
              counts.crashes ? ("crashes=" + std::to_string(counts.crashes)).c_str() : "no sanitizer reports");
  std::printf("fuzz-smoke: by kind (refused/ran): %s\n", counts.by_kind().c_str());
  return counts.crashes ? 3 : 0;
}
