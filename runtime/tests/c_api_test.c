/* c-api-test MODEL.dtm OUT_PREFIX: the C API (dtorch/dtorch.h) from plain C, as firmware or another language calls
 * it. Sizes the arena the way a caller without the number would (a NULL arena, then the lower bound, then the
 * exact figure), loads the model, runs its bundled test vector, writes each output's raw bytes to OUT_PREFIX<k>.bin
 * (tests/runtime/test_c_api.py compares them with the Session's bits) and prints one JSON line with the figures.
 * Then walks the error paths a caller can hit; exit 0 only when every step behaved as documented. Only this test
 * program reads files and allocates; the runtime does neither. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtorch/dtorch.h"

static int fails = 0;

static void expect(int cond, const char* what, const dtorch_error* err) {
  if (!cond) {
    fprintf(stderr, "c-api-test: FAIL: %s (%s: %s)\n", what, err ? dtorch_code_name(err->code) : "-",
            err ? err->message : "-");
    ++fails;
  }
}

static void* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void* p = n > 0 ? aligned_alloc(64, ((size_t)n + 63) / 64 * 64) : NULL;
  if (p == NULL || fread(p, 1, (size_t)n, f) != (size_t)n) {
    fclose(f);
    free(p);
    return NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return p;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: c-api-test MODEL.dtm OUT_PREFIX\n");
    return 2;
  }
  size_t size = 0;
  void* bytes = read_file(argv[1], &size);
  if (bytes == NULL) {
    fprintf(stderr, "c-api-test: cannot read %s\n", argv[1]);
    return 2;
  }
  dtorch_error err;
  dtorch_model* model = NULL;
  size_t bound = 0, exact = 0;
  int rc = dtorch_model_load(bytes, size, NULL, 0, &model, &bound, &err);
  expect(rc == DTORCH_INVALID_ARGUMENT && bound > 0 && model == NULL, "a NULL arena reports a lower bound", &err);
  /* Each too small arena answers a larger size, exact once the arena holds the model's tables (two steps at most). */
  size_t want = bound;
  int tries = 0;
  for (; tries < 3; ++tries) {
    unsigned char* probe = aligned_alloc(64, (want + 63) / 64 * 64);
    size_t next = 0;
    rc = dtorch_model_load(bytes, size, probe, want, &model, &next, &err);
    free(probe);
    if (rc == DTORCH_OK) break;
    expect(rc == DTORCH_INVALID_ARGUMENT && next > want && strstr(err.message, "needs ") != NULL,
           "a too small arena answers a larger size", &err);
    if (next <= want) break;
    want = next;
  }
  expect(rc == DTORCH_OK && tries <= 2, "the answered size loads within two steps", &err);
  exact = want;
  unsigned char* arena = aligned_alloc(64, (exact + 63) / 64 * 64 + 64);
  size_t again = 0;
  rc = dtorch_model_load(bytes, size, arena, exact - 1, &model, &again, &err);
  expect(rc == DTORCH_INVALID_ARGUMENT && again == exact, "one byte short fails and says the same size", &err);
  rc = dtorch_model_load(bytes, size, arena, exact, &model, &again, &err);
  expect(rc == DTORCH_OK && model != NULL && dtorch_arena_size(model) == exact, "the exact arena loads", &err);
  if (rc != DTORCH_OK) return 1;

  const size_t n_in = dtorch_num_inputs(model), n_out = dtorch_num_outputs(model);
  const void* inputs[16];
  for (size_t i = 0; i < n_in && i < 16; ++i) inputs[i] = dtorch_test_input(model, i);
  expect(n_in > 0 && n_in <= 16 && inputs[0] != NULL, "the model bundles a test vector", NULL);
  rc = dtorch_run(model, inputs, n_in, &err);
  expect(rc == DTORCH_OK, "the test vector runs", &err);
  printf("{\"arena_bytes\": %zu, \"lower_bound\": %zu, \"inputs\": %zu, \"outputs\": %zu", exact, bound, n_in, n_out);
  for (size_t k = 0; k < n_out && rc == DTORCH_OK; ++k) {
    dtorch_tensor_info info;
    expect(dtorch_output_info(model, k, &info, &err) == DTORCH_OK, "output info", &err);
    char path[4096];
    snprintf(path, sizeof(path), "%s%zu.bin", argv[2], k);
    FILE* f = fopen(path, "wb");
    const void* out = dtorch_output(model, k);
    expect(f != NULL && out != NULL && fwrite(out, 1, info.bytes, f) == info.bytes, "write the output", NULL);
    if (f) fclose(f);
    printf(", \"output%zu\": {\"name\": \"%s\", \"dtype\": %d, \"ndim\": %d, \"bytes\": %zu}", k, info.name, info.dtype,
           info.ndim, info.bytes);
  }
  printf("}\n");

  /* Error paths: each returns its code and a message, and changes nothing. */
  rc = dtorch_run(model, inputs, n_in + 1, &err);
  expect(rc == DTORCH_INVALID_ARGUMENT && strstr(err.message, "input(s) but") != NULL, "wrong input count", &err);
  const void* none[16] = {0};
  rc = dtorch_run(model, none, n_in, &err);
  expect(rc == DTORCH_INVALID_ARGUMENT && strstr(err.message, "no data") != NULL, "a NULL input", &err);
  expect(dtorch_output(model, 0) == NULL, "no output after a failed run", NULL);
  dtorch_tensor_info info;
  rc = dtorch_input_info(model, n_in, &info, &err);
  expect(rc == DTORCH_INVALID_ARGUMENT && strstr(err.message, "no input") != NULL, "input index out of range", &err);
  dtorch_model* other = NULL;
  rc = dtorch_model_load(bytes, size, arena + 8, exact, &other, NULL, &err);
  expect(rc == DTORCH_INVALID_ARGUMENT && strstr(err.message, "64-byte aligned") != NULL, "a misaligned arena", &err);
  rc = dtorch_model_load((const char*)bytes + 64, size - 64, arena, exact, &other, NULL, &err);
  expect(rc == DTORCH_INVALID_MODEL && other == NULL, "bytes that are not a model", &err);
  expect(strcmp(dtorch_code_name(DTORCH_UNSUPPORTED), "unsupported") == 0 && strcmp(dtorch_code_name(99), "unknown") == 0,
         "code names", NULL);
  rc = dtorch_run(model, inputs, n_in, NULL); /* err may be NULL */
  expect(rc == DTORCH_OK && dtorch_output(model, 0) != NULL, "a second run (err NULL)", NULL);
  free(arena);
  free(bytes);
  return fails == 0 ? 0 : 1;
}
