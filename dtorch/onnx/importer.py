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
"""

from __future__ import annotations

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
from ._registry import TRANSLATORS, Ctx, _load, supported_ops
from .errors import OnnxImportError, require_onnx

__all__ = ["MAX_OPSET", "MIN_OPSET", "ImportReport", "import_model"]

#: The default-domain opsets the translators implement natively: 11 to 21 as torch.onnx, tf2onnx and Paddle2ONNX
#: write them; 22 to 24 only widened the types of the operators translated here (bfloat16, float8, int4), which
#: ONNX's own backend tests at those opsets check (benchmarks/onnx_conformance.py).
MIN_OPSET, MAX_OPSET = 11, 24
#: Opsets below MIN_OPSET are converted up to this one with onnx.version_converter first.
_CONVERT_TO = 13
#: ONNX elem types the runtime takes as graph inputs / outputs.
_IO_DTYPES = ("float32", "int64", "int32", "bool")
#: Operators that turn a shape into data: with a shape computed from a dynamic dimension they are not folded.
_MATERIALIZE = {"Expand", "Tile", "ConstantOfShape", "Range"}
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
    """Builds the export-IR graph of the ONNX graph for one set of concrete input shapes."""

    def __init__(self, model: Any, opset: int, specs: list[_InputSpec], examples: list[np.ndarray],
                 dynamic: bool) -> None:
        self.model, self.opset, self.specs, self.dynamic = model, opset, specs, dynamic
        # Constants computed from the shape of a computed tensor: with dynamic dimensions, one that becomes data
        # (Expand/Tile/ConstantOfShape targets) must stay an operator, or it would bake in the example size.
        self.tainted: set[int] = set()
        self.graph = Graph()
        self.values: dict[str, Value] = {}
        self.examples: dict[int, np.ndarray] = {}
        self.node_index = 0
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

    def _fold(self, node: Any, ctx: Ctx) -> list[Any]:
        from onnx.reference import ReferenceEvaluator

        feeds = {n: self.value(n).data for n in node.input if n}
        try:
            ref = ReferenceEvaluator(node, opsets={"": self.opset})
            return list(ref.run(None, feeds))
        except Exception as e:
            raise ctx.fail(f"its inputs are all known, but evaluating it at import failed "
                           f"({type(e).__name__}: {e})") from None

    def run(self) -> Graph:
        _load()
        g = self.model.graph
        for idx, node in enumerate(g.node):
            self.node_index = idx
            ctx = Ctx(self, node, self.opset)
            if node.domain not in ("", "ai.onnx"):
                raise OnnxImportError(f"ONNX node '{ctx.name}' is {node.domain}::{node.op_type}, an operator of a "
                                      f"custom domain; dtorch imports the standard (ai.onnx) operators only")
            ins = [self.value(n) if n else None for n in node.input]
            taint = any(v is not None and v.uid in self.tainted for v in ins)
            ctx.fold = not (taint and node.op_type in _MATERIALIZE)
            if node.op_type in ("Shape", "Size") and ins and ins[0] is not None:
                taint = self.dynamic and not ins[0].is_const
                shape = np.array(ins[0].shape, dtype=np.int64)
                if node.op_type == "Size":
                    outs: list[Any] = [np.array(int(np.prod(shape)), dtype=np.int64)]
                else:
                    start, end = ctx.attr("start", 0), ctx.attr("end", None)
                    outs = [shape[start:end]]
            elif ctx.fold and all(v is None or v.is_const for v in ins) and node.op_type not in _NONDETERMINISTIC and \
                    (ins or node.op_type in ("Constant", "ConstantOfShape", "Range", "EyeLike")) and \
                    not any(a.type in (5, 10) for a in node.attribute):  # no subgraph attributes
                outs = self._fold(node, ctx)
            else:
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
                v = o if isinstance(o, Value) else self._bind_constant(name, np.asarray(o))
                self.values[name] = v
                if taint and v.is_const:
                    self.tainted.add(v.uid)
        for o in g.output:
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


# --- the whole import ---------------------------------------------------------------------------------------------------
def _specialize(model: Any, opset: int, specs: list[_InputSpec], sizes: Mapping[str, int], seed: int,
                dynamic: bool) -> tuple[Graph, list[np.ndarray]]:
    ex = _example_inputs(specs, sizes, seed)
    return _Specializer(model, opset, specs, ex, dynamic).run(), ex


def import_model(model: str | os.PathLike[str], f: str | os.PathLike[str], *, dynamic_axes: Any = None,
                 input_shapes: Mapping[str, Sequence[int]] | None = None,
                 constant_inputs: Mapping[str, np.ndarray] | None = None, check_parity: bool = True,
                 parity_tolerance: float = 1e-4) -> ImportReport:
    """Import the ONNX file `model` and write it as the `.dtm` file `f`.

    dynamic_axes: None keeps every dynamic dimension of the inputs (`dim_param`, or unnamed) dynamic under its
    name; a list of names keeps only those (the others take their example size); [] imports a static model; a
    dict {input: {axis: name}} (as dt.export takes) also makes fixed dimensions dynamic.
    input_shapes: {input: sizes}: the example sizes (default 1 for each dynamic dimension) and the shape of an
    input the model leaves without one.
    constant_inputs: {input: array}: inputs whose values are fixed (they become weights), e.g. a `shape` or `axes`
    input that the runtime needs as a constant.
    check_parity: run the imported model and ONNX Runtime (when installed) on the same random inputs and record the
    largest error relative to each output's scale in the report; an error above `parity_tolerance` raises.
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
    shapes = {k: [int(x) for x in v] for k, v in (input_shapes or {}).items()}
    specs = _input_specs(proto, shapes)
    dynamic = _dynamic_names(specs, dynamic_axes)
    sizes = _sizes(specs, shapes)
    declared = [list(s.dims) for s in specs]  # before the fixed dims take their sizes
    defaulted = [d for d in sizes if not any(s.name in shapes and d in s.dims for s in specs)]
    for s in specs:  # dimensions not kept dynamic take their example size
        s.dims = [d if isinstance(d, int) or d in dynamic else sizes[d] for d in s.dims]
    order = [d for d in sizes if d in dynamic]
    try:
        ga, example = _specialize(proto, opset, specs, sizes, 0, bool(order))
    except OnnxImportError as e:
        if not defaulted:
            raise
        # A model exported with some size baked in (a tracer constant) fails at the example size 1 with a shape
        # error that does not say why: say which sizes were guessed and how to give the real ones.
        k = next(i for i, dims in enumerate(declared) if any(d in defaulted for d in dims))
        hint = ",".join(str(d).upper() if isinstance(d, str) else str(d) for d in declared[k])
        raise OnnxImportError(f"{e}\n(the model's named dimensions {', '.join(defaulted)} took the example size 1; a "
                              f"model exported with a size fixed inside it needs that size: pass input_shapes, or "
                              f"--input-shape {specs[k].name}={hint} with the sizes it was exported at)") from None
    if order:
        changed = {d: sizes[d] + i + 1 for i, d in enumerate(order)}
        desc = ", ".join(f"'{d}' ({sizes[d]} -> {changed[d]})" for d in order)
        try:
            gb, _ = _specialize(proto, opset, specs, {**sizes, **changed}, 1, True)
            merge_traces(ga, gb, desc, {(sizes[d], changed[d]): d for d in order})
        except ExportError as e:
            raise OnnxImportError(
                f"the model does not support other sizes of its dynamic dimension(s) {', '.join(order)}: {e}. Import "
                f"it with those dimensions fixed: --input-shape NAME=SIZES / --static (dynamic_axes=[]), or name the "
                f"ones that can vary with --dynamic") from None
    else:
        assign_static_dims(ga)
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
    for n in proto.graph.node:
        counts[n.op_type] = counts.get(n.op_type, 0) + 1
    report = ImportReport(dst, src, producer, opset, len(proto.graph.node), dict(sorted(counts.items())),
                          nodes_imported, len(ga.nodes), stats, res.op_list, in_names, out_names,
                          {v_name: list(v.dims or v.shape) for v_name, v in zip(in_names, ga.inputs)},
                          {v_name: list(v.dims or v.shape) for v_name, v in zip(out_names, ga.outputs)},
                          res.arena_size, res.parameter_bytes, warnings)
    if check_parity:
        _parity(report, src, dst, in_names, example, parity_tolerance, constant_inputs or {})
    return report


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
