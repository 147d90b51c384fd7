"""Record a model's forward pass as a list of primitive calls (`Trace`), by a hook on `Function.apply`.

Every tensor that a primitive produced during the trace, and every model input, becomes a non-constant
`Value`. Any other tensor (parameters, buffers, tensors created inside forward) is a constant whose data
is captured when first used. A primitive whose inputs are all constants produces a value whose data is
known (`Value.data` is the eager result), so the constant-folding pass can drop it later.

While tracing, reading a traced tensor's values from Python (`bool(t)`, `t.item()`, `t.tolist()`,
`t.numpy()`, `int(t)`, `float(t)`, `t.__index__()`) raises `ExportError`: the graph would bake in one
branch of data-dependent control flow. In-place ops are followed (the tensor is re-bound to the result);
indexed assignment into a traced tensor is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import _tensor as _tensor_mod  # defines Tensor and its `_trace_check` hook, set while tracing
from ..autograd import function as _function
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from .errors import ExportError
from .graph import Value

__all__ = ["Call", "Literal", "Trace", "trace_model"]


@dataclass(frozen=True)
class Literal:
    """A non-tensor positional input of a primitive (a Python number, a NumPy array, ...)."""

    value: Any


@dataclass(eq=False)
class Call:
    op: str
    args: list[Value | Literal | None]
    attrs: dict[str, Any]
    out: Value
    path: str


@dataclass(eq=False)
class Trace:
    inputs: list[Value]
    outputs: list[Value]
    calls: list[Call] = field(default_factory=list)
    eager_outputs: list[np.ndarray] = field(default_factory=list)


def _root(arr: np.ndarray) -> np.ndarray:
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr


def where(path: str) -> str:
    return f"'{path}'" if path else "the model's top-level forward"


class _Tracer:
    def __init__(self, model: Any) -> None:
        self.by_tensor: dict[int, Value] = {}
        self.by_array: dict[int, Value] = {}
        self.roots: set[int] = set()
        self.keep: list[Any] = []  # keeps every seen object alive, so ids stay unique during the trace
        self.calls: list[Call] = []
        self.module_names: dict[int, str] = {}
        self.const_names: dict[int, str] = {}
        if hasattr(model, "named_modules"):
            self.module_names = {id(m): n for n, m in model.named_modules()}
            for n, p in list(model.named_parameters()) + list(model.named_buffers()):
                if p is not None:
                    self.const_names.setdefault(id(p._data), n)

    # ------------------------------------------------------------------ bookkeeping
    def path(self) -> str:
        stack = _function._module_stack
        for m in reversed(stack):
            name = self.module_names.get(id(m))
            if name is not None:
                return name
        return ""

    def bind(self, t: Tensor, v: Value) -> None:
        self.keep.append(t)
        self.keep.append(t._data)
        self.by_tensor[id(t)] = v
        self.by_array[id(t._data)] = v
        if v.data is None:
            self.roots.add(id(_root(t._data)))

    def lookup(self, t: Tensor) -> Value | None:
        v = self.by_tensor.get(id(t))
        if v is None:
            v = self.by_array.get(id(t._data))
        return v

    def ref(self, x: Any, op: str) -> Value | Literal | None:
        if x is None:
            return None
        if not isinstance(x, Tensor):
            if isinstance(x, np.ndarray):
                v = self.by_array.get(id(x))
                if v is not None:
                    return v
            return Literal(x)
        v = self.lookup(x)
        if v is not None:
            return v
        if id(_root(x._data)) in self.roots:
            raise ExportError(f"operator '{op}' at {where(self.path())} received a tensor that was derived from the "
                              f"model input outside dtorch operators (e.g. through .data, ._data or NumPy); the "
                              f"export cannot follow it. Compute it with dtorch operators instead.")
        data = np.array(x._data, copy=True, order="C")
        v = Value(tuple(data.shape), data.dtype, "constant", data, self.const_names.get(id(x._data), ""))
        self.bind(x, v)
        return v

    def is_traced(self, t: Tensor) -> bool:
        v = self.lookup(t)
        if v is not None:
            return v.data is None
        return id(_root(t._data)) in self.roots

    # ------------------------------------------------------------------ hooks
    def hook(self, cls: type, inputs: Sequence[Any], attrs: dict[str, Any], result: Tensor) -> None:
        op = cls.name or cls.__name__  # type: ignore[attr-defined]
        args = [self.ref(x, op) for x in inputs]
        attrs = dict(attrs)
        known = all(a is None or isinstance(a, Literal) or a.data is not None for a in args)
        if op == "index":  # an integer-array index computed in the graph travels inside the key
            for k in attrs.get("key", ()):
                v = self.by_array.get(id(k)) if isinstance(k, np.ndarray) else None
                if v is not None and v.data is None:
                    attrs["_array_value"] = v
                    known = False
        data = np.array(result._data, copy=True, order="C") if known else None
        out = Value(tuple(result._data.shape), result._data.dtype, "intermediate", data)
        self.calls.append(Call(op, args, attrs, out, self.path()))
        self.bind(result, out)

    def check_read(self, t: Tensor, what: str) -> None:
        if self.is_traced(t):
            raise ExportError(f"{what} reads the value of a traced tensor: data-dependent Python control flow at "
                              f"{where(self.path())} cannot be exported (the graph would keep only the branch taken "
                              f"for the example input). Express it with tensor operators (e.g. dt.where, clamp), or "
                              f"move it out of forward.")

    def after_inplace(self, target: Tensor, result: Tensor) -> None:
        rv = self.lookup(result)
        tv = self.lookup(target)
        if rv is None and tv is None:
            return
        if rv is None or (rv.data is not None and tv is not None and tv.data is None):
            raise ExportError(f"an in-place operation at {where(self.path())} overwrites a traced tensor with values "
                              f"that do not come from dtorch operators; use an out-of-place operation instead.")
        if tuple(target._data.shape) != rv.shape or target._data.dtype != rv.dtype:
            raise ExportError(f"an in-place operation at {where(self.path())} broadcasts or casts its result into a "
                              f"tensor of shape {list(target._data.shape)}; use the out-of-place form (y = op(x)).")
        self.by_tensor[id(target)] = rv
        self.by_array[id(target._data)] = rv
        self.keep.append(target)


_active: list[_Tracer] = []


def _flatten_outputs(out: Any) -> list[Tensor]:
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, (tuple, list)) and out and all(isinstance(o, Tensor) for o in out):
        return list(out)
    raise ExportError(f"the model's forward must return a Tensor or a tuple/list of Tensors to be exported, got "
                      f"{type(out).__name__}")


def trace_model(model: Callable[..., Any], args: Sequence[Tensor]) -> Trace:
    """Run `model(*args)` under no_grad in eval mode, recording every primitive call."""
    if _active:
        raise ExportError("dt.export was called while another export is tracing; export one model at a time")
    tracer = _Tracer(model)
    inputs = []
    for i, a in enumerate(args):
        v = Value(tuple(a._data.shape), a._data.dtype, "input", None, f"input{i}")
        tracer.bind(a, v)
        inputs.append(v)
    modules = list(model.modules()) if hasattr(model, "modules") else []
    modes = [m.training for m in modules]
    orig_inplace, orig_const, orig_setitem = Tensor._inplace, Tensor._constant_inplace, Tensor.__setitem__

    def inplace(self: Tensor, result: Tensor) -> Tensor:
        out = orig_inplace(self, result)
        tracer.after_inplace(self, result)
        return out

    def const_inplace(self: Tensor, values: Any) -> Tensor:
        if tracer.is_traced(self):
            raise ExportError(f"an in-place fill (fill_, zero_, copy_ of constant data, ...) at {where(tracer.path())} "
                              f"overwrites a traced tensor; create a new tensor instead.")
        return orig_const(self, values)

    def setitem(self: Tensor, key: Any, value: Any) -> None:
        if tracer.is_traced(self) or (isinstance(value, Tensor) and tracer.is_traced(value)):
            raise ExportError(f"indexed assignment (x[...] = v) at {where(tracer.path())} writes into a traced tensor, "
                              f"which the .dtm operator set cannot express; build the result with dt.cat / dt.where "
                              f"instead.")
        orig_setitem(self, key, value)

    _active.append(tracer)
    _function._trace_hooks.append(tracer.hook)
    _tensor_mod._trace_check = tracer.check_read
    Tensor._inplace = inplace  # type: ignore[method-assign]
    Tensor._constant_inplace = const_inplace  # type: ignore[method-assign]
    Tensor.__setitem__ = setitem  # type: ignore[method-assign]
    try:
        for m in modules:
            object.__setattr__(m, "training", False)
        with no_grad():
            out = model(*args)
    finally:
        Tensor._inplace = orig_inplace  # type: ignore[method-assign]
        Tensor._constant_inplace = orig_const  # type: ignore[method-assign]
        Tensor.__setitem__ = orig_setitem  # type: ignore[method-assign]
        _tensor_mod._trace_check = None
        _function._trace_hooks.remove(tracer.hook)
        _active.remove(tracer)
        for m, mode in zip(modules, modes):
            object.__setattr__(m, "training", mode)
    outs = _flatten_outputs(out)
    values: list[Value] = []
    for i, o in enumerate(outs):
        v = tracer.lookup(o)
        if v is None or v.data is not None:
            raise ExportError(f"output {i} of the model does not depend on its inputs (a constant); the .dtm format "
                              f"needs every output to be computed from the inputs")
        if v.kind == "input":
            raise ExportError(f"output {i} of the model is one of its inputs, returned unchanged; return a computed "
                              f"tensor instead")
        if any(v is w for w in values):
            raise ExportError(f"output {i} of the model is the same tensor as an earlier output; return it once")
        values.append(v)
    return Trace(inputs, values, tracer.calls, [np.array(o._data, copy=True) for o in outs])
