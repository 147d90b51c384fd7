"""`dtorch.onnx.import_model`: an ONNX model in, a `.dtm` out, through the same passes and memory plan as
`dt.export`.

How: the model is parsed, checked and (for older files) shape-inferred by the `onnx` package; model-local
functions are inlined. Then the graph is *specialized*: every input gets a concrete example shape and every node
is visited in order. A node whose inputs are all known (initializers, Constant, and everything computed from
shapes: Shape/Gather/Concat/Reshape chains, ConstantOfShape, Range, ...) is evaluated at import by ONNX's own
reference implementation and becomes a constant; `Shape`/`Size` of a computed tensor are known because its
shape is. Every other node goes to its translator (dtorch/onnx/ops/), which emits catalogue operators whose
runtime kernels run on example data, so each value has a concrete shape.

Dynamic dimensions (`dim_param`): the graph is specialized twice, with each dynamic size changed, and the two
graphs are merged exactly like the two traces of `dt.export(dynamic_axes=...)`: what differs becomes a named
dynamic dimension, reshape/expand targets become symbolic, and a graph whose structure changes with the size
(e.g. a Reshape to a constant that bakes in batch 1) is refused with the node's name.

Quantized models (QuantizeLinear / DequantizeLinear, QLinear* operators) are first rewritten by `_qdq.py`: types and
scales checked, uint8 held as int8, QDQ groups fused into the QOperator form, which the translators of
`ops/quant.py` turn into the int8 catalogue operators. Their parity check allows QUANTIZED_PARITY_TOLERANCE.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._export.dynamic import assign_static_dims, merge_traces
from .._export.errors import ExportError
from .._export.exporter import write_graph
from .._export.graph import Graph, Node, Value, c_array
from .._export.passes import run_passes
from .._export.writer import check_writable
from ..catalogue import OPSET
from ._qdq import QuantizedGraph, prepare_quantized
from ._registry import CONTRIB_DOMAIN, CONTRIB_OPS, TRANSLATORS, Ctx, _load, supported_ops
from .errors import OnnxImportError, require_onnx

__all__ = ["MAX_OPSET", "MIN_OPSET", "QUANTIZED_PARITY_TOLERANCE", "ImportReport", "import_model"]

#: The default-domain opsets the translators implement natively: 11 to 21 as torch.onnx, tf2onnx and Paddle2ONNX
#: write them; 22 to 24 only widened the types of the operators translated here (bfloat16, float8, int4), which
#: ONNX's own backend tests at those opsets check (benchmarks/onnx_conformance.py).
MIN_OPSET, MAX_OPSET = 11, 24
#: The default parity tolerance (max error over the output's scale) of a quantized model: its int8 tensors may be a
#: step apart from ONNX Runtime's where a value lies within rounding of a half step (fixed-point against float
#: requantization), and a step early in the graph can move an output by a few of its steps.
QUANTIZED_PARITY_TOLERANCE = 0.05
#: The int8 catalogue operators (a quantized import's summary counts them).
INT8_OPS = ("qconv2d", "qlinear", "qadd", "qmean", "quantize", "dequantize")
#: Opsets below MIN_OPSET are converted up to this one with onnx.version_converter first.
_CONVERT_TO = 13
#: ONNX elem types the runtime takes as graph inputs / outputs.
_IO_DTYPES = ("float32", "int64", "int32", "bool")
#: Operators that turn a shape into data, and the inputs that carry it: when one of those follows a dynamic
#: dimension (an Expand target, a Range bound, a Slice end), the node is not folded: it stays an operator.
_MATERIALIZE = {"Expand": {1}, "Tile": {1}, "ConstantOfShape": {0}, "Range": {0, 1, 2}, "Slice": {1, 2, 3, 4}}
#: Operators never evaluated at import even when their inputs are known (their values are not deterministic).
_NONDETERMINISTIC = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
                     "Bernoulli"}


@dataclass
class ImportReport:
    """What `import_model` did: the file written, the ONNX model's producer and opset, the ONNX operators it
    held, the graph before and after the passes, its dynamic dimensions, warnings and the parity check."""

    path: Path
    source: Path
    producer: str
    opset: int
    onnx_nodes: int
    onnx_ops: dict[str, int]
    nodes_imported: int
    nodes_after_passes: int
    passes: list[tuple[str, int, int]]
    op_list: list[str]
    input_names: list[str]
    output_names: list[str]
    input_shapes: dict[str, list[int | str]]
    output_shapes: dict[str, list[int | str]]
    arena_size: int
    parameter_bytes: int
    warnings: list[str] = field(default_factory=list)
    parity: dict[str, float] | None = None  # output name -> max abs error / output scale, vs ONNX Runtime
    parity_note: str = ""
    quantization: str = ""  # a quantized model's int8 groups and float fallbacks (dtorch/onnx/_qdq.py)

    def summary(self) -> str:
        dyn = {n: s for n, s in self.input_shapes.items() if any(isinstance(d, str) for d in s)}
        lines = [f"imported {self.source} ({self.producer or 'unknown producer'}, opset {self.opset}): "
                 f"{self.onnx_nodes} ONNX nodes -> {self.nodes_after_passes} runtime nodes",
                 "inputs: " + ", ".join(f"{n} {list(s)}" for n, s in self.input_shapes.items()),
                 "outputs: " + ", ".join(f"{n} {list(s)}" for n, s in self.output_shapes.items())]
        if dyn:
            lines.append("dynamic: " + ", ".join(sorted({d for s in dyn.values() for d in s if isinstance(d, str)})))
        lines.append("passes: " + ", ".join(f"{n} {a}->{b}" for n, a, b in self.passes))
        lines.append(f"arena {self.arena_size} B, parameters {self.parameter_bytes} B, ops {', '.join(self.op_list)}")
        if self.quantization:
            lines.append(self.quantization)
        if self.parity is not None:
            worst = max(self.parity.values(), default=0.0)
            lines.append(f"parity vs ONNX Runtime: max error {worst:.3g} x output scale")
        elif self.parity_note:
            lines.append(f"parity: {self.parity_note}")
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)


# --- loading ---------------------------------------------------------------------------------------------------------
def _load_model(path: Path) -> Any:
    import onnx

    if not path.exists():
        raise OnnxImportError(f"{path}: no such file")
    if not path.is_file():
        raise OnnxImportError(f"{path}: not a regular file")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as e:  # DecodeError, OSError
        raise OnnxImportError(f"{path} is not an ONNX model (the protobuf does not parse: {type(e).__name__}: {e})") from None
    if not model.HasField("graph") or (not model.graph.node and not model.graph.output):
        raise OnnxImportError(f"{path} is not an ONNX model (it holds no graph)")
    try:
        from onnx.external_data_helper import load_external_data_for_model

        load_external_data_for_model(model, str(path.parent))
    except Exception as e:
        raise OnnxImportError(f"{path}: its external weight data cannot be read ({type(e).__name__}: {e}); keep the "
                              f"data files next to the model, under the names the model gives") from e
    return model


def _opset(model: Any, path: Path) -> int:
    versions = {o.domain: int(o.version) for o in model.opset_import}
    if "" not in versions and "ai.onnx" not in versions:
        raise OnnxImportError(f"{path} imports no default-domain (ai.onnx) opset")
    return versions.get("", versions.get("ai.onnx", 0))


def _prepare_model(model: Any, path: Path, warnings: list[str]) -> tuple[Any, int]:
    import onnx

    try:
        onnx.checker.check_model(model)
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if "deprecated" not in first:
            raise OnnxImportError(f"{path} fails onnx.checker: {first}") from None
        warnings.append(f"onnx.checker: {first} (imported with its semantics at that opset)")
    opset = _opset(model, path)
    if opset > MAX_OPSET:
        raise OnnxImportError(f"{path} uses opset {opset}; dtorch imports opsets {MIN_OPSET} to {MAX_OPSET}. Export it "
                              f"at opset {MAX_OPSET} or lower (torch.onnx.export(..., opset_version=18))")
    if model.functions:
        from onnx import inliner

        model = inliner.inline_local_functions(model)
    if opset < MIN_OPSET:
        from onnx import version_converter

        try:
            model = version_converter.convert_version(model, _CONVERT_TO)
        except Exception as e:
            raise OnnxImportError(f"{path} uses opset {opset}; dtorch imports opsets {MIN_OPSET} to {MAX_OPSET} and "
                                  f"ONNX's version converter could not convert it to {_CONVERT_TO} ({e}). Export it "
                                  f"again at a newer opset") from e
        warnings.append(f"opset {opset} converted to {_CONVERT_TO} with onnx.version_converter")
        opset = _CONVERT_TO
    return model, opset


def _freeze(model: Any, values: Mapping[str, np.ndarray]) -> None:
    """Turn the named graph inputs into initializers holding `values`."""
    from onnx import numpy_helper

    by_name = {vi.name: vi for vi in model.graph.input}
    for name, arr in values.items():
        vi = by_name.get(name)
        if vi is None:
            raise OnnxImportError(f"constant_inputs names {name!r}, which is not an input of the model (inputs: "
                                  f"{sorted(by_name)})")
        want = _np_dtype(vi.type.tensor_type.elem_type, f"input '{name}'")
        arr = np.asarray(arr)
        if arr.dtype != want:
            raise OnnxImportError(f"constant_inputs[{name!r}] is {arr.dtype.name}, but the input is {want.name}")
        model.graph.input.remove(vi)
        model.graph.initializer.append(numpy_helper.from_array(arr, name))


def _np_dtype(elem_type: int, what: str) -> np.dtype:
    from onnx import helper

    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
    except Exception:
        raise OnnxImportError(f"{what} has ONNX element type {elem_type}, which dtorch does not support") from None


# --- inputs, shapes and dynamic dimensions --------------------------------------------------------------------------
@dataclass
class _InputSpec:
    name: str
    dtype: np.dtype
    dims: list[int | str]  # int = fixed, str = named dynamic (unnamed ones get '<input>_dim<i>')


def _input_specs(model: Any, shapes: Mapping[str, Sequence[int]]) -> list[_InputSpec]:
    inits = {t.name for t in model.graph.initializer}
    specs = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue  # IR < 4: an initializer listed as an input is a constant with a default
        tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if tt is None:
            raise OnnxImportError(f"input '{vi.name}' is not a tensor (sequences, maps and optionals are not "
                                  f"supported)")
        dtype = _np_dtype(tt.elem_type, f"input '{vi.name}'")
        if dtype.name not in _IO_DTYPES:
            hint = " (export the model in float32: model.float() before torch.onnx.export)" if dtype.kind == "f" else ""
            raise OnnxImportError(f"input '{vi.name}' is {dtype.name}; the runtime takes inputs of "
                                  f"{', '.join(_IO_DTYPES)}{hint}")
        dims: list[int | str] = []
        if tt.HasField("shape"):
            for i, d in enumerate(tt.shape.dim):
                if d.HasField("dim_value") and d.dim_value >= 0:
                    dims.append(int(d.dim_value))
                elif d.HasField("dim_param") and d.dim_param:
                    dims.append(str(d.dim_param))
                else:
                    dims.append(f"{vi.name}_dim{i}")
        given = shapes.get(vi.name)
        if given is not None:
            if tt.HasField("shape") and len(given) != len(dims):
                raise OnnxImportError(f"--input-shape {vi.name}={','.join(map(str, given))} has rank {len(given)}, but "
                                      f"the model's input '{vi.name}' has rank {len(dims)} ({_fmt(dims)})")
            if not tt.HasField("shape"):
                dims = [f"{vi.name}_dim{i}" for i in range(len(given))]
            for i, (d, g) in enumerate(zip(dims, given)):
                if isinstance(d, int) and d != g:
                    raise OnnxImportError(f"--input-shape {vi.name}={','.join(map(str, given))}: dimension {i} of "
                                          f"'{vi.name}' is fixed to {d} in the model")
        elif not tt.HasField("shape"):
            raise OnnxImportError(f"input '{vi.name}' has no shape in the model; give one with --input-shape "
                                  f"{vi.name}=1,3,224,224 (input_shapes={{'{vi.name}': [...]}})")
        specs.append(_InputSpec(vi.name, dtype, dims))
    unknown = set(shapes) - {s.name for s in specs}
    if unknown:
        raise OnnxImportError(f"input_shapes names {sorted(unknown)}, which are not inputs of the model (inputs: "
                              f"{[s.name for s in specs]})")
    return specs


def _fmt(dims: Sequence[int | str]) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


def _dynamic_names(specs: list[_InputSpec], dynamic_axes: Any) -> set[str]:
    """The dimension names that stay dynamic."""
    declared = {d for s in specs for d in s.dims if isinstance(d, str)}
    if dynamic_axes is None:
        return declared
    if isinstance(dynamic_axes, str):
        dynamic_axes = [dynamic_axes]
    if isinstance(dynamic_axes, Mapping):
        names = set()
        by_name = {s.name: s for s in specs}
        for inp, axes in dynamic_axes.items():
            if inp not in by_name:
                raise OnnxImportError(f"dynamic_axes names {inp!r}, which is not an input (inputs: {sorted(by_name)})")
            items = axes.items() if isinstance(axes, Mapping) else ((a, None) for a in axes)
            s = by_name[inp]
            for a, nm in items:
                if not isinstance(a, int) or not -len(s.dims) <= a < len(s.dims):
                    raise OnnxImportError(f"dynamic_axes[{inp!r}] names dimension {a!r}, but '{inp}' has "
                                          f"{len(s.dims)} dimensions")
                d = s.dims[a % len(s.dims)]
                name = nm or (d if isinstance(d, str) else f"{inp}_dim{a % len(s.dims)}")
                s.dims[a % len(s.dims)] = name
                names.add(name)
        return names
    try:
        names = {str(n) for n in dynamic_axes}
    except TypeError:
        raise OnnxImportError(f"dynamic_axes must be None, a list of dimension names or a dict, got "
                              f"{type(dynamic_axes).__name__}") from None
    missing = names - declared
    if missing:
        raise OnnxImportError(f"dynamic dimension(s) {sorted(missing)} are not in the model; its inputs' dynamic "
                              f"dimensions are {sorted(declared) or 'none'}")
    return names


def _sizes(specs: list[_InputSpec], shapes: Mapping[str, Sequence[int]]) -> dict[str, int]:
    """The example size of every named dimension: from input_shapes where given, else 1."""
    sizes: dict[str, int] = {}
    for s in specs:
        given = shapes.get(s.name)
        for i, d in enumerate(s.dims):
            if not isinstance(d, str):
                continue
            g = int(given[i]) if given is not None else None
            if g is not None and g < 0:
                raise OnnxImportError(f"input_shapes gives '{s.name}' dimension {i} the size {g}; sizes must be >= 0")
            if d in sizes and g is not None and sizes[d] != g:
                raise OnnxImportError(f"dimension '{d}' is given two sizes ({sizes[d]} and {g})")
            if g is not None or d not in sizes:
                sizes[d] = g if g is not None else sizes.get(d, 1)
    return sizes


def _example_inputs(specs: list[_InputSpec], sizes: Mapping[str, int], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for s in specs:
        shape = tuple(d if isinstance(d, int) else sizes[d] for d in s.dims)
        if s.dtype.kind == "f":
            out.append(rng.standard_normal(shape).astype(s.dtype))
        else:
            out.append(np.zeros(shape, dtype=s.dtype))  # index 0 is valid for every gather/embedding
    return out


# --- specialization ---------------------------------------------------------------------------------------------------
class _Specializer:
    """Builds the export-IR graph of the ONNX graph for one set of concrete input shapes, one node at a time
    (`step`), so that two specializations (the example sizes and the changed ones) can go through the graph
    side by side and see which known values follow the dynamic dimensions (see `_specialize`)."""

    def __init__(self, model: Any, opset: int, specs: list[_InputSpec], examples: list[np.ndarray]) -> None:
        self.model, self.opset, self.specs = model, opset, specs
        self.graph = Graph()
        self.values: dict[str, Value] = {}
        self.examples: dict[int, np.ndarray] = {}
        self.inputs = examples
        self.node_index = 0
        # Known values by ONNX name: the node that computed each, and which of its inputs followed a dynamic
        # dimension; and the ones computed again at run time (`materialize`).
        self.recipes: dict[str, tuple[Any, frozenset[int]]] = {}
        self.at_run_time: dict[str, Value] = {}
        g = model.graph
        self.used = {i for n in g.node for i in n.input if i} | {o.name for o in g.output}
        for s, x in zip(specs, examples):
            v = Value(tuple(x.shape), x.dtype, "input", None, s.name)
            self.graph.inputs.append(v)
            self.values[s.name] = v
            self.examples[v.uid] = x
        from onnx import numpy_helper

        for t in g.initializer:
            try:
                arr = numpy_helper.to_array(t)
            except Exception as e:
                raise OnnxImportError(f"initializer '{t.name}' cannot be read ({type(e).__name__}: {e})") from e
            self._bind_constant(t.name, arr)

    def _bind_constant(self, name: str, arr: np.ndarray) -> Value:
        arr = c_array(arr)
        v = Value(tuple(arr.shape), arr.dtype, "constant", arr, name)
        v.dims = list(arr.shape)
        self.values[name] = v
        return v

    def is_used(self, name: str) -> bool:
        return name in self.used

    def value(self, name: str) -> Value:
        v = self.values.get(name)
        if v is None:
            raise OnnxImportError(f"tensor '{name}' is used before any node produces it (the graph is not in "
                                  f"topological order, or the name is wrong)")
        return v

    def example(self, v: Value) -> np.ndarray:
        if v.data is not None and v.is_const:
            return v.data
        return self.examples[v.uid]

    def run_kernel(self, ctx: Ctx, op: str, attrs: dict[str, Any], ins: list[Value | None],
                   dtypes: list[str]) -> list[np.ndarray]:
        from ..runtime import _C

        arrays = [None if v is None else self.example(v) for v in ins]
        try:
            return list(_C.run_kernel(op, attrs, arrays, output_dtypes=dtypes, num_outputs=len(dtypes)))
        except Exception as e:
            shapes = ", ".join("-" if a is None else f"{a.dtype.name}{list(a.shape)}" for a in arrays)
            raise ctx.fail(f"the runtime's '{op}' refuses it ({shapes}): {e}") from None

    def _fold(self, node: Any, ctx: Ctx) -> list[Any] | None:
        """The node's outputs, evaluated by ONNX's reference implementation; None when it fails there but dtorch
        translates the operator (its kernels then compute the constant)."""
        from onnx.reference import ReferenceEvaluator

        feeds = {n: self.value(n).data for n in node.input if n}
        try:
            ref = ReferenceEvaluator(node, opsets={"": self.opset})
            return list(ref.run(None, feeds))
        except Exception as e:
            if node.op_type in TRANSLATORS:
                return None
            raise ctx.fail(f"its inputs are all known, but evaluating it at import failed "
                           f"({type(e).__name__}: {e})") from None

    def materialize(self, name: str) -> Value:
        """The known value `name`, which follows a dynamic dimension, computed by operators at run time: the nodes
        that computed it at import are translated again, from a `shape` operator of the computed tensor whose
        shape it came from (e.g. seq_len in flat indices batch_idx * seq_len + pos)."""
        v = self.at_run_time.get(name)
        if v is not None:
            return v
        node, varying = self.recipes[name]
        ctx = Ctx(self, node, self.opset)
        ctx.varying, ctx.fold = varying, False
        if node.op_type == "Shape":
            x = self.value(node.input[0])
            lo, hi, _ = slice(ctx.attr("start", 0), ctx.attr("end", None)).indices(len(x.shape))  # clamped
            outs: list[Any] = [ctx.emit1("shape", [x], {"start": lo, "end": max(lo, hi)})]
        else:
            fn = TRANSLATORS.get(node.op_type)
            if fn is None:
                raise ctx.fail(f"its result follows a dynamic dimension and is used as data, so dtorch computes it at "
                               f"run time, but it does not translate {node.op_type}. Import with that dimension fixed "
                               f"(--input-shape / --static)")
            outs = list(fn(ctx))
        for k, out_name in enumerate(node.output):
            if out_name and k < len(outs) and isinstance(outs[k], Value):
                self.at_run_time[out_name] = outs[k]
        if name not in self.at_run_time:
            raise ctx.fail(f"its output '{name}' follows a dynamic dimension but could not be computed at run time")
        return self.at_run_time[name]

    def step(self, idx: int, node: Any, varying: frozenset[int] = frozenset()) -> None:
        """Specialize node `idx`. `varying`: the positions of its inputs that are known here but have other values
        at the other sizes of the dynamic dimensions (shapes computed from them)."""
        self.node_index = idx
        ctx = Ctx(self, node, self.opset)
        ctx.varying = varying
        if node.domain not in ("", "ai.onnx") and not (node.domain == CONTRIB_DOMAIN and node.op_type in CONTRIB_OPS):
            contrib = ", ".join(sorted(CONTRIB_OPS))
            raise OnnxImportError(f"ONNX node '{ctx.name}' is {node.domain}::{node.op_type}, an operator of a "
                                  f"custom domain; dtorch imports the standard (ai.onnx) operators, and of "
                                  f"{CONTRIB_DOMAIN} {contrib}")
        ins = [self.value(n) if n else None for n in node.input]
        # A shape that follows a dynamic dimension and becomes data (an Expand target, a Range bound, ...) must
        # stay an operator, or the graph would bake in the example size.
        ctx.fold = not (varying & _MATERIALIZE.get(node.op_type, set()))
        outs: list[Any] | None = None
        if node.op_type in ("Shape", "Size") and ins and ins[0] is not None:
            shape = np.array(ins[0].shape, dtype=np.int64)
            if node.op_type == "Size":
                outs = [np.array(int(np.prod(shape)), dtype=np.int64)]
            else:
                start, end = ctx.attr("start", 0), ctx.attr("end", None)
                outs = [shape[start:end]]
        elif ctx.fold and all(v is None or v.is_const for v in ins) and node.op_type not in _NONDETERMINISTIC and \
                (ins or node.op_type in ("Constant", "ConstantOfShape", "Range", "EyeLike")) and \
                not any(a.type in (5, 10) for a in node.attribute):  # no subgraph attributes
            outs = self._fold(node, ctx)
        if outs is None:
            fn = TRANSLATORS.get(node.op_type)
            if fn is None:
                raise OnnxImportError(
                    f"ONNX operator '{node.op_type}' (node '{ctx.name}', opset {self.opset}) is not supported by "
                    f"dtorch.onnx. Supported operators: {', '.join(supported_ops())}")
            outs = list(fn(ctx))
        for k, name in enumerate(node.output):
            if not name:
                continue
            o = outs[k] if k < len(outs) else None
            if o is None:
                if self.is_used(name):
                    raise ctx.fail(f"its output {k} ('{name}') is used, which dtorch does not support")
                continue
            self.values[name] = o if isinstance(o, Value) else self._bind_constant(name, np.asarray(o))
            self.recipes[name] = (node, varying)

    def finish(self) -> Graph:
        for o in self.model.graph.output:
            self.graph.outputs.append(self._output(self.value(o.name)))
        return self.graph

    def _output(self, v: Value) -> Value:
        """A graph output must be produced by a node, and by its own: copy an input, a constant or a repeat."""
        if v.kind == "intermediate" and all(o is not v for o in self.graph.outputs):
            return v
        out = Value(v.shape, v.dtype)
        self.examples[out.uid] = self.example(v)
        self.graph.nodes.append(Node("reshape", [v], [out], {"shape": [0] * len(v.shape)}, "output_copy"))
        return out


class _OtherSizesError(OnnxImportError):
    """The import fails at the changed sizes of the dynamic dimensions only."""


def _varying(a: _Specializer, b: _Specializer, node: Any) -> frozenset[int]:
    """The positions of the node's inputs that are known in both specializations but differ (in shape or value)."""
    out = []
    for i, name in enumerate(node.input):
        if not name:
            continue
        va, vb = a.values.get(name), b.values.get(name)
        if va is None or vb is None or not (va.is_const and vb.is_const):
            continue
        if va.shape != vb.shape or va.dtype != vb.dtype or not np.array_equal(va.data, vb.data, equal_nan=True):
            out.append(i)
    return frozenset(out)


def _specialize(model: Any, opset: int, specs: list[_InputSpec], sizes: Mapping[str, int],
                changed: Mapping[str, int] | None) -> tuple[Graph, Graph | None, list[np.ndarray]]:
    """The graph at the example sizes, and (with `changed`) the graph at the changed sizes of the dynamic
    dimensions, specialized side by side."""
    _load()
    a = _Specializer(model, opset, specs, _example_inputs(specs, sizes, 0))
    b = None if changed is None else _Specializer(model, opset, specs, _example_inputs(specs, {**sizes, **changed}, 1))
    for idx, node in enumerate(model.graph.node):
        varying = frozenset() if b is None else _varying(a, b, node)
        a.step(idx, node, varying)
        if b is not None:
            try:
                b.step(idx, node, varying)
            except OnnxImportError as e:
                raise _OtherSizesError(str(e)) from None
    ga = a.finish()
    return ga, None if b is None else b.finish(), a.inputs


def _same_axis(specs: list[_InputSpec], free: list[str]) -> dict[str, str]:
    """{name: the name it is taken as}: the free dynamic dimensions at the same axis of inputs of the same rank as
    an earlier one (input_ids [s10, s21] and attention_mask [s86, s12] give {s86: s10, s12: s21})."""
    first: dict[tuple[int, int], str] = {}
    alias: dict[str, str] = {}
    for s in specs:
        for i, d in enumerate(s.dims):
            if not isinstance(d, str) or d not in free or d in alias:
                continue
            k = first.setdefault((len(s.dims), i), d)
            if k != d and k not in alias:
                alias[d] = k
    return alias


def _specialize_all(proto: Any, opset: int, specs: list[_InputSpec], sizes: dict[str, int], dynamic: set[str],
                    alias: Mapping[str, str]) -> tuple[Graph, dict[str, int], list[_InputSpec], list[np.ndarray]]:
    """Specialize at `sizes` and at changed sizes of the dynamic dimensions, and merge the two traces into the
    graph with named dimensions. `alias` renames dimensions first (two names taken as one)."""
    for s in specs:
        s.dims = [alias.get(d, d) if isinstance(d, str) else d for d in s.dims]
    sizes = {d: n for d, n in sizes.items() if d not in alias}
    for s in specs:  # dimensions not kept dynamic take their example size
        s.dims = [d if isinstance(d, int) or d in dynamic else sizes[d] for d in s.dims]
    order = [d for d in sizes if d in dynamic]
    changed = {d: sizes[d] + i + 1 for i, d in enumerate(order)}
    desc = ", ".join(f"'{d}' ({sizes[d]} -> {changed[d]})" for d in order)
    other_sizes = ("the model does not support other sizes of its dynamic dimension(s) {}: {}. Import it with those "
                   "dimensions fixed: --input-shape NAME=SIZES / --static (dynamic_axes=[]), or name the ones that "
                   "can vary with --dynamic")
    try:
        ga, gb, example = _specialize(proto, opset, specs, sizes, changed if order else None)
    except _OtherSizesError as e:
        raise _OtherSizesError(other_sizes.format(", ".join(order), str(e).rstrip("."))) from None
    if gb is not None:
        try:
            merge_traces(ga, gb, desc, {(sizes[d], changed[d]): d for d in order})
        except ExportError as e:
            raise _OtherSizesError(other_sizes.format(", ".join(order), str(e).rstrip("."))) from None
    else:
        assign_static_dims(ga)
    return ga, sizes, specs, example


def import_model(model: str | os.PathLike[str], f: str | os.PathLike[str], *, dynamic_axes: Any = None,
                 input_shapes: Mapping[str, Sequence[int]] | None = None,
                 constant_inputs: Mapping[str, np.ndarray] | None = None, check_parity: bool = True,
                 parity_tolerance: float | None = None) -> ImportReport:
    """Import the ONNX file `model` and write it as the `.dtm` file `f`.

    dynamic_axes: None keeps every dynamic dimension of the inputs (`dim_param`, or unnamed) dynamic under its
    name; a list of names keeps only those (the others take their example size); [] imports a static model; a
    dict {input: {axis: name}} (as dt.export takes) also makes fixed dimensions dynamic.
    input_shapes: {input: sizes}: the example sizes (default 1 for each dynamic dimension) and the shape of an
    input the model leaves without one.
    constant_inputs: {input: array}: inputs whose values are fixed (they become weights), e.g. a `shape` or `axes`
    input that the runtime needs as a constant.
    check_parity: run the imported model and ONNX Runtime (when installed) on the same random inputs and record the
    largest error relative to each output's scale in the report; an error above `parity_tolerance` raises (default
    1e-4; for a quantized model QUANTIZED_PARITY_TOLERANCE, as its int8 requantization rounds apart from ONNX
    Runtime's float one by a step now and then, see dtorch/onnx/_qdq.py).
    """
    require_onnx("dtorch.onnx.import_model")
    src = Path(os.fspath(model))
    dst = Path(os.fspath(f))
    if dst.exists() and src.resolve() == dst.resolve():
        raise OnnxImportError(f"the output {dst} is the input model; give another path")
    check_writable(dst)
    warnings: list[str] = []
    proto = _load_model(src)
    proto, opset = _prepare_model(proto, src, warnings)
    if constant_inputs:
        _freeze(proto, constant_inputs)
    onnx_ops = [n.op_type for n in proto.graph.node]  # as the file holds them (before any QDQ fusion)
    quantized = prepare_quantized(proto, opset)
    shapes = {k: [int(x) for x in v] for k, v in (input_shapes or {}).items()}
    specs = _input_specs(proto, shapes)
    dynamic = _dynamic_names(specs, dynamic_axes)
    sizes = _sizes(specs, shapes)
    declared = [list(s.dims) for s in specs]  # before the fixed dims take their sizes
    defaulted = [d for d in sizes if not any(s.name in shapes and d in s.dims for s in specs)]
    free = [d for d in defaulted if d in dynamic]
    # The example sizes of the dynamic dimensions nobody gave, tried in turn until the model specializes:
    # 2, 3, ... (one size each, not 1: at size 1 a reshape or broadcast can be the identity in one trace only,
    # and the traces would not line up); then the dimensions at the same axis of different inputs taken as one
    # (an exporter that names the batch of each input apart, as torch's dynamo does); then 1, the size most
    # models are exported at, to tell a model that bakes in that size from one that fails at every size.
    attempts: list[tuple[dict[str, int], dict[str, str]]] = [({d: 2 + k for k, d in enumerate(free)}, {})]
    same = _same_axis(specs, free)
    if same:
        kept = [d for d in free if d not in same]
        attempts.append(({d: 2 + k for k, d in enumerate(kept)}, same))
    if free:
        attempts.append(({d: 1 for d in free}, {}))
    errors: list[OnnxImportError] = []
    for guess, alias in attempts:
        try:
            ga, gsizes, gspecs, example = _specialize_all(proto, opset, copy.deepcopy(specs), {**sizes, **guess},
                                                          dynamic, alias)
            break
        except OnnxImportError as e:
            errors.append(e)
    else:
        # A model that runs at size 1 only bakes that size in; one that fails at every size gets a shape error
        # that does not say why (a tracer constant): say which sizes were guessed and how to give the real ones.
        for e in (errors[-1], errors[0]):
            if isinstance(e, _OtherSizesError):
                raise OnnxImportError(str(e)) from None
        if not defaulted:
            raise errors[0] from None
        j = next(i for i, dims in enumerate(declared) if any(d in defaulted for d in dims))
        hint = ",".join(str(d).upper() if isinstance(d, str) else str(d) for d in declared[j])
        guessed = ", ".join(f"{d}={attempts[0][0].get(d, sizes[d])}" for d in defaulted)
        raise OnnxImportError(f"{errors[0]}\n(the model's named dimensions took example sizes nobody gave "
                              f"({guessed}); a model exported with a size fixed inside it needs that size: pass "
                              f"input_shapes, or --input-shape {specs[j].name}={hint} with the sizes it was exported "
                              f"at)") from None
    sizes, specs = gsizes, gspecs
    if alias:
        warnings.append("the model fails when " + "; ".join(
            f"'{a}' differs from '{b}'" for a, b in alias.items()) + ": each pair was imported as one dimension "
            "(they must be equal at run time)")
    for v, s in zip(ga.inputs, specs):
        v.dims = [d if isinstance(d, str) else int(v.shape[i]) for i, d in enumerate(s.dims)]
    nodes_imported = len(ga.nodes)
    out_uids = {v.uid for v in ga.outputs}
    traced_bytes = sum(o.nbytes for n in ga.nodes for o in n.outputs if o.uid not in out_uids)
    stats = run_passes(ga)
    in_names = [s.name for s in specs]
    out_names = [o.name for o in proto.graph.output]
    producer = " ".join(x for x in (proto.producer_name, proto.producer_version) if x)
    try:
        res = write_graph(dst, ga, in_names, out_names, opset=OPSET, nodes_traced=nodes_imported, passes=stats,
                          traced_bytes=traced_bytes,
                          extra_metadata=[("source", f"onnx opset {opset}"), ("onnx_producer", producer or "unknown")])
    except OnnxImportError:
        raise
    except ExportError as e:
        raise OnnxImportError(f"{src}: {e}") from None
    counts: dict[str, int] = {}
    for op_type in onnx_ops:
        counts[op_type] = counts.get(op_type, 0) + 1
    report = ImportReport(dst, src, producer, opset, len(onnx_ops), dict(sorted(counts.items())),
                          nodes_imported, len(ga.nodes), stats, res.op_list, in_names, out_names,
                          {v_name: list(v.dims or v.shape) for v_name, v in zip(in_names, ga.inputs)},
                          {v_name: list(v.dims or v.shape) for v_name, v in zip(out_names, ga.outputs)},
                          res.arena_size, res.parameter_bytes, warnings)
    if quantized is not None:
        report.quantization = _quantization_summary(quantized, ga)
    if check_parity:
        tol = parity_tolerance if parity_tolerance is not None else \
            QUANTIZED_PARITY_TOLERANCE if quantized is not None else 1e-4
        _parity(report, src, dst, in_names, example, tol, constant_inputs or {})
    return report


def _quantization_summary(q: QuantizedGraph, g: Graph) -> str:
    """One line: the int8 operators the quantized model runs and what stayed float between its quantizations."""
    counts: dict[str, int] = {}
    for n in g.nodes:
        if n.op in INT8_OPS:
            counts[n.op] = counts.get(n.op, 0) + 1
    line = "int8: " + (", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "no int8 operator")
    if q.float_groups:
        line += "; float between DequantizeLinear and QuantizeLinear: " + "; ".join(
            f"'{name}' ({why})" for name, why in q.float_groups.items())
    return line


def _parity_error(g: np.ndarray, r: np.ndarray) -> float:
    """Max |g - r| over the output scale; NaN where both are NaN and equal infinities count as agreeing, a NaN or
    an infinity in only one of them as inf; integer and bool outputs 0 or inf (exact)."""
    if r.dtype.kind != "f":
        return 0.0 if np.array_equal(g, r) else float("inf")
    g64, r64 = g.astype(np.float64), r.astype(np.float64)
    if np.any(np.isnan(g64) != np.isnan(r64)):
        return float("inf")
    finite = np.isfinite(r64)
    if np.any(~finite & ~np.isnan(r64) & (g64 != r64)):  # an infinity the other one does not have
        return float("inf")
    if not finite.any():
        return 0.0
    if not np.isfinite(g64[finite]).all():
        return float("inf")
    scale = max(1.0, float(np.abs(r64[finite]).max()))
    return float(np.abs(g64[finite] - r64[finite]).max()) / scale


def _parity(report: ImportReport, src: Path, dst: Path, in_names: list[str], example: list[np.ndarray],
            tol: float, frozen: Mapping[str, np.ndarray]) -> None:
    try:
        import onnxruntime as ort
    except ImportError:
        report.parity_note = "skipped (onnxruntime is not installed: pip install onnxruntime)"
        return
    from ..runtime import InferenceSession

    def reference(feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        return [np.asarray(r) for r in sess.run(None, {**feeds, **{k: np.asarray(v) for k, v in frozen.items()}})]

    feeds = dict(zip(in_names, example))
    try:
        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        sess = ort.InferenceSession(str(src), opts, providers=["CPUExecutionProvider"])
        ref = reference(feeds)
    except Exception as e:
        report.parity_note = f"skipped (ONNX Runtime cannot run the model: {str(e).strip().splitlines()[0]})"
        report.warnings.append(report.parity_note)
        return
    if any(r.dtype.kind == "f" and np.isnan(r).any() for r in ref) and any(x.dtype.kind in "iub" for x in example):
        # Integer inputs are zeros at import (an index valid for any gather); as an attention mask that masks every
        # position, and the outputs are NaN, which compares nothing. Ones instead, when ONNX Runtime takes them.
        ones = {n: (np.ones_like(x) if x.dtype.kind in "iub" else x) for n, x in feeds.items()}
        try:
            ref_ones = reference(ones)
        except Exception:
            ref_ones = None
        if ref_ones is not None and not any(r.dtype.kind == "f" and np.isnan(r).any() for r in ref_ones):
            feeds, ref = ones, ref_ones
    got = InferenceSession(str(dst)).run(None, feeds)
    errs: dict[str, float] = {}
    for name, g, r in zip(report.output_names, got, ref):
        if g.shape != r.shape:
            raise OnnxImportError(f"parity check failed: output '{name}' has shape {list(g.shape)} in dtorch and "
                                  f"{list(r.shape)} in ONNX Runtime")
        errs[name] = _parity_error(g, r)
    report.parity = errs
    bad = {n: e for n, e in errs.items() if not e <= tol}
    if bad:
        raise OnnxImportError(f"parity check failed: {dst} differs from ONNX Runtime on the same inputs (max error "
                              f"x output scale: {', '.join(f'{n} {e:.3g}' for n, e in bad.items())}; tolerance {tol}). "
                              f"This is a dtorch bug; please report it with the model")
