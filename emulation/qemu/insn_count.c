/*
 * insn_count: a QEMU TCG plugin that counts the guest instructions a program executes.
 *
 *   qemu-aarch64 -plugin build/plugins/insn_count.so,outfile=count.txt PROGRAM ARGS...
 *
 * At exit it writes the count (a decimal number and a newline) to `outfile`, or to stderr without one. Counting is
 * inline (QEMU adds each translated block's instruction count to one 64-bit counter as the block executes), so the
 * figure is deterministic for a deterministic single-threaded guest: the same binary, arguments, environment and
 * inputs give the same count, unlike wall time under emulation. Guests with several threads share the counter
 * without atomics; dtorch-edge counts single-threaded runs only.
 *
 * QEMU ships no plugin header in Debian; the plugin API is a small stable C ABI, declared below as QEMU 7.2's
 * qemu-plugin.h (QEMU_PLUGIN_VERSION 1) defines it. Built by dtorch.edge.emulate.plugin with the host C compiler.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t; /* only passed through */
struct qemu_plugin_tb;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op, void *ptr,
                                              uint64_t imm);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);

#define EXPORT __attribute__((visibility("default")))

EXPORT int qemu_plugin_version = 1;

static uint64_t insn_count;
static char outfile[4096];

static void on_tb_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &insn_count,
                                           (uint64_t)qemu_plugin_tb_n_insns(tb));
}

static void write_count(qemu_plugin_id_t id, void *userdata) {
  (void)id;
  (void)userdata;
  FILE *f = outfile[0] != '\0' ? fopen(outfile, "w") : NULL;
  fprintf(f != NULL ? f : stderr, "%llu\n", (unsigned long long)insn_count);
  if (f != NULL) fclose(f);
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
  (void)info;
  for (int i = 0; i < argc; ++i) {
    if (strncmp(argv[i], "outfile=", 8) == 0) {
      snprintf(outfile, sizeof(outfile), "%s", argv[i] + 8);
    } else {
      fprintf(stderr, "insn_count: unknown argument '%s' (the plugin takes outfile=PATH)\n", argv[i]);
      return -1;
    }
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_translate);
  qemu_plugin_register_atexit_cb(id, write_count, NULL);
  return 0;
}
