// dtorch-agent: the device agent of `dtorch-edge flash` / `dtorch-edge device` (PROTOCOL.md in this folder).
//
//   dtorch-agent --store DIR (--serial DEVICE [--baud N] | --listen 127.0.0.1:PORT | --stdio)
//                [--pubkey FILE] [--max-store-bytes N]
//   dtorch-agent --version
//
// It keeps its models in DIR and serves one host at a time until it is stopped: over a serial line (termios raw
// 8N1), a TCP socket on a loopback address (PORT 0 picks a free port; "listening on ADDR:PORT" goes to stderr once
// it listens; after a disconnect it accepts the next connection with all its state kept), or stdin/stdout (it
// exits at end of input). Diagnostics go to stderr, one line each.
//
// Exit status: 0 at the end of --stdio input, 1 for an error at start (the store, the device, the socket), 2 for a
// usage error.
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "apps/agent/agent.h"
#include "apps/agent/crypto.h"
#include "apps/agent/frame.h"
#include "apps/agent/store.h"
#include "apps/agent/transport.h"
#include "dtorch/format.h"
#include "dtorch/runtime.h"

using namespace dtorch;
using namespace dtorch::agent;

namespace {

const char kUsage[] =
    "usage: dtorch-agent --store DIR (--serial DEVICE [--baud N] | --listen 127.0.0.1:PORT | --stdio) "
    "[--pubkey FILE] [--max-store-bytes N]; dtorch-agent --version";

const char kHelp[] =
    "\n"
    "  --store DIR          the folder that keeps the models (created if missing)\n"
    "  --serial DEVICE      serve a serial line (raw 8N1), e.g. /dev/ttyS0; --baud N sets its rate (115200)\n"
    "  --listen ADDR:PORT   serve TCP on a loopback address (127.0.0.1, [::1]); PORT 0 picks a free port\n"
    "  --stdio              serve stdin/stdout until end of input\n"
    "  --pubkey FILE        activate only bundles signed with this Ed25519 key (32 bytes, raw or 64 hex digits)\n"
    "  --max-store-bytes N  cap the bytes the store may hold (besides the file system's free space); for tests\n"
    "  --version            print the agent, runtime and build versions\n";

int fail(const std::string& msg, int code = 1) {
  std::string line = "dtorch-agent: error: " + msg;
  std::replace(line.begin(), line.end(), '\n', ' ');
  print_to(stderr, "%s\n", line.c_str());
  return code;
}

bool read_small_file(const std::string& path, std::string* out) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  char buf[256];
  const size_t n = std::fread(buf, 1, sizeof(buf), f);
  std::fclose(f);
  out->assign(buf, n);
  return true;
}

// 32 raw bytes, or 64 hex digits (with trailing whitespace).
bool parse_public_key(std::string text, std::vector<uint8_t>* key) {
  key->assign(kEd25519PublicKeyBytes, 0);
  if (text.size() == kEd25519PublicKeyBytes) {
    std::memcpy(key->data(), text.data(), kEd25519PublicKeyBytes);
    return true;
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  return from_hex(text, key->data(), kEd25519PublicKeyBytes);
}

}  // namespace

int main(int argc, char** argv) {
  std::string store_dir, serial, listen, pubkey;
  int baud = 115200;
  bool stdio = false, baud_given = false;
  unsigned long long max_store = 0;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--store" || arg == "--serial" || arg == "--baud" || arg == "--listen" || arg == "--pubkey" ||
        arg == "--max-store-bytes") {
      if (a + 1 >= argc) return fail(arg + " needs a value; " + kUsage, 2);
      const char* v = argv[++a];
      if (arg == "--store") store_dir = v;
      else if (arg == "--serial") serial = v;
      else if (arg == "--listen") listen = v;
      else if (arg == "--pubkey") pubkey = v;
      else if (arg == "--baud") {
        char* end = nullptr;
        const long b = std::strtol(v, &end, 10);
        if (end == v || *end != '\0' || b < 50 || b > 4000000)
          return fail(std::string("--baud needs a line rate such as 115200, got '") + v + "'", 2);
        baud = static_cast<int>(b);
        baud_given = true;
      } else {
        char* end = nullptr;
        max_store = std::strtoull(v, &end, 10);
        if (end == v || *end != '\0' || max_store == 0)
          return fail(std::string("--max-store-bytes needs a positive byte count, got '") + v + "'", 2);
      }
    } else if (arg == "--stdio") {
      stdio = true;
    } else if (arg == "--version") {
      const Identity id = this_build();
      print_to(stdout, "dtorch-agent %s (protocol 1), runtime %s, board %s (%s), runtime hash %s, op set hash %s\n",
               kAgentVersion, kRuntimeVersion, id.board.c_str(), id.arch.c_str(), id.runtime_hash.c_str(),
               id.opset_hash.c_str());
      return 0;
    } else if (arg == "-h" || arg == "--help") {
      print_to(stdout, "%s\n%s", kUsage, kHelp);
      return 0;
    } else {
      return fail("unknown argument '" + arg + "'; " + kUsage, 2);
    }
  }
  const int modes = (serial.empty() ? 0 : 1) + (listen.empty() ? 0 : 1) + (stdio ? 1 : 0);
  if (store_dir.empty()) return fail(std::string("--store DIR is required; ") + kUsage, 2);
  if (modes != 1) return fail(std::string("give exactly one of --serial, --listen, --stdio; ") + kUsage, 2);
  if (baud_given && serial.empty()) return fail("--baud goes with --serial", 2);

  std::vector<uint8_t> key;
  if (!pubkey.empty()) {
    std::string text;
    if (!read_small_file(pubkey, &text)) return fail(sys_error("cannot read the public key", pubkey));
    if (!parse_public_key(text, &key))
      return fail("the public key '" + pubkey + "' is neither 32 raw bytes nor 64 hex digits (an Ed25519 public key)");
  }

  Transport transport;
  Status st;
  std::string bound;
  if (!serial.empty()) st = transport.open_serial(serial, baud);
  else if (!listen.empty()) st = transport.open_listen(listen, &bound);
  else transport.open_stdio();
  if (!st.ok()) return fail(st.message(), st.code() == StatusCode::kInvalidArgument ? 2 : 1);

  ::signal(SIGPIPE, SIG_IGN);  // a host that goes away is a closed connection, not the end of the agent
  Store store;
  st = store.open(store_dir, max_store, bundle_blobs);
  if (!st.ok()) return fail(st.message());
  Agent agent(&store, key);
  agent.start();
  if (!bound.empty()) {
    print_to(stderr, "listening on %s\n", bound.c_str());
    std::fflush(stderr);
  }

  std::vector<uint8_t> buf(16384), out;
  std::string err;
  while (transport.connect(&err)) {
    agent.new_connection();
    for (;;) {
      const size_t n = transport.read(buf.data(), buf.size());
      if (n == 0) break;
      out.clear();
      agent.feed(buf.data(), n, &out);
      if (!out.empty() && !transport.write(out.data(), out.size())) break;
    }
  }
  if (!err.empty()) return fail(err);
  return 0;
}
