"""Quantized ONNX models (ONNX Runtime's QDQ and QOperator formats) made ready for the translators.

onnxruntime.quantization writes an int8 model in one of two forms: QDQ (QuantizeLinear / DequantizeLinear pairs
around float operators) or QOperator (QLinearConv, QLinearMatMul and the com.microsoft QGemm, QLinearAdd,
QLinearGlobalAveragePool, ...). `prepare_quantized` rewrites the ONNX graph before the importer specializes it:

1. Checks. Every quantization node's quantized type is int8 or uint8 (int32 for a constant bias); int16, uint16,
   4-bit and float8 types and block quantization are refused with the node named, as are scales that are not
   constants, not finite or not > 0.
2. uint8 as int8. DTorch's int8 kernels take int8 only. A uint8 tensor q with zero point z holds the same real values
   as the int8 tensor q - 128 with zero point z - 128 (QuantizeLinear's saturate(round(x / s) + z) over [0, 255],
   minus 128, is saturate(round(x / s) + z - 128) over [-128, 127]), so every uint8 tensor of the quantized part is
   held as int8: constants and zero points are shifted, and a computed one (the output of a QuantizeLinear or a
   QLinear* node, and what MaxPool, Reshape, ... pass on) is int8 in DTorch. A uint8 tensor reaching any other
   operator, or a graph output, is refused.
3. QDQ fusion. DequantizeLinear'd inputs -> Conv / Gemm / MatMul [-> Add of a bias] / Add / GlobalAveragePool /
   ReduceMean [-> Relu / Clip] -> QuantizeLinear becomes the QOperator node of the same meaning (QLinearConv, QGemm,
   QLinearMatMul, QLinearAdd, QLinearGlobalAveragePool, QLinearReduceMean: the form ONNX Runtime itself runs), the
   activation in the DTorch-only attribute `dtorch_activation` (a Clip whose range the output's quantization makes
   the same clamp as relu or relu6 counts as one). MaxPool and the data-movement operators between a
   DequantizeLinear and a QuantizeLinear of the same scale and zero point run on the int8 tensor itself. The rest
   stays: QuantizeLinear and DequantizeLinear become `quantize` and `dequantize` with the float operator between them
   (correct, in float); `float_groups` of the result names those operators.

The int8 operators' requantization is integer-only (TFLite's fixed-point multiplier, dtorch/quant/_fixed_point.py)
where ONNX Runtime's is float, so an imported model's int8 tensors can differ from ONNX Runtime's by one step where a
value lies within rounding of a half step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import OnnxImportError

__all__ = ["ACTIVATION_ATTR", "QuantizedGraph", "prepare_quantized"]

#: The DTorch-only attribute of a fused QOperator node: none, relu or relu6 (the output's clamp).
ACTIVATION_ATTR = "dtorch_activation"
MS = "com.microsoft"

#: Quantization operators: (domain, the quantized operands as (data, scale, zero point) positions, the output's
#: (scale, zero point) positions or None).
_QOPS: dict[str, tuple[str, tuple[tuple[int, int, int], ...], tuple[int, int] | None]] = {
    "QuantizeLinear": ("", (), (1, 2)),
    "DequantizeLinear": ("", ((0, 1, 2),), None),
    "QLinearConv": ("", ((0, 1, 2), (3, 4, 5)), (6, 7)),
    "QLinearMatMul": ("", ((0, 1, 2), (3, 4, 5)), (6, 7)),
    "QGemm": (MS, ((0, 1, 2), (3, 4, 5)), (7, 8)),
    "QLinearAdd": (MS, ((0, 1, 2), (3, 4, 5)), (6, 7)),
    "QLinearGlobalAveragePool": (MS, ((0, 1, 2),), (3, 4)),
    "QLinearReduceMean": (MS, ((0, 1, 2),), (3, 4)),
}
#: Operators that pass quantized values on unchanged (a max, or data movement): a uint8 input gives a uint8 output,
#: and between a DequantizeLinear and a QuantizeLinear of the same parameters they run on the int8 tensor.
_PASS_ON = ("MaxPool", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Identity", "Slice", "Concat",
            "Gather", "Expand", "Split", "DepthToSpace", "SpaceToDepth")
_ONNX_TYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 10: "float16",
               16: "bfloat16", 17: "float8e4m3fn", 18: "float8e4m3fnuz", 19: "float8e5m2", 20: "float8e5m2fnuz",
               21: "uint4", 22: "int4", 23: "float4e2m1"}


@dataclass
class QuantizedGraph:
    """What `prepare_quantized` did: the fused groups (new node type -> count) and the float operators left between
    a DequantizeLinear and a QuantizeLinear (node name -> why)."""

    fused: dict[str, int] = field(default_factory=dict)
    float_groups: dict[str, str] = field(default_factory=dict)


def is_quantized(model: Any) -> bool:
    return any(n.op_type in _QOPS for n in model.graph.node)


class _Graph:
    """The ONNX graph's nodes, constants, producers and consumers, rewritten in place."""

    def __init__(self, model: Any, opset: int) -> None:
        from onnx import numpy_helper

        self.model, self.opset = model, opset
        self.nodes: list[Any] = list(model.graph.node)
        self.consts: dict[str, np.ndarray] = {}
        for t in model.graph.initializer:
            try:
                self.consts[t.name] = numpy_helper.to_array(t)
            except Exception:  # read again (and refused) by the importer
                continue
        for n in self.nodes:
            if n.op_type == "Constant" and len(n.output) == 1:
                for a in n.attribute:
                    if a.name == "value" and a.HasField("t"):
                        self.consts[n.output[0]] = numpy_helper.to_array(a.t)
                    elif a.name == "value_float":
                        self.consts[n.output[0]] = np.array(a.f, np.float32)
                    elif a.name == "value_int":
                        self.consts[n.output[0]] = np.array(a.i, np.int64)
        self.outputs = {o.name for o in model.graph.output}
        self.used = {o.name for o in model.graph.output} | {i.name for i in model.graph.input}
        self.used |= set(self.consts) | {o for n in self.nodes for o in n.output}
        self.new_inits: list[tuple[str, np.ndarray]] = []
        self._shifted: dict[str, str] = {}

    def name_of(self, n: Any) -> str:
        return n.name or f"{n.op_type}_{self.nodes.index(n)}"

    def fail(self, n: Any, why: str) -> OnnxImportError:
        return OnnxImportError(f"ONNX node '{self.name_of(n)}' ({n.op_type}, opset {self.opset}) cannot be imported: "
                               f"{why}")

    def const(self, n: Any, i: int) -> np.ndarray | None:
        return self.consts.get(n.input[i]) if i < len(n.input) and n.input[i] else None

    def add_const(self, base: str, data: np.ndarray) -> str:
        name, k = f"{base}__dtorch", 1
        while name in self.used:
            name, k = f"{base}__dtorch{k}", k + 1
        self.used.add(name)
        self.consts[name] = data
        self.new_inits.append((name, data))
        return name

    def shifted(self, name: str) -> str:
        """The int8 copy (value - 128) of the uint8 constant `name`."""
        if name not in self._shifted:
            data = self.consts[name].astype(np.int16) - 128
            self._shifted[name] = self.add_const(name + "_int8", data.astype(np.int8))
        return self._shifted[name]

    def producers(self) -> dict[str, Any]:
        return {o: n for n in self.nodes for o in n.output if o}

    def consumers(self) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {}
        for n in self.nodes:
            for i in n.input:
                if i and (not out.get(i) or out[i][-1] is not n):
                    out.setdefault(i, []).append(n)
        return out

    def finish(self) -> None:
        from onnx import numpy_helper

        del self.model.graph.node[:]
        self.model.graph.node.extend(self.nodes)
        self.model.graph.initializer.extend(numpy_helper.from_array(d, nm) for nm, d in self.new_inits)
        if any(n.domain == MS for n in self.nodes) and not any(o.domain == MS for o in self.model.opset_import):
            self.model.opset_import.append(_opset_id(MS, 1))


def _opset_id(domain: str, version: int) -> Any:
    from onnx import helper

    return helper.make_opsetid(domain, version)


def _attr(n: Any, name: str, default: Any = None) -> Any:
    from onnx import helper

    for a in n.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _type_name(dtype: np.dtype | int | str) -> str:
    if isinstance(dtype, int):
        return _ONNX_TYPES.get(dtype, f"ONNX element type {dtype}")
    return str(np.dtype(dtype).name) if not isinstance(dtype, str) else dtype


# --- 1 and 2: checks, and uint8 as int8 --------------------------------------------------------------------------
def _check_scale(g: _Graph, n: Any, i: int) -> None:
    if i >= len(n.input) or not n.input[i]:
        raise g.fail(n, f"its scale (input {i}) is missing")
    s = g.consts.get(n.input[i])
    if s is None:
        raise g.fail(n, f"its scale '{n.input[i]}' must be a constant (an initializer) for dtorch to import it")
    if s.dtype.kind != "f":
        raise g.fail(n, f"its scale '{n.input[i]}' is {s.dtype.name}; a scale is a float")
    s64 = np.asarray(s, np.float64)
    bad = s64[~(np.isfinite(s64) & (s64 > 0))]
    if bad.size:
        raise g.fail(n, f"its scale '{n.input[i]}' holds {float(bad.reshape(-1)[0])!r}; a scale must be finite and > 0")
    if s64.size and float(s64.max()) > 1e30:
        raise g.fail(n, f"its scale '{n.input[i]}' holds {float(s64.max())!r}, more than dtorch's largest scale 1e30")


def _data_type(g: _Graph, n: Any, i: int, qtype: dict[str, str]) -> str | None:
    """The quantized type of input i: a constant's dtype, or a computed tensor's from its quantization producer."""
    c = g.const(n, i)
    if c is not None:
        return c.dtype.name
    return qtype.get(n.input[i])


def _allowed(g: _Graph, n: Any, t: str, what: str, int32: bool = False) -> None:
    ok = ("int8", "uint8", "int32") if int32 else ("int8", "uint8")
    if t not in ok:
        extra = " (and int32 for a constant bias)" if n.op_type == "DequantizeLinear" else ""
        raise g.fail(n, f"its {what} is {t}: dtorch's int8 kernels take int8 and uint8 (held as int8) quantization"
                        f"{extra}, not {t}")


def _zero_point(g: _Graph, n: Any, z: int) -> np.ndarray | None:
    """Input z, a zero point: its constant data, or None when it is absent."""
    zc = g.const(n, z)
    if z < len(n.input) and n.input[z] and zc is None:
        raise g.fail(n, f"its zero point '{n.input[z]}' must be a constant (an initializer) for dtorch to import it")
    return zc


def _shift_zero_point(g: _Graph, inputs: list[str], z: int, base: str) -> None:
    """The uint8 zero point at inputs[z] as int8: minus 128 (-128 where it is absent: uint8's default 0)."""
    while len(inputs) <= z:
        inputs.append("")
    inputs[z] = g.shifted(inputs[z]) if inputs[z] else g.add_const(f"{base}_zero_point", np.array(-128, np.int8))


def _normalize(g: _Graph) -> None:
    """Checks every quantization node and holds every uint8 tensor of the quantized part as int8 (module doc, 2)."""
    from onnx import helper

    qtype: dict[str, str] = {}  # computed tensors of the quantized part -> "int8" / "uint8"
    for idx, n in enumerate(g.nodes):
        spec = _QOPS.get(n.op_type)
        if spec is None or n.domain not in ((spec[0],) if spec[0] else ("", "ai.onnx")):
            u8 = [i for i in n.input if qtype.get(i) == "uint8"]
            if n.op_type in _PASS_ON and n.input and n.input[0] in qtype:
                data = list(n.input) if n.op_type == "Concat" else [n.input[0]]
                if u8 and (any(qtype.get(i) != "uint8" for i in data if i) or any(i not in data for i in u8)):
                    raise g.fail(n, "it mixes a uint8 quantized tensor with tensors of other types")
                for o in n.output:
                    if o:
                        qtype[o] = qtype[n.input[0]]
            elif u8:
                raise g.fail(n, f"its input '{u8[0]}' is a uint8 quantized tensor, which dtorch holds as int8; only "
                                f"DequantizeLinear, the QLinear* operators and data movement ({', '.join(_PASS_ON)}) "
                                f"can take it")
            continue
        block = int(_attr(n, "block_size", 0) or 0)
        if block:
            raise g.fail(n, f"block quantization (block_size {block}) is not supported; dtorch quantizes per tensor "
                            f"or per axis")
        _, operands, out = spec
        inputs = list(n.input)
        changed = False
        for d, s, z in operands:
            if d >= len(inputs) or not inputs[d]:
                raise g.fail(n, f"its quantized input {d} is missing")
            _check_scale(g, n, s)
            zc = _zero_point(g, n, z)
            dt_ = _data_type(g, n, d, qtype)
            zt = None if zc is None else zc.dtype.name
            is_const = g.const(n, d) is not None
            t = dt_ or zt or "int8"
            what = f"input '{inputs[d]}'"
            _allowed(g, n, t, what, int32=n.op_type == "DequantizeLinear" and is_const)
            if zt is not None and zt != t:
                if zt not in ("int8", "uint8", "int32"):
                    _allowed(g, n, zt, f"zero point '{inputs[z]}'")
                raise g.fail(n, f"its zero point '{inputs[z]}' is {zt} but its {what} is {t}")
            if t == "uint8":
                if is_const:
                    inputs[d] = g.shifted(inputs[d])
                _shift_zero_point(g, inputs, z, inputs[d])
                changed = True
        if out is not None and not (n.op_type == "QGemm" and (len(inputs) <= out[0] or not inputs[out[0]])):
            s, z = out
            _check_scale(g, n, s)
            zc = _zero_point(g, n, z)
            if zc is not None:
                t = zc.dtype.name
            elif n.op_type == "QuantizeLinear":
                odt = _attr(n, "output_dtype", 0)
                t = _type_name(int(odt)) if odt else "uint8"
            else:
                t = _data_type(g, n, 0, qtype) or "int8"
            _allowed(g, n, t, "output type")
            if t == "uint8":
                _shift_zero_point(g, inputs, z, n.output[0])
                changed = True
            if n.output and n.output[0]:
                qtype[n.output[0]] = t
        if n.op_type == "QuantizeLinear" and _attr(n, "output_dtype", 0):
            changed = True
        if changed:
            attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute if a.name != "output_dtype"}
            g.nodes[idx] = helper.make_node(n.op_type, inputs, list(n.output), name=n.name, domain=n.domain, **attrs)
    for o in g.model.graph.output:
        if o.name in qtype:
            producer = g.producers().get(o.name)
            raise OnnxImportError(f"output '{o.name}' is a {qtype[o.name]} quantized tensor"
                                  f"{f' (from node {g.name_of(producer)!r})' if producer is not None else ''}; dtorch's "
                                  f"model outputs are float32, int64, int32 or bool: end the model with a "
                                  f"DequantizeLinear")


def _quantized_constants(g: _Graph) -> None:
    """The values of QuantizeLinear nodes of constants (a weight stored in float and quantized in the graph, as QAT
    exports write it): the fusion reads them as it reads an int8 initializer (the node itself folds at import)."""
    for n in g.nodes:
        if n.op_type != "QuantizeLinear" or n.input[0] not in g.consts or not n.output or not n.output[0]:
            continue
        x = np.asarray(g.consts[n.input[0]])
        if x.dtype != np.float32:
            continue
        scale = np.asarray(g.consts[n.input[1]], np.float32)
        zp = g.const(n, 2)
        zp = np.zeros((), np.int64) if zp is None else np.asarray(zp, np.int64)
        shape = [1] * x.ndim
        if scale.size > 1 and x.ndim:
            shape[int(_attr(n, "axis", 1)) % x.ndim] = -1
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            r = np.rint(x / scale.reshape(shape))
        r = np.clip(np.nan_to_num(r, nan=0.0, posinf=512.0, neginf=-512.0), -512, 512).astype(np.int64)
        g.consts[n.output[0]] = np.clip(r + zp.reshape(shape), -128, 127).astype(np.int8)


# --- 3: QDQ fusion -------------------------------------------------------------------------------------------------
@dataclass
class _DQ:
    """A DequantizeLinear: its quantized input, scale and zero point (ONNX names; "" when absent) and values."""

    node: Any
    data: str
    scale: str
    zero_point: str
    scales: np.ndarray
    zero_points: np.ndarray
    axis: int

    @property
    def per_tensor(self) -> bool:
        return self.scales.size == 1 and self.zero_points.size <= 1

    @property
    def operands(self) -> list[str]:
        """The (data, scale, zero point) inputs of a QOperator node that takes this tensor quantized."""
        return [self.data, self.scale, self.zero_point]


#: A fused node: its type, inputs, attributes, domain, and the nodes besides the group's core it replaces.
_Fused = tuple[str, list[str], dict[str, Any], str, list[Any]]


class _Fuser:
    def __init__(self, g: _Graph, result: QuantizedGraph) -> None:
        self.g, self.result = g, result
        self.prod = g.producers()
        self.cons = g.consumers()
        self.removed: set[int] = set()

    def only_use(self, name: str, user: Any) -> bool:
        users = self.cons.get(name, [])
        return name not in self.g.outputs and len(users) == 1 and users[0] is user

    def dq(self, name: str, const: bool | None = None) -> _DQ | None:
        """The DequantizeLinear that computes `name` (with constant data when const, computed data when False)."""
        n = self.prod.get(name)
        if n is None or n.op_type != "DequantizeLinear" or id(n) in self.removed:
            return None
        is_const = n.input[0] in self.g.consts
        if const is not None and is_const != const:
            return None
        zp = n.input[2] if len(n.input) > 2 else ""
        zps = self.g.consts[zp] if zp else np.zeros((), np.int8)
        return _DQ(n, n.input[0], n.input[1], zp, np.asarray(self.g.consts[n.input[1]], np.float32), np.asarray(zps),
                   int(_attr(n, "axis", 1)))

    def params(self, q: Any) -> tuple[float, int]:
        s = float(np.asarray(self.g.consts[q.input[1]]).reshape(-1)[0])
        z = int(np.asarray(self.g.consts[q.input[2]]).reshape(-1)[0]) if len(q.input) > 2 and q.input[2] else 0
        return s, z

    def activation(self, act: Any, q: Any) -> str | None:
        """The clamp of Relu / Clip `act` before QuantizeLinear `q` as none / relu / relu6, or None when it is none of
        them (as int8 clamps: quantization is monotonic, so Q(clip(v, lo, hi)) = clamp(Q(v), Q(lo), Q(hi)))."""
        from ..quant import _fixed_point as fp

        if act.op_type == "Relu":
            return "relu"
        if self.g.opset < 11:
            lo, hi = _attr(act, "min", -np.inf), _attr(act, "max", np.inf)
        else:
            lo_c, hi_c = self.g.const(act, 1), self.g.const(act, 2)
            if (len(act.input) > 1 and act.input[1] and lo_c is None) or \
                    (len(act.input) > 2 and act.input[2] and hi_c is None):
                return None
            lo = -np.inf if lo_c is None else float(np.asarray(lo_c).reshape(-1)[0])
            hi = np.inf if hi_c is None else float(np.asarray(hi_c).reshape(-1)[0])
        named = {(0.0, np.inf): "relu", (0.0, 6.0): "relu6"}.get((float(lo), float(hi)))
        if named is not None:
            return named
        s, z = self.params(q)
        qlo = fp.QMIN if lo == -np.inf else int(fp.quantize(np.float32(lo), s, z))
        qhi = fp.QMAX if hi == np.inf else int(fp.quantize(np.float32(hi), s, z))
        for kind in ("none", "relu", "relu6"):
            if (qlo, qhi) == fp.activation_range(kind, s, z):
                return kind
        return None

    def bias(self, name: str, x: _DQ, w: _DQ, n_out: int, why: list[str]) -> str | None:
        """The int32 bias at scale x_scale * w_scale of bias input `name` ("" when there is none): the DequantizeLinear'd
        int32 constant itself when its scale is that, else the float bias rounded to it. None: no constant bias."""
        if not name:
            return ""
        b = self.dq(name, const=True)
        want = (np.float64(x.scales.reshape(-1)[0]) * w.scales.astype(np.float64)).reshape(-1)
        if b is not None and self.g.consts[b.data].dtype == np.int32 and not np.any(b.zero_points) and \
                b.scales.size in (1, n_out) and np.allclose(b.scales.astype(np.float64).reshape(-1), want, rtol=1e-6,
                                                            atol=0.0):
            return b.data
        if b is not None:
            data = self.g.consts[b.data].astype(np.float64) - b.zero_points.astype(np.float64)
            real = data * b.scales.astype(np.float64)
        elif name in self.g.consts and self.g.consts[name].dtype.kind == "f":
            real = self.g.consts[name].astype(np.float64)
        else:
            why.append("its bias is not a constant")
            return None
        if real.size not in (1, n_out) or want.size not in (1, n_out):
            why.append(f"its bias has {real.size} values for {n_out} outputs")
            return None
        q = np.rint(np.broadcast_to(real.reshape(-1), (n_out,)) / np.broadcast_to(want, (n_out,)))
        return self.g.add_const(name + "_int32", np.clip(q, -(2**31), 2**31 - 1).astype(np.int32))

    def weight(self, name: str, axis: int, rank: int, why: list[str]) -> _DQ | None:
        w = self.dq(name, const=True)
        if w is None:
            why.append("its weight is not a constant DequantizeLinear")
            return None
        data = self.g.consts[w.data]
        if data.ndim != rank and rank:
            why.append(f"its weight has rank {data.ndim}")
            return None
        if not w.per_tensor and (w.axis % max(data.ndim, 1)) != axis:
            why.append(f"its weight is quantized along axis {w.axis}, not the output axis {axis}")
            return None
        return w

    def fuse(self) -> None:
        from onnx import helper

        for q in list(self.g.nodes):
            if q.op_type != "QuantizeLinear" or q.input[1] not in self.g.consts or \
                    self.g.consts[q.input[1]].size != 1:
                continue
            y = q.input[0]
            p = self.prod.get(y)
            if p is None or not self.only_use(y, q):
                continue
            act, core = "none", p
            if p.op_type in ("Relu", "Clip") and self.prod.get(p.input[0]) is not None and \
                    self.only_use(p.input[0], p):
                kind = self.activation(p, q)
                if kind is not None:
                    act, core = kind, self.prod[p.input[0]]
            why: list[str] = []
            new = self.group(core, q, act, why)
            if new is None:
                if core.op_type not in ("QuantizeLinear", "DequantizeLinear"):
                    self.result.float_groups[self.g.name_of(core)] = "; ".join(why)
                continue
            op_type, inputs, attrs, domain, extra = new
            node = helper.make_node(op_type, inputs, [q.output[0]], name=core.name or self.g.name_of(core),
                                    domain=domain, **attrs)
            at = self.g.nodes.index(q)
            self.g.nodes[at] = node
            gone = [core, *extra] + ([p] if p is not core else [])
            self.removed.update(id(n) for n in gone)
            self.g.nodes = [n for n in self.g.nodes if id(n) not in {id(m) for m in gone}]
            self.result.fused[op_type] = self.result.fused.get(op_type, 0) + 1
            self.prod = self.g.producers()
            self.cons = self.g.consumers()
        # DequantizeLinear nodes no longer used
        while True:
            cons = self.g.consumers()
            dead = [n for n in self.g.nodes if n.op_type == "DequantizeLinear" and
                    not any(cons.get(o) or o in self.g.outputs for o in n.output)]
            if not dead:
                break
            self.g.nodes = [n for n in self.g.nodes if n not in dead]

    def group(self, core: Any, q: Any, act: str, why: list[str]) -> _Fused | None:
        """The fused node for `core` (its type, inputs, attributes, domain, other nodes it replaces), or None."""
        op = core.op_type
        out = [q.input[1], q.input[2] if len(q.input) > 2 else ""]
        act_attr = {} if act == "none" else {ACTIVATION_ATTR: act}
        if core.domain != "" or op not in ("Conv", "Gemm", "MatMul", "Add", "GlobalAveragePool", "ReduceMean"):
            return self.passed_on(core, q, act, why)
        if op == "Add" and (mm := self.matmul_bias(core)) is not None:
            return self.product(mm[0], mm[1], [mm[0]], out, act_attr, why)
        if op in ("Conv", "Gemm", "MatMul"):
            return self.product(core, core.input[2] if op != "MatMul" and len(core.input) > 2 else "", [], out,
                                act_attr, why)
        x = self.activation_input(core.input[0], why)
        if x is None:
            return None
        if op == "Add":
            b = self.activation_input(core.input[1], why)
            if b is None:
                return None
            return "QLinearAdd", [*x.operands, *b.operands, *out], act_attr, MS, []
        if act != "none":
            why.append(f"a {act} after it has no int8 form")
            return None
        if op == "GlobalAveragePool":
            return "QLinearGlobalAveragePool", [*x.operands, *out], {"channels_last": 0}, MS, []
        axes = _attr(core, "axes")
        if len(core.input) > 1 and core.input[1]:
            c = self.g.const(core, 1)
            if c is None:
                why.append("its axes are not a constant")
                return None
            axes = [int(a) for a in np.asarray(c).reshape(-1)]
        if not axes and int(_attr(core, "noop_with_empty_axes", 0)):
            why.append("it reduces nothing (noop_with_empty_axes)")
            return None
        red = {"keepdims": int(_attr(core, "keepdims", 1)), **({"axes": list(axes)} if axes else {})}
        return "QLinearReduceMean", [*x.operands, *out], red, MS, []

    def activation_input(self, name: str, why: list[str]) -> _DQ | None:
        """The per-tensor DequantizeLinear that gives input `name`."""
        d = self.dq(name)
        if d is None or not d.per_tensor:
            why.append(f"its input '{name}' does not come from a per-tensor DequantizeLinear")
            return None
        return d

    def product(self, mm: Any, bias_name: str, extra: list[Any], out: list[str], act_attr: dict[str, str],
                why: list[str]) -> _Fused | None:
        """Conv -> QLinearConv; Gemm, or MatMul with a bias (an Add after it) -> QGemm; MatMul -> QLinearMatMul."""
        op = mm.op_type
        xd = self.activation_input(mm.input[0], why)
        if xd is None:
            return None
        x = xd.operands
        attrs = {a.name: _attr(mm, a.name) for a in mm.attribute}
        if op == "Conv":
            w = self.weight(mm.input[1], 0, 0, why)
            if w is None:
                return None
            b = self.bias(bias_name, xd, w, int(self.g.consts[w.data].shape[0]), why)
            if b is None:
                return None
            return "QLinearConv", [*x, w.data, w.scale, w.zero_point, *out, b], {**attrs, **act_attr}, "", extra
        trans_b, alpha = int(attrs.get("transB", 0)), float(attrs.get("alpha", 1.0))
        if op == "Gemm":
            if int(attrs.get("transA", 0)):
                why.append("its A is transposed (transA)")
                return None
            if bias_name and float(attrs.get("beta", 1.0)) != 1.0:
                why.append("its bias is scaled (beta != 1)")
                return None
            if bias_name and alpha != 1.0:
                why.append("its product is scaled (alpha != 1) with a bias")
                return None
        w = self.weight(mm.input[1], 0 if trans_b else 1, 2, why)
        if w is None:
            return None
        b = self.bias(bias_name, xd, w, int(self.g.consts[w.data].shape[0 if trans_b else 1]), why)
        if b is None:
            return None
        if op == "MatMul" and not bias_name and not act_attr:
            return "QLinearMatMul", [*x, w.data, w.scale, w.zero_point, *out], {}, "", extra
        gemm = {"transB": trans_b, **({"alpha": alpha} if alpha != 1.0 else {}), **act_attr}
        return "QGemm", [*x, w.data, w.scale, w.zero_point, b, *out], gemm, MS, extra

    def matmul_bias(self, add: Any) -> tuple[Any, str] | None:
        """Add(MatMul(...), bias) with a constant (or constant DequantizeLinear'd) 1-D bias: (the MatMul, the bias)."""
        for k in (0, 1):
            m = self.prod.get(add.input[k])
            other = add.input[1 - k]
            if m is None or m.op_type != "MatMul" or not self.only_use(add.input[k], add):
                continue
            b = self.dq(other, const=True)
            data = self.g.consts.get(b.data if b is not None else other)
            if data is not None and data.ndim <= 1:
                return m, other
        return None

    def passed_on(self, core: Any, q: Any, act: str, why: list[str]) -> _Fused | None:
        """MaxPool or data movement between DequantizeLinear(s) and a QuantizeLinear of the same parameters."""
        if core.op_type not in _PASS_ON or core.domain != "" or act != "none" or len([o for o in core.output if o]) != 1:
            why.append(f"{core.op_type} has no int8 form" + (f" with a {act} after it" if act != "none" else ""))
            return None
        s, z = self.params(q)
        data = [0] if core.op_type != "Concat" else list(range(len(core.input)))
        inputs = list(core.input)
        for i in data:
            d = self.dq(core.input[i], const=None)
            if d is None or not d.per_tensor:
                return None
            ds = float(d.scales.reshape(-1)[0])
            dz = int(d.zero_points.reshape(-1)[0]) if d.zero_points.size else 0
            if (np.float32(ds), dz) != (np.float32(s), z):
                why.append("the scale or zero point changes across it")
                return None
            inputs[i] = d.data
        attrs = {a.name: _attr(core, a.name) for a in core.attribute}
        return core.op_type, inputs, attrs, "", []


def prepare_quantized(model: Any, opset: int) -> QuantizedGraph | None:
    """Rewrite the quantized parts of `model` (in place) as the module's docstring says; None when it has none."""
    if not is_quantized(model):
        return None
    g = _Graph(model, opset)
    _normalize(g)
    _quantized_constants(g)
    result = QuantizedGraph()
    _Fuser(g, result).fuse()
    g.finish()
    return result

