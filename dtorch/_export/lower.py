"""Lower a `Trace` (eager primitive calls) to a `Graph` of runtime/OPS.md operators with their attributes.

One eager call becomes zero or more nodes: `index` becomes slice (+ index_select for an integer array, + reshape
for integer or None indices), `stack` becomes reshapes + concat, `copy`/`contiguous`/`dropout` and a cast
to the same dtype become `identity` (removed by a pass), a comparison or logical op without an operator of its own
(ne, le, ge, logical_and/or/xor) becomes equal/less/greater and where, `gather` is gather_elements, `cumsum` of an
integer or bool tensor casts it to int64 first (eager's result dtype). A call whose inputs are all constants but has
no OPS.md operator becomes a placeholder node `eager:<name>` whose output data is known; constant folding removes
it. Anything else that cannot be expressed raises `ExportError`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..catalogue import CATALOGUE
from ..catalogue.compare import CAST_DTYPES
from .errors import ExportError
from .graph import Graph, Node, Value, constant
from .tracer import Call, Literal, Trace, where

__all__ = ["EXPORTABLE_OPS", "HANDLERS", "INT64_MAX", "lower"]

INT64_MAX = 2**63 - 1

# The operators of the catalogue (dtorch/catalogue, runtime/OPS.md).
EXPORTABLE_OPS = list(CATALOGUE)  # sorted
# Eager primitives lowered one-to-one to the operator of the same name, with no attributes.
_BINARY = tuple(op.name for op in CATALOGUE.values() if op.family == "elementwise")
_UNARY = tuple(op.name for op in CATALOGUE.values() if op.family == "activation" and not op.attrs)
_IDENTITY = ("copy", "contiguous", "dropout")


class _Ctx:
    def __init__(self, graph: Graph, call: Call) -> None:
        self.graph, self.call = graph, call

    def fail(self, why: str) -> ExportError:
        return ExportError(f"operator '{self.call.op}' at {where(self.call.path)} cannot be exported: {why}")

    def value(self, i: int) -> Value:
        a = self.call.args[i] if i < len(self.call.args) else None
        if isinstance(a, Value):
            return a
        if isinstance(a, Literal) and isinstance(a.value, (np.ndarray, int, float, np.number)):
            return constant(a.value)
        raise self.fail(f"input {i} is {type(a.value if isinstance(a, Literal) else a).__name__}, expected a tensor")

    def optional(self, i: int) -> Value | None:
        a = self.call.args[i] if i < len(self.call.args) else None
        return None if a is None else self.value(i)

    def operand(self, i: int, dtype: np.dtype) -> Value:
        """Input i as a tensor of `dtype`: Python numbers and known values are converted, traced ones must match."""
        a = self.call.args[i]
        if isinstance(a, Literal):
            return constant(np.asarray(a.value).astype(dtype))
        assert a is not None
        if a.dtype == dtype:
            return a
        if a.data is not None:
            return constant(a.data.astype(dtype))
        raise self.fail(f"it mixes dtypes ({a.dtype.name} input, {np.dtype(dtype).name} result); convert the "
                        f"tensor with .float() in the model first")

    def emit(self, op: str, inputs: list[Value | None], attrs: dict[str, Any] | None = None,
             out: Value | None = None, shape: tuple[int, ...] | None = None) -> Value:
        if out is None:
            ref = self.call.out
            out = Value(ref.shape if shape is None else shape, ref.dtype)
            if all(v is None or v.data is not None for v in inputs):
                out.data = _eval_simple(op, [None if v is None else v.data for v in inputs], attrs or {})
        self.graph.nodes.append(Node(op, list(inputs), [out], dict(attrs or {}), self.call.path))
        return out


def _eval_simple(op: str, xs: list[Any], attrs: dict[str, Any]) -> np.ndarray | None:
    """Data of a decomposition node whose inputs are all known (slice, index_select, reshape, concat)."""
    x = xs[0]
    if op == "slice":
        key = [slice(None)] * x.ndim
        for a, s, e, st in zip(attrs["axes"], attrs["starts"], attrs["ends"], attrs["steps"]):
            key[a] = slice(s, e, st)
        return np.ascontiguousarray(x[tuple(key)])
    if op == "index_select":
        return np.take(x, xs[1], axis=attrs["axis"])
    if op == "reshape":
        shape = [x.shape[i] if s == 0 else s for i, s in enumerate(attrs["shape"])]
        return x.reshape(shape)
    if op == "concat":
        return np.concatenate(xs, axis=attrs["axis"])
    if op in _NUMPY:
        return np.asarray(_NUMPY[op](*xs))
    return None


# The decomposition nodes of the comparisons, evaluated when their inputs are known.
_NUMPY: dict[str, Callable[..., Any]] = {"equal": np.equal, "less": np.less, "greater": np.greater, "where": np.where}


def _pair(v: Any) -> list[int]:
    return [int(t) for t in v]


def _axes(dim: Any, ndim: int) -> list[int]:
    if dim is None:
        return list(range(ndim))
    dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    if not dims:
        return list(range(ndim))
    return sorted(int(d) % max(ndim, 1) for d in dims)


# ---------------------------------------------------------------------------- handlers


def _binary(c: _Ctx) -> None:
    dt = c.call.out.dtype
    c.emit(c.call.op, [c.operand(0, dt), c.operand(1, dt)], out=c.call.out)


def _unary(c: _Ctx) -> None:
    c.emit(c.call.op, [c.value(0)], out=c.call.out)


def _identity(c: _Ctx) -> None:
    c.emit("identity", [c.value(0)], out=c.call.out)


def _cast(c: _Ctx) -> None:
    x = c.value(0)
    to = c.call.out.dtype
    if x.dtype == to:
        _identity(c)
        return
    if x.dtype.name not in CAST_DTYPES or to.name not in CAST_DTYPES:
        raise c.fail(f"a cast from {x.dtype.name} to {to.name} of a traced tensor; the .dtm cast converts between "
                     f"{', '.join(CAST_DTYPES)} only")
    c.emit("cast", [x], {"to": to.name}, out=c.call.out)


# dtorch's Compare primitive (its `op` attribute) -> the catalogue's comparison of the same meaning.
_COMPARISONS = {"eq": "equal", "lt": "less", "gt": "greater"}
_TRUE, _FALSE = np.array(True), np.array(False)


def _compare(c: _Ctx) -> None:
    """eq / lt / gt are operators; ne, le, ge and the logical (and bitwise) ops of bool tensors are where of them,
    exactly (a NaN compares false everywhere, so le is lt or eq, not the negation of gt)."""
    name = c.call.attrs.get("op")
    given = c.call.attrs.get("dtype")  # the operands' common dtype (a NumPy dtype is falsy: compare with None)
    dt = np.dtype(given) if given is not None else c.value(0).dtype
    shape = c.call.out.shape
    if name in ("bitwise_and", "bitwise_or", "bitwise_xor") and dt == np.bool_:  # a & b of bool tensors: logical
        name = "logical_" + name[len("bitwise_"):]
    if name in _COMPARISONS:
        c.emit(_COMPARISONS[name], [c.operand(0, dt), c.operand(1, dt)], out=c.call.out)
    elif name in ("ne", "le", "ge"):
        a, b = c.operand(0, dt), c.operand(1, dt)
        eq = c.emit("equal", [a, b], shape=shape)
        if name == "ne":
            c.emit("where", [eq, constant(_FALSE), constant(_TRUE)], out=c.call.out)
        else:
            strict = c.emit("less" if name == "le" else "greater", [a, b], shape=shape)
            c.emit("where", [strict, constant(_TRUE), eq], out=c.call.out)
    elif name in ("logical_and", "logical_or", "logical_xor"):
        if dt != np.bool_:
            raise c.fail(f"{name} of {dt.name} tensors; compare them first (x != 0) or convert with .bool()")
        a, b = c.operand(0, dt), c.operand(1, dt)
        if name == "logical_and":
            c.emit("where", [a, b, constant(_FALSE)], out=c.call.out)
        elif name == "logical_or":
            c.emit("where", [a, constant(_TRUE), b], out=c.call.out)
        else:
            not_b = c.emit("where", [b, constant(_FALSE), constant(_TRUE)], shape=tuple(b.shape))
            c.emit("where", [a, not_b, b], out=c.call.out)
    else:
        raise c.fail(f"'{name}' is not in opset 13 (eq, ne, lt, le, gt, ge and, on bool tensors, logical_and / "
                     f"logical_or / logical_xor and & | ^ are)")


def _where(c: _Ctx) -> None:
    dt = c.call.out.dtype
    c.emit("where", [c.operand(0, np.dtype(np.bool_)), c.operand(1, dt), c.operand(2, dt)], out=c.call.out)


def _act(c: _Ctx) -> None:
    a = c.call.attrs
    op = c.call.op
    attrs: dict[str, Any] = {}
    if op == "gelu":
        attrs["approximate"] = str(a.get("approximate", "none"))
    elif op == "hardtanh":
        attrs = {"min_val": float(a.get("min_val", -1.0)), "max_val": float(a.get("max_val", 1.0))}
    elif op == "leaky_relu":
        attrs = {"alpha": float(a.get("negative_slope", 0.01))}
    elif op == "elu":
        if float(a.get("scale", 1.0)) != 1.0 or float(a.get("input_scale", 1.0)) != 1.0:
            raise c.fail("SELU/CELU (elu with scale or input_scale) are not in opset 13; use ELU")
        attrs = {"alpha": float(a.get("alpha", 1.0))}
    elif op == "softplus":
        attrs = {"beta": float(a.get("beta", 1.0)), "threshold": float(a.get("threshold", 20.0))}
    c.emit(op, [c.value(0)], attrs, out=c.call.out)


def _clamp(c: _Ctx) -> None:
    lo, hi = c.call.attrs.get("min"), c.call.attrs.get("max")
    for b in (lo, hi):
        if b is not None and np.ndim(b) != 0:
            raise c.fail("clamp with tensor bounds; use dt.maximum / dt.minimum")
    c.emit("clamp", [c.value(0)], {"min": 0.0 if lo is None else float(lo), "max": 0.0 if hi is None else float(hi),
                                   "has_min": int(lo is not None), "has_max": int(hi is not None)}, out=c.call.out)


def _softmax(c: _Ctx) -> None:
    x = c.value(0)
    c.emit(c.call.op, [x], {"dim": int(c.call.attrs["dim"]) % max(len(x.shape), 1)}, out=c.call.out)


def _conv2d(c: _Ctx) -> None:
    a = c.call.attrs
    attrs = {"stride": _pair(a.get("stride", (1, 1))), "padding": _pair(a.get("padding", (0, 0, 0, 0))),
             "dilation": _pair(a.get("dilation", (1, 1))), "groups": int(a.get("groups", 1))}
    if c.call.op == "conv_transpose2d":
        attrs["output_padding"] = _pair(a.get("output_padding", (0, 0)))
        attrs["padding"] = _pair(a.get("padding", (0, 0)))
    c.emit(c.call.op, [c.value(0), c.value(1), c.optional(2)], attrs, out=c.call.out)


def _linear(c: _Ctx) -> None:
    c.emit("linear", [c.value(0), c.value(1), c.optional(2)], out=c.call.out)


def _matmul(c: _Ctx) -> None:
    c.emit("matmul", [c.value(0), c.value(1)], out=c.call.out)


def _batch_norm(c: _Ctx) -> None:
    a = c.call.attrs
    if a.get("training", True):
        raise c.fail("batch_norm in training mode (batch statistics); export calls model.eval(), so this is a "
                     "functional batch_norm(..., training=True) call: pass training=self.training")
    mean, var = c.optional(3), c.optional(4)
    if mean is None or var is None:
        raise c.fail("batch_norm without running statistics (track_running_stats=False)")
    c.emit("batch_norm", [c.value(0), mean, var, c.optional(1), c.optional(2)], {"eps": float(a.get("eps", 1e-5))},
           out=c.call.out)


def _layer_norm(c: _Ctx) -> None:
    a = c.call.attrs
    c.emit("layer_norm", [c.value(0), c.optional(1), c.optional(2)],
           {"normalized_ndim": int(a.get("ndim", 1)), "eps": float(a.get("eps", 1e-5))}, out=c.call.out)


def _group_norm(c: _Ctx) -> None:
    a = c.call.attrs
    c.emit("group_norm", [c.value(0), c.optional(1), c.optional(2)],
           {"groups": int(a.get("num_groups", 1)), "eps": float(a.get("eps", 1e-5))}, out=c.call.out)


def _max_pool(c: _Ctx) -> None:
    a = c.call.attrs
    c.emit("max_pool2d", [c.value(0)], {"kernel": _pair(a["kernel_size"]), "stride": _pair(a["stride"]),
                                        "padding": _pair(a.get("padding", (0, 0))),
                                        "dilation": _pair(a.get("dilation", (1, 1))),
                                        "ceil_mode": int(bool(a.get("ceil_mode", False)))}, out=c.call.out)


def _avg_pool(c: _Ctx) -> None:
    a = c.call.attrs
    div = a.get("divisor_override")
    c.emit("avg_pool2d", [c.value(0)], {"kernel": _pair(a["kernel_size"]), "stride": _pair(a["stride"]),
                                        "padding": _pair(a.get("padding", (0, 0))),
                                        "ceil_mode": int(bool(a.get("ceil_mode", False))),
                                        "count_include_pad": int(bool(a.get("count_include_pad", True))),
                                        "divisor_override": 0 if div is None else int(div)}, out=c.call.out)


def _adaptive(c: _Ctx) -> None:
    c.emit(c.call.op, [c.value(0)], {"output_size": _pair(c.call.attrs["output_size"])}, out=c.call.out)


def _upsample(c: _Ctx) -> None:
    a = c.call.attrs
    if a.get("exact", False):
        raise c.fail("interpolate(mode='nearest-exact') is not in opset 13; use mode='nearest'")
    scales = a.get("scales", (None, None))
    attrs: dict[str, Any] = {}
    if scales is not None and all(s is not None for s in scales):
        attrs["scales"] = [float(s) for s in scales]
    else:
        attrs["size"] = _pair(a["output_size"])
    if c.call.op == "upsample_bilinear2d":
        attrs["align_corners"] = int(bool(a.get("align_corners", False)))
    c.emit(c.call.op, [c.value(0)], attrs, out=c.call.out)


def _cat(c: _Ctx) -> None:
    xs = [c.value(i) for i in range(len(c.call.args))]
    c.emit("concat", list(xs), {"axis": int(c.call.attrs.get("dim", 0)) % max(len(c.call.out.shape), 1)},
           out=c.call.out)


def _stack(c: _Ctx) -> None:
    d = int(c.call.attrs.get("dim", 0))
    parts = []
    for i in range(len(c.call.args)):
        x = c.value(i)
        shape = x.shape[:d] + (1,) + x.shape[d:]
        parts.append(c.emit("reshape", [x], {"shape": list(shape)}, shape=shape))
    c.emit("concat", list(parts), {"axis": d}, out=c.call.out)


def _reshape(c: _Ctx) -> None:
    c.emit("reshape", [c.value(0)], {"shape": [int(s) for s in c.call.attrs["shape"]]}, out=c.call.out)


def _permute(c: _Ctx) -> None:
    c.emit("permute", [c.value(0)], {"perm": [int(d) for d in c.call.attrs["dims"]]}, out=c.call.out)


def _expand(c: _Ctx) -> None:
    c.emit("expand", [c.value(0)], {"shape": [int(s) for s in c.call.attrs["shape"]]}, out=c.call.out)


def _reduce(c: _Ctx) -> None:
    a = c.call.attrs
    x = c.value(0)
    if a.get("dtype") is not None and np.dtype(a["dtype"]) != x.dtype:
        raise c.fail("sum(dtype=...) casts; the .dtm operators compute in float32")
    op = c.call.op if c.call.op != "amax" or a.get("largest", True) else "amin"  # the Amax primitive serves both
    c.emit(op, [x], {"axes": _axes(a.get("dim"), len(x.shape)), "keepdim": int(bool(a.get("keepdim", False)))},
           out=c.call.out)


def _pad(c: _Ctx) -> None:
    a = c.call.attrs
    mode = str(a.get("mode", "constant"))
    modes = CATALOGUE["pad"].attr("mode").choices or ()
    if mode not in modes:
        raise c.fail(f"pad mode '{mode}' is not in opset 13 (only {', '.join(map(repr, modes))})")
    c.emit("pad", [c.value(0)], {"pads": [int(p) for p in a["pad"]], "mode": mode,
                                 "value": float(a.get("value", 0.0))}, out=c.call.out)


def _embedding(c: _Ctx) -> None:
    pad = c.call.attrs.get("padding_idx")
    idx = c.value(1)
    if idx.dtype != np.int64:
        idx = c.operand(1, np.dtype(np.int64))
    c.emit("embedding", [idx, c.value(0)], {"padding_idx": -1 if pad is None else int(pad)}, out=c.call.out)


def _gather(c: _Ctx) -> None:
    """torch.gather (dtorch's Gather primitive: data, index, dim) is gather_elements."""
    x, idx = c.value(0), c.value(1)
    if not x.shape:
        raise c.fail("gather of a 0-d tensor; gather_elements takes data of rank 1 or more (reshape it to (1,) first)")
    dim = c.call.args[2] if len(c.call.args) > 2 else None
    axis = int(dim.value) if isinstance(dim, Literal) else int(c.call.attrs.get("dim", 0))
    c.emit("gather_elements", [x, idx], {"axis": axis % len(x.shape)}, out=c.call.out)


def _cumsum(c: _Ctx) -> None:
    """torch.cumsum: integer and bool inputs sum in int64 (the eager result's dtype), so they are cast first."""
    x = c.value(0)
    to = c.call.out.dtype
    if x.dtype != to:
        if x.data is not None:
            x = constant(x.data.astype(to))
        elif x.dtype.name in CAST_DTYPES and to.name in CAST_DTYPES:
            x = c.emit("cast", [x], {"to": to.name}, shape=tuple(x.shape))
        else:
            raise c.fail(f"a cumsum of {x.dtype.name} into {to.name}; the .dtm cumsum takes float32, int64 and int32")
    c.emit("cumsum", [x], {"axis": int(c.call.attrs.get("dim", 0)) % max(len(x.shape), 1)}, out=c.call.out)


def _index(c: _Ctx) -> None:
    x = c.value(0)
    key = list(c.call.attrs["key"])
    nd = len(x.shape)
    used = sum((k.ndim if k.dtype == np.bool_ else 1) if isinstance(k, np.ndarray) else
               int(isinstance(k, (int, np.integer, slice))) for k in key)
    if Ellipsis in [k for k in key if not isinstance(k, np.ndarray)]:
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        key[i:i + 1] = [slice(None)] * (nd - used)
    axes, starts, ends, steps = [], [], [], []
    array: tuple[int, np.ndarray] | None = None
    axis = 0
    for k in key:
        if k is None:
            continue
        if isinstance(k, np.ndarray):
            if k.dtype == np.bool_ or k.dtype.kind not in "iu":
                raise c.fail("boolean-mask indexing gives a data-dependent shape; use dt.where instead")
            if array is not None:
                raise c.fail("more than one integer-array index; index one axis at a time")
            array = (axis, k)
        elif isinstance(k, slice):
            st = 1 if k.step is None else int(k.step)
            if not (k.start in (None, 0) and k.stop is None and st == 1):
                axes.append(axis)
                starts.append(0 if k.start is None else int(k.start))
                ends.append(INT64_MAX if k.stop is None else int(k.stop))
                steps.append(st)
        else:
            i = int(k)
            axes.append(axis)
            starts.append(i)
            ends.append(INT64_MAX if i == -1 else i + 1)
            steps.append(1)
        axis += 1
    cur = x
    shape = list(x.shape)
    if axes:
        probe = np.broadcast_to(np.zeros((), np.int8), x.shape)
        sl = [slice(None)] * nd
        for a_, s, e, st in zip(axes, starts, ends, steps):
            sl[a_] = slice(s, e, st)
        shape = list(probe[tuple(sl)].shape)
        cur = c.emit("slice", [cur], {"axes": axes, "starts": starts, "ends": ends, "steps": steps},
                     shape=tuple(shape))
    if array is not None:
        ax, idx = array
        traced = c.call.attrs.get("_array_value")
        ind = traced if isinstance(traced, Value) else constant(np.asarray(idx, np.int64).reshape(-1) % max(shape[ax], 1))
        shape[ax] = int(np.prod(idx.shape))
        cur = c.emit("index_select", [cur, ind], {"axis": ax}, shape=tuple(shape))
    if tuple(shape) != c.call.out.shape or cur is x:
        c.emit("reshape", [cur], {"shape": list(c.call.out.shape)}, out=c.call.out)
    else:
        c.graph.nodes[-1].outputs = [c.call.out]
        if c.call.out.data is None and cur.data is not None:
            c.call.out.data = cur.data


# Eager primitive -> lowering. Every catalogue entry's `eager` primitives are here (tests/test_catalogue.py).
HANDLERS: dict[str, Callable[[_Ctx], None]] = {
    **{op: _binary for op in _BINARY}, **{op: _unary for op in _UNARY}, **{op: _identity for op in _IDENTITY},
    "cast": _cast, "gelu": _act, "hardtanh": _act, "leaky_relu": _act, "elu": _act, "softplus": _act,
    "clamp": _clamp, "softmax": _softmax, "log_softmax": _softmax, "conv2d": _conv2d, "conv_transpose2d": _conv2d,
    "linear": _linear, "matmul": _matmul, "batch_norm": _batch_norm, "layer_norm": _layer_norm,
    "group_norm": _group_norm, "max_pool2d": _max_pool, "avg_pool2d": _avg_pool, "adaptive_avg_pool2d": _adaptive,
    "adaptive_max_pool2d": _adaptive, "upsample_nearest2d": _upsample, "upsample_bilinear2d": _upsample,
    "cat": _cat, "stack": _stack, "reshape": _reshape, "permute": _permute, "expand": _expand, "mean": _reduce,
    "sum": _reduce, "amax": _reduce, "pad": _pad, "embedding": _embedding, "index": _index, "compare": _compare,
    "where": _where, "gather": _gather, "cumsum": _cumsum,
}


def _unexportable(call: Call, why: str = "") -> ExportError:
    hint = f" ({why})" if why else ""
    return ExportError(f"operator '{call.op}' called at {where(call.path)} cannot be exported to the .dtm format "
                       f"(opset 13){hint}. Exportable operators: {', '.join(EXPORTABLE_OPS)}. Rewrite that part of "
                       f"the model with these operators, or move it out of forward.")


_WHY = {
    "max_dim": "max/min along a dim (values and indices) is not in opset 13",
    "mish": "mish is not in opset 13; use silu or x * tanh(softplus(x))",
}


def lower(trace: Trace) -> Graph:
    graph = Graph(list(trace.inputs), list(trace.outputs))
    for call in trace.calls:
        handler = HANDLERS.get(call.op)
        if handler is None:
            if call.out.data is not None:  # computed from constants only: folded away later
                graph.nodes.append(Node(f"eager:{call.op}", [a for a in call.args if isinstance(a, Value)],
                                        [call.out], {}, call.path))
                continue
            raise _unexportable(call, _WHY.get(call.op, ""))
        try:
            handler(_Ctx(graph, call))
        except ExportError:
            if call.out.data is None:
                raise
            graph.nodes.append(Node(f"eager:{call.op}", [a for a in call.args if isinstance(a, Value)],
                                    [call.out], {}, call.path))
        for v in call.out.shape:
            if v < 0:  # pragma: no cover - NumPy never produces these
                raise _unexportable(call)
    return graph
