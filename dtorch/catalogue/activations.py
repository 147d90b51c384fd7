"""Unary elementwise operators (same shape out as in; the output may take the input's buffer)."""

from __future__ import annotations

from ._schema import F32, Attr, OpDef, Operand, Signature, flag

_X = (Operand("x", "any shape"),)


def _unary(name: str, summary: str, *attrs: Attr, fused_as: str | None = None,
           fused_attrs: tuple[tuple[str, str], ...] = ()) -> OpDef:
    return OpDef(name, summary, _X, attrs=attrs, inplace="always", eager=(name,), family="activation",
                 fused_as=fused_as, fused_attrs=fused_attrs)


OPS = [
    _unary("relu", "max(x, 0)", fused_as="relu"),
    _unary("sigmoid", "1 / (1 + exp(-x))", fused_as="sigmoid"),
    _unary("tanh", "tanh(x)", fused_as="tanh"),
    _unary("silu", "x * sigmoid(x)", fused_as="silu"),
    _unary("hardswish", "x * hardtanh(x + 3, 0, 6) / 6", fused_as="hardswish"),
    _unary("hardsigmoid", "hardtanh(x + 3, 0, 6) / 6", fused_as="hardsigmoid"),
    _unary("gelu", "x * Phi(x): erf form, or the tanh approximation",
           Attr("approximate", "string", "none", choices=("none", "tanh"), doc="\"tanh\": the tanh approximation"),
           fused_as="gelu"),
    _unary("exp", "e^x"),
    _unary("log", "natural logarithm"),
    _unary("sqrt", "square root"),
    _unary("rsqrt", "1 / sqrt(x)"),
    _unary("neg", "-x"),
    _unary("abs", "|x|"),
    _unary("erf", "the error function"),
    _unary("sin", "sine"),
    _unary("cos", "cosine"),
    _unary("reciprocal", "1 / x"),
    _unary("hardtanh", "clamp(x, min_val, max_val) (relu6 = hardtanh 0..6)",
           Attr("min_val", "float", -1.0), Attr("max_val", "float", 1.0),
           fused_as="hardtanh", fused_attrs=(("min_val", "min_val"), ("max_val", "max_val"))),
    _unary("leaky_relu", "x if x > 0 else alpha * x", Attr("alpha", "float", 0.01, doc="the negative slope"),
           fused_as="leaky_relu", fused_attrs=(("alpha", "alpha"),)),
    _unary("elu", "x if x > 0 else alpha * (exp(x) - 1)", Attr("alpha", "float", 1.0)),
    _unary("softplus", "log(1 + exp(beta x)) / beta, or x where beta x > threshold",
           Attr("beta", "float", 1.0), Attr("threshold", "float", 20.0)),
    _unary("clamp", "x clamped to [min, max] (each bound only when its has_ flag is 1)",
           Attr("min", "float", 0.0), Attr("max", "float", 0.0),
           flag("has_min", 0), flag("has_max", 0)),
    OpDef("prelu", "x if x > 0 else w[c] * x, c the channel (dim 1); one slope for every channel when w has one "
          "element", (Operand("x", "(N, C, ...) or (N,)"), Operand("w", "(C) or (1)")),
          signatures=(Signature((F32, F32), (F32,)),), inplace="always", family="activation"),
]
