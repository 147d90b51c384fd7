// agent-fuzz: a deterministic fuzzer of dtorch-agent's line input (frame decoder, payload parsers, command dispatch,
// bundle.txt parser, store), built with AddressSanitizer + UndefinedBehaviorSanitizer by `scons asan=1 agent-fuzz`.
//
//   agent-fuzz [--iterations N] [--seed S] [--max-seconds T] STORE_DIR
//
// Each iteration writes a burst of byte strings to one Agent: valid frames of every request type with payloads made
// from templates (PUT_BEGIN with hostile names and sizes, PUT_DATA at random offsets, VERIFY, bundle.txt files with
// mutated lines then ACTIVATE, GET and LOG with huge numbers, unknown types), some of them corrupted after encoding
// (bit flips, truncations, inserted zero bytes, runs longer than any frame), all fed in random chunk sizes. After
// every burst the agent's output must decode to valid frames only, no more answers than valid requests, and the
// store folder must hold nothing but its own names (blobs/<sha256>, incoming/<sha256>.part, STATE, log).
//
// Exit status: 0 every input handled (a summary line on stdout), 1 a check failed (what and which iteration),
// 2 a usage error; sanitizer reports exit with the sanitizer's exit code.
#include <dirent.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "apps/agent/agent.h"
#include "apps/agent/crypto.h"
#include "apps/agent/frame.h"
#include "apps/agent/store.h"
#include "fuzz/mutator.h"

extern "C" const char* __ubsan_default_options() { return "print_stacktrace=1:halt_on_error=1:abort_on_error=1"; }

using namespace dtorch;
using namespace dtorch::agent;
using dtorch::fuzz::Rng;

namespace {

const char kUsage[] = "usage: agent-fuzz [--iterations N] [--seed S] [--max-seconds T] STORE_DIR";

std::string hex64(Rng& rng) {
  static const char kHex[] = "0123456789abcdef";
  std::string s(64, '0');
  for (char& c : s) c = kHex[rng.below(16)];
  return s;
}

const char* const kNames[] = {"model.dtm", "../x", "a/b", "..", "x\x01y", "bundle.txt", "", "x.npy",
                              "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"
                              "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"};
const char* const kNumbers[] = {"0", "1", "4096", "4097", "1073741824", "1073741825", "18446744073709551615",
                                "18446744073709551616", "-1", "", "x", "99999999999999999999999999"};

// The fuzzer's picture of the store: a few blobs it sent (so ACTIVATE, RUN and GET can name real ones).
struct Known {
  std::vector<std::string> shas;
  std::string pick(Rng& rng) { return shas.empty() || rng.one_in(3) ? hex64(rng) : shas[rng.below(shas.size())]; }
};

std::string bundle_text(Rng& rng, Known& known) {
  std::string t = rng.one_in(8) ? "dtorch-bundle 2\n" : "dtorch-bundle 1\n";
  const char* const keys[] = {"board host", "runtime_hash dev", "opset_hash dev", "runtime_version 0.1.0",
                              "model model.dtm", "board rk3588", "model ../m", "signature 00", "model"};
  for (int i = 0, n = static_cast<int>(rng.below(8)); i < n; ++i) t += std::string(keys[rng.below(9)]) + "\n";
  for (int i = 0, n = static_cast<int>(rng.below(3)); i < n; ++i)
    t += std::string("file ") + kNames[rng.below(9)] + " " + known.pick(rng) + " " + kNumbers[rng.below(12)] + "\n";
  if (rng.one_in(4)) t.pop_back();  // a last line without its newline
  return t;
}

std::string kv(const char* k, const std::string& v) { return std::string(k) + "=" + v + "\n"; }

// One request: its frame's type and payload.
void make_request(Rng& rng, Known& known, uint8_t* type, std::string* payload) {
  switch (rng.below(13)) {
    case 0: *type = kHello; break;
    case 1: {
      *type = kPutBegin;
      *payload = kv("name", kNames[rng.below(9)]) + kv("sha256", known.pick(rng)) + kv("size", kNumbers[rng.below(12)]);
      break;
    }
    case 2: {  // a whole small blob: PUT_BEGIN, PUT_DATA, VERIFY come as three requests in a row (see below)
      *type = kPutData;
      std::string data(8, '\0');
      const uint64_t off = rng.one_in(2) ? rng.below(8192) : rng.next();
      store_u64(reinterpret_cast<uint8_t*>(&data[0]), off);
      data += std::string(rng.below(kMaxPayload - 8 + 1), static_cast<char>(rng.below(256)));
      *payload = data;
      break;
    }
    case 3: *type = kVerify; *payload = kv("sha256", known.pick(rng)); break;
    case 4: *type = kActivate; *payload = kv("bundle", known.pick(rng)); break;
    case 5: *type = kRun; *payload = kv("input0", known.pick(rng)) + kv("bench", kNumbers[rng.below(12)]); break;
    case 6: *type = kSelfTest; break;
    case 7: *type = kStatus; break;
    case 8: *type = kRollback; break;
    case 9: *type = kLog; *payload = kv("last", kNumbers[rng.below(12)]); break;
    case 10:
      *type = kGet;
      *payload = kv("sha256", known.pick(rng)) + kv("offset", kNumbers[rng.below(12)]) +
                 kv("length", kNumbers[rng.below(12)]);
      break;
    case 11: *type = static_cast<uint8_t>(rng.below(256)); break;
    default: {  // raw junk as a payload of any type
      *type = static_cast<uint8_t>(1 + rng.below(11));
      payload->resize(rng.below(kMaxPayload + 1));
      for (char& c : *payload) c = static_cast<char>(rng.below(256));
    }
  }
}

// The frames (and corruptions) of one burst.
std::vector<std::vector<uint8_t>> burst(Rng& rng, Known& known, size_t* valid) {
  std::vector<std::vector<uint8_t>> out;
  const int n = 1 + static_cast<int>(rng.below(6));
  for (int i = 0; i < n; ++i) {
    std::vector<uint8_t> f;
    const uint32_t seq = static_cast<uint32_t>(rng.below(16));
    if (rng.one_in(5)) {  // a blob sent whole: PUT_BEGIN, PUT_DATA at 0, VERIFY
      std::string data = rng.one_in(2) ? bundle_text(rng, known) : std::string(rng.below(5000), 'x');
      if (data.size() > kMaxPayload - 8) data.resize(kMaxPayload - 8);
      const std::string sha = sha256_hex(data.data(), data.size());
      known.shas.push_back(sha);
      if (known.shas.size() > 32) known.shas.erase(known.shas.begin());
      const std::string begin = kv("name", "f") + kv("sha256", sha) + kv("size", std::to_string(data.size()));
      encode_frame(kPutBegin, seq, reinterpret_cast<const uint8_t*>(begin.data()), begin.size(), &f);
      std::string put(8, '\0');
      put += data;
      encode_frame(kPutData, seq + 1, reinterpret_cast<const uint8_t*>(put.data()), put.size(), &f);
      const std::string ver = kv("sha256", sha);
      encode_frame(kVerify, seq + 2, reinterpret_cast<const uint8_t*>(ver.data()), ver.size(), &f);
      *valid += 3;
      out.push_back(f);
      continue;
    }
    uint8_t type = 0;
    std::string payload;
    make_request(rng, known, &type, &payload);
    if (payload.size() > kMaxPayload) payload.resize(kMaxPayload);
    encode_frame(type, seq, reinterpret_cast<const uint8_t*>(payload.data()), payload.size(), &f);
    if (rng.one_in(3)) {  // corrupt it on the line; it may or may not still be a frame
      switch (rng.below(5)) {
        case 0: f[rng.below(f.size())] ^= static_cast<uint8_t>(1u << rng.below(8)); break;
        case 1: f.resize(rng.below(f.size())); break;
        case 2: f.insert(f.begin() + static_cast<std::ptrdiff_t>(rng.below(f.size())), 0); break;
        case 3: f.insert(f.begin(), rng.below(3 * kMaxEncoded), static_cast<uint8_t>(1 + rng.below(255))); break;
        default: f[rng.below(f.size())] = static_cast<uint8_t>(rng.below(256));
      }
      *valid += 1;  // at most one frame each (an upper bound for the check)
    } else {
      *valid += 1;
    }
    out.push_back(f);
  }
  return out;
}

bool only_store_names(const std::string& dir, std::string* bad) {
  auto list = [](const std::string& d) {
    std::vector<std::string> names;
    if (DIR* h = ::opendir(d.c_str())) {
      while (const dirent* e = ::readdir(h))
        if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.push_back(e->d_name);
      ::closedir(h);
    }
    return names;
  };
  for (const std::string& n : list(dir))
    if (n != "blobs" && n != "incoming" && n != "STATE" && n != "log") return *bad = dir + "/" + n, false;
  for (const std::string& n : list(dir + "/blobs"))
    if (!is_sha256(n)) return *bad = dir + "/blobs/" + n, false;
  for (const std::string& n : list(dir + "/incoming"))
    if (!(n.size() == 69 && is_sha256(n.substr(0, 64)) && n.substr(64) == ".part")) return *bad = n, false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t iterations = 20000, seed = 1;
  double max_seconds = 60;
  std::string dir;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if ((arg == "--iterations" || arg == "--seed" || arg == "--max-seconds") && a + 1 < argc) {
      const char* v = argv[++a];
      if (arg == "--iterations") iterations = std::strtoull(v, nullptr, 10);
      else if (arg == "--seed") seed = std::strtoull(v, nullptr, 10);
      else max_seconds = std::strtod(v, nullptr);
    } else if (!arg.empty() && arg[0] != '-' && dir.empty()) {
      dir = arg;
    } else {
      std::fprintf(stderr, "%s\n", kUsage);
      return 2;
    }
  }
  if (dir.empty()) {
    std::fprintf(stderr, "%s\n", kUsage);
    return 2;
  }
  Store store;
  Status st = store.open(dir, 1 << 20, bundle_blobs);
  if (!st.ok()) {
    std::fprintf(stderr, "agent-fuzz: %s\n", st.message());
    return 2;
  }
  Agent agent(&store, {});
  agent.start();
  Rng rng(seed);
  Known known;
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t done = 0, answers = 0, bytes = 0;
  for (; done < iterations; ++done) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > max_seconds) break;
    size_t valid = 0;
    std::vector<uint8_t> out;
    for (const std::vector<uint8_t>& f : burst(rng, known, &valid)) {
      for (size_t i = 0; i < f.size();) {  // random chunk sizes, as a line delivers them
        const size_t n = std::min(f.size() - i, static_cast<size_t>(1 + rng.below(700)));
        agent.feed(f.data() + i, n, &out);
        i += n;
        bytes += n;
      }
    }
    if (rng.one_in(50)) agent.new_connection();
    Decoder check;
    Frame fr;
    size_t frames = 0;
    for (const uint8_t b : out) {
      const Decoder::Result r = check.push(b, &fr);
      if (r == Decoder::kDropped) {
        std::fprintf(stderr, "agent-fuzz: iteration %llu (seed %llu): the agent wrote a frame that does not decode\n",
                     static_cast<unsigned long long>(done), static_cast<unsigned long long>(seed));
        return 1;
      }
      if (r == Decoder::kFrame) {
        ++frames;
        if (fr.type != kOk && fr.type != kError && fr.type != kAck) {
          std::fprintf(stderr, "agent-fuzz: iteration %llu: a response of type 0x%02x\n",
                       static_cast<unsigned long long>(done), fr.type);
          return 1;
        }
      }
    }
    if (frames > valid) {
      std::fprintf(stderr, "agent-fuzz: iteration %llu: %zu answers to at most %zu requests\n",
                   static_cast<unsigned long long>(done), frames, valid);
      return 1;
    }
    answers += frames;
    std::string bad;
    if (!only_store_names(dir, &bad)) {
      std::fprintf(stderr, "agent-fuzz: iteration %llu: the store holds '%s'\n", static_cast<unsigned long long>(done),
                   bad.c_str());
      return 1;
    }
  }
  std::printf("agent-fuzz: %llu bursts, %llu bytes, %llu answers (seed %llu)\n", static_cast<unsigned long long>(done),
              static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(answers),
              static_cast<unsigned long long>(seed));
  return 0;
}
