// One node at a time: what both executors -- the hosted Session (executor.cc: any input shapes, threads, blocked
// layouts) and the heapless engine of the C API (engine.cc: the file's shapes and plan, one arena) -- do for a
// node: bind its arguments, infer and check its output shapes, let its kernel prepare, run it. Nothing here
// allocates; the caller owns every array passed in.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/model.h"

namespace dtorch {

// Whether a shape is within a byte cap: rank in [0, kMaxDims], every dimension >= 0, and its size in bytes,
// counting an empty (0) dimension as 1, at most `cap`. Counting empty dimensions as 1 keeps every dimension
// and every product of dimensions of a checked shape small, so kernels can do shape arithmetic freely.
bool shape_within(const Shape& s, DType dt, uint64_t cap);

// "node 'name' (op)", for messages; at_node prefixes a node's error with it.
Text node_label(const NodeInfo& n);
Status at_node(const NodeInfo& n, const Status& st);

// Every tensor's view before shapes are inferred: dtypes, and the constants' shapes and data (each within the
// one-tensor cap). Inputs and intermediates get their shapes from set_input / infer_node.
Status init_views(const LoadedModel& m, TensorView* views, uint64_t max_tensor_bytes);

// A model input's shape is within the one-tensor cap.
Status check_input_size(const char* name, const Shape& s, DType dt, uint64_t cap);

// Node i's kernel arguments from the per-tensor views (an absent optional input is a default view).
void bind_inputs(const NodeInfo& n, const TensorView* views, TensorView* node_in);
void bind_outputs(const NodeInfo& n, const TensorView* views, TensorView* node_out);

// Node i's output shapes from its inputs' (views), checked (valid, within max_tensor_bytes, as the file declares
// them) and stored in views; its scratch bytes (at most max_scratch_bytes). node_in holds m.max_node_inputs views,
// out_shapes m.max_node_outputs shapes.
Status infer_node(const LoadedModel& m, size_t i, TensorView* views, TensorView* node_in, Shape* out_shapes,
                  uint64_t max_tensor_bytes, uint64_t max_scratch_bytes, size_t* scratch_bytes);

// The kernel's prepare hook (kernel.h: PrepareFn) for node i with its constant inputs: with dst == nullptr the bytes
// it wants (0: none, or no hook), else it fills dst. args holds m.max_node_inputs views.
Status prepare_node(const LoadedModel& m, size_t i, TensorView* args, void* dst, size_t* bytes);

// Runs node i on the views (ctx: its attributes, pool, scratch, prepared block and layouts).
Status run_node(const LoadedModel& m, size_t i, const TensorView* views, TensorView* node_in, TensorView* node_out,
                const KernelContext& ctx);

// The arena bytes the C API's engine (engine.cc) needs for a model with kernels of `policy`, found by loading it
// into trial arenas from `allocate` (64-byte aligned; each handed back to `release`): what a host tool sizes a
// firmware's static arena with. The figure is this machine's: a target with 32-bit pointers needs no more.
Status engine_arena_bytes(const uint8_t* bytes, size_t size, KernelPolicy policy, void* (*allocate)(size_t),
                          void (*release)(void*), size_t* needed);

}  // namespace dtorch
