"""Quantization: QuantizeLinear / DequantizeLinear, and the QOperator format's QLinearConv, QLinearMatMul and ONNX
Runtime's com.microsoft QGemm, QLinearAdd, QLinearGlobalAveragePool and QLinearReduceMean (also what
dtorch/onnx/_qdq.py fuses a model's QDQ groups into), as the int8 catalogue operators (dtorch/catalogue/quant.py).

Every quantized tensor here is int8: _qdq.py has checked each node's types and scales and holds uint8 tensors as
int8. A node whose int8 operator the catalogue lacks (a weight with a nonzero zero point, a computed weight, a
transposed A) computes in float32 between `dequantize` and `quantize`: correct, just float. The product's fused
activation (none / relu / relu6) is the DTorch-only attribute `dtorch_activation` of a fused QDQ group.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..._export.graph import Value
from .._qdq import ACTIVATION_ATTR
from .._registry import CONTRIB_DOMAIN, Ctx, translates
from ._common import norm_axes
from .nn import _from_1d, conv2d_operands

_ACTIVATIONS = ("none", "relu", "relu6")


# --- the quantization parameters -----------------------------------------------------------------------------------
def _scales(ctx: Ctx, i: int) -> np.ndarray:
    data = ctx.const(i, "scale")
    if data is None:
        raise ctx.fail(f"its scale (input {i}) is missing")
    return np.asarray(data, np.float32).reshape(-1)


def _zero_points(ctx: Ctx, i: int) -> np.ndarray:
    data = ctx.const(i, "zero point")
    return np.zeros(1, np.int64) if data is None else np.asarray(data).astype(np.int64).reshape(-1)


def _per_tensor(ctx: Ctx, s: int, z: int, what: str) -> tuple[float, int]:
    """The (scale, zero point) of a per-tensor quantized operand."""
    scales, zps = _scales(ctx, s), _zero_points(ctx, z)
    if scales.size != 1 or zps.size != 1:
        raise ctx.fail(f"{what} is quantized per axis ({scales.size} scales); dtorch's computed int8 tensors have one "
                       f"scale and zero point")
    return float(scales[0]), int(zps[0])


def _per_channel(ctx: Ctx, s: int, z: int, n: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    """The scales and zero points of a weight quantized per tensor or along its `n` outputs, each as n values."""
    scales, zps = _scales(ctx, s), _zero_points(ctx, z)
    for arr, name in ((scales, "scales"), (zps, "zero points")):
        if arr.size not in (1, n):
            raise ctx.fail(f"{what} has {arr.size} {name}; expected 1 or one per output ({n})")
    return np.broadcast_to(scales, (n,)).astype(np.float32), np.broadcast_to(zps, (n,))


def _activation(ctx: Ctx) -> str:
    act = str(ctx.attr(ACTIVATION_ATTR, "none"))
    if act not in _ACTIVATIONS:
        raise ctx.fail(f"{ACTIVATION_ATTR} {act!r} is not one of {', '.join(_ACTIVATIONS)}")
    return act


def _io(x: tuple[float, int], y: tuple[float, int]) -> dict[str, object]:
    return {"x_scale": x[0], "x_zero_point": x[1], "y_scale": y[0], "y_zero_point": y[1]}


def _int8_input(ctx: Ctx, i: int) -> Value:
    v = ctx.input(i)
    if np.dtype(v.dtype) != np.int8:
        raise ctx.fail(f"its quantized input {i} is {np.dtype(v.dtype).name}, not int8")
    return v


def _const_int8(ctx: Ctx, i: int) -> np.ndarray | None:
    """Input i's int8 data when it is a constant (a weight), else None."""
    v = ctx.input(i)
    if not v.is_const or v.data is None:
        return None
    if v.data.dtype != np.int8:
        raise ctx.fail(f"its quantized input {i} is {v.data.dtype.name}, not int8")
    return v.data


def _int32_bias(ctx: Ctx, i: int, n: int) -> Value | None:
    if not ctx.has_input(i):
        return None
    b = ctx.const(i, "bias")
    assert b is not None
    if b.dtype != np.int32 or b.size not in (1, n):
        raise ctx.fail(f"its bias is {b.dtype.name} of shape {list(b.shape)}; expected int32 of {n} values")
    return ctx.constant(np.ascontiguousarray(np.broadcast_to(b.reshape(-1), (n,))))


# --- float fallbacks -----------------------------------------------------------------------------------------------
def _dequantized(data: np.ndarray, scales: np.ndarray, zps: np.ndarray, axis: int) -> np.ndarray:
    """(q - zero_point) * scale in float32, as DequantizeLinear (per tensor, or per axis `axis`)."""
    shape = [1] * data.ndim
    if scales.size > 1 or zps.size > 1:
        shape[axis] = -1
    d = (data.astype(np.int64) - zps.reshape(shape)).astype(np.float32)
    return np.ascontiguousarray(d * scales.astype(np.float32).reshape(shape))


def _as_float(ctx: Ctx, d: int, s: int, z: int, axis: int, what: str) -> Value:
    """Quantized input d in float32: a constant for constant data, else a dequantize node (per tensor only)."""
    v = ctx.input(d)
    if v.is_const and v.data is not None:
        return ctx.constant(_dequantized(v.data, _scales(ctx, s), _zero_points(ctx, z), axis))
    scale, zp = _per_tensor(ctx, s, z, what)
    return ctx.emit1("dequantize", [_int8_input(ctx, d)], {"scale": scale, "zero_point": zp})


def _quantized(ctx: Ctx, y: Value, params: tuple[float, int], act: str) -> Value:
    """A float32 result through the fused activation and quantized to the output's parameters."""
    if act == "relu":
        y = ctx.emit1("relu", [y])
    elif act == "relu6":
        y = ctx.emit1("hardtanh", [y], {"min_val": 0.0, "max_val": 6.0})
    return ctx.emit1("quantize", [y], {"scale": params[0], "zero_point": params[1]})


# --- QuantizeLinear / DequantizeLinear -----------------------------------------------------------------------------
@translates("QuantizeLinear")
def quantize_linear(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    if np.dtype(x.dtype) != np.float32:
        raise ctx.fail(f"its input is {np.dtype(x.dtype).name}; dtorch quantizes float32")
    scale, zp = _per_tensor(ctx, 1, 2, "its output")
    return [ctx.emit1("quantize", [x], {"scale": scale, "zero_point": zp})]


@translates("DequantizeLinear")
def dequantize_linear(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    if np.dtype(x.dtype) != np.int8:
        raise ctx.fail(f"its input is a computed {np.dtype(x.dtype).name} tensor; dtorch dequantizes computed int8 "
                       f"(and uint8) tensors, and constants of int32 too")
    scale, zp = _per_tensor(ctx, 1, 2, "its input")
    return [ctx.emit1("dequantize", [x], {"scale": scale, "zero_point": zp})]


# --- the products --------------------------------------------------------------------------------------------------
@translates("QLinearConv")
def qlinear_conv(ctx: Ctx) -> Sequence[Value]:
    xp, yp = _per_tensor(ctx, 1, 2, "its input"), _per_tensor(ctx, 6, 7, "its output")
    act = _activation(ctx)
    wv = ctx.input(3)
    n = int(wv.shape[0])
    ws, wz = _per_channel(ctx, 4, 5, n, "its weight")
    w = _const_int8(ctx, 3)
    x = ctx.input(0)
    if w is not None and not wz.any() and not x.is_const:
        x2, w2, attrs, was_1d = conv2d_operands(ctx, _int8_input(ctx, 0), ctx.constant(w))
        attrs.update(_io(xp, yp), activation=act)
        y = ctx.emit1("qconv2d", [x2, w2, ctx.constant(ws), _int32_bias(ctx, 8, n)], attrs)
        return [_from_1d(ctx, y, was_1d)]
    # float: a weight with a nonzero zero point (asymmetric) or a computed one
    xf = _as_float(ctx, 0, 1, 2, 1, "its input")
    wf = _as_float(ctx, 3, 4, 5, 0, "its weight")
    b = None
    if ctx.has_input(8):
        bq = _int32_bias(ctx, 8, n)
        assert bq is not None and bq.data is not None
        b = ctx.constant((bq.data.astype(np.float64) * xp[0] * ws.astype(np.float64)).astype(np.float32))
    x2, w2, attrs, was_1d = conv2d_operands(ctx, xf, wf)
    return [_quantized(ctx, _from_1d(ctx, ctx.emit1("conv2d", [x2, w2, b], attrs), was_1d), yp, act)]


def _qlinear(ctx: Ctx, a: Value, w: np.ndarray, ws: np.ndarray, bias: Value | None, xp: tuple[float, int],
             yp: tuple[float, int], act: str) -> Value:
    """qlinear of int8 a (..., K) and the int8 weight w (N, K) with its N scales."""
    attrs = {**_io(xp, yp), "activation": act}
    return ctx.emit1("qlinear", [a, ctx.constant(np.ascontiguousarray(w)), ctx.constant(ws), bias], attrs)


@translates("QLinearMatMul")
def qlinear_matmul(ctx: Ctx) -> Sequence[Value]:
    yp = _per_tensor(ctx, 6, 7, "its output")
    act = _activation(ctx)
    a, b = ctx.input(0), _const_int8(ctx, 3)
    if b is not None and b.ndim == 2 and not a.is_const and len(a.shape) >= 1:
        ws, wz = _per_channel(ctx, 4, 5, int(b.shape[1]), "its B")
        if not wz.any():
            return [_qlinear(ctx, _int8_input(ctx, 0), b.T, ws, None, _per_tensor(ctx, 1, 2, "its A"), yp, act)]
    af = _as_float(ctx, 0, 1, 2, max(len(a.shape) - 2, 0), "its A")
    bv = ctx.input(3)
    bf = _as_float(ctx, 3, 4, 5, len(bv.shape) - 1, "its B")
    return [_quantized(ctx, ctx.emit1("matmul", [af, bf]), yp, act)]


@translates("QGemm", domain=CONTRIB_DOMAIN)
def qgemm(ctx: Ctx) -> Sequence[Value]:
    """ONNX Runtime's QGemm: alpha * A' @ B' + C (C int32 at scale alpha * a_scale * b_scale), quantized to y_scale or
    float32 without one. Also the MatMul + bias group _qdq.py fuses, whose A may be of any rank >= 2."""
    alpha = float(ctx.attr("alpha", 1.0))
    trans_a, trans_b = int(ctx.attr("transA", 0)), int(ctx.attr("transB", 0))
    act = _activation(ctx)
    a, b = ctx.input(0), _const_int8(ctx, 3)
    if b is None or b.ndim != 2:
        raise ctx.fail("its B must be a constant 2-D int8 tensor (a weight)")
    w = b if trans_b else b.T  # (N, K)
    n = int(w.shape[0])
    ws, wz = _per_channel(ctx, 4, 5, n, "its B")
    ws = (ws.astype(np.float64) * alpha).astype(np.float32)
    xp = _per_tensor(ctx, 1, 2, "its A")
    c = ctx.const(6, "C") if ctx.has_input(6) else None
    if c is not None and (c.dtype != np.int32 or c.size not in (1, n)):
        raise ctx.fail(f"its C is {c.dtype.name} of shape {list(c.shape)}; expected int32 with 1 or {n} values")
    bias = None if c is None else ctx.constant(np.ascontiguousarray(np.broadcast_to(c.reshape(-1), (n,))))
    has_y = ctx.has_input(7)
    if has_y and not trans_a and not wz.any() and not a.is_const:
        return [_qlinear(ctx, _int8_input(ctx, 0), w, ws, bias, xp, _per_tensor(ctx, 7, 8, "its output"), act)]
    af = _as_float(ctx, 0, 1, 2, 0, "its A")
    if trans_a:
        af = ctx.emit1("permute", [af], {"perm": [1, 0]})
    wf = ctx.constant(_dequantized(w, ws, wz, 0))
    bf = None if bias is None or bias.data is None else \
        ctx.constant((bias.data.astype(np.float64) * xp[0] * ws.astype(np.float64)).astype(np.float32))
    y = ctx.emit1("linear", [af, wf, bf])
    if not has_y:
        if act != "none":
            raise ctx.fail(f"{ACTIVATION_ATTR} {act!r} needs a quantized output")
        return [y]
    return [_quantized(ctx, y, _per_tensor(ctx, 7, 8, "its output"), act)]


# --- add, means ----------------------------------------------------------------------------------------------------
@translates("QLinearAdd", domain=CONTRIB_DOMAIN)
def qlinear_add(ctx: Ctx) -> Sequence[Value]:
    (sa, za), (sb, zb) = _per_tensor(ctx, 1, 2, "its A"), _per_tensor(ctx, 4, 5, "its B")
    sy, zy = _per_tensor(ctx, 6, 7, "its output")
    attrs = {"a_scale": sa, "a_zero_point": za, "b_scale": sb, "b_zero_point": zb, "y_scale": sy, "y_zero_point": zy,
             "activation": _activation(ctx)}
    return [ctx.emit1("qadd", [_int8_input(ctx, 0), _int8_input(ctx, 3)], attrs)]


def _qmean(ctx: Ctx, axes: list[int], keep: int) -> Value:
    x = _int8_input(ctx, 0)
    attrs = {"axes": norm_axes(ctx, axes, len(x.shape)), "keepdim": keep,
             **_io(_per_tensor(ctx, 1, 2, "its input"), _per_tensor(ctx, 3, 4, "its output"))}
    return ctx.emit1("qmean", [x], attrs)


@translates("QLinearGlobalAveragePool", domain=CONTRIB_DOMAIN)
def qlinear_global_average_pool(ctx: Ctx) -> Sequence[Value]:
    rank = len(ctx.input(0).shape)
    last = int(ctx.attr("channels_last", 0))
    return [_qmean(ctx, list(range(1, rank - 1)) if last else list(range(2, rank)), 1)]


@translates("QLinearReduceMean", domain=CONTRIB_DOMAIN)
def qlinear_reduce_mean(ctx: Ctx) -> Sequence[Value]:
    axes = ctx.attr("axes")
    rank = len(ctx.input(0).shape)
    return [_qmean(ctx, [int(a) for a in axes] if axes else list(range(rank)), int(ctx.attr("keepdims", 1)))]
