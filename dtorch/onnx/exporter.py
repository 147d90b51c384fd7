"""`dtorch.onnx.export`: a DTorch model out as a standard ONNX model (default domain, opsets 13..21).

How: the model goes through the `.dtm` pipeline (`dtorch._export.exporter.prepare`: trace, lower to catalogue
operators, name the dynamic dimensions, run the passes), so the ONNX file holds the same optimized graph a `.dtm`
would (BatchNorm folded, activations fused). Each catalogue operator (runtime/OPS.md) is then translated by the
function `OP_MAPPING` holds for it, built with `onnx.helper` only; a node with a fused `activation` becomes the
operator's ONNX node followed by the activation's. Graph inputs and outputs get `dim_param` for their named
dynamic dimensions; reshape targets keep their 0 (copy) and -1 (inferred) entries, which ONNX Reshape reads the
same way, so the file runs at other sizes. The model is checked with `onnx.checker.check_model(full_check=True)`
before the file is written (atomically); a failure leaves no file.

`OP_MAPPING` is data: a catalogue operator without an entry is refused at export with its name and module path,
and tests/onnx/test_onnx_export.py fails while any catalogue operator lacks one.

Where ONNX has no operator of the same meaning, the translation is an exact composition: softplus with beta and
threshold (Where of x and Softplus(beta x) / beta), group_norm (Reshape, InstanceNormalization, Reshape, * w + b),
layer_norm below opset 17, gelu below 20 (the erf or tanh form), avg_pool2d with divisor_override or with
ceil-mode windows that overhang the padding (explicit Pad, AveragePool, times k / PyTorch's divisor), ceil-mode
pools of fixed size (floor mode with extra end padding: ONNX's shape inference disagrees with PyTorch on some
ceil-mode sizes), adaptive pools with uneven windows (one reduction per window), float -> integer cast (saturating,
NaN -> 0), amax/amin of floats (NaN propagates), where of bools (And/Or/Not), circular pad below opset 19
(Slice + Concat), upsampling of a fixed-size input where Resize would pick other source pixels or weights
than PyTorch (Gather of the eager source indices, weighted). What remains approximate: upsampling with a dynamic
H or W is always Resize, whose source positions (i / scale, in float32) can round apart from PyTorch's
(i * float32(1 / scale)) for some sizes and non-integer scales, and which resamples an axis whose size does not
change where PyTorch copies it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._export.errors import ExportError
from .._export.exporter import _as_inputs, _names, prepare
from .._export.graph import Graph, Node, Value
from .._export.tracer import where
from .._export.writer import check_writable, write_atomic
from .._version import __version__
from ..catalogue import CATALOGUE
from .errors import require_onnx

if TYPE_CHECKING:
    import onnx

__all__ = ["DEFAULT_OPSET", "EXPORT_OPSETS", "OP_MAPPING", "OnnxExportReport", "export", "graph_to_onnx",
           "unmapped_ops"]

#: The ONNX opsets (default domain) `export` writes, and its default.
EXPORT_OPSETS = tuple(range(13, 22))
DEFAULT_OPSET = 17

_F32 = np.float32
_INT64_MAX = 2**63 - 1


@dataclass
class OnnxExportReport:
    """What `dtorch.onnx.export` wrote: the file, its opset, its node count and ONNX operator types, the
    catalogue operators they came from, and the graph's inputs and outputs with their shapes (a str entry is a
    named dynamic dimension, None an unnamed dynamic one)."""

    path: Path
    opset: int
    num_nodes: int
    op_types: list[str]
    input_names: list[str]
    output_names: list[str]
    input_shapes: dict[str, list[int | str | None]] = field(default_factory=dict)
    output_shapes: dict[str, list[int | str | None]] = field(default_factory=dict)
    catalogue_ops: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------- building the ONNX graph


class _Builder:
    """The ONNX nodes and initializers of one graph, with unique names for values and nodes."""

    def __init__(self, opset: int) -> None:
        self.opset = opset
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.names: dict[int, str] = {}  # Value uid -> ONNX value name
        self._used: set[str] = set()
        self._node_names: set[str] = set()
        self._cache: dict[tuple[Any, ...], str] = {}
        self.scope = ""  # the module path of the catalogue node being translated

    @staticmethod
    def _unique(base: str, used: set[str]) -> str:
        name, k = base, 1
        while name in used:
            name, k = f"{base}_{k}", k + 1
        used.add(name)
        return name

    def fresh(self, hint: str) -> str:
        return self._unique(hint or "t", self._used)

    def reserve(self, name: str) -> None:
        self._used.add(name)

    def name(self, v: Value) -> str:
        """The ONNX name of `v`; a constant becomes an initializer on first use."""
        got = self.names.get(v.uid)
        if got is not None:
            return got
        if not v.is_const or v.data is None:  # pragma: no cover - nodes are in topological order
            raise ExportError(f"internal error: {v!r} is used before it is computed")
        name = self.init(v.data, v.name or "const")
        self.names[v.uid] = name
        return name

    def init(self, data: Any, hint: str) -> str:
        from onnx import numpy_helper

        arr = np.asarray(data)
        if arr.dtype == np.float64:  # the .dtm rule: float constants are float32; other dtypes stay
            arr = arr.astype(_F32)
        name = self.fresh(hint)
        self.inits.append(numpy_helper.from_array(arr if arr.flags.c_contiguous else arr.copy(order="C"), name))
        return name

    def ints(self, values: Sequence[int]) -> str:
        """A 1-D int64 initializer (shared by every use of the same values)."""
        key = ("ints", tuple(int(v) for v in values))
        if key not in self._cache:
            self._cache[key] = self.init(np.array(key[1], np.int64).reshape(-1), "ints")
        return self._cache[key]

    def scalar(self, value: float, dtype: Any = _F32) -> str:
        """A rank-0 initializer (float32 unless told; shared)."""
        arr = np.array(value, dtype)
        key = ("scalar", arr.dtype.name, arr.item())
        if key not in self._cache:
            self._cache[key] = self.init(arr, "scalar")
        return self._cache[key]

    def filled(self, value: float, shape: Sequence[int]) -> str:
        key = ("filled", float(value), tuple(shape))
        if key not in self._cache:
            self._cache[key] = self.init(np.full(tuple(shape), value, _F32), "ones" if value == 1 else "zeros")
        return self._cache[key]

    def op(self, op_type: str, inputs: Sequence[str | None], out: str | None = None, **attrs: Any) -> str:
        """Add one ONNX node (absent optional inputs are None) and return its (first) output's name."""
        from onnx import helper

        ins = [("" if i is None else i) for i in inputs]
        while ins and ins[-1] == "":
            ins.pop()
        out = out or self.fresh(f"{self.scope}/{op_type}" if self.scope else op_type)
        node_name = self._unique(f"{self.scope or 'model'}/{op_type}", self._node_names)
        self.nodes.append(helper.make_node(op_type, ins, [out], name=node_name,
                                           **{k: v for k, v in attrs.items() if v is not None}))
        return out

    def finish(self, t: str, out: str) -> None:
        """Make the value `t` (just computed) the catalogue node's output `out`."""
        last = self.nodes[-1] if self.nodes else None
        if last is not None and list(last.output) == [t] and t != out:
            last.output[0] = out
        elif t != out:
            self.op("Identity", [t], out)

    def reduce(self, op_type: str, x: str, axes: Sequence[int], keepdims: int, out: str | None = None) -> str:
        """ReduceSum/ReduceMean/ReduceMax over `axes`: axes as an input from opset 13 (ReduceSum) or 18 (others),
        as an attribute before."""
        if (op_type == "ReduceSum" and self.opset >= 13) or self.opset >= 18:
            return self.op(op_type, [x, self.ints(axes)], out, keepdims=keepdims)
        return self.op(op_type, [x], out, axes=list(axes), keepdims=keepdims)

    def const_or_reshape(self, v: Value, shape: Sequence[int]) -> str:
        """`v` reshaped to `shape`: a new initializer for a constant, else a Reshape node."""
        if v.is_const and v.data is not None:
            return self.init(np.asarray(v.data).reshape(tuple(shape)), f"{v.name or 'const'}_reshaped")
        return self.op("Reshape", [self.name(v), self.ints(shape)])


@dataclass
class _N:
    """One catalogue node being translated: its output name, its attributes with the catalogue's defaults filled
    in; `x(i)` is input i's ONNX name (None when absent; a constant becomes an initializer only when asked for)."""

    node: Node
    b: _Builder
    out: str
    attrs: dict[str, Any]
    opset: int

    @property
    def ins(self) -> list[str | None]:
        return [self.x(i) for i in range(len(self.node.inputs))]

    def v(self, i: int) -> Value | None:
        return self.node.inputs[i] if i < len(self.node.inputs) else None

    def val(self, i: int) -> Value:
        v = self.v(i)
        if v is None:
            raise self.fail(f"input {i} is missing")
        return v

    def x(self, i: int = 0) -> str | None:
        v = self.v(i)
        return None if v is None else self.b.name(v)

    def req(self, i: int = 0) -> str:
        x = self.x(i)
        if x is None:
            raise self.fail(f"input {i} is missing")
        return x

    def rank(self, i: int = 0) -> int:
        return len(self.val(i).shape)

    def static(self, i: int, d: int) -> int | None:
        """Dimension d of input i when it is fixed, else None."""
        v = self.val(i)
        dims = v.dims if v.dims is not None else list(v.shape)
        s = dims[d]
        return s if isinstance(s, int) else None

    def fail(self, why: str) -> ExportError:
        return ExportError(f"operator '{self.node.op}' at {where(self.node.name)} cannot be exported to ONNX "
                           f"(opset {self.opset}): {why}")


Translator = Callable[[_Builder, _N], None]


# ---------------------------------------------------------------------------- activations


def _activation(b: _Builder, kind: str, x: str, out: str | None, *, min_val: float = -1.0, max_val: float = 1.0,
                alpha: float = 0.01) -> str:
    """The elementwise activation `kind` (a fused `activation` value) of x."""
    if kind == "relu":
        return b.op("Relu", [x], out)
    if kind in ("relu6", "hardtanh"):
        lo, hi = (0.0, 6.0) if kind == "relu6" else (min_val, max_val)
        return b.op("Clip", [x, b.scalar(lo), b.scalar(hi)], out)
    if kind == "leaky_relu":
        return b.op("LeakyRelu", [x], out, alpha=float(alpha))
    if kind == "sigmoid":
        return b.op("Sigmoid", [x], out)
    if kind == "tanh":
        return b.op("Tanh", [x], out)
    if kind == "silu":
        return b.op("Mul", [x, b.op("Sigmoid", [x])], out)
    if kind == "hardsigmoid":
        return b.op("HardSigmoid", [x], out, alpha=1.0 / 6.0, beta=0.5)
    if kind == "hardswish":
        if b.opset >= 14:
            return b.op("HardSwish", [x], out)
        return b.op("Mul", [x, b.op("HardSigmoid", [x], alpha=1.0 / 6.0, beta=0.5)], out)
    if kind in ("gelu", "gelu_tanh"):
        tanh = kind == "gelu_tanh"
        if b.opset >= 20:
            return b.op("Gelu", [x], out, approximate="tanh" if tanh else "none")
        if tanh:  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
            cube = b.op("Mul", [b.op("Mul", [x, x]), x])
            inner = b.op("Add", [x, b.op("Mul", [cube, b.scalar(0.044715)])])
            phi = b.op("Tanh", [b.op("Mul", [inner, b.scalar(math.sqrt(2.0 / math.pi))])])
        else:  # 0.5 x (1 + erf(x / sqrt(2)))
            phi = b.op("Erf", [b.op("Div", [x, b.scalar(math.sqrt(2.0))])])
        half = b.op("Mul", [x, b.scalar(0.5)])
        return b.op("Mul", [half, b.op("Add", [phi, b.scalar(1.0)])], out)
    raise ExportError(f"internal error: no ONNX form for the activation {kind!r}")  # pragma: no cover


def _fused(b: _Builder, n: _N, t: str) -> None:
    """`t` (the op's result) through the node's fused `activation` into the node's output."""
    kind = str(n.attrs.get("activation", "none"))
    if kind == "none":
        b.finish(t, n.out)
        return
    _activation(b, kind, t, n.out, min_val=float(n.attrs["min_val"]), max_val=float(n.attrs["max_val"]),
                alpha=float(n.attrs["alpha"]))


def _as_activation(kind: str | Callable[[_N], str]) -> Translator:
    """A catalogue activation operator translated as the fused activation of the same name."""

    def translate(b: _Builder, n: _N) -> None:
        k = kind(n) if callable(kind) else kind
        _activation(b, k, n.req(), n.out, min_val=float(n.attrs.get("min_val", -1.0)),
                    max_val=float(n.attrs.get("max_val", 1.0)), alpha=float(n.attrs.get("alpha", 0.01)))

    return translate


def _direct(op_type: str, **fixed: Any) -> Translator:
    """A catalogue operator that is one ONNX operator on the same inputs."""

    def translate(b: _Builder, n: _N) -> None:
        b.op(op_type, n.ins, n.out, **fixed)

    return translate


def _binary(op_type: str) -> Translator:
    def translate(b: _Builder, n: _N) -> None:
        _fused(b, n, b.op(op_type, [n.req(0), n.req(1)]))

    return translate


def _rsqrt(b: _Builder, n: _N) -> None:
    b.op("Reciprocal", [b.op("Sqrt", [n.req()])], n.out)


def _clamp(b: _Builder, n: _N) -> None:
    a = n.attrs
    lo = b.scalar(a["min"]) if a["has_min"] else None
    hi = b.scalar(a["max"]) if a["has_max"] else None
    b.op("Clip", [n.req(), lo, hi], n.out)


def _elu(b: _Builder, n: _N) -> None:
    b.op("Elu", [n.req()], n.out, alpha=float(n.attrs["alpha"]))


def _softplus(b: _Builder, n: _N) -> None:
    # log(1 + exp(beta x)) / beta, or x where beta x > threshold (ONNX Softplus has neither beta nor threshold).
    beta, threshold = float(n.attrs["beta"]), float(n.attrs["threshold"])
    x = n.req()
    bx = x if beta == 1.0 else b.op("Mul", [x, b.scalar(beta)])
    sp = b.op("Softplus", [bx])
    if beta != 1.0:
        sp = b.op("Div", [sp, b.scalar(beta)])
    b.op("Where", [b.op("Greater", [bx, b.scalar(threshold)]), x, sp], n.out)


def _prelu(b: _Builder, n: _N) -> None:
    # ONNX PRelu broadcasts the slope onto x from the right; the catalogue's slope is per channel (dim 1).
    x, w = n.val(0), n.val(1)
    r = len(x.shape)
    count = int(np.prod(w.shape)) if w.shape else 1
    slope = n.req(1) if count == 1 or r <= 2 else b.const_or_reshape(w, [count] + [1] * (r - 2))
    b.op("PRelu", [n.req(0), slope], n.out)


# ---------------------------------------------------------------------------- convolution, linear algebra


def _conv2d(b: _Builder, n: _N) -> None:
    a = n.attrs
    top, bottom, left, right = (int(p) for p in a["padding"])
    w = n.val(1)
    t = b.op("Conv", n.ins, kernel_shape=[int(s) for s in w.shape[2:]], strides=list(a["stride"]),
             pads=[top, left, bottom, right], dilations=list(a["dilation"]), group=int(a["groups"]))
    _fused(b, n, t)


def _conv_transpose2d(b: _Builder, n: _N) -> None:
    a = n.attrs
    ph, pw = (int(p) for p in a["padding"])
    w = n.val(1)
    t = b.op("ConvTranspose", n.ins, kernel_shape=[int(s) for s in w.shape[2:]], strides=list(a["stride"]),
             pads=[ph, pw, ph, pw], output_padding=list(a["output_padding"]), dilations=list(a["dilation"]),
             group=int(a["groups"]))
    _fused(b, n, t)


def _linear(b: _Builder, n: _N) -> None:
    x, w = n.val(0), n.val(1)
    if len(x.shape) == 2:
        _fused(b, n, b.op("Gemm", n.ins, transB=1))
        return
    if w.is_const and w.data is not None:
        wt = b.init(np.ascontiguousarray(np.asarray(w.data).T), f"{w.name or 'weight'}_t")
    else:
        wt = b.op("Transpose", [n.req(1)], perm=[1, 0])
    t = b.op("MatMul", [n.req(0), wt])
    if n.x(2) is not None:
        t = b.op("Add", [t, n.x(2)])
    _fused(b, n, t)


def _batch_norm(b: _Builder, n: _N) -> None:
    c = int(n.val(1).shape[0])
    scale = n.x(3) or b.filled(1.0, [c])
    bias = n.x(4) or b.filled(0.0, [c])
    b.op("BatchNormalization", [n.req(0), scale, bias, n.req(1), n.req(2)], n.out, epsilon=float(n.attrs["eps"]))


def _affine(b: _Builder, n: _N, y: str, w: int, bias: int, shape: Sequence[int] | None) -> str:
    """y * input w + input bias (each when present), the parameters reshaped to `shape` when given."""
    for i, op_type in ((w, "Mul"), (bias, "Add")):
        v = n.v(i)
        if v is not None:
            p = n.req(i) if shape is None else b.const_or_reshape(v, shape)
            y = b.op(op_type, [y, p])
    return y


def _group_norm(b: _Builder, n: _N) -> None:
    # (N, C, *) -> (N, G, -1) -> InstanceNormalization (per (n, g), over the rest) -> back to x's shape.
    g = int(n.attrs["groups"])
    x = n.req(0)
    r = n.rank(0)
    c = int(n.val(0).shape[1])
    grouped = b.op("Reshape", [x, b.ints([0, g, -1])])
    normed = b.op("InstanceNormalization", [grouped, b.filled(1.0, [g]), b.filled(0.0, [g])],
                  epsilon=float(n.attrs["eps"]))
    y = b.op("Reshape", [normed, b.op("Shape", [x])])
    b.finish(_affine(b, n, y, 1, 2, [c] + [1] * (r - 2)), n.out)


def _layer_norm(b: _Builder, n: _N) -> None:
    k = int(n.attrs["normalized_ndim"])
    eps = float(n.attrs["eps"])
    r = n.rank(0)
    norm_dims = [n.static(0, d) for d in range(r - k, r)]
    if b.opset >= 17 and k >= 1 and (n.x(1) is not None or all(d is not None for d in norm_dims)):
        scale = n.x(1) or b.filled(1.0, [int(d) for d in norm_dims if d is not None])
        b.op("LayerNormalization", [n.req(0), scale, n.x(2)], n.out, axis=-k, epsilon=eps)
        return
    # Below opset 17: (x - mean) / sqrt(var + eps) over the last k dims, then * w + b.
    x = n.req(0)
    axes = list(range(r - k, r))
    mean = b.reduce("ReduceMean", x, axes, 1) if k else x
    d = b.op("Sub", [x, mean])
    var = b.reduce("ReduceMean", b.op("Mul", [d, d]), axes, 1) if k else b.op("Mul", [d, d])
    y = b.op("Div", [d, b.op("Sqrt", [b.op("Add", [var, b.scalar(eps)])])])
    b.finish(_affine(b, n, y, 1, 2, None), n.out)


# ---------------------------------------------------------------------------- pooling, resampling


def _pool_out(size: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    """PyTorch's pooled size: the last window must start inside the input or its left padding."""
    span = size + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil else span // s) + 1
    if ceil and (out - 1) * s >= size + p:
        out -= 1
    return out


def _pool_geometry(n: _N, dilation: Sequence[int]) -> tuple[list[int], list[int], list[int], list[int] | None]:
    """kernel, stride, padding, and for ceil_mode the extra end padding per spatial axis that makes floor mode give
    PyTorch's ceil-mode size (None when H or W is dynamic)."""
    a = n.attrs
    kernel = [int(k) for k in a["kernel"]]
    stride = [int(s) for s in (a.get("stride") or kernel)]
    pad = [int(p) for p in a["padding"]]
    extra: list[int] | None = [0, 0]
    if a.get("ceil_mode", 0):
        sizes = [n.static(0, 2), n.static(0, 3)]
        if any(s is None for s in sizes):
            extra = None
        else:
            extra = []
            for size, k, s, p, d in zip(sizes, kernel, stride, pad, dilation):
                assert size is not None
                out = _pool_out(size, k, s, p, d, True)
                extra.append(max(0, (out - 1) * s + d * (k - 1) + 1 - (size + 2 * p)))
    return kernel, stride, pad, extra


def _max_pool2d(b: _Builder, n: _N) -> None:
    dil = [int(d) for d in n.attrs["dilation"]]
    kernel, stride, (ph, pw), extra = _pool_geometry(n, dil)
    # A static ceil-mode pool is written as floor mode with extra end padding (MaxPool pads with -inf): ONNX's own
    # shape inference disagrees with PyTorch (and ONNX Runtime) on some ceil-mode sizes.
    ceil, (eh, ew) = (1, (0, 0)) if extra is None else (0, extra)
    b.op("MaxPool", [n.req()], n.out, kernel_shape=kernel, strides=stride, pads=[ph, pw, ph + eh, pw + ew],
         dilations=dil, ceil_mode=ceil)


def _avg_pool2d(b: _Builder, n: _N) -> None:
    a = n.attrs
    kernel, stride, (ph, pw), extra = _pool_geometry(n, [1, 1])
    div, cip = int(a["divisor_override"]), int(a["count_include_pad"])
    x = n.req()
    if extra is None:  # dynamic H or W in ceil mode: ONNX's ceil mode (ONNX Runtime computes PyTorch's windows)
        if div:
            raise n.fail("divisor_override with ceil_mode=1 needs a fixed H and W (the ceil-mode windows at the "
                         "border have no ONNX form otherwise); make H and W static or use ceil_mode=False")
        b.op("AveragePool", [x], n.out, kernel_shape=kernel, strides=stride, pads=[ph, pw, ph, pw], ceil_mode=1,
             count_include_pad=cip)
        return
    eh, ew = extra
    if not div and (not cip or eh == ew == 0):  # padding beyond the input's is never counted when cip = 0
        b.op("AveragePool", [x], n.out, kernel_shape=kernel, strides=stride, pads=[ph, pw, ph + eh, pw + ew],
             count_include_pad=cip)
        return
    # sum / divisor: the window sums (zero padding made explicit, every window full) times k / divisor, with the
    # divisor PyTorch uses: divisor_override, or the window clipped to the padded input (count_include_pad).
    k = kernel[0] * kernel[1]
    padded = b.op("Pad", [x, b.ints([0, 0, ph, pw, 0, 0, ph + eh, pw + ew]), b.scalar(0.0)], mode="constant")
    mean = b.op("AveragePool", [padded], kernel_shape=kernel, strides=stride)
    if div:
        factor = b.scalar(k / div)
    else:
        sizes = [n.static(0, 2), n.static(0, 3)]
        counts = []
        for size, kk, s, p in zip(sizes, kernel, stride, (ph, pw)):
            assert size is not None
            out = _pool_out(size, kk, s, p, 1, True)
            starts = np.arange(out) * s - p
            counts.append(np.minimum(starts + kk, size + p) - starts)
        factor = b.init((k / np.outer(counts[0], counts[1])).astype(_F32).reshape(1, 1, len(counts[0]), -1),
                        "avg_pool_scale")
    b.op("Mul", [mean, factor], n.out)


def _adaptive_windows(size: int, out: int) -> list[tuple[int, int]]:
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]


def _adaptive(kind: str) -> Translator:
    """adaptive_avg_pool2d / adaptive_max_pool2d: a global pool for 1x1; an AveragePool/MaxPool when every window
    along an axis has one size and a fixed stride; otherwise, per axis, one reduction per window and a Concat
    (exact: the windows are rectangles, so pooling rows then columns gives the same result)."""
    pool, reduce, global_pool = (("AveragePool", "ReduceMean", "GlobalAveragePool") if kind == "avg" else
                                 ("MaxPool", "ReduceMax", "GlobalMaxPool"))

    def uniform(size: int, out: int) -> tuple[int, int] | None:
        w = _adaptive_windows(size, out)
        k = w[0][1] - w[0][0]
        s = w[1][0] - w[0][0] if out > 1 else 1
        ok = s >= 1 and all(e - st == k and st == i * s for i, (st, e) in enumerate(w))  # s = 0: windows repeat
        return (k, s) if ok else None

    def translate(b: _Builder, n: _N) -> None:
        oh, ow = (int(s) for s in n.attrs["output_size"])
        x = n.req()
        if oh == ow == 1:
            b.op(global_pool, [x], n.out)
            return
        sizes = [n.static(0, 2), n.static(0, 3)]
        for axis, (size, out) in enumerate(zip(sizes, (oh, ow))):
            if size is None and out != 1:
                raise n.fail(f"its {'HW'[axis]} dimension is dynamic, and output size {out} along it gives windows "
                             f"that depend on that size, which ONNX pooling cannot express; export with a fixed "
                             f"{'HW'[axis]} (or pool to 1 along it)")
        geo = [None if s is None else uniform(s, o) for s, o in zip(sizes, (oh, ow))]
        if all(g is not None for g in geo):
            (kh, sh), (kw, sw) = (g for g in geo if g is not None)
            b.op(pool, [x], n.out, kernel_shape=[kh, kw], strides=[sh, sw])
            return
        y = x
        for axis, (size, out) in enumerate(zip(sizes, (oh, ow))):
            ax = 2 + axis
            if size is None or out == 1:
                y = b.reduce(reduce, y, [ax], 1)
                continue
            if size == out:
                continue
            g = geo[axis]
            if g is not None:
                k, s = g
                y = b.op(pool, [y], kernel_shape=[k, 1] if axis == 0 else [1, k],
                         strides=[s, 1] if axis == 0 else [1, s])
                continue
            parts = [b.reduce(reduce, b.op("Slice", [y, b.ints([st]), b.ints([e]), b.ints([ax])]), [ax], 1)
                     for st, e in _adaptive_windows(size, out)]
            y = b.op("Concat", parts, axis=ax)
        b.finish(y, n.out)

    return translate


def _resize_node(b: _Builder, n: _N, attrs: dict[str, Any], *, roi: str | None = None,
                 scales: Sequence[float] | None = None, sizes: Mapping[int, int] | None = None) -> None:
    """One Resize of input 0 into the node's output: by `scales` (one per dim), or to `sizes` (dim -> size; the
    other dims keep theirs: the `axes` attribute from opset 18, else a sizes input built from Shape where needed)."""
    x = n.req()
    if scales is not None:
        b.op("Resize", [x, roi, b.init(np.array(scales, _F32), "resize_scales")], n.out, **attrs)
        return
    assert sizes is not None
    axes = sorted(sizes)
    if b.opset >= 18 and roi is None:
        b.op("Resize", [x, None, None, b.ints([sizes[d] for d in axes])], n.out, axes=axes, **attrs)
        return
    dims = [sizes.get(d, n.static(0, d)) for d in range(n.rank())]
    if all(d is not None for d in dims):
        full = b.ints([int(d) for d in dims if d is not None])
    else:  # a kept dim is dynamic: its size comes from Shape(x)
        shape = b.op("Shape", [x])
        parts = [b.ints([d]) if d is not None else b.op("Slice", [shape, b.ints([i]), b.ints([i + 1])])
                 for i, d in enumerate(dims)]
        full = b.op("Concat", parts, axis=0)
    b.op("Resize", [x, roi, None, full], n.out, **attrs)


def _scale_up(scale: float) -> float:
    """The float32 at or just above `scale`: the output size is floor(in * scale) with PyTorch's double scale, and
    ONNX computes it with the float32 one, which rounded down loses a pixel where in * scale is an integer (10 *
    0.7). One ulp up keeps those sizes and moves source positions by about 1e-7 of a pixel."""
    s32 = np.float32(scale)
    return float(np.nextafter(s32, np.float32(np.inf)) if float(s32) < scale else s32)


def _onnx_taps(size: int, out: int, scale: np.float32, mode: str, ctm: str) -> np.ndarray:
    """The (out, size) resampling matrix of ONNX Resize along one axis, computed in float32 as ONNX Runtime does
    (nearest: floor; linear: the position clamped to [0, size - 1])."""
    f = np.float32
    dst = np.arange(out).astype(f)
    if ctm == "asymmetric":
        x = dst / scale
    elif ctm == "half_pixel":
        x = (dst + f(0.5)) / scale - f(0.5)
    else:  # align_corners
        x = dst * f(size - 1) / f(out - 1) if out > 1 else np.zeros(out, f)
    m = np.zeros((out, size))
    rows = np.arange(out)
    if mode == "nearest":
        m[rows, np.clip(np.floor(x).astype(np.int64), 0, size - 1)] = 1.0
        return m
    x = np.clip(x, f(0), f(size - 1))
    lo = x.astype(np.int64)
    hi = np.minimum(lo + 1, size - 1)
    lam = (x - lo.astype(f)).astype(np.float64)
    m[rows, lo] += 1.0 - lam
    m[rows, hi] += lam
    return m


def _catalogue_taps(size: int, out: int, scale: float | None, mode: str, align: bool) -> tuple[np.ndarray, ...]:
    """(i0, i1, w0, w1) of the catalogue's upsampling along one axis: eager mode's own (dtorch/_prims)."""
    from .._prims.upsampling import linear_weights, nearest_indices

    if mode == "nearest":
        idx = nearest_indices(size, out, scale, False)
        return idx, idx, np.ones(out, _F32), np.zeros(out, _F32)
    return linear_weights(size, out, scale, align, _F32)


def _taps_matrix(taps: tuple[np.ndarray, ...], size: int) -> np.ndarray:
    i0, i1, w0, w1 = taps
    m = np.zeros((len(i0), size))
    rows = np.arange(len(i0))
    m[rows, i0] += w0
    m[rows, i1] += w1
    return m


def _gather_resample(b: _Builder, n: _N, taps: list[tuple[np.ndarray, ...]], mode: str) -> None:
    """The catalogue's upsampling of a fixed-size input, exactly: per axis (W, then H, as the kernel), Gather of
    the source rows/columns, weighted (bilinear: x[i0] * w0 + x[i1] * w1)."""
    y = n.req()
    for axis in (3, 2):
        i0, i1, w0, w1 = taps[axis - 2]
        size = n.static(0, axis)
        if len(i0) == size and np.array_equal(i0, np.arange(size)) and not np.any(w1):
            continue  # this axis keeps its size: the kernel copies it
        first = b.op("Gather", [y, b.ints(i0)], axis=axis)
        if mode == "nearest":
            y = first
            continue
        shape = (-1,) if axis == 3 else (-1, 1)
        wa = b.init(np.asarray(w0, _F32).reshape(shape), "resample_w0")
        wb = b.init(np.asarray(w1, _F32).reshape(shape), "resample_w1")
        second = b.op("Gather", [y, b.ints(i1)], axis=axis)
        y = b.op("Add", [b.op("Mul", [first, wa]), b.op("Mul", [second, wb])])
    b.finish(y, n.out)


def _upsample(mode: str) -> Translator:
    """Resize: nearest = asymmetric coordinates with floor (src = floor(dst / scale)); bilinear = half_pixel (PyTorch
    clamps negative source positions to 0, which ONNX's edge handling reproduces; pytorch_half_pixel differs when
    an output size is 1) or align_corners. `scales` become Resize scales, `size` Resize sizes.

    With a fixed H and W the source positions of both are computed at export: where Resize would pick other
    pixels or weights than the catalogue (PyTorch rounds i * float32(1 / scale), ONNX i / scale; PyTorch copies an
    axis whose size does not change, whatever the scale), the node becomes the exact Gather form instead."""

    def translate(b: _Builder, n: _N) -> None:
        a = n.attrs
        align = bool(a.get("align_corners", 0))
        attrs: dict[str, Any] = {"mode": mode}
        if mode == "nearest":
            attrs.update(coordinate_transformation_mode="asymmetric", nearest_mode="floor")
        else:
            attrs["coordinate_transformation_mode"] = "align_corners" if align else "half_pixel"
        sizes = [n.static(0, 2), n.static(0, 3)]
        user: list[float | None]
        if a.get("scales") is not None:
            user = [float(s) for s in a["scales"]]
            onnx_scales = [_scale_up(s) for s in user]
        elif a.get("size") is not None:
            user, onnx_scales = [None, None], []
        else:
            raise n.fail("it has neither 'size' nor 'scales'")
        if all(s is not None for s in sizes):
            ins = [int(s) for s in sizes if s is not None]
            outs = ([int(math.floor(i * s)) for i, s in zip(ins, user) if s is not None] if onnx_scales else
                    [int(s) for s in a["size"]])
            taps = [_catalogue_taps(i, o, s, mode, align) for i, o, s in zip(ins, outs, user)]
            f = np.float32
            used = [f(s) for s in onnx_scales] or [f(o) / f(i) for i, o in zip(ins, outs)]
            same = all((not onnx_scales or int(np.floor(f(i) * sc)) == o)
                       and np.abs(_onnx_taps(i, o, sc, mode, attrs["coordinate_transformation_mode"])
                                  - _taps_matrix(t, i)).max() <= 1e-6
                       for i, o, sc, t in zip(ins, outs, used, taps))
            if not same:
                _gather_resample(b, n, taps, mode)
                return
        if onnx_scales:
            _resize_node(b, n, attrs, scales=[1.0, 1.0, *onnx_scales])
        else:
            oh, ow = (int(s) for s in a["size"])
            _resize_node(b, n, attrs, sizes={2: oh, 3: ow})

    return translate


def _resize(b: _Builder, n: _N) -> None:
    """The catalogue's resize is ONNX Resize: sizes where given (ONNX then maps coordinates by output / input,
    which the catalogue's scales hold for those dims), else scales."""
    a = n.attrs
    sizes, scales = [int(v) for v in a["sizes"]], [float(v) for v in a["scales"]]
    ctm = str(a["coordinate_transformation_mode"])
    if ctm == "half_pixel_symmetric" and b.opset < 19:
        raise n.fail("coordinate_transformation_mode 'half_pixel_symmetric' needs ONNX opset 19 or later")
    if a["antialias"] and b.opset < 18:
        raise n.fail("antialias=1 needs ONNX opset 18 or later")
    attrs: dict[str, Any] = {"mode": str(a["mode"]), "coordinate_transformation_mode": ctm,
                             "nearest_mode": str(a["nearest_mode"]), "cubic_coeff_a": float(a["cubic_coeff_a"]),
                             "exclude_outside": int(a["exclude_outside"])}
    if b.opset >= 18 and a["antialias"]:
        attrs["antialias"] = 1
    roi = None
    if ctm == "tf_crop_and_resize":
        attrs["extrapolation_value"] = float(a["extrapolation_value"])
        roi = b.init(np.array(a.get("roi") or [], _F32), "resize_roi")
    sized = {d: s for d, s in enumerate(sizes) if s}
    scaled = [d for d, s in enumerate(sizes) if not s and scales[d] != 1.0]
    if not sized:
        _resize_node(b, n, attrs, roi=roi, scales=scales)
        return
    # A sized dim whose scale is not output / input (a scales-resize with known shapes): use the scales when
    # they give the same sizes.
    ins = {d: n.static(0, d) for d in sized}
    off = [d for d in sized if ins[d] is not None and not math.isclose(scales[d], sized[d] / ins[d], rel_tol=1e-6)]
    if scaled or off:
        if all(ins[d] is not None and math.floor(ins[d] * scales[d]) == sized[d] for d in sized):  # type: ignore
            _resize_node(b, n, attrs, roi=roi, scales=scales)
            return
        raise n.fail(f"sizes {sizes} with scales {scales} mix output sizes and scale factors in a way one ONNX "
                     f"Resize (scales or sizes, not both) cannot express")
    _resize_node(b, n, attrs, roi=roi, sizes=sized)


# ---------------------------------------------------------------------------- shapes, reductions


def _target(b: _Builder, n: _N, entries: list[int]) -> str:
    """A reshape/expand target: constant, or (with `like_dims`) a Concat of constants and dims of Shape(like)."""
    like_dims = [int(k) for k in (n.attrs.get("like_dims") or [])]
    if not like_dims or n.x(1) is None:
        return b.ints(entries)
    shape = b.op("Shape", [n.req(1)])
    parts = [b.op("Gather", [shape, b.ints([k])], axis=0) if k >= 0 else b.ints([e])
             for e, k in zip(entries, like_dims)]
    return b.op("Concat", parts, axis=0)


def _arange(b: _Builder, n: _N) -> None:
    # Range(start, start + n * step, step) over rank-0 operands: n is the attribute, or (like_dims) a dim of
    # Shape(like) at run time.
    from onnx import helper

    dtype = np.dtype(n.val(0).dtype)
    start = b.op("Reshape", [n.req(0), b.ints([])])
    length = b.op("Reshape", [_target(b, n, [int(n.attrs["shape"][0])]), b.ints([])])
    if dtype != np.int64:
        length = b.op("Cast", [length], to=helper.np_dtype_to_tensor_dtype(dtype))
    step = b.scalar(float(n.attrs.get("step", 1.0)), dtype)
    b.op("Range", [start, b.op("Add", [start, b.op("Mul", [length, step])]), step], n.out)


def _reshape(b: _Builder, n: _N) -> None:
    # ONNX Reshape (allowzero = 0, the default) reads 0 as "copy the input dim" and -1 as "inferred", as the
    # catalogue does, so a symbolic target keeps working at other sizes.
    b.op("Reshape", [n.req(), _target(b, n, [int(s) for s in n.attrs["shape"]])], n.out)


def _expand(b: _Builder, n: _N) -> None:
    # A 0 entry keeps the input dim; ONNX Expand broadcasts both ways, so 1 there does the same at any size.
    b.op("Expand", [n.req(), _target(b, n, [1 if s == 0 else int(s) for s in n.attrs["shape"]])], n.out)


def _permute(b: _Builder, n: _N) -> None:
    b.op("Transpose", [n.req()], n.out, perm=[int(p) for p in n.attrs["perm"]])


def _slice(b: _Builder, n: _N) -> None:
    a = n.attrs
    axes = [int(v) for v in a["axes"]]
    steps = [int(v) for v in a["steps"]] if a.get("steps") else [1] * len(axes)
    b.op("Slice", [n.req(), b.ints(a["starts"]), b.ints(a["ends"]), b.ints(axes), b.ints(steps)], n.out)


def _index_select(b: _Builder, n: _N) -> None:
    b.op("Gather", [n.req(0), n.req(1)], n.out, axis=int(n.attrs["axis"]))


def _embedding(b: _Builder, n: _N) -> None:
    b.op("Gather", [n.req(1), n.req(0)], n.out, axis=0)


def _gather_elements(b: _Builder, n: _N) -> None:
    # ONNX GatherElements takes int64 and int32 indices, negative ones counting from the end, as the catalogue does.
    b.op("GatherElements", [n.req(0), n.req(1)], n.out, axis=int(n.attrs["axis"]))


def _gather_nd(b: _Builder, n: _N) -> None:
    b.op("GatherND", [n.req(0), n.req(1)], n.out, batch_dims=int(n.attrs["batch_dims"]))


def _cumsum(b: _Builder, n: _N) -> None:
    # The axis is an input of ONNX CumSum: an int64 initializer. A rank-0 x sums as a one-element 1-D tensor.
    x = n.req()
    rank = n.rank()
    flags = {"exclusive": int(n.attrs["exclusive"]), "reverse": int(n.attrs["reverse"])}
    axis = b.scalar(int(n.attrs["axis"]) % max(rank, 1), np.int64)
    if rank:
        b.op("CumSum", [x, axis], n.out, **flags)
        return
    y = b.op("CumSum", [b.op("Reshape", [x, b.ints([1])]), axis], **flags)
    b.op("Reshape", [y, b.ints([])], n.out)


def _shape(b: _Builder, n: _N) -> None:
    # Python slicing of the dims, clamped, as ONNX Shape's start/end (opset 15) and Slice do.
    lo, hi = int(n.attrs["start"]), int(n.attrs["end"])
    whole = lo == 0 and hi >= n.rank()
    if b.opset >= 15 or whole:
        b.op("Shape", [n.req()], n.out, **({} if whole else {"start": lo, "end": hi}))
        return
    b.op("Slice", [b.op("Shape", [n.req()]), b.ints([lo]), b.ints([hi]), b.ints([0])], n.out)


def _concat(b: _Builder, n: _N) -> None:
    b.op("Concat", [x for x in n.ins if x is not None], n.out, axis=int(n.attrs["axis"]))


def _pad(b: _Builder, n: _N) -> None:
    # The catalogue's pads are PyTorch's: last dim first, (lo, hi) pairs; ONNX's: every begin, then every end.
    pads = [int(p) for p in n.attrs["pads"]]
    r = n.rank()
    begin, end = [0] * r, [0] * r
    for i in range(len(pads) // 2):
        begin[r - 1 - i], end[r - 1 - i] = pads[2 * i], pads[2 * i + 1]
    mode = str(n.attrs.get("mode", "constant"))
    x = n.req()
    if mode == "constant":  # ONNX Pad crops where a pad is negative, as the catalogue does
        dtype = np.dtype(n.val(0).dtype)  # the value in the input's dtype (integers truncate it toward zero)
        value = float(n.attrs.get("value", 0.0))
        fill = b.scalar(value if dtype.kind == "f" else int(value), dtype if dtype.kind in "fiu" else _F32)
        b.op("Pad", [x, b.ints(begin + end), fill], n.out, mode="constant")
        return
    crop = [i for i in range(r) if begin[i] < 0 or end[i] < 0]
    grow_b, grow_e = [max(p, 0) for p in begin], [max(p, 0) for p in end]

    def cropped(y: str) -> str:  # the negative pads, as one Slice
        if not crop:
            return y
        starts = [max(-begin[i], 0) for i in crop]
        ends = [end[i] if end[i] < 0 else _INT64_MAX for i in crop]
        return b.op("Slice", [y, b.ints(starts), b.ints(ends), b.ints(crop)])

    if mode in ("reflect", "replicate"):
        # PyTorch pads the uncropped input, then crops: Pad by the positive pads, then Slice off the negative ones.
        y = b.op("Pad", [x, b.ints(grow_b + grow_e)], mode="reflect" if mode == "reflect" else "edge")
        b.finish(cropped(y), n.out)
        return
    if mode != "circular":
        raise n.fail(f"pad mode '{mode}' has no ONNX form")
    # circular: crop first, then wrap around the cropped input (ONNX Pad mode "wrap" from opset 19; before, each
    # padded dim is a Concat of the input's tail, the input, and its head).
    y = cropped(x)
    if b.opset >= 19:
        b.op("Pad", [y, b.ints(grow_b + grow_e)], n.out, mode="wrap")
        return
    for i in range(r):
        lo, hi = grow_b[i], grow_e[i]
        if not lo and not hi:
            continue
        parts = [b.op("Slice", [y, b.ints([-lo]), b.ints([_INT64_MAX]), b.ints([i])])] if lo else []
        parts.append(y)
        if hi:
            parts.append(b.op("Slice", [y, b.ints([0]), b.ints([hi]), b.ints([i])]))
        y = b.op("Concat", parts, axis=i)
    b.finish(y, n.out)


def _reduction(op_type: str) -> Translator:
    def translate(b: _Builder, n: _N) -> None:
        r = n.rank()
        axes = n.attrs.get("axes")
        axes = list(range(r)) if axes is None else [int(a) % max(r, 1) for a in axes]
        if not axes:  # an empty list reduces nothing
            b.op("Identity", [n.req()], n.out)
            return
        b.reduce(op_type, n.req(), axes, int(n.attrs["keepdim"]), n.out)

    return translate


def _extreme(op_type: str) -> Translator:
    """amax / amin: ReduceMax / ReduceMin, and for floats NaN where the reduced values hold one (torch.amax
    propagates NaN; ONNX Runtime's ReduceMax skips it)."""
    reduce = _reduction(op_type)

    def translate(b: _Builder, n: _N) -> None:
        from onnx import TensorProto

        axes = n.attrs.get("axes")
        if np.dtype(n.val(0).dtype).kind != "f" or (axes is not None and not list(axes)):
            reduce(b, n)
            return
        r = n.rank()
        axes = list(range(r)) if axes is None else [int(a) % max(r, 1) for a in axes]
        keep = int(n.attrs["keepdim"])
        x = n.req()
        best = b.reduce(op_type, x, axes, keep)
        nan = b.reduce("ReduceMax", b.op("Cast", [b.op("IsNaN", [x])], to=TensorProto.FLOAT), axes, keep)
        b.op("Where", [b.op("Cast", [nan], to=TensorProto.BOOL), b.scalar(np.nan), best], n.out)

    return translate


def _softmax(op_type: str) -> Translator:
    def translate(b: _Builder, n: _N) -> None:
        b.op(op_type, [n.req()], n.out, axis=int(n.attrs["dim"]))

    return translate


def _where(b: _Builder, n: _N) -> None:
    if np.dtype(n.val(1).dtype) != np.bool_:
        b.op("Where", [n.req(0), n.req(1), n.req(2)], n.out)
        return
    # bool values: (cond and x) or (not cond and y), exactly (ONNX Runtime has no bool Where kernel)
    cond = n.req(0)
    picked = b.op("And", [cond, n.req(1)])
    b.op("Or", [picked, b.op("And", [b.op("Not", [cond]), n.req(2)])], n.out)


def _cast(b: _Builder, n: _N) -> None:
    from onnx import helper

    to = np.dtype(str(n.attrs["to"]))
    x = n.req()
    elem = helper.np_dtype_to_tensor_dtype(to)
    if np.dtype(n.val(0).dtype).kind != "f" or to.kind not in "iu":
        b.op("Cast", [x], n.out, to=elem)
        return
    # float -> integer saturates and maps NaN to 0 (ONNX leaves out-of-range values undefined): clip to the
    # largest float32 below 2^(bits-1), Cast, then INT_MAX where x >= 2^(bits-1) and 0 where x is NaN.
    info = np.iinfo(to)
    top = float(2 ** (info.bits - 1))
    hi = float(np.nextafter(np.float32(top), np.float32(0)))
    y = b.op("Cast", [b.op("Clip", [x, b.scalar(-top), b.scalar(hi)])], to=elem)
    y = b.op("Where", [b.op("GreaterOrEqual", [x, b.scalar(top)]), b.scalar(info.max, to), y])
    b.op("Where", [b.op("IsNaN", [x]), b.scalar(0, to), y], n.out)


# ---------------------------------------------------------------------------- int8 (QDQ)
# The int8 operators go out in the QDQ form ONNX Runtime's quantizer writes and runs (fusing it into its QLinear*
# kernels): DequantizeLinear of each int8 operand (weights per output channel along axis 0, the int32 bias at scale
# x_scale * w_scale), the float operator, the fused activation (Relu, or Clip(0, 6)), QuantizeLinear of the output.
# dtorch.onnx.import_model fuses these groups back into the same int8 operators (dtorch/onnx/_qdq.py), so an int8
# model makes the round trip bit-exact. ONNX Runtime requantizes in float, DTorch in fixed point: ONNX Runtime's
# int8 tensors can be a step apart where a value lies within rounding of a half step.


def _dq(b: _Builder, x: str, scale: Any, zero_point: Any, axis: int | None = None, out: str | None = None) -> str:
    """DequantizeLinear(x, scale, zero_point): per tensor (an int8 zero point; shared scalar initializers), or along
    `axis` (scale and zero point arrays, new initializers)."""
    if axis is None:
        return b.op("DequantizeLinear", [x, b.scalar(float(scale)), b.scalar(int(zero_point), np.int8)], out)
    return b.op("DequantizeLinear", [x, b.init(np.asarray(scale, _F32), "scale"), b.init(zero_point, "zero_point")],
                out, axis=axis)


def _q_out(b: _Builder, n: _N, t: str) -> None:
    """t through the node's fused activation, quantized to its output (y_scale, y_zero_point)."""
    kind = str(n.attrs.get("activation", "none"))
    if kind != "none":
        t = _activation(b, kind, t, None)
    b.op("QuantizeLinear", [t, b.scalar(float(n.attrs["y_scale"])), b.scalar(int(n.attrs["y_zero_point"]), np.int8)],
         n.out)


def _quantize(b: _Builder, n: _N) -> None:
    b.op("QuantizeLinear", [n.req(), b.scalar(float(n.attrs["scale"])), b.scalar(int(n.attrs["zero_point"]), np.int8)],
         n.out)


def _dequantize(b: _Builder, n: _N) -> None:
    _dq(b, n.req(), n.attrs["scale"], n.attrs["zero_point"], out=n.out)


def _product_operands(b: _Builder, n: _N, transpose: bool) -> tuple[str, str, str | None]:
    """qconv2d / qlinear: the dequantized input, weight (per output channel; transposed to (K, M) for MatMul) and
    bias (int32 at x_scale * w_scale[o], None when absent)."""
    w, ws = n.val(1), n.val(2)
    if not (w.is_const and w.data is not None and ws.is_const and ws.data is not None):
        raise n.fail("its weight and weight scales must be constants")
    scales = np.asarray(ws.data, _F32).reshape(-1)
    m = int(w.shape[0])
    x = _dq(b, n.req(0), n.attrs["x_scale"], n.attrs["x_zero_point"])
    wdata = np.ascontiguousarray(np.asarray(w.data).T) if transpose else np.asarray(w.data)
    wname = b.init(wdata, f"{w.name or 'weight'}{'_t' if transpose else ''}")
    wq = _dq(b, wname, scales, np.zeros(m, np.int8), axis=1 if transpose else 0)
    bias = n.v(3)
    if bias is None:
        return x, wq, None
    if not (bias.is_const and bias.data is not None):
        raise n.fail("its bias must be a constant")
    bscale = (np.float64(n.attrs["x_scale"]) * scales.astype(np.float64)).astype(_F32)
    return x, wq, _dq(b, n.req(3), bscale, np.zeros(m, np.int32), axis=0)


def _qconv2d(b: _Builder, n: _N) -> None:
    a = n.attrs
    top, bottom, left, right = (int(p) for p in a["padding"])
    x, w, bias = _product_operands(b, n, False)
    t = b.op("Conv", [x, w, bias], kernel_shape=[int(s) for s in n.val(1).shape[2:]], strides=list(a["stride"]),
             pads=[top, left, bottom, right], dilations=list(a["dilation"]), group=int(a["groups"]))
    _q_out(b, n, t)


def _qlinear(b: _Builder, n: _N) -> None:
    if n.rank() == 2:
        x, w, bias = _product_operands(b, n, False)
        t = b.op("Gemm", [x, w, bias], transB=1)
    else:
        x, w, bias = _product_operands(b, n, True)
        t = b.op("MatMul", [x, w])
        if bias is not None:
            t = b.op("Add", [t, bias])
    _q_out(b, n, t)


def _q_binary(op_type: str) -> Translator:
    """qadd / qmul / qmatmul: both int8 operands dequantized (a_*, b_*), the float operator, the output quantized."""

    def translate(b: _Builder, n: _N) -> None:
        a = n.attrs
        t = b.op(op_type, [_dq(b, n.req(0), a["a_scale"], a["a_zero_point"]),
                           _dq(b, n.req(1), a["b_scale"], a["b_zero_point"])])
        _q_out(b, n, t)

    return translate


@dataclass
class _OnValue(_N):
    """A catalogue node translated with another ONNX value as its input 0 (a float translator reused on the
    dequantized input of an int8 operator)."""

    x0: str = ""

    def x(self, i: int = 0) -> str | None:
        return self.x0 if i == 0 else super().x(i)

    def req(self, i: int = 0) -> str:
        return self.x0 if i == 0 else super().req(i)


def _qconcat(b: _Builder, n: _N) -> None:
    a = n.attrs
    parts = [_dq(b, x, s, zp) for x, s, zp in zip([x for x in n.ins if x is not None], a["x_scales"],
                                                  a["x_zero_points"])]
    _q_out(b, n, b.op("Concat", parts, axis=int(a["axis"])))


def _qavg_pool2d(b: _Builder, n: _N) -> None:
    # DequantizeLinear, the float avg_pool2d's translation, QuantizeLinear to the same scale and zero point. ONNX
    # Runtime rounds a half step to even, DTorch (as TFLite) away from zero: a step apart on exact ties.
    a = n.attrs
    t = b.fresh(f"{b.scope}/avg_pool" if b.scope else "avg_pool")
    _avg_pool2d(b, _OnValue(n.node, b, t, a, n.opset, x0=_dq(b, n.req(), a["scale"], a["zero_point"])))
    b.op("QuantizeLinear", [t, b.scalar(float(a["scale"])), b.scalar(int(a["zero_point"]), np.int8)], n.out)


def _qlut(b: _Builder, n: _N) -> None:
    # The table's float function between DequantizeLinear and QuantizeLinear: ONNX Runtime builds the same table from
    # it (QLinearSigmoid, QLinearLeakyRelu, ...) or runs it in float.
    a = n.attrs
    fn = str(a["function"])
    x = _dq(b, n.req(), a["x_scale"], a["x_zero_point"])
    if fn in ("elu", "softplus"):
        t = b.fresh(f"{b.scope}/{fn}" if b.scope else fn)
        (_elu if fn == "elu" else _softplus)(b, _OnValue(n.node, b, t, a, n.opset, x0=x))
    else:
        t = _activation(b, fn, x, None, min_val=float(a["min_val"]), max_val=float(a["max_val"]),
                        alpha=float(a["alpha"]))
    _q_out(b, n, t)


def _qmean(b: _Builder, n: _N) -> None:
    r = n.rank()
    axes = n.attrs.get("axes")
    x = _dq(b, n.req(), n.attrs["x_scale"], n.attrs["x_zero_point"])
    if axes is None:
        t = b.op("ReduceMean", [x], keepdims=int(n.attrs["keepdim"]))
    elif not list(axes):  # reduces nothing: a requantization
        t = x
    else:
        t = b.reduce("ReduceMean", x, [int(ax) % max(r, 1) for ax in axes], int(n.attrs["keepdim"]))
    _q_out(b, n, t)


# ---------------------------------------------------------------------------- the table

#: Catalogue operator -> its translation to ONNX (default domain). Every catalogue operator has one
#: (tests/onnx/test_onnx_export.py checks; `unmapped_ops()` lists those that do not).
OP_MAPPING: dict[str, Translator] = {
    # unary elementwise
    "abs": _direct("Abs"), "cos": _direct("Cos"), "sin": _direct("Sin"), "exp": _direct("Exp"),
    "log": _direct("Log"), "sqrt": _direct("Sqrt"), "neg": _direct("Neg"), "reciprocal": _direct("Reciprocal"),
    "erf": _direct("Erf"), "rsqrt": _rsqrt,
    # activations
    "relu": _as_activation("relu"), "sigmoid": _as_activation("sigmoid"), "tanh": _as_activation("tanh"),
    "silu": _as_activation("silu"), "hardswish": _as_activation("hardswish"),
    "hardsigmoid": _as_activation("hardsigmoid"), "hardtanh": _as_activation("hardtanh"),
    "leaky_relu": _as_activation("leaky_relu"),
    "gelu": _as_activation(lambda n: "gelu_tanh" if n.attrs.get("approximate") == "tanh" else "gelu"),
    "elu": _elu, "softplus": _softplus, "prelu": _prelu, "clamp": _clamp,
    # binary elementwise (add takes a fused activation)
    "add": _binary("Add"), "sub": _binary("Sub"), "mul": _binary("Mul"), "div": _binary("Div"),
    "pow": _binary("Pow"), "maximum": _binary("Max"), "minimum": _binary("Min"),
    # convolution and linear algebra
    "conv2d": _conv2d, "conv_transpose2d": _conv_transpose2d, "linear": _linear, "matmul": _direct("MatMul"),
    # normalization
    "batch_norm": _batch_norm, "group_norm": _group_norm, "layer_norm": _layer_norm,
    # pooling and resampling
    "max_pool2d": _max_pool2d, "avg_pool2d": _avg_pool2d, "adaptive_avg_pool2d": _adaptive("avg"),
    "adaptive_max_pool2d": _adaptive("max"), "upsample_nearest2d": _upsample("nearest"),
    "upsample_bilinear2d": _upsample("linear"),
    # reductions
    "mean": _reduction("ReduceMean"), "sum": _reduction("ReduceSum"), "softmax": _softmax("Softmax"),
    "log_softmax": _softmax("LogSoftmax"), "cumsum": _cumsum,
    # shapes and indexing
    "reshape": _reshape, "expand": _expand, "permute": _permute, "slice": _slice, "index_select": _index_select,
    "arange": _arange, "embedding": _embedding, "concat": _concat, "pad": _pad, "gather_elements": _gather_elements,
    "gather_nd": _gather_nd, "shape": _shape,
    # comparisons, selection, conversion
    "equal": _binary("Equal"), "less": _binary("Less"), "greater": _binary("Greater"), "where": _where,
    "cast": _cast, "amax": _extreme("ReduceMax"), "amin": _extreme("ReduceMin"),
    # ONNX's own Resize (from the importer)
    "resize": _resize,
    # int8, as QDQ
    "quantize": _quantize, "dequantize": _dequantize, "qconv2d": _qconv2d, "qlinear": _qlinear,
    "qadd": _q_binary("Add"), "qmul": _q_binary("Mul"), "qmatmul": _q_binary("MatMul"), "qmean": _qmean,
    "qconcat": _qconcat, "qavg_pool2d": _qavg_pool2d, "qlut": _qlut,
}


def unmapped_ops() -> list[str]:
    """The catalogue operators that have no ONNX translation (none, when this module is up to date)."""
    return sorted(set(CATALOGUE) - set(OP_MAPPING))


# ---------------------------------------------------------------------------- graph -> ModelProto


def _with_defaults(node: Node) -> dict[str, Any]:
    entry = CATALOGUE.get(node.op)
    attrs: dict[str, Any] = {} if entry is None else {a.name: a.default for a in entry.attrs if not a.required}
    attrs.update(node.attrs)
    return attrs


def _shape_of(v: Value) -> list[int | str | None]:
    dims = v.dims if v.dims is not None else list(v.shape)
    return [None if d == "?" else d for d in dims]


def _value_info(name: str, v: Value) -> onnx.ValueInfoProto:
    from onnx import helper

    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(v.dtype)), _shape_of(v))


def _check_opset(opset: Any) -> int:
    if isinstance(opset, bool) or not isinstance(opset, (int, np.integer)) or int(opset) not in EXPORT_OPSETS:
        raise ExportError(f"opset_version {opset!r} is not supported: dtorch.onnx.export writes ONNX opsets "
                          f"{EXPORT_OPSETS[0]}..{EXPORT_OPSETS[-1]} (default {DEFAULT_OPSET})")
    return int(opset)


def graph_to_onnx(graph: Graph, input_names: Sequence[str], output_names: Sequence[str],
                  opset_version: int = DEFAULT_OPSET, *, graph_name: str = "dtorch") -> onnx.ModelProto:
    """Translate an optimized export graph (catalogue operators, `Value.dims` set) to an ONNX model."""
    from onnx import helper

    opset = _check_opset(opset_version)
    b = _Builder(opset)
    in_names, out_names = list(input_names), list(output_names)
    for name in in_names + out_names:
        b.reserve(name)
    for v, name in zip(graph.inputs, in_names):
        b.names[v.uid] = name
    produced = {o.uid for n in graph.nodes for o in n.outputs}
    copies: list[tuple[Value, str]] = []  # graph outputs that need an Identity (inputs, constants, repeats)
    for v, name in zip(graph.outputs, out_names):
        if v.uid in produced and v.uid not in b.names:
            b.names[v.uid] = name
        else:
            copies.append((v, name))
    for node in graph.nodes:
        translate = OP_MAPPING.get(node.op)
        if translate is None:
            raise ExportError(f"operator '{node.op}' at {where(node.name)} has no ONNX mapping in "
                              f"dtorch.onnx.export (opset {opset}); ONNX export supports: {', '.join(OP_MAPPING)}")
        b.scope = node.name
        for o in node.outputs:
            if o.uid not in b.names:
                b.names[o.uid] = b.fresh(f"{node.name}/{node.op}" if node.name else node.op)
        if len(node.outputs) != 1:  # pragma: no cover - every catalogue operator has one output
            raise ExportError(f"internal error: '{node.op}' at {where(node.name)} has {len(node.outputs)} outputs")
        translate(b, _N(node, b, b.names[node.outputs[0].uid], _with_defaults(node), opset))
    b.scope = ""
    for v, name in copies:
        b.op("Identity", [b.name(v)], name)
    g = helper.make_graph(b.nodes, graph_name, [_value_info(nm, v) for v, nm in zip(graph.inputs, in_names)],
                          [_value_info(nm, v) for v, nm in zip(graph.outputs, out_names)], initializer=b.inits)
    opsets = [helper.make_opsetid("", opset)]
    return helper.make_model(g, opset_imports=opsets, producer_name="dtorch", producer_version=__version__,
                             ir_version=helper.find_min_ir_version_for(opsets))


# ---------------------------------------------------------------------------- export


def export(model: Any, args: Any, f: str | os.PathLike[str], *, input_names: Sequence[str] | None = None,
           output_names: Sequence[str] | None = None, dynamic_axes: Mapping[str, Any] | None = None,
           opset_version: int = DEFAULT_OPSET) -> OnnxExportReport:
    """Trace `model(*args)` and write it to the ONNX file `f` (opset `opset_version`, 13..21).

    `input_names` / `output_names` name the graph's inputs and outputs (default input / output, or input0.. and
    output0.. for several); `dynamic_axes` marks dimensions as dynamic as in `dt.export` and torch.onnx.export,
    e.g. {"input": {0: "batch"}, "output": {0: "batch"}}: they become `dim_param`s. Raises ExportError with what
    was wrong and what to do; on any failure no file is written.

    `model` may also be built already: an int8 model from `dt.quant.quantize`, or the path of a `.dtm` file (float
    or int8, e.g. from `dt.export` or `dtorch-edge quantize`). Its graph is written as it is (`args` is not traced;
    pass None), the int8 operators in QDQ form (QuantizeLinear / DequantizeLinear around the float operators).
    """
    opset = _check_opset(opset_version)
    what = "dtorch.onnx.export"
    if not isinstance(f, (str, os.PathLike)):
        raise ExportError(f"f must be a file path (str or os.PathLike), got {type(f).__name__}")
    if not callable(model) and not isinstance(model, (str, os.PathLike)):
        raise ExportError(f"model must be a dtorch.nn.Module (or a callable), an int8 model from dt.quant.quantize or "
                          f"the path of a .dtm file, got {type(model).__name__}")
    require_onnx(what)
    path = Path(os.fspath(f))
    built = _built_graph(model, args, input_names, output_names, dynamic_axes)
    if built is None:
        inputs = _as_inputs(args, what)
        _names(input_names, len(inputs), "input")
        check_writable(path)
        p = prepare(model, args, input_names=input_names, output_names=output_names, dynamic_axes=dynamic_axes,
                    what=what)
        graph, in_names, out_names = p.graph, p.input_names, p.output_names
    else:
        check_writable(path)
        graph, in_names, out_names = built
    proto = graph_to_onnx(graph, in_names, out_names, opset)

    import onnx

    try:
        onnx.checker.check_model(proto, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as e:
        raise ExportError(f"internal error: the ONNX model dtorch built for this model fails onnx.checker "
                          f"(opset {opset}): {str(e).strip().splitlines()[0] if str(e).strip() else e}; nothing "
                          f"was written. Please report it with the model") from e
    write_atomic(path, proto.SerializeToString())
    return OnnxExportReport(path, opset, len(proto.graph.node), sorted({nd.op_type for nd in proto.graph.node}),
                            list(in_names), list(out_names),
                            {nm: _shape_of(v) for nm, v in zip(in_names, graph.inputs)},
                            {nm: _shape_of(v) for nm, v in zip(out_names, graph.outputs)},
                            sorted({nd.op for nd in graph.nodes}))


def _built_graph(model: Any, args: Any, input_names: Sequence[str] | None, output_names: Sequence[str] | None,
                 dynamic_axes: Mapping[str, Any] | None) -> tuple[Graph, list[str], list[str]] | None:
    """The graph of a model that is built already: an int8 model (dt.quant.quantize) or a `.dtm` file (a path);
    None for a module, which is traced. Its dimensions were fixed when it was built: `args` is not traced."""
    from ..quant import QuantizedModel

    if isinstance(model, QuantizedModel):
        graph, ins, outs = model.graph, list(model.input_names), list(model.output_names)
        what = "an int8 model"
    elif isinstance(model, (str, os.PathLike)):
        from .._export.errors import DtmFormatError
        from .._export.reader import read_dtm

        if not Path(os.fspath(model)).is_file():
            raise ExportError(f"model must be a dtorch.nn.Module (or a callable), an int8 model from dt.quant.quantize "
                              f"or the path of a .dtm file; {os.fspath(model)!r} is not a file")
        try:
            graph, ins, outs = read_dtm(Path(os.fspath(model))).to_graph()
        except DtmFormatError as e:
            raise ExportError(str(e)) from None
        what = f"the .dtm file {os.fspath(model)}"
    else:
        return None
    if dynamic_axes is not None:
        raise ExportError(f"dynamic_axes cannot change the dimensions of {what}; they were fixed when it was built "
                          f"(its dynamic dimensions stay dynamic in the ONNX file)")
    for given, have, kind in ((input_names, ins, "input"), (output_names, outs, "output")):
        if given is not None:
            if len(given) != len(have):
                raise ExportError(f"{what} has {len(have)} {kind}(s); got {len(given)} {kind} names")
            have[:] = _names(given, len(have), kind)
    return graph, ins, outs
