"""Binary elementwise operators with NumPy broadcasting."""

from __future__ import annotations

from ._schema import ACTIVATION_ATTRS, F32, FUSED_ACTIVATIONS, OpDef, Operand, Signature

_AB = (Operand("a", "any shape"), Operand("b", "broadcastable with a"))
_SIG = (Signature((F32, F32), (F32,)),)


def _binary(name: str, summary: str, *, fused: bool = False) -> OpDef:
    return OpDef(name, summary, _AB, attrs=ACTIVATION_ATTRS if fused else (), signatures=_SIG,
                 shape="NumPy broadcasting of a and b", inplace="same_shape" if name in _INPLACE else "none",
                 fuses=FUSED_ACTIVATIONS if fused else (), eager=(name,), family="elementwise")


_INPLACE = ("add", "sub", "mul", "div")

OPS = [
    _binary("add", "a + b, then the fused activation", fused=True),
    _binary("sub", "a - b"),
    _binary("mul", "a * b"),
    _binary("div", "a / b"),
    _binary("pow", "a ** b"),
    _binary("maximum", "elementwise max (NaN propagates)"),
    _binary("minimum", "elementwise min (NaN propagates)"),
]
