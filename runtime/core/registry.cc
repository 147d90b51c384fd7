// The kernel registry: a fixed-capacity table filled by DTORCH_REGISTER_KERNEL at static-initialization
// time. The table is zero-initialized before any dynamic initializer runs, so registration order between
// translation units does not matter, and nothing is allocated. Each (op, dtype) may have one kernel per
// kernel set, at distinct priorities; find_kernel picks the highest. Registering the same (op, dtype) twice
// at one priority or in one set, or more than kMaxKernels kernels, is a build bug: the process stops at
// start-up with a message.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/kernel.h"

namespace dtorch {
namespace {

constexpr size_t kMaxKernels = 1024;

struct Registry {
  KernelDef defs[kMaxKernels];
  const KernelDef* ptrs[kMaxKernels];
  size_t count;
};

Registry& registry() {
  static Registry r;  // constant-initialized (zeroes): safe to use from any static initializer
  return r;
}

}  // namespace

bool register_kernel(const KernelDef& def) {
  Registry& r = registry();
  if (def.op == nullptr || def.infer == nullptr || def.run == nullptr) {
    std::fprintf(stderr, "dtorch: kernel registration with a null op name or function\n");
    std::abort();
  }
  const KernelArity& a = def.arity;
  if (a.min_inputs < 0 || a.min_inputs > 64 || (a.max_inputs != -1 && (a.max_inputs < a.min_inputs || a.max_inputs > 64)) ||
      a.num_outputs < 1 || a.num_outputs > 64 ||
      (a.max_inputs != -1 && a.max_inputs < 64 && (a.optional_inputs >> a.max_inputs) != 0)) {
    std::fprintf(stderr, "dtorch: kernel '%s' (%s) is registered with an inconsistent arity\n", def.op,
                 dtype_name(def.dtype));
    std::abort();
  }
  if (def.kernel_set == nullptr) {
    std::fprintf(stderr, "dtorch: kernel '%s' (%s) is registered without a kernel set\n", def.op,
                 dtype_name(def.dtype));
    std::abort();
  }
  for (size_t i = 0; i < r.count; ++i) {
    const KernelDef& o = r.defs[i];
    if (o.dtype != def.dtype || std::strcmp(o.op, def.op) != 0) continue;
    if (o.priority == def.priority || std::strcmp(o.kernel_set, def.kernel_set) == 0) {
      std::fprintf(stderr,
                   "dtorch: kernel '%s' (%s) is registered twice at priority %d (sets '%s' and '%s'); each (op, "
                   "dtype) needs exactly one kernel per kernel set, at distinct priorities\n",
                   def.op, dtype_name(def.dtype), def.priority, o.kernel_set, def.kernel_set);
      std::abort();
    }
  }
  if (r.count >= kMaxKernels) {
    std::fprintf(stderr, "dtorch: more than %zu kernels registered; raise kMaxKernels in runtime/core/registry.cc\n",
                 kMaxKernels);
    std::abort();
  }
  r.defs[r.count] = def;
  r.ptrs[r.count] = &r.defs[r.count];
  ++r.count;
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
  if (op == nullptr) return nullptr;
  const Registry& r = registry();
  const KernelDef* best = nullptr;
  for (size_t i = 0; i < r.count; ++i)
    if (r.defs[i].dtype == dtype && std::strcmp(r.defs[i].op, op) == 0 && policy_allows(policy, r.defs[i]) &&
        (best == nullptr || r.defs[i].priority > best->priority))
      best = &r.defs[i];
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
  const Registry& r = registry();
  for (size_t i = 0; i < r.count; ++i)
    if (r.defs[i].dtype == dtype && std::strcmp(r.defs[i].op, op) == 0 &&
        std::strcmp(r.defs[i].kernel_set, kernel_set) == 0)
      return &r.defs[i];
  return nullptr;
}

Status check_kernel_arity(const KernelDef& def, int n_in, uint64_t absent, int n_out) {
  const KernelArity& a = def.arity;
  const std::string op = def.op;
  if (n_in < a.min_inputs || (a.max_inputs >= 0 && n_in > a.max_inputs)) {
    std::string want;
    if (a.max_inputs < 0) want = "at least " + std::to_string(a.min_inputs);
    else if (a.max_inputs == a.min_inputs) want = std::to_string(a.min_inputs);
    else want = std::to_string(a.min_inputs) + " to " + std::to_string(a.max_inputs);
    return Status(StatusCode::kInvalidModel,
                  "operator '" + op + "' takes " + want + " input(s) but the node has " + std::to_string(n_in));
  }
  for (int i = 0; i < n_in && i < 64; ++i)
    if (((absent >> i) & 1) != 0 && ((a.optional_inputs >> i) & 1) == 0)
      return Status(StatusCode::kInvalidModel, "operator '" + op + "' requires input " + std::to_string(i) +
                                                   ", but it is absent (-1); only optional inputs may be left out");
  if (n_out != a.num_outputs)
    return Status(StatusCode::kInvalidModel, "operator '" + op + "' has " + std::to_string(a.num_outputs) +
                                                 " output(s) but the node lists " + std::to_string(n_out));
  return Status::Ok();
}

size_t registered_kernels(const KernelDef* const** defs) {
  const Registry& r = registry();
  if (defs != nullptr) *defs = r.ptrs;
  return r.count;
}

}  // namespace dtorch
