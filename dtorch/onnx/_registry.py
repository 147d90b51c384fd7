"""The ONNX operator translators: one function per ONNX operator type (default domain), registered with
`@translates("Conv", ...)` in the family modules of `dtorch.onnx.ops` (every module there is read, so a new
family needs no edit elsewhere).

A translator gets a `Ctx` for one ONNX node and returns the node's outputs as export-IR `Value`s (None for an
output it does not produce). It builds the graph only through `ctx.emit` (one catalogue operator, runtime/OPS.md)
and `ctx.constant`; `emit` runs the operator's runtime kernel on the example data of its inputs, so every value
has a concrete shape (the importer specializes the ONNX graph to concrete input shapes, see importer.py) and a
kernel that refuses the node fails the import at that node with the runtime's own message.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._export.graph import Node, Value, c_array, constant
from ..catalogue import CATALOGUE, signature_for
from .errors import OnnxImportError

if TYPE_CHECKING:
    from .importer import _Specializer

__all__ = ["CONTRIB_DOMAIN", "CONTRIB_OPS", "TRANSLATORS", "Ctx", "supported_ops", "translates"]

Translator = Callable[["Ctx"], Sequence["Value | None"]]
TRANSLATORS: dict[str, Translator] = {}
#: The com.microsoft operators among TRANSLATORS (ONNX Runtime's contrib operators of its quantized QOperator
#: format: QLinearAdd, QGemm, ...); every other translator is of the default domain.
CONTRIB_DOMAIN = "com.microsoft"
CONTRIB_OPS: set[str] = set()


def translates(*op_types: str, domain: str = "") -> Callable[[Translator], Translator]:
    if domain not in ("", CONTRIB_DOMAIN):
        raise RuntimeError(f"translators are of the default domain or {CONTRIB_DOMAIN!r}, not {domain!r}")

    def deco(fn: Translator) -> Translator:
        for t in op_types:
            if t in TRANSLATORS:
                raise RuntimeError(f"ONNX operator {t!r} has two translators")
            TRANSLATORS[t] = fn
            if domain:
                CONTRIB_OPS.add(t)
        return fn

    return deco


_loaded = False


def _load() -> None:
    global _loaded
    if _loaded:
        return
    from . import ops

    for info in sorted(pkgutil.iter_modules(ops.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{ops.__name__}.{info.name}")
    _loaded = True


def supported_ops() -> list[str]:
    """The ONNX operator types the importer translates, sorted: the default domain's by name, ONNX Runtime's contrib
    operators as 'com.microsoft::QLinearAdd'. Besides these, any operator whose inputs are all constants (shape
    arithmetic, Constant, ConstantOfShape, Range, ...) folds at import."""
    _load()
    return sorted(f"{CONTRIB_DOMAIN}::{t}" if t in CONTRIB_OPS else t for t in TRANSLATORS)


def _attr_value(a: Any) -> Any:
    import onnx
    from onnx import numpy_helper

    t = a.type
    A = onnx.AttributeProto
    if t == A.FLOAT:
        return float(a.f)
    if t == A.INT:
        return int(a.i)
    if t == A.STRING:
        return a.s.decode("utf-8", "replace")
    if t == A.FLOATS:
        return [float(x) for x in a.floats]
    if t == A.INTS:
        return [int(x) for x in a.ints]
    if t == A.STRINGS:
        return [s.decode("utf-8", "replace") for s in a.strings]
    if t == A.TENSOR:
        return numpy_helper.to_array(a.t)
    return a  # graphs, sparse tensors, type protos: the translator that needs one says so


def _kernel_outputs(op: str, inputs: list[Value | None], attrs: dict[str, Any]) -> list[str]:
    """The output dtypes of catalogue `op` for these inputs (the signature they match in full); [] for none."""
    sig = signature_for(op, [None if v is None else np.dtype(v.dtype).name for v in inputs], attrs)
    return [] if sig is None else list(sig.outputs)


class Ctx:
    """One ONNX node being translated."""

    def __init__(self, spec: _Specializer, node: Any, opset: int) -> None:
        self.spec, self.node, self.opset = spec, node, opset
        self.op_type: str = node.op_type
        self.name: str = node.name or f"{node.op_type}_{spec.node_index}"
        self.attrs: dict[str, Any] = {a.name: _attr_value(a) for a in node.attribute}
        self.fold = True  # False: emit operators even when their inputs are constants (see importer._MATERIALIZE)
        self.varying: frozenset[int] = frozenset()  # inputs known here whose values follow a dynamic dimension

    # --- reading the node ----------------------------------------------------------------------
    @property
    def num_inputs(self) -> int:
        return len(self.node.input)

    @property
    def num_outputs(self) -> int:
        return len(self.node.output)

    def has_input(self, i: int) -> bool:
        return i < len(self.node.input) and self.node.input[i] != ""

    def input(self, i: int) -> Value:
        """Input i as data. A known input whose value follows a dynamic dimension (a size used in arithmetic) is
        computed at run time instead (see `_Specializer.materialize`)."""
        if not self.has_input(i):
            raise self.fail(f"input {i} is required")
        if i in self.varying:
            return self.spec.materialize(self.node.input[i])
        return self.spec.value(self.node.input[i])

    def optional(self, i: int) -> Value | None:
        return self.input(i) if self.has_input(i) else None

    def const(self, i: int, what: str = "") -> np.ndarray | None:
        """Input i's data, which must be known at import (an initializer, a Constant, or computed from shapes);
        None when the input is absent."""
        if not self.has_input(i):
            return None
        v = self.spec.value(self.node.input[i])
        if not v.is_const or v.data is None:
            raise self.fail(f"input {i} ({what or self.node.input[i]}) must be a constant (an initializer, or "
                            f"computed from shapes only) for dtorch to import it, but it is computed from the "
                            f"model's inputs")
        return v.data

    def output_used(self, k: int) -> bool:
        return k < len(self.node.output) and self.node.output[k] != "" and self.spec.is_used(self.node.output[k])

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def shape(self, v: Value) -> tuple[int, ...]:
        return tuple(int(s) for s in v.shape)

    # --- building the graph --------------------------------------------------------------------
    def fail(self, why: str) -> OnnxImportError:
        return OnnxImportError(f"ONNX node '{self.name}' ({self.op_type}, opset {self.opset}) cannot be imported: "
                               f"{why}")

    def constant(self, data: Any, dtype: Any = None) -> Value:
        v = constant(data, dtype)
        v.dims = list(v.shape)
        return v

    def example(self, v: Value) -> np.ndarray:
        return self.spec.example(v)

    def emit(self, op: str, inputs: Sequence[Value | None], attrs: dict[str, Any] | None = None,
             num_outputs: int = 1) -> Value | list[Value]:
        """Add catalogue operator `op`; its outputs' shapes and example data come from running its kernel."""
        attrs = dict(attrs or {})
        ins = list(inputs)
        if op not in CATALOGUE:
            raise self.fail(f"internal error: '{op}' is not a catalogue operator")
        dtypes = _kernel_outputs(op, ins, attrs)
        if not dtypes:
            got = ", ".join("-" if v is None else np.dtype(v.dtype).name for v in ins)
            takes = "; ".join(f"({', '.join(s.inputs)})" for s in CATALOGUE[op].signatures)
            raise self.fail(f"the runtime's '{op}' takes {takes}; this node gives it ({got})")
        results = self.spec.run_kernel(self, op, attrs, ins, dtypes[:num_outputs])
        if self.fold and all(v is None or v.is_const for v in ins):  # known inputs: the result is a constant, no node
            outs = [self.constant(c_array(r)) for r in results]
        else:
            outs = []
            for r in results:
                out = Value(tuple(int(s) for s in r.shape), r.dtype)
                self.spec.examples[out.uid] = r
                outs.append(out)
            self.spec.graph.nodes.append(Node(op, ins, outs, attrs, self.name))
        return outs[0] if num_outputs == 1 else outs

    def emit1(self, op: str, inputs: Sequence[Value | None], attrs: dict[str, Any] | None = None) -> Value:
        out = self.emit(op, inputs, attrs)
        assert isinstance(out, Value)
        return out

    def reshape(self, x: Value, shape: Sequence[int]) -> Value:
        if tuple(shape) == self.shape(x):
            return x
        return self.emit1("reshape", [x], {"shape": [int(s) for s in shape]})
