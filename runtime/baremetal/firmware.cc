// The firmware of a bare-metal board build: the model's bytes in flash (model_data.c, generated from the .dtm by
// dtorch-edge build), one static arena sized for it, and a main that loads the model through the C API, runs its
// bundled test vector `runs` times (the semihosting command line's last word, default 1) and prints one JSON line
// on the semihosting console: the outputs' bytes in hex, whether they are the bundled expected bits, the arena
// used. dtorch-edge emulate compares those bits with the host's portable kernels.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "baremetal/semihosting.h"
#include "dtorch/dtorch.h"
#include "dtorch/format.h"
#include "firmware_config.h"  // DTORCH_ARENA_BYTES (generated)

extern "C" {
extern const unsigned char dtorch_model_data[];
extern const unsigned int dtorch_model_size;
}

namespace {

namespace sh = dtorch::semihosting;

alignas(64) unsigned char g_arena[DTORCH_ARENA_BYTES];

// Console output in pieces through one small buffer.
struct Console {
  char buf[256];
  size_t n = 0;
  void flush() {
    buf[n] = '\0';
    if (n > 0) sh::write(buf);
    n = 0;
  }
  void put(const char* s) {
    for (; *s != '\0'; ++s) {
      if (n + 1 >= sizeof(buf)) flush();
      buf[n++] = *s;
    }
  }
  template <typename... A>
  void printf(const char* fmt, A... args) {
    char tmp[160];
    dtorch::format(tmp, sizeof(tmp), fmt, args...);
    put(tmp);
  }
};

int runs_from_cmdline() {
  char cmd[80];
  if (!sh::cmdline(cmd, sizeof(cmd))) return 1;
  const char* last = cmd;
  for (const char* p = cmd; *p != '\0'; ++p)
    if (*p == ' ' && p[1] != '\0' && p[1] != ' ') last = p + 1;
  int runs = 0;
  for (const char* p = last; *p >= '0' && *p <= '9'; ++p) runs = runs * 10 + (*p - '0');
  return runs > 0 ? runs : 1;
}

[[noreturn]] void fail(Console& out, const char* what, const dtorch_error& err, size_t needed) {
  out.printf("{\"ok\": false, \"stage\": \"%s\", \"code\": \"%s\", \"needed\": %u, \"arena_bytes\": %u, \"error\": \"", what,
             dtorch_code_name(err.code), static_cast<unsigned>(needed), static_cast<unsigned>(sizeof(g_arena)));
  for (const char* p = err.message; *p != '\0'; ++p) {
    const char c[2] = {*p == '"' || *p == '\\' ? '\'' : *p, '\0'};
    out.put(c);
  }
  out.put("\"}\n");
  out.flush();
  sh::exit(false);
}

}  // namespace

int main() {
  Console out;
  dtorch_error err;
  dtorch_model* model = nullptr;
  size_t needed = 0;
  if (dtorch_model_load(dtorch_model_data, dtorch_model_size, g_arena, sizeof(g_arena), &model, &needed, &err) != 0)
    fail(out, "load", err, needed);
  const size_t n_in = dtorch_num_inputs(model), n_out = dtorch_num_outputs(model);
  const void* inputs[16];
  if (n_in > 16) {
    err.code = DTORCH_UNSUPPORTED;
    std::strcpy(err.message, "the firmware feeds at most 16 inputs");
    fail(out, "inputs", err, 0);
  }
  for (size_t i = 0; i < n_in; ++i) {
    inputs[i] = dtorch_test_input(model, i);
    if (inputs[i] == nullptr) {
      err.code = DTORCH_INVALID_ARGUMENT;
      std::strcpy(err.message, "the model bundles no test vector at the shapes it runs at; export with "
                               "bundle_example=True");
      fail(out, "inputs", err, 0);
    }
  }
  const int runs = runs_from_cmdline();
  for (int r = 0; r < runs; ++r)
    if (dtorch_run(model, inputs, n_in, &err) != 0) fail(out, "run", err, 0);

  out.printf("{\"ok\": true, \"runs\": %d, \"arena_bytes\": %u, \"arena_used\": %u, \"outputs\": [", runs,
             static_cast<unsigned>(sizeof(g_arena)), static_cast<unsigned>(dtorch_arena_size(model)));
  for (size_t k = 0; k < n_out; ++k) {
    dtorch_tensor_info info;
    dtorch_output_info(model, k, &info, &err);
    const unsigned char* got = static_cast<const unsigned char*>(dtorch_output(model, k));
    const void* want = dtorch_test_output(model, k);
    const bool same = want != nullptr && std::memcmp(got, want, info.bytes) == 0;
    out.printf("%s{\"dtype\": %d, \"bytes\": %u, \"expected_bits\": %s, \"hex\": \"", k ? ", " : "", info.dtype,
               static_cast<unsigned>(info.bytes), same ? "true" : "false");
    for (size_t b = 0; b < info.bytes; ++b) out.printf("%02x", got[b]);
    out.put("\"}");
  }
  out.put("]}\n");
  out.flush();
  sh::exit(true);
}
