"""`dt.export`: trace -> lower -> (second trace for dynamic axes) -> passes -> plan -> write, and its result."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from ..catalogue import OPSET
from ..tensor import Tensor
from .dynamic import assign_static_dims, merge_traces
from .errors import ExportError
from .graph import Graph, Value
from .lower import lower
from .passes import run_passes
from .planner import PlanNode, plan_memory, verify_plan
from .tracer import trace_model, where
from .writer import DTYPE_CODES, ModelSpec, NodeSpec, TensorSpec, build_bytes, check_writable, write_atomic

__all__ = ["ExportResult", "Prepared", "SUPPORTED_OPSETS", "export", "prepare", "write_graph"]

SUPPORTED_OPSETS = (OPSET,)  # the catalogue's


@dataclass
class ExportResult:
    """What `dt.export` wrote: the file, node counts before/after the passes, the memory plan and the op list."""

    path: Path
    nodes_traced: int
    nodes_after_passes: int
    passes: list[tuple[str, int, int]]
    arena_size: int
    sum_of_intermediates: int
    parameter_bytes: int
    op_list: list[str]
    input_names: list[str] = field(default_factory=list)
    output_names: list[str] = field(default_factory=list)


# The dtypes of the tensors of an exported graph: float32 math, int64 indices, and what comparisons and casts make.
_TENSOR_DTYPES = ("float32", "int64", "int32", "int8", "bool")


def _as_inputs(args: Any, what: str = "dt.export") -> list[Tensor]:
    items = list(args) if isinstance(args, (tuple, list)) else [args]
    if not items:
        raise ExportError(f"{what} needs at least one example input tensor")
    for i, a in enumerate(items):
        if not isinstance(a, Tensor):
            hint = " (wrap NumPy arrays with dt.from_numpy)" if isinstance(a, np.ndarray) else ""
            raise ExportError(f"the example input must be a dtorch.Tensor or a tuple of Tensors, but item {i} is a "
                              f"{type(a).__name__}{hint}")
        if a._data.dtype.name not in _TENSOR_DTYPES:
            raise ExportError(f"example input {i} has dtype {a.dtype}; exported models take float32 (or int64, int32 "
                              f"or bool) inputs: convert it with .float() (and the model with model.float())")
    return items


def _names(given: Sequence[str] | None, n: int, what: str) -> list[str]:
    if given is None:
        return [what] if n == 1 else [f"{what}{i}" for i in range(n)]
    if isinstance(given, str) or not all(isinstance(s, str) and s for s in given):
        raise ExportError(f"{what}_names must be a list of non-empty strings, got {given!r}")
    names = list(given)
    if len(names) != n:
        raise ExportError(f"{what}_names has {len(names)} name(s) but the model has {n} {what}(s): {names}")
    if len(set(names)) != len(names):
        raise ExportError(f"{what}_names must be distinct, got {names}")
    return names


def _axes(dynamic_axes: Mapping[str, Any] | None, shapes: dict[str, tuple[int, ...]]) -> dict[str, dict[int, str]]:
    if dynamic_axes is None:
        return {}
    if not isinstance(dynamic_axes, Mapping):
        raise ExportError(f"dynamic_axes must be a dict such as {{'input': {{0: 'batch'}}}}, got "
                          f"{type(dynamic_axes).__name__}")
    out: dict[str, dict[int, str]] = {}
    for key, spec in dynamic_axes.items():
        if key not in shapes:
            raise ExportError(f"dynamic_axes names {key!r}, which is neither an input nor an output name (names: "
                              f"{sorted(shapes)}); use the names given in input_names/output_names")
        shape = shapes[key]
        items = spec.items() if isinstance(spec, Mapping) else ((d, f"{key}_dim{d}") for d in spec)
        axes: dict[int, str] = {}
        for d, name in items:
            if not isinstance(d, (int, np.integer)) or isinstance(d, bool) or not -len(shape) <= d < len(shape):
                raise ExportError(f"dynamic_axes[{key!r}] names dimension {d!r}, but {key!r} has {len(shape)} "
                                  f"dimension(s) (shape {list(shape)}); use an index in 0..{len(shape) - 1}")
            if not isinstance(name, str) or not name:
                raise ExportError(f"dynamic_axes[{key!r}][{d}] must be a non-empty name such as 'batch', got {name!r}")
            axes[int(d) % len(shape)] = name
        out[key] = axes
    return out


def _changed_input(a: np.ndarray, shape: tuple[int, ...], rng: np.random.Generator) -> Tensor:
    if a.dtype.kind == "f":
        mean = float(a.mean()) if a.size else 0.0
        std = float(a.std()) if a.size else 1.0
        data = (rng.standard_normal(shape) * (std or 1.0) + mean).astype(a.dtype)
    elif a.dtype.kind in "iu":
        lo, hi = (int(a.min()), int(a.max())) if a.size else (0, 0)
        data = rng.integers(lo, hi + 1, size=shape).astype(a.dtype)
    else:
        data = (rng.random(shape) < 0.5).astype(a.dtype)
    return Tensor._wrap(data)


def _second_trace(model: Any, inputs: list[Tensor], in_names: list[str], axes: dict[str, dict[int, str]],
                  ga: Graph, out_names: list[str]) -> None:
    order: list[str] = []
    for nm in in_names:
        for name in axes.get(nm, {}).values():
            if name not in order:
                order.append(name)
    sizes: dict[str, int] = {}
    for nm, x in zip(in_names, inputs):
        for d, name in axes.get(nm, {}).items():
            if sizes.setdefault(name, x._data.shape[d]) != x._data.shape[d]:
                raise ExportError(f"dynamic dimension {name!r} has different sizes in the example inputs "
                                  f"({sizes[name]} and {x._data.shape[d]} in {nm!r}); one name means one size")
    delta = {name: i + 1 for i, name in enumerate(order)}
    rng = np.random.default_rng(1234)
    changed = []
    for nm, x in zip(in_names, inputs):
        shape = list(x._data.shape)
        for d, name in axes.get(nm, {}).items():
            shape[d] += delta[name]
        changed.append(_changed_input(x._data, tuple(shape), rng))
    desc = ", ".join(f"{n!r} ({sizes[n]} -> {sizes[n] + delta[n]})" for n in order)
    try:
        tb = trace_model(model, changed)
    except ExportError:
        raise
    except Exception as e:
        raise ExportError(f"the model failed when traced again with the dynamic dimension(s) {desc}: "
                          f"{type(e).__name__}: {e}. It does not accept other sizes there; remove them from "
                          f"dynamic_axes") from e
    if len(tb.outputs) != len(ga.outputs):
        raise ExportError(f"the model returns {len(tb.outputs)} outputs instead of {len(ga.outputs)} when the dynamic "
                          f"dimension(s) {desc} change; Python control flow depends on tensor shapes")
    merge_traces(ga, lower(tb), desc, {(sizes[n], sizes[n] + delta[n]): n for n in order})
    for nm, v in zip(out_names, ga.outputs):
        assert v.dims is not None
        for d, name in axes.get(nm, {}).items():
            if isinstance(v.dims[d], int):
                raise ExportError(f"dynamic_axes marks dimension {d} of output {nm!r} as {name!r}, but it does not "
                                  f"change when the inputs' dynamic dimensions change (it is always {v.dims[d]}); "
                                  f"remove it from dynamic_axes")
            v.dims[d] = name


def _spec(graph: Graph, in_names: list[str], out_names: list[str], opset: int) -> tuple[ModelSpec, list[Value]]:
    index: dict[int, int] = {}
    values: list[Value] = []

    def add(v: Value) -> None:
        if v.uid not in index:
            index[v.uid] = len(values)
            values.append(v)

    for v in graph.inputs:
        add(v)
    for n in graph.nodes:
        for v in n.inputs:
            if v is not None:
                add(v)
        for v in n.outputs:
            add(v)
    outputs = {v.uid: i for i, v in enumerate(graph.outputs)}
    producer_of = {v.uid: n for n in graph.nodes for v in n.outputs}
    tensors = []
    for i, v in enumerate(values):
        if v.kind == "input":
            kind, name = "input", in_names[graph.inputs.index(v)]
        elif v.is_const:
            kind, name = "constant", v.name or f"const{i}"
        elif v.uid in outputs:
            kind, name = "output", out_names[outputs[v.uid]]
        else:
            kind, name = "intermediate", f"{producer_of[v.uid].op}_{i}"
        data = v.data if kind == "constant" else None
        dtype = np.dtype(v.dtype)
        if kind == "constant":
            assert data is not None
            if dtype.name not in _TENSOR_DTYPES:  # other floats become float32, other integers int64
                if dtype.kind not in "fiu":
                    raise ExportError(f"constant {name!r} has dtype {dtype.name}; .dtm constants are "
                                      f"{', '.join(_TENSOR_DTYPES)}")
                dtype = np.dtype(np.float32 if dtype.kind == "f" else np.int64)
            data = np.ascontiguousarray(data, dtype=dtype)
        elif dtype.name not in _TENSOR_DTYPES:
            n = producer_of.get(v.uid)
            at = f" produced by '{n.op}' at {where(n.name)}" if n is not None else ""
            raise ExportError(f"tensor {name!r}{at} has dtype {dtype.name}; the .dtm runtime computes in float32 (and "
                              f"int64, int32, bool): call model.float() and pass float32 inputs")
        assert dtype.name in DTYPE_CODES
        tensors.append(TensorSpec(name, dtype, list(v.dims if v.dims is not None else v.shape), tuple(v.shape), kind,
                                  data))
    nodes = [NodeSpec(n.op, [-1 if v is None else index[v.uid] for v in n.inputs], [index[v.uid] for v in n.outputs],
                      dict(n.attrs), n.name) for n in graph.nodes]
    # The runtime binds each node's kernel by the dtype of its first present input (of its first output when it has
    # no input), so the op list -- the pruning input -- names the same (op, dtype) keys: embedding:int64, not :float32.
    op_list = sorted({f"{n.op}:{tensors[next((i for i in n.inputs if i >= 0), n.outputs[0])].dtype.name}"
                      for n in nodes})
    inter = [t.kind == "intermediate" for t in tensors]
    pnodes = [PlanNode(n.op, n.inputs, n.outputs) for n in nodes]
    sizes = [v.nbytes for v in values]
    shapes = [v.shape for v in values]
    plan = plan_memory(pnodes, sizes, shapes, [v.dtype for v in values], inter)
    verify_plan(pnodes, sizes, inter, plan.offsets, plan.arena_size)
    spec = ModelSpec(f"dtorch {__version__}", opset, tensors, nodes, [index[v.uid] for v in graph.inputs],
                     [index[v.uid] for v in graph.outputs], plan, [], op_list=op_list)
    return spec, values


@dataclass
class Prepared:
    """A traced, lowered and optimized graph with its names: what `dt.export` writes (and `dtorch.onnx.export`
    translates). `eager_outputs` are the model's outputs for the example inputs."""

    graph: Graph
    input_names: list[str]
    output_names: list[str]
    nodes_traced: int
    passes: list[tuple[str, int, int]]
    traced_bytes: int
    example_inputs: list[np.ndarray]
    eager_outputs: list[np.ndarray]


def prepare(model: Any, args: Any, *, input_names: Sequence[str] | None = None,
            output_names: Sequence[str] | None = None, dynamic_axes: Mapping[str, Any] | None = None,
            what: str = "dt.export") -> Prepared:
    """Trace `model(*args)`, lower it to catalogue operators, name its dynamic dimensions and run the passes."""
    if not callable(model):
        raise ExportError(f"model must be a dtorch.nn.Module (or a callable), got {type(model).__name__}")
    inputs = _as_inputs(args, what)
    in_names = _names(input_names, len(inputs), "input")
    if output_names is not None and (isinstance(output_names, str) or not all(isinstance(s, str) for s in output_names)):
        raise ExportError(f"output_names must be a list of non-empty strings, got {output_names!r}")
    shapes: dict[str, tuple[int, ...]] = {n: tuple(x._data.shape) for n, x in zip(in_names, inputs)}
    ta = trace_model(model, inputs)
    out_names = _names(output_names, len(ta.outputs), "output")
    if set(out_names) & set(in_names):
        raise ExportError(f"input and output names must differ, both have {sorted(set(out_names) & set(in_names))}")
    shapes.update({n: v.shape for n, v in zip(out_names, ta.outputs)})
    axes = _axes(dynamic_axes, shapes)
    ga = lower(ta)
    if any(axes.get(n) for n in in_names):
        _second_trace(model, inputs, in_names, axes, ga, out_names)
    elif any(axes.values()):
        raise ExportError("dynamic_axes marks only output dimensions as dynamic; mark the input dimensions they "
                          "depend on (e.g. {'input': {0: 'batch'}}) too")
    else:
        assign_static_dims(ga)
    nodes_traced = len(ga.nodes)
    outs = {v.uid for v in ga.outputs}
    traced_bytes = sum(o.nbytes for n in ga.nodes for o in n.outputs if o.data is None and o.uid not in outs)
    stats = run_passes(ga)
    return Prepared(ga, in_names, out_names, nodes_traced, stats, traced_bytes,
                    [np.ascontiguousarray(x._data) for x in inputs], [np.ascontiguousarray(o) for o in ta.eager_outputs])


def graph_bytes(graph: Graph, in_names: list[str], out_names: list[str], *, opset: int = OPSET) -> bytes:
    """The `.dtm` bytes of an optimized `graph`, memory-planned, with no metadata (a file for an in-process
    session: calibration and comparison runs of int8 quantization)."""
    spec, _ = _spec(graph, in_names, out_names, opset)
    return build_bytes(spec)


def write_graph(path: Path, graph: Graph, in_names: list[str], out_names: list[str], *, opset: int,
                nodes_traced: int, passes: list[tuple[str, int, int]], traced_bytes: int,
                extra_metadata: Sequence[tuple[str, str]] = (),
                test_vector: tuple[list[np.ndarray], list[np.ndarray]] | None = None) -> ExportResult:
    """Plan the memory of an optimized `graph` and write it atomically as the `.dtm` file `path`."""
    spec, _ = _spec(graph, in_names, out_names, opset)
    param_bytes = sum(int(t.data.nbytes) for t in spec.tensors if t.kind == "constant" and t.data is not None)
    meta = [("dtorch_version", __version__), *extra_metadata, ("nodes_traced", str(nodes_traced)),
            ("nodes_after_passes", str(len(graph.nodes)))]
    meta += [(f"pass.{name}", f"{before}->{after}") for name, before, after in passes]
    meta += [("sum_of_intermediates", str(spec.plan.sum_of_intermediates)), ("arena_size", str(spec.plan.arena_size)),
             ("sum_of_intermediates_before_passes", str(traced_bytes)),
             ("parameter_bytes", str(param_bytes))]
    spec.metadata = meta
    if test_vector is not None:
        spec.test_inputs, spec.test_outputs = test_vector
    write_atomic(path, build_bytes(spec))
    return ExportResult(path, nodes_traced, len(graph.nodes), passes, spec.plan.arena_size,
                        spec.plan.sum_of_intermediates, param_bytes, spec.op_list, in_names, out_names)


def export(model: Any, args: Any, f: str | os.PathLike[str], *, opset: int = 13,
           input_names: Sequence[str] | None = None, output_names: Sequence[str] | None = None,
           dynamic_axes: Mapping[str, Any] | None = None, bundle_example: bool = False) -> ExportResult:
    """Trace `model(*args)` and write it, optimized and memory-planned, to the `.dtm` file `f`."""
    if opset not in SUPPORTED_OPSETS:
        raise ExportError(f"opset {opset} is not supported; this dtorch {__version__} writes opset "
                          f"{', '.join(map(str, SUPPORTED_OPSETS))}")
    if not isinstance(f, (str, os.PathLike)):
        raise ExportError(f"f must be a file path (str or os.PathLike), got {type(f).__name__}")
    if not callable(model):
        raise ExportError(f"model must be a dtorch.nn.Module (or a callable), got {type(model).__name__}")
    path = Path(os.fspath(f))
    _as_inputs(args)
    _names(input_names, len(args) if isinstance(args, (tuple, list)) else 1, "input")
    check_writable(path)
    from ..quant import QuantizedModel

    if isinstance(model, QuantizedModel):
        return _export_quantized(model, args, path, opset, input_names, output_names, dynamic_axes, bundle_example)
    p = prepare(model, args, input_names=input_names, output_names=output_names, dynamic_axes=dynamic_axes)
    return write_graph(path, p.graph, p.input_names, p.output_names, opset=opset, nodes_traced=p.nodes_traced,
                       passes=p.passes, traced_bytes=p.traced_bytes,
                       test_vector=(p.example_inputs, p.eager_outputs) if bundle_example else None)


def _export_quantized(model: Any, args: Any, path: Path, opset: int, input_names: Sequence[str] | None,
                      output_names: Sequence[str] | None, dynamic_axes: Mapping[str, Any] | None,
                      bundle_example: bool) -> ExportResult:
    """Write an int8 model (dt.quant.quantize's result): its graph is built; the example checks that it runs and,
    with bundle_example, becomes the file's test vector."""
    if dynamic_axes is not None:
        raise ExportError("dynamic_axes cannot change an int8 model's dimensions; they were fixed when it was "
                          "quantized (its batch dimension is dynamic when quantize traced a module)")
    inputs = _as_inputs(args)
    in_names = _names(input_names, len(inputs), "input") if input_names is not None else list(model.input_names)
    out_names = list(output_names) if output_names is not None else list(model.output_names)
    if len(in_names) != len(model.input_names) or len(out_names) != len(model.output_names):
        raise ExportError(f"the int8 model has {len(model.input_names)} input(s) and {len(model.output_names)} "
                          f"output(s); got {len(in_names)} input and {len(out_names)} output names")
    example = [np.ascontiguousarray(x._data) for x in inputs]
    outputs = model.run(*example)
    n_float = sum(1 for n in model.graph.nodes if n.op not in ("quantize", "dequantize"))
    meta = [("quantization", f"int8 ({model.method}, {'per-channel' if model.per_channel else 'per-tensor'} "
                             f"weights, {model.calibration_batches} calibration batches)"),
            ("int8_layers", str(sum(1 for layer in model.layers if layer.quantized))),
            ("float_fallback_layers", ",".join(layer.name for layer in model.fallback_layers))]
    return write_graph(path, model.graph, in_names, out_names, opset=opset, nodes_traced=n_float, passes=[],
                       traced_bytes=0, extra_metadata=meta,
                       test_vector=(example, [np.ascontiguousarray(o) for o in outputs]) if bundle_example else None)
