"""Post-training int8 quantization of an export graph: calibrate, quantize the products, keep the rest in float.

`quantize` works on the graph `dt.export` writes (after BatchNorm folding and activation fusion), so a module
(traced here), a `.dtm` file from `dt.export` and one imported from ONNX quantize the same way:

1. Calibration: the float graph runs in the C++ runtime on the calibration batches with every tensor a product
   reads or writes as an extra output; an observer per tensor (dtorch/quant/observers.py) gives its range.
2. Each conv2d and linear with constant weights becomes qconv2d / qlinear: weights per output channel (or per
   tensor) symmetric in [-127, 127], the bias int32 at scale x_scale * w_scale[o], a fused relu / relu6 the
   requantization's clamp (any other fused activation is split off first and becomes a qlut after it).
   The operators on activations become int8 when one of their inputs is int8 already: add, mul and matmul (qadd, qmul,
   qmatmul: a constant operand is quantized per tensor, asymmetric, from its own range), concat (qconcat: each input
   requantized to the output's scale), a global mean (qmean), avg_pool2d (qavg_pool2d: the output keeps the input's
   scale and zero point, as TFLite's AVERAGE_POOL_2D), and the activations sigmoid, tanh, silu, hardswish,
   hardsigmoid, gelu, hardtanh, leaky_relu, elu, softplus and relu (qlut: a 256-entry table computed here from the
   float function, so every target gives the same bits). Max pooling and data movement take int8 as it is.
   Everything else stays float32; `quantize` and `dequantize` nodes convert where an int8 tensor meets a float
   operator, and the graph's outputs are float32.
3. With `fallback_threshold`, a layer whose int8 output differs from the float one by more than the threshold
   (relative RMS error on the calibration batches) is kept in float, and the graph is built again.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._export.graph import Graph, Node, Value, constant
from ..catalogue import CATALOGUE
from ._fixed_point import WMAX, lut_table
from ._fixed_point import quantize as quantize_values
from .observers import METHODS, Observer, make_observer, qparams

__all__ = ["LUT_OPS", "QUANTIZABLE_OPS", "LayerQuant", "QuantizationError", "QuantizedModel", "int8_io", "quantize",
           "unfuse_activations"]

#: The float activation operators that become qlut (their 256-entry table) when their input is int8.
LUT_OPS = ("relu", "sigmoid", "tanh", "silu", "hardswish", "hardsigmoid", "gelu", "hardtanh", "leaky_relu", "elu",
           "softplus")
#: Float operators quantize turns into int8 ones, and the int8 operator each becomes: the products (weights
#: quantized), and the operators that requantize their int8 inputs (taken when an input is int8 already).
QUANTIZABLE_OPS = {"conv2d": "qconv2d", "linear": "qlinear", "mean": "qmean", "adaptive_avg_pool2d": "qmean",
                   "add": "qadd", "mul": "qmul", "matmul": "qmatmul", "concat": "qconcat",
                   "avg_pool2d": "qavg_pool2d", **dict.fromkeys(LUT_OPS, "qlut")}
_MEANS = ("mean", "adaptive_avg_pool2d")
_PRODUCTS = ("conv2d", "linear")
#: The operators on two activations (or an activation and a constant, quantized per tensor from its range).
_BINARY = ("add", "mul", "matmul")
#: The parameters of each activation's float function that its qlut table reads (with the float operator's defaults).
_LUT_PARAMS = {"hardtanh": ("min_val", "max_val"), "leaky_relu": ("alpha",), "elu": ("alpha",),
               "softplus": ("beta", "threshold")}
_POOL_ATTRS = ("kernel", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override")
#: Operators that move or pick int8 values as they are: an int8 input gives an int8 output with its scale and zero
#: point (a max commutes with quantization).
PASS_THROUGH_OPS = ("max_pool2d", "reshape", "permute", "slice", "expand")
_FUSABLE = ("none", "relu", "relu6")
_CONV_ATTRS = ("stride", "padding", "dilation", "groups")


class QuantizationError(ValueError):
    """Quantization cannot go on: what was wrong and what to do."""


@dataclass
class LayerQuant:
    """One product of the float graph: how it was quantized, or why it stayed float."""

    name: str  # the node's module path (or op#index)
    op: str
    quantized: bool
    reason: str = ""  # why it stayed float
    x_scale: float = 0.0
    x_zero_point: int = 0
    y_scale: float = 0.0
    y_zero_point: int = 0
    error: float | None = None  # relative RMS error of its int8 output on the calibration batches


@dataclass
class QuantizedModel:
    """An int8 model: the quantized graph (int8 products, float32 elsewhere) beside the float graph it came from.

    Call it like the float model (arrays or dtorch tensors in, float32 dtorch tensors out); `dt.export(qmodel,
    example_input, "model_int8.dtm")` writes it; `dt.quant.compare(model, qmodel, val_loader)` measures it."""

    graph: Graph
    input_names: list[str]
    output_names: list[str]
    float_graph: Graph | None
    layers: list[LayerQuant]
    method: str = "minmax"
    per_channel: bool = True
    calibration_batches: int = 0
    _session: Any = field(default=None, repr=False)

    @property
    def fallback_layers(self) -> list[LayerQuant]:
        return [layer for layer in self.layers if not layer.quantized]

    def to_bytes(self) -> bytes:
        from .._export.exporter import graph_bytes

        return graph_bytes(self.graph, self.input_names, self.output_names)

    def run(self, *inputs: Any) -> list[np.ndarray]:
        """The outputs (float32 arrays) for these inputs, computed by the C++ runtime's int8 kernels."""
        from ..runtime import InferenceSession

        if self._session is None:
            self._session = InferenceSession(self.to_bytes())
        arrays = _arrays(inputs, len(self.input_names), "QuantizedModel")
        out = self._session.run(None, dict(zip(self.input_names, arrays)))
        return list(out)

    def __call__(self, *inputs: Any) -> Any:
        from ..creation import tensor

        outs = [tensor(o) for o in self.run(*inputs)]
        return outs[0] if len(outs) == 1 else tuple(outs)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> QuantizedModel:
        """An int8 `.dtm` file as a QuantizedModel (its float graph is not in the file: None)."""
        from .._export.reader import read_dtm

        g, ins, outs = read_dtm(path).to_graph()
        layers = []
        for n in g.nodes:
            if n.op in QUANTIZABLE_OPS.values():
                (xs, xz), (ys, yz) = int8_io(n)
                layers.append(LayerQuant(n.name, n.op, True, x_scale=xs, x_zero_point=xz, y_scale=ys,
                                         y_zero_point=yz))
        if not layers:
            raise QuantizationError(f"{os.fspath(path)!r} has no int8 layer; quantize it first (dtorch-edge quantize)")
        return cls(g, ins, outs, None, layers)


def int8_io(n: Node) -> tuple[tuple[float, int], tuple[float, int]]:
    """The (scale, zero point) of an int8 operator's first input and of its output, read from its attributes (qadd,
    qmul and qmatmul name their inputs a_* and b_*, qconcat lists x_scales, qavg_pool2d has one scale for both)."""
    a = n.attrs
    if "scale" in a:
        both = (float(a["scale"]), int(a["zero_point"]))
        return both, both
    if "x_scales" in a:
        x = (float(a["x_scales"][0]), int(a["x_zero_points"][0]))
    else:
        x = (float(a.get("x_scale", a.get("a_scale"))), int(a.get("x_zero_point", a.get("a_zero_point"))))
    return x, (float(a["y_scale"]), int(a["y_zero_point"]))


# --- the model's float graph -------------------------------------------------------------------------------------

def _arrays(inputs: Sequence[Any], n: int, what: str) -> list[np.ndarray]:
    from ..tensor import Tensor

    if len(inputs) != n:
        raise QuantizationError(f"{what} takes {n} input(s), got {len(inputs)}")
    out = []
    for x in inputs:
        a = x._data if isinstance(x, Tensor) else np.asarray(x)
        if a.dtype.kind == "f" and a.dtype != np.float32:
            a = a.astype(np.float32)
        out.append(np.ascontiguousarray(a))
    return out


def batch_inputs(item: Any, n_inputs: int) -> list[Any]:
    """The model inputs of one loader item: the item itself (one input), or the first n_inputs elements of a tuple
    or list such as (x, y) (a labelled batch)."""
    if isinstance(item, dict):
        raise QuantizationError("a loader item must be an array, a tensor, or a tuple (inputs..., label), got a dict")
    if isinstance(item, (tuple, list)):
        if len(item) < n_inputs:
            raise QuantizationError(f"a loader item has {len(item)} element(s) but the model takes {n_inputs} "
                                    f"input(s)")
        return list(item[:n_inputs])
    if n_inputs != 1:
        raise QuantizationError(f"the model takes {n_inputs} inputs; a loader item must be a tuple of them")
    return [item]


def float_graph_of(model: Any, example: list[Any]) -> tuple[Graph, list[str], list[str]]:
    """The float export graph of a module (traced with `example`, batch dimension dynamic) or of a `.dtm` path."""
    if isinstance(model, QuantizedModel):
        raise QuantizationError("the model is already quantized")
    if isinstance(model, (str, os.PathLike)):
        from .._export.reader import read_dtm

        g, ins, outs = read_dtm(Path(os.fspath(model))).to_graph()
        return unfuse_activations(g), ins, outs
    if not callable(model):
        raise QuantizationError(f"model must be a dtorch.nn.Module or a .dtm path, got {type(model).__name__}")
    from .._export.exporter import prepare
    from ..tensor import Tensor

    args = [x if isinstance(x, Tensor) else _tensor(x) for x in example]
    names = ["input"] if len(args) == 1 else [f"input{i}" for i in range(len(args))]
    was_training = getattr(model, "training", False)
    if was_training and hasattr(model, "eval"):
        model.eval()
    try:
        axes = {nm: {0: "batch"} for nm in names} if all(a.ndim >= 1 for a in args) else None
        p = prepare(model, tuple(args), input_names=names, dynamic_axes=axes, what="dt.quant.quantize")
    finally:
        if was_training and hasattr(model, "train"):
            model.train()
    return unfuse_activations(p.graph), p.input_names, p.output_names


def _activation_op(kind: str, attrs: dict[str, Any], fused_on: str) -> tuple[str, dict[str, Any]]:
    """The float operator of a fused `activation` value and its attributes (read from the fused node's)."""
    if kind == "gelu_tanh":
        return "gelu", {"approximate": "tanh"}
    op = next(o for o in CATALOGUE.values() if o.fused_as == kind)
    on = CATALOGUE[fused_on]
    out = {}
    for mine, fused in op.fused_attrs:
        spec = on.attr(fused)
        out[mine] = float(attrs.get(fused, spec.default if spec is not None else 0.0))  # type: ignore[arg-type]
    return op.name, out


def unfuse_activations(g: Graph) -> Graph:
    """g with every activation fused into a conv2d, linear or add that int8 cannot apply as its clamp (anything but
    relu and relu6) as its own operator after it, named "<node>/<activation>": int8 takes the two apart (the product,
    then the activation's qlut table), and calibration sees the tensor between them."""
    nodes: list[Node] = []
    for n in g.nodes:
        kind = n.attrs.get("activation", "none")
        if kind in _FUSABLE or n.op not in QUANTIZABLE_OPS or len(n.outputs) != 1:
            nodes.append(n)
            continue
        op, act_attrs = _activation_op(str(kind), n.attrs, n.op)
        y = n.outputs[0]
        mid = Value(y.shape, y.dtype, dims=y.dims, name=f"{y.name or n.name}.pre")
        kept = {k: v for k, v in n.attrs.items() if k not in ("activation", "min_val", "max_val", "alpha")}
        nodes.append(Node(n.op, list(n.inputs), [mid], kept, n.name))
        nodes.append(Node(op, [mid], [y], act_attrs, f"{n.name}/{op}" if n.name else ""))
    return Graph(list(g.inputs), list(g.outputs), nodes)


def _tensor(x: Any) -> Any:
    from ..creation import tensor

    a = np.asarray(x)
    return tensor(a.astype(np.float32) if a.dtype.kind == "f" else a)


# --- calibration -------------------------------------------------------------------------------------------------

def _observing_graph(g: Graph, watch: list[Value]) -> tuple[Graph, list[Value]]:
    """g with the watched intermediate tensors as extra outputs (graph inputs and outputs are read directly)."""
    have = {v.uid for v in g.outputs} | {v.uid for v in g.inputs}
    extra = [v for v in watch if v.uid not in have and not v.is_const]
    return Graph(list(g.inputs), list(g.outputs) + extra, list(g.nodes)), extra


def run_with(g: Graph, in_names: list[str], out_names: list[str], watch: list[Value],
             batches: Iterable[list[np.ndarray]]) -> Iterable[dict[int, np.ndarray]]:
    """For each batch: every watched tensor's value (by uid) and the graph's outputs, from one runtime session."""
    from .._export.exporter import graph_bytes
    from ..runtime import InferenceSession

    og, extra = _observing_graph(g, watch)
    names = list(out_names) + [f"__watch{i}" for i in range(len(extra))]
    session = InferenceSession(graph_bytes(og, in_names, names))
    for i, arrays in enumerate(batches):
        try:
            outs = session.run(None, dict(zip(in_names, arrays)))
        except Exception as e:
            raise QuantizationError(f"batch {i} cannot run through the model: {e}") from None
        values = {v.uid: a for v, a in zip(og.outputs, outs)}
        values.update({v.uid: a for v, a in zip(g.inputs, arrays)})
        yield values


def _candidates(g: Graph, float_ops: set[str]) -> tuple[list[Node], list[LayerQuant]]:
    """The nodes quantize can take, and a LayerQuant for every node of QUANTIZABLE_OPS (with its reason when not);
    `float_ops`: the operator types the caller keeps in float."""
    cands, layers = [], []
    for i, n in enumerate(g.nodes):
        if n.op not in QUANTIZABLE_OPS:
            continue
        name = n.name or f"{n.op}#{i}"
        act = n.attrs.get("activation", "none")
        floats = [v for v in n.inputs if v is not None and not v.is_const]
        why = ""
        if n.op in float_ops:
            why = f"float_ops keeps {n.op} in float"
        elif any(np.dtype(v.dtype) != np.float32 for v in floats) or np.dtype(n.outputs[0].dtype) != np.float32:
            why = "it does not compute in float32"
        elif act not in _FUSABLE:
            why = f"its fused activation {act!r} has no int8 form (none, relu and relu6 do)"
        elif n.op in _PRODUCTS:
            w = n.inputs[1] if len(n.inputs) > 1 else None
            if w is None or not w.is_const:
                why = "its weight is not a constant"
            elif n.op == "conv2d" and len(w.shape) != 4:
                why = "its weight is not 4-D"
            elif len(n.inputs) > 2 and n.inputs[2] is not None and not n.inputs[2].is_const:
                why = "its bias is not a constant"
            elif n.inputs[0] is None or n.inputs[0].is_const:
                why = "its input is a constant"
        elif not floats:
            why = "its inputs are constants"
        elif n.op in (*_BINARY, "concat") and _constant_operand_problem(n):
            why = _constant_operand_problem(n)
        elif n.op in _MEANS and any(d == 0 for d in floats[0].shape):
            why = "its input is empty"
        elif n.op == "adaptive_avg_pool2d" and list(n.attrs.get("output_size", [])) != [1, 1]:
            why = "only its global form (output size 1 x 1) has an int8 kernel"
        layers.append(LayerQuant(name, n.op, not why, why))
        if not why:
            cands.append(n)
    return cands, layers


def _constant_operand_problem(n: Node) -> str:
    """Why a constant operand of add / mul / matmul / concat cannot be quantized per tensor ("" when it can)."""
    for v in n.inputs:
        if v is None or not v.is_const:
            continue
        if v.data is None or np.dtype(v.data.dtype) != np.float32:
            return "a constant operand is not float32"
        if v.data.size and not np.all(np.isfinite(v.data)):
            return "a constant operand holds an infinity or NaN"
    return ""


def _constant_qparams(data: np.ndarray) -> tuple[float, int]:
    """A constant operand's per-tensor asymmetric int8 quantization: its own range (with 0)."""
    d = np.asarray(data, np.float32)
    return qparams(float(d.min()), float(d.max())) if d.size else (1.0, 0)


def _lut_function(n: Node) -> tuple[str, dict[str, float]]:
    """The qlut function of a float activation node and the parameters its table reads."""
    if n.op == "gelu":
        return ("gelu_tanh" if n.attrs.get("approximate") == "tanh" else "gelu"), {}
    spec = CATALOGUE[n.op]
    out = {}
    for k in _LUT_PARAMS.get(n.op, ()):
        a = spec.attr(k)
        out[k] = float(n.attrs.get(k, a.default if a is not None else 0.0))  # type: ignore[arg-type]
    return n.op, out


# --- building the int8 graph -------------------------------------------------------------------------------------

def _weight_scales(w: np.ndarray, per_channel: bool) -> np.ndarray:
    a = np.abs(w.astype(np.float64)).reshape(w.shape[0], -1)
    m = a.max(axis=1) if per_channel else np.full(w.shape[0], a.max() if a.size else 0.0)
    return (m / WMAX).astype(np.float32)


def _quantize_weights(w: np.ndarray, ws: np.ndarray) -> np.ndarray:
    s = ws.astype(np.float64).reshape((-1,) + (1,) * (w.ndim - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(s > 0, np.rint(w.astype(np.float64) / np.where(s > 0, s, 1.0)), 0.0)
    return np.clip(q, -WMAX, WMAX).astype(np.int8)


def _quantize_bias(b: np.ndarray | None, x_scale: float, ws: np.ndarray) -> np.ndarray | None:
    if b is None:
        return None
    s = x_scale * ws.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(s > 0, np.rint(b.astype(np.float64) / np.where(s > 0, s, 1.0)), 0.0)
    return np.clip(q, -(2**31), 2**31 - 1).astype(np.int32)


def build_int8_graph(g: Graph, take: list[Node], params: dict[int, tuple[float, int]],
                     per_channel: bool) -> tuple[Graph, dict[int, Value], list[Node]]:
    """g with the nodes of `take` in int8 (products always; mean and add when an input is int8 already), the
    pass-through operators on int8 inputs in int8, quantize / dequantize where int8 meets float, float outputs.
    Returns the graph, the int8 tensor holding each quantized float tensor (by the float tensor's uid) and the
    nodes taken."""
    out = Graph(list(g.inputs), [], [])
    take_ids = {id(n) for n in take}
    int8_of: dict[int, Value] = {}
    have_float = {v.uid for v in g.inputs}
    taken: list[Node] = []

    def as_float(v: Value) -> Value:
        if v.is_const or v.uid in have_float:
            return v
        q = int8_of[v.uid]
        s, zp = params[v.uid]
        out.nodes.append(Node("dequantize", [q], [v], {"scale": s, "zero_point": zp}, q.name))
        have_float.add(v.uid)
        return v

    def as_int8(v: Value, at: str) -> Value:
        if v.uid in int8_of:
            return int8_of[v.uid]
        if v.is_const:  # quantized here, once: an int8 constant
            s, zp = params[v.uid]
            assert v.data is not None
            q = constant(quantize_values(v.data, s, zp), name=f"{v.name or at}.int8")
            int8_of[v.uid] = q
            return q
        f = as_float(v)
        s, zp = params[v.uid]
        q = Value(v.shape, np.dtype(np.int8), dims=v.dims, name=at)
        out.nodes.append(Node("quantize", [f], [q], {"scale": s, "zero_point": zp}, at))
        int8_of[v.uid] = q
        return q

    def int8_out(y: Value, name: str) -> Value:
        yq = Value(y.shape, np.dtype(np.int8), dims=y.dims, name=name)
        int8_of[y.uid] = yq
        return yq

    def keep_float(n: Node) -> None:
        for v in n.inputs:
            if v is not None:
                as_float(v)
        out.nodes.append(n)
        have_float.update(o.uid for o in n.outputs)

    for n in g.nodes:
        x = n.inputs[0] if n.inputs else None
        if n.op in PASS_THROUGH_OPS and x is not None and x.uid in int8_of and x.uid in params:
            y = n.outputs[0]
            params[y.uid] = params[x.uid]
            out.nodes.append(Node(n.op, [int8_of[x.uid], *n.inputs[1:]], [int8_out(y, n.name)], dict(n.attrs),
                                  n.name))
            continue
        if id(n) not in take_ids:
            keep_float(n)
            continue
        if n.op not in _PRODUCTS and not any(v is not None and not v.is_const and v.uid in int8_of
                                             for v in n.inputs):
            keep_float(n)  # its inputs are float: quantizing here would only add conversions
            continue
        taken.append(n)
        y = n.outputs[0]
        ys, yz = params[y.uid]
        if n.op in _MEANS:
            xs, xz = params[x.uid]  # type: ignore[union-attr]
            attrs = {k: n.attrs[k] for k in ("axes", "keepdim") if k in n.attrs} if n.op == "mean" else \
                {"axes": [2, 3], "keepdim": 1}
            attrs.update(x_scale=xs, x_zero_point=xz, y_scale=ys, y_zero_point=yz)
            out.nodes.append(Node("qmean", [as_int8(x, n.name)], [int8_out(y, n.name)], attrs, n.name))  # type: ignore[arg-type]
            continue
        if n.op in _BINARY:
            a, b = n.inputs[0], n.inputs[1]
            assert a is not None and b is not None
            (as_, az), (bs, bz) = params[a.uid], params[b.uid]
            attrs = {"a_scale": as_, "a_zero_point": az, "b_scale": bs, "b_zero_point": bz, "y_scale": ys,
                     "y_zero_point": yz, "activation": n.attrs.get("activation", "none")}
            out.nodes.append(Node(QUANTIZABLE_OPS[n.op], [as_int8(a, n.name), as_int8(b, n.name)],
                                  [int8_out(y, n.name)], attrs, n.name))
            continue
        if n.op == "concat":
            parts = [v for v in n.inputs if v is not None]
            attrs = {"axis": n.attrs.get("axis", 0), "x_scales": [params[v.uid][0] for v in parts],
                     "x_zero_points": [params[v.uid][1] for v in parts], "y_scale": ys, "y_zero_point": yz}
            out.nodes.append(Node("qconcat", [as_int8(v, n.name) for v in parts], [int8_out(y, n.name)], attrs,
                                  n.name))
            continue
        assert x is not None
        if n.op == "avg_pool2d":  # the output keeps the input's quantization (TFLite's AVERAGE_POOL_2D)
            params[y.uid] = params[x.uid]
            xs, xz = params[x.uid]
            attrs = {k: n.attrs[k] for k in _POOL_ATTRS if n.attrs.get(k) is not None}
            attrs.update(scale=xs, zero_point=xz)
            out.nodes.append(Node("qavg_pool2d", [as_int8(x, n.name)], [int8_out(y, n.name)], attrs, n.name))
            continue
        if n.op in LUT_OPS:
            xs, xz = params[x.uid]
            fn, fparams = _lut_function(n)
            table = constant(lut_table(fn, xs, xz, ys, yz, **fparams), name=f"{n.name or n.op}.lut")
            attrs = {"function": fn, **fparams, "x_scale": xs, "x_zero_point": xz, "y_scale": ys, "y_zero_point": yz}
            out.nodes.append(Node("qlut", [as_int8(x, n.name), table], [int8_out(y, n.name)], attrs, n.name))
            continue
        w = n.inputs[1]
        b = n.inputs[2] if len(n.inputs) > 2 else None
        assert x is not None and w is not None and w.data is not None
        xs, xz = params[x.uid]
        ws = _weight_scales(w.data, per_channel)
        xq = as_int8(x, n.name)
        wq = constant(_quantize_weights(w.data, ws), name=f"{w.name or n.name}.int8")
        wsv = constant(ws, name=f"{w.name or n.name}.scale")
        bq = _quantize_bias(None if b is None else b.data, xs, ws)
        bv = None if bq is None else constant(bq, name=f"{(b.name if b is not None else '') or n.name}.int32")
        attrs = {k: n.attrs[k] for k in _CONV_ATTRS if k in n.attrs} if n.op == "conv2d" else {}
        attrs.update(x_scale=xs, x_zero_point=xz, y_scale=ys, y_zero_point=yz,
                     activation=n.attrs.get("activation", "none"))
        out.nodes.append(Node(QUANTIZABLE_OPS[n.op], [xq, wq, wsv, bv], [int8_out(y, n.name)], attrs, n.name))
    out.outputs = [as_float(v) for v in g.outputs]
    return out, int8_of, taken


# --- the public entry ------------------------------------------------------------------------------------------

def _positional_inputs(model: Any) -> int:
    """How many inputs a module's forward takes (its required positional parameters; 1 when it cannot say)."""
    import inspect

    fwd = getattr(model, "forward", model)
    try:
        params = inspect.signature(fwd).parameters.values()
    except (TypeError, ValueError):
        return 1
    n = sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty)
    return max(1, n)


def _calibration_batches(loader: Any, n_inputs: int, num_batches: int) -> list[list[np.ndarray]]:
    if isinstance(loader, (str, bytes)) or not hasattr(loader, "__iter__"):
        raise QuantizationError(f"calib_loader must be an iterable of batches (a DataLoader, a list of arrays), got "
                                f"{type(loader).__name__}")
    out = []
    for item in loader:
        out.append(_arrays(batch_inputs(item, n_inputs), n_inputs, "a calibration batch"))
        if len(out) >= num_batches:
            break
    if not out:
        raise QuantizationError("the calibration loader yielded no batches; give it a few hundred representative "
                                "samples")
    return out


def rel_error(ref: np.ndarray, got: np.ndarray) -> float:
    """RMS of got - ref over RMS of ref (0 when both are 0)."""
    ref64, got64 = ref.astype(np.float64), got.astype(np.float64)
    den = float(np.sqrt(np.mean(ref64**2))) if ref64.size else 0.0
    num = float(np.sqrt(np.mean((got64 - ref64) ** 2))) if ref64.size else 0.0
    return num / den if den > 0 else (0.0 if num == 0 else float("inf"))


def quantize(model: Any, calib_loader: Any, method: str = "minmax", per_channel: bool = True,
             num_batches: int = 32, fallback_threshold: float | None = None, percentile: float = 99.99,
             float_ops: Iterable[str] = ()) -> QuantizedModel:
    """Post-training static int8 quantization (see the module's docstring).

    model: a dtorch.nn.Module (traced with the first calibration batch, its batch dimension dynamic) or the path
    of a float `.dtm` (from `dt.export` or `dtorch.onnx.import_model`). calib_loader: an iterable of batches, each an
    input array / tensor or a tuple (inputs..., label); the first `num_batches` are used. method: how each
    activation's range is chosen, "minmax", "percentile" (`percentile`, 99.99 by default) or "mse".
    fallback_threshold: keep in float the layers whose int8 output's relative RMS error exceeds it. float_ops: float
    operator types (keys of QUANTIZABLE_OPS, e.g. "concat" or "sigmoid") to leave in float32 wherever they are (as
    ONNX Runtime's op_types_to_quantize, inverted)."""
    if method not in METHODS:
        raise QuantizationError(f"unknown method {method!r}; use one of {', '.join(METHODS)}")
    if isinstance(num_batches, bool) or not isinstance(num_batches, int) or num_batches < 1:
        raise QuantizationError(f"num_batches must be a positive int, got {num_batches!r}")
    if isinstance(float_ops, str):
        float_ops = (float_ops,)
    keep = set(float_ops)
    if keep - set(QUANTIZABLE_OPS):
        raise QuantizationError(f"float_ops names {', '.join(sorted(keep - set(QUANTIZABLE_OPS)))}, which int8 does not "
                                f"take anyway; it takes {', '.join(QUANTIZABLE_OPS)}")
    if fallback_threshold is not None and not (isinstance(fallback_threshold, (int, float)) and fallback_threshold > 0):
        raise QuantizationError(f"fallback_threshold must be a number > 0 or None, got {fallback_threshold!r}")
    n_inputs = 1
    if isinstance(model, (str, os.PathLike)):
        fg, in_names, out_names = float_graph_of(model, [])
        n_inputs = len(in_names)
        batches = _calibration_batches(calib_loader, n_inputs, num_batches)
    else:
        n_inputs = _positional_inputs(model)
        batches = _calibration_batches(calib_loader, n_inputs, num_batches)
        fg, in_names, out_names = float_graph_of(model, batches[0])
        if len(in_names) != n_inputs:
            raise QuantizationError(f"the model takes {len(in_names)} input(s) but a calibration item holds "
                                    f"{n_inputs}")
    cands, layers = _candidates(fg, keep)
    if not any(n.op in _PRODUCTS for n in cands):
        reasons = "; ".join(f"{lq.name}: {lq.reason}" for lq in layers if lq.op in _PRODUCTS) or \
            "it has no conv2d or linear"
        raise QuantizationError(f"the model has no layer int8 can take ({reasons})")
    watch: dict[int, Value] = {}
    for n in cands:
        for v in (*n.inputs, n.outputs[0]):
            if v is not None and not v.is_const:
                watch[v.uid] = v
    observers: dict[int, Observer] = {uid: make_observer(method, percentile) for uid in watch}
    for values in run_with(fg, in_names, out_names, list(watch.values()), batches):
        for uid, obs in observers.items():
            obs.observe(values[uid])
    params = {uid: obs.qparams() for uid, obs in observers.items()}
    for n in cands:
        if n.op not in _PRODUCTS:  # constant operands of add / mul / matmul / concat: their own range
            for v in n.inputs:
                if v is not None and v.is_const and v.data is not None:
                    params[v.uid] = _constant_qparams(v.data)
    by_node = {id(n): lq for n, lq in zip(cands, [lq for lq in layers if lq.quantized])}

    def build(take: list[Node]) -> tuple[Graph, list[Node]]:
        qg, int8_of, taken = build_int8_graph(fg, take, params, per_channel)
        for n in cands:  # as built (an avg_pool2d's output keeps its input's quantization)
            lq = by_node[id(n)]
            lq.x_scale, lq.x_zero_point = params[n.inputs[0].uid]  # type: ignore[union-attr]
            lq.y_scale, lq.y_zero_point = params[n.outputs[0].uid]
        for n in take:
            if n not in taken:
                by_node[id(n)].quantized = False
                by_node[id(n)].reason = "its inputs are float (no int8 layer before it)"
        _measure(fg, qg, int8_of, in_names, out_names, taken, by_node, params, batches)
        return qg, taken

    take = list(cands)
    qg, taken = build(take)
    if fallback_threshold is not None:
        for _ in range(len(cands)):
            worse = [n for n in taken if (by_node[id(n)].error or 0.0) > fallback_threshold]
            if not worse:
                break
            for n in worse:
                lq = by_node[id(n)]
                lq.quantized = False
                lq.reason = f"its int8 error {lq.error:.3g} exceeds fallback_threshold {fallback_threshold:g}"
            take = [n for n in take if n not in worse]
            if not any(n.op in _PRODUCTS for n in take):
                raise QuantizationError(f"every layer's int8 error exceeds fallback_threshold={fallback_threshold:g}; "
                                        f"raise it or calibrate with more representative data")
            qg, taken = build(take)
    return QuantizedModel(qg, in_names, out_names, fg, layers, method, per_channel, len(batches))


def _measure(fg: Graph, qg: Graph, int8_of: dict[int, Value], in_names: list[str], out_names: list[str],
             take: list[Node], by_node: dict[int, LayerQuant], params: dict[int, tuple[float, int]],
             batches: list[list[np.ndarray]]) -> None:
    """Each taken layer's relative RMS error: its dequantized int8 output against the float graph's, on the
    calibration batches (both whole graphs run, so a layer's error includes what reaches it)."""
    outs = [n.outputs[0] for n in take]
    ref: dict[int, list[np.ndarray]] = {v.uid: [] for v in outs}
    for values in run_with(fg, in_names, out_names, outs, batches):
        for v in outs:
            ref[v.uid].append(values[v.uid])
    got: dict[int, list[np.ndarray]] = {v.uid: [] for v in outs}
    for values in run_with(qg, in_names, out_names, [int8_of[v.uid] for v in outs], batches):
        for v in outs:
            q = int8_of[v.uid]
            s, zp = params[v.uid]
            got[v.uid].append((values[q.uid].astype(np.float32) - zp) * np.float32(s))
    for n in take:
        uid = n.outputs[0].uid
        by_node[id(n)].error = rel_error(np.concatenate([a.ravel() for a in ref[uid]]),
                                         np.concatenate([a.ravel() for a in got[uid]]))
