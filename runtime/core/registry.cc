// The kernel registry: a list of the KernelEntry objects that DTORCH_REGISTER_KERNEL defines in each kernel's
// file (core/kernel.h), linked at static-initialization time. The entries are constant-initialized and the list's
// two pointers are zero-initialized, all before any dynamic initializer runs, so registration order between
// translation units does not matter; nothing is allocated, and the registry costs no memory beyond the entries of
// the kernels actually built (a pruned board build carries a handful). Each (op, dtype) may have one kernel per
// kernel set, at distinct priorities; find_kernel picks the highest. Registering the same (op, dtype) twice at one
// priority or in one set, or one entry twice, is a build bug: the process stops at start-up with a message.
#include <cstring>

#include "core/kernel.h"
#include "core/platform.h"

namespace dtorch {
namespace {

// Plain zero-initialized pointers, not a function-local static: that would link libc++abi's __cxa_guard_* and,
// through them, std::terminate and the exception runtime.
const KernelEntry* g_first = nullptr;
KernelEntry* g_last = nullptr;

[[noreturn]] void registration_bug(const char* fmt, const KernelDef& def) {
  Text msg;
  format(msg.buf, Text::kBytes, fmt, def.op != nullptr ? def.op : "(null)", dtype_name(def.dtype));
  platform_fatal(msg.c_str());
}

}  // namespace

bool register_kernel(KernelEntry* entry) {
  const KernelDef& def = entry->def;
  if (def.op == nullptr || def.infer == nullptr || def.run == nullptr)
    registration_bug("dtorch: kernel '%s' (%s) is registered with a null op name or function\n", def);
  const KernelArity& a = def.arity;
  if (a.min_inputs < 0 || a.min_inputs > 64 || (a.max_inputs != -1 && (a.max_inputs < a.min_inputs || a.max_inputs > 64)) ||
      a.num_outputs < 1 || a.num_outputs > 64 ||
      (a.max_inputs != -1 && a.max_inputs < 64 && (a.optional_inputs >> a.max_inputs) != 0))
    registration_bug("dtorch: kernel '%s' (%s) is registered with an inconsistent arity\n", def);
  if (def.kernel_set == nullptr)
    registration_bug("dtorch: kernel '%s' (%s) is registered without a kernel set\n", def);
  if (def.schema == nullptr || find_signature(*def.schema, def.dtype) == nullptr)
    registration_bug("dtorch: kernel '%s' (%s) is registered for a dtype its catalogue entry has no signature for "
                     "(add it to the operator's signatures in dtorch/catalogue)\n", def);
  for (const KernelEntry* e = g_first; e != nullptr; e = e->next) {
    if (e == entry) registration_bug("dtorch: kernel '%s' (%s) is registered twice (the same entry)\n", def);
    const KernelDef& o = e->def;
    if (o.dtype != def.dtype || std::strcmp(o.op, def.op) != 0) continue;
    if (o.priority == def.priority || std::strcmp(o.kernel_set, def.kernel_set) == 0) {
      platform_fatal(text("dtorch: kernel '%s' (%s) is registered twice at priority %d (sets '%s' and '%s'); each (op, "
                          "dtype) needs exactly one kernel per kernel set, at distinct priorities\n",
                          def.op, dtype_name(def.dtype), def.priority, o.kernel_set, def.kernel_set).c_str());
    }
  }
  entry->next = nullptr;
  if (g_last == nullptr)
    g_first = entry;
  else
    g_last->next = entry;
  g_last = entry;
  return true;
}

namespace {

bool policy_allows(KernelPolicy policy, const KernelDef& def) {
  switch (policy) {
    case KernelPolicy::kFast: return true;
    case KernelPolicy::kExact: return def.bit_exact;
    case KernelPolicy::kPortable: return def.priority == kPortableKernelRank;
  }
  return false;
}

}  // namespace

const KernelDef* find_kernel(const char* op, DType dtype, KernelPolicy policy) {
  return find_kernel(op, dtype, policy, nullptr, 0);
}

const KernelDef* find_kernel(const char* op, DType dtype, KernelPolicy policy, const char* const* exclude,
                             size_t n_exclude) {
  if (op == nullptr) return nullptr;
  const KernelDef* best = nullptr;
  for (const KernelEntry* e = g_first; e != nullptr; e = e->next) {
    const KernelDef* d = &e->def;
    if (d->dtype != dtype || std::strcmp(d->op, op) != 0 || !policy_allows(policy, *d) ||
        (best != nullptr && d->priority <= best->priority))
      continue;
    bool excluded = false;
    for (size_t i = 0; i < n_exclude && !excluded; ++i) excluded = std::strcmp(d->kernel_set, exclude[i]) == 0;
    if (!excluded) best = d;
  }
  return best;
}

const char* kernel_policy_name(KernelPolicy p) {
  switch (p) {
    case KernelPolicy::kFast: return "fast";
    case KernelPolicy::kExact: return "exact";
    case KernelPolicy::kPortable: return "portable";
  }
  return "?";
}

bool parse_kernel_policy(const char* s, KernelPolicy* out) {
  if (s == nullptr) return false;
  for (KernelPolicy p : {KernelPolicy::kFast, KernelPolicy::kExact, KernelPolicy::kPortable}) {
    if (std::strcmp(s, kernel_policy_name(p)) == 0) {
      *out = p;
      return true;
    }
  }
  return false;
}

const KernelDef* find_kernel_in_set(const char* op, DType dtype, const char* kernel_set) {
  if (op == nullptr || kernel_set == nullptr) return nullptr;
  for (const KernelEntry* e = g_first; e != nullptr; e = e->next) {
    const KernelDef* d = &e->def;
    if (d->dtype == dtype && std::strcmp(d->op, op) == 0 && std::strcmp(d->kernel_set, kernel_set) == 0) return d;
  }
  return nullptr;
}

Status check_kernel_arity(const KernelDef& def, int n_in, uint64_t absent, int n_out) {
  const KernelArity& a = def.arity;
  if (n_in < a.min_inputs || (a.max_inputs >= 0 && n_in > a.max_inputs)) {
    if (a.max_inputs < 0)
      return error_status(StatusCode::kInvalidModel, "operator '%s' takes at least %d input(s) but the node has %d",
                          def.op, a.min_inputs, n_in);
    if (a.max_inputs == a.min_inputs)
      return error_status(StatusCode::kInvalidModel, "operator '%s' takes %d input(s) but the node has %d", def.op,
                          a.min_inputs, n_in);
    return error_status(StatusCode::kInvalidModel, "operator '%s' takes %d to %d input(s) but the node has %d", def.op,
                        a.min_inputs, a.max_inputs, n_in);
  }
  for (int i = 0; i < n_in && i < 64; ++i)
    if (((absent >> i) & 1) != 0 && ((a.optional_inputs >> i) & 1) == 0)
      return error_status(StatusCode::kInvalidModel,
                          "operator '%s' requires input %d, but it is absent (-1); only optional inputs may be left out",
                          def.op, i);
  if (n_out != a.num_outputs)
    return error_status(StatusCode::kInvalidModel, "operator '%s' has %d output(s) but the node lists %d", def.op,
                        a.num_outputs, n_out);
  return Status::Ok();
}

const KernelEntry* registered_kernels() { return g_first; }

bool blockable(const TensorView& t) {
  return t.dtype == DType::kFloat32 && t.shape.ndim == 4 && t.shape.dims[1] > 0 && t.shape.dims[1] % kLayoutBlock == 0;
}

}  // namespace dtorch
