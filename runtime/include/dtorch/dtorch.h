/* The DTorch C API: load a .dtm model into one caller-given arena and run it, with no heap, no threads and no
 * file I/O (microcontrollers, DSPs, other languages). The C++ Session (dtorch/runtime.h) is the hosted layer over
 * the same loader, kernels and per-node execution.
 *
 * Ownership: the caller owns the model bytes and the arena; both must outlive the dtorch_model, which lives inside
 * the arena. The model bytes are used in place (weights included), so they may sit in flash or a memory map; they
 * must start at a 64-byte aligned address. Nothing is allocated, ever: everything the model needs -- the loader's
 * tables, every tensor of the file's memory plan, kernel scratch, prepared weights and the outputs -- is laid out
 * in the arena by dtorch_model_load.
 *
 * Shapes: a model runs at fixed shapes, those its file was exported with: its bundled test vector's when it has one
 * (so firmware can check itself against it), else its example input shapes (for which the file's memory plan was
 * made), else its declared shapes when none is dynamic. Threads: one call at a time per dtorch_model; kernels run on the caller's thread.
 * Errors: every call returns a dtorch_code (DTORCH_OK = 0) and, when `err` is not NULL, fills it with the code and
 * a one-line message saying what was wrong and what to do. */
#ifndef DTORCH_DTORCH_H_
#define DTORCH_DTORCH_H_

#include <stddef.h>
#include <stdint.h>

#include "dtorch/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Same numbering as dtorch::StatusCode. */
typedef enum dtorch_code {
  DTORCH_OK = 0,
  DTORCH_INVALID_ARGUMENT = 1, /* a caller's input: a too small arena, a null pointer, an index out of range */
  DTORCH_INVALID_MODEL = 2,    /* a corrupt, truncated or inconsistent .dtm file */
  DTORCH_UNSUPPORTED = 3,      /* an operator with no kernel in this build */
  DTORCH_VERSION_MISMATCH = 4, /* a file too new for this runtime */
  DTORCH_IO_ERROR = 5,
  DTORCH_INTERNAL = 6
} dtorch_code;

#ifndef DTORCH_ERROR_MESSAGE_BYTES
#define DTORCH_ERROR_MESSAGE_BYTES 256
#endif

typedef struct dtorch_error {
  int code;                                  /* a dtorch_code */
  char message[DTORCH_ERROR_MESSAGE_BYTES];  /* NUL-terminated; cut to fit (ending in "...") */
} dtorch_error;

/* "ok", "invalid argument", "invalid model", ... (never NULL). */
const char* dtorch_code_name(int code);

/* Same numbering as the .dtm schema's DType. */
typedef enum dtorch_dtype {
  DTORCH_FLOAT32 = 0, DTORCH_FLOAT16 = 1, DTORCH_BFLOAT16 = 2, DTORCH_FLOAT64 = 3, DTORCH_INT64 = 4,
  DTORCH_INT32 = 5, DTORCH_INT16 = 6, DTORCH_INT8 = 7, DTORCH_UINT8 = 8, DTORCH_BOOL = 9
} dtorch_dtype;

#define DTORCH_MAX_DIMS 8

typedef struct dtorch_tensor_info {
  const char* name;  /* in the model bytes; "" when the file gives none */
  int dtype;         /* a dtorch_dtype */
  int ndim;
  int64_t dims[DTORCH_MAX_DIMS];
  size_t bytes;      /* of the data at the shapes the model runs at */
} dtorch_tensor_info;

typedef struct dtorch_model dtorch_model;

/* Checks the model (as strictly as the hosted runtime) and lays it out in `arena` (64-byte aligned). On success *out points into the arena and dtorch_arena_size tells how much of it the model uses. When the
 * arena is too small nothing is kept, the error says how many bytes the model needs, and so does *needed when it
 * is not NULL: exactly, or -- when the arena could not even hold the model's tables -- a lower bound, which a
 * second call with that size makes exact. arena == NULL with arena_bytes == 0 asks only for *needed. */
int dtorch_model_load(const void* model_bytes, size_t model_size, void* arena, size_t arena_bytes, dtorch_model** out,
                      size_t* needed, dtorch_error* err);

/* Bytes of the arena the model uses (its tables, tensors, scratch, prepared weights and outputs). */
size_t dtorch_arena_size(const dtorch_model* model);

size_t dtorch_num_inputs(const dtorch_model* model);
size_t dtorch_num_outputs(const dtorch_model* model);
/* The i-th input's or output's name, dtype and shape (the shapes the model runs at). */
int dtorch_input_info(const dtorch_model* model, size_t i, dtorch_tensor_info* info, dtorch_error* err);
int dtorch_output_info(const dtorch_model* model, size_t i, dtorch_tensor_info* info, dtorch_error* err);

/* Runs the model: inputs[i] points at input i's data (dtorch_input_info: dtype, shape, bytes), read during the
 * call only. The outputs are then in the arena (dtorch_output), valid until the next run. */
int dtorch_run(dtorch_model* model, const void* const* inputs, size_t num_inputs, dtorch_error* err);

/* Output i's data after a successful dtorch_run (NULL for an index out of range). */
const void* dtorch_output(const dtorch_model* model, size_t i);

/* The bundled test vector (dt.export(..., bundle_example=True)): input i's and expected output i's data in the
 * model bytes, or NULL when the model has none or i is out of range. */
const void* dtorch_test_input(const dtorch_model* model, size_t i);
const void* dtorch_test_output(const dtorch_model* model, size_t i);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* DTORCH_DTORCH_H_ */
