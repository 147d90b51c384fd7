"""Elementwise operators: arithmetic with broadcasting, activations, comparisons, Where, Cast, Clip."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..._export.graph import Value
from .._registry import Ctx, translates
from ._common import as_float, scalar_const

_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow"}


@translates(*_BINARY)
def binary(ctx: Ctx) -> Sequence[Value]:
    a, b = ctx.input(0), ctx.input(1)
    if ctx.op_type == "Pow" and np.dtype(a.dtype) == np.float32 and np.dtype(b.dtype) != np.float32:
        b = as_float(ctx, b) if b.is_const else ctx.emit1("cast", [b], {"to": "float32"})
    return [ctx.emit1(_BINARY[ctx.op_type], [a, b])]


_VARIADIC = {"Max": "maximum", "Min": "minimum", "Sum": "add", "Mean": "add"}


@translates(*_VARIADIC)
def variadic(ctx: Ctx) -> Sequence[Value]:
    xs = [ctx.input(i) for i in range(ctx.num_inputs)]
    if not xs:
        raise ctx.fail("it needs at least one input")
    y = xs[0]
    for x in xs[1:]:
        y = ctx.emit1(_VARIADIC[ctx.op_type], [y, x])
    if ctx.op_type == "Mean" and len(xs) > 1:
        y = ctx.emit1("div", [y, scalar_const(ctx, float(len(xs)))])
    elif len(xs) == 1:
        y = ctx.emit1("reshape", [y], {"shape": [0] * len(y.shape)}) if not y.is_const else y
    return [y]


_UNARY = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Exp": "exp", "Log": "log", "Sqrt": "sqrt",
          "Neg": "neg", "Abs": "abs", "Erf": "erf", "Sin": "sin", "Cos": "cos", "Reciprocal": "reciprocal",
          "HardSwish": "hardswish", "Softplus": "softplus"}


@translates(*_UNARY)
def unary(ctx: Ctx) -> Sequence[Value]:
    return [ctx.emit1(_UNARY[ctx.op_type], [ctx.input(0)])]


@translates("LeakyRelu")
def leaky_relu(ctx: Ctx) -> Sequence[Value]:
    return [ctx.emit1("leaky_relu", [ctx.input(0)], {"alpha": float(ctx.attr("alpha", 0.01))})]


@translates("Elu")
def elu(ctx: Ctx) -> Sequence[Value]:
    return [ctx.emit1("elu", [ctx.input(0)], {"alpha": float(ctx.attr("alpha", 1.0))})]


@translates("Selu")
def selu(ctx: Ctx) -> Sequence[Value]:
    alpha, gamma = float(ctx.attr("alpha", 1.67326319217681884765625)), float(ctx.attr("gamma", 1.05070102214813232421875))
    y = ctx.emit1("elu", [ctx.input(0)], {"alpha": alpha})
    return [ctx.emit1("mul", [y, scalar_const(ctx, gamma)])]


@translates("Softsign")
def softsign(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    d = ctx.emit1("add", [ctx.emit1("abs", [x]), scalar_const(ctx, 1.0)])
    return [ctx.emit1("div", [x, d])]


@translates("Mish")
def mish(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    return [ctx.emit1("mul", [x, ctx.emit1("tanh", [ctx.emit1("softplus", [x])])])]


@translates("HardSigmoid")
def hardsigmoid(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    alpha, beta = float(ctx.attr("alpha", 0.2)), float(ctx.attr("beta", 0.5))
    if abs(alpha - 1.0 / 6.0) < 1e-7 and beta == 0.5:
        return [ctx.emit1("hardsigmoid", [x])]
    y = ctx.emit1("add", [ctx.emit1("mul", [x, scalar_const(ctx, alpha)]), scalar_const(ctx, beta)])
    return [ctx.emit1("clamp", [y], {"min": 0.0, "max": 1.0, "has_min": 1, "has_max": 1})]


@translates("Gelu")
def gelu(ctx: Ctx) -> Sequence[Value]:
    approx = ctx.attr("approximate", "none")
    if approx not in ("none", "tanh"):
        raise ctx.fail(f"approximate={approx!r} is not 'none' or 'tanh'")
    return [ctx.emit1("gelu", [ctx.input(0)], {"approximate": approx})]


@translates("PRelu")
def prelu(ctx: Ctx) -> Sequence[Value]:
    x, slope = ctx.input(0), ctx.input(1)
    rank = len(x.shape)
    if slope.is_const and slope.data is not None:
        s = slope.data.astype(np.float32)
        if s.size == 1:
            return [ctx.emit1("prelu", [x, ctx.constant(s.reshape(1))])]
        full = s.reshape((1,) * (rank - s.ndim) + s.shape) if s.ndim <= rank else s
        if rank >= 2 and full.ndim == rank and all(d == 1 for i, d in enumerate(full.shape) if i != 1) and \
                full.shape[1] == x.shape[1]:
            return [ctx.emit1("prelu", [x, ctx.constant(full.reshape(-1))])]
    # The general broadcast: relu(x) + slope * min(x, 0).
    neg = ctx.emit1("mul", [ctx.emit1("minimum", [x, scalar_const(ctx, 0.0)]), slope])
    return [ctx.emit1("add", [ctx.emit1("relu", [x]), neg])]


@translates("Clip")
def clip(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    if ctx.opset < 11:
        lo, hi = ctx.attr("min"), ctx.attr("max")
        lo_v = None if lo is None else scalar_const(ctx, lo)
        hi_v = None if hi is None else scalar_const(ctx, hi)
    else:
        lo_v, hi_v = ctx.optional(1), ctx.optional(2)
    if all(v is None or v.is_const for v in (lo_v, hi_v)):
        attrs: dict[str, object] = {}
        if lo_v is not None:
            attrs.update(min=float(np.asarray(lo_v.data).reshape(-1)[0]), has_min=1)
        if hi_v is not None:
            attrs.update(max=float(np.asarray(hi_v.data).reshape(-1)[0]), has_max=1)
        if not attrs:
            return [ctx.emit1("reshape", [x], {"shape": [0] * len(x.shape)})]
        # As activations where they are ones (they fuse into a preceding conv/linear/add): relu, relu6 / hardtanh.
        if attrs.get("min") == 0.0 and "max" not in attrs:
            return [ctx.emit1("relu", [x])]
        if "min" in attrs and "max" in attrs and attrs["min"] <= attrs["max"]:
            return [ctx.emit1("hardtanh", [x], {"min_val": attrs["min"], "max_val": attrs["max"]})]
        return [ctx.emit1("clamp", [x], attrs)]
    y = x
    if lo_v is not None:
        y = ctx.emit1("maximum", [y, lo_v])
    if hi_v is not None:
        y = ctx.emit1("minimum", [y, hi_v])
    return [y]


@translates("Identity")
def identity(ctx: Ctx) -> Sequence[Value]:
    return [ctx.input(0)]


@translates("Dropout")
def dropout(ctx: Ctx) -> Sequence[Value | None]:
    x = ctx.input(0)
    training, training_known = False, True
    if ctx.opset < 12:  # ratio an attribute, and no training_mode
        ratio = float(ctx.attr("ratio", 0.5))
    else:
        r = ctx.const(1, "ratio") if ctx.has_input(1) else None
        ratio = 0.5 if r is None else float(np.asarray(r).reshape(-1)[0])
        if ctx.has_input(2):
            t = ctx.input(2)
            training_known = t.is_const and t.data is not None
            training = training_known and bool(np.asarray(t.data).reshape(-1)[0])
    # At inference, and in training with ratio 0, the output is the input and the mask all true. Training with a
    # nonzero ratio draws random numbers, which a deployed model should not do.
    if ratio != 0.0 and (training or not training_known):
        why = "training_mode is true" if training else "training_mode is computed from the model's inputs"
        raise ctx.fail(f"{why} with ratio {ratio:g}; dtorch imports models for inference (export them in eval mode)")
    mask = ctx.constant(np.ones(ctx.shape(x), dtype=np.bool_)) if ctx.output_used(1) else None
    return [x, mask]


_COMPARE = {"Equal": "equal", "Less": "less", "Greater": "greater"}


def _true(ctx: Ctx) -> Value:
    return ctx.constant(np.array(True))


def _false(ctx: Ctx) -> Value:
    return ctx.constant(np.array(False))


def _not(ctx: Ctx, x: Value) -> Value:
    return ctx.emit1("where", [x, _false(ctx), _true(ctx)])


def _bool_inputs(ctx: Ctx, n: int) -> list[Value]:
    xs = [ctx.input(i) for i in range(n)]
    for i, x in enumerate(xs):
        if np.dtype(x.dtype) != np.bool_:
            raise ctx.fail(f"input {i} is {np.dtype(x.dtype).name}; {ctx.op_type} takes bool tensors")
    return xs


@translates(*_COMPARE)
def compare(ctx: Ctx) -> Sequence[Value]:
    a, b = ctx.input(0), ctx.input(1)
    if ctx.op_type == "Equal" and np.dtype(a.dtype) == np.bool_:  # a == b of bools: b where a, else not b
        return [ctx.emit1("where", [a, b, _not(ctx, b)])]
    return [ctx.emit1(_COMPARE[ctx.op_type], [a, b])]


@translates("GreaterOrEqual", "LessOrEqual")
def compare_or_equal(ctx: Ctx) -> Sequence[Value]:
    """a >= b as (a > b) or (a == b), exactly: a NaN compares false either way, so it is not the negation of <."""
    a, b = ctx.input(0), ctx.input(1)
    strict = ctx.emit1("greater" if ctx.op_type == "GreaterOrEqual" else "less", [a, b])
    return [ctx.emit1("where", [strict, _true(ctx), ctx.emit1("equal", [a, b])])]


@translates("Not")
def not_(ctx: Ctx) -> Sequence[Value]:
    return [_not(ctx, _bool_inputs(ctx, 1)[0])]


@translates("And", "Or", "Xor")
def logical(ctx: Ctx) -> Sequence[Value]:
    a, b = _bool_inputs(ctx, 2)
    if ctx.op_type == "And":
        return [ctx.emit1("where", [a, b, _false(ctx)])]
    if ctx.op_type == "Or":
        return [ctx.emit1("where", [a, _true(ctx), b])]
    return [ctx.emit1("where", [a, _not(ctx, b), b])]


@translates("IsNaN")
def isnan(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    return [_not(ctx, ctx.emit1("equal", [x, x]))]  # NaN is the one value unequal to itself


@translates("IsInf")
def isinf(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    if np.dtype(x.dtype).kind != "f":
        raise ctx.fail(f"IsInf of {np.dtype(x.dtype).name}; it takes float tensors")
    pos, neg = bool(ctx.attr("detect_positive", 1)), bool(ctx.attr("detect_negative", 1))
    inf = ctx.constant(np.array(np.inf, dtype=x.dtype))
    if pos and neg:
        return [ctx.emit1("equal", [ctx.emit1("abs", [x]), inf])]
    if pos or neg:
        return [ctx.emit1("equal", [x, inf if pos else ctx.constant(np.array(-np.inf, dtype=x.dtype))])]
    return [ctx.emit1("where", [ctx.emit1("equal", [x, x]), _false(ctx), _false(ctx)])]  # neither: all false


@translates("Where")
def where(ctx: Ctx) -> Sequence[Value]:
    return [ctx.emit1("where", [ctx.input(0), ctx.input(1), ctx.input(2)])]


def _cast_to(ctx: Ctx, x: Value, to: np.dtype) -> Value:
    if np.dtype(x.dtype) == to:
        return x
    from ...catalogue._schema import MOVABLE_DTYPES

    if to.name not in MOVABLE_DTYPES:
        raise ctx.fail(f"it casts to {to.name}; the runtime's tensors are {', '.join(MOVABLE_DTYPES)}")
    return ctx.emit1("cast", [x], {"to": to.name})


@translates("Cast")
def cast(ctx: Ctx) -> Sequence[Value]:
    from onnx import helper

    to = ctx.attr("to")
    try:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(int(to)))
    except Exception:
        raise ctx.fail(f"it casts to ONNX element type {to}, which dtorch does not support") from None
    return [_cast_to(ctx, ctx.input(0), dtype)]


@translates("CastLike")
def cast_like(ctx: Ctx) -> Sequence[Value]:
    return [_cast_to(ctx, ctx.input(0), np.dtype(ctx.input(1).dtype))]
