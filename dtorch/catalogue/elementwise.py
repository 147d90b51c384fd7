"""Binary elementwise operators with NumPy broadcasting."""

from __future__ import annotations

from ._schema import ACTIVATION_ATTRS, F32, FUSED_ACTIVATIONS, I32, I64, OpDef, Operand, Signature

_AB = (Operand("a", "any shape"), Operand("b", "broadcastable with a"))
#: float32, and int64 / int32 (integer arithmetic wraps around; the fused activation is float32 only).
_SIG = tuple(Signature((d, d), (d,)) for d in (F32, I64, I32))
#: pow also takes an integer base with a float32 exponent (ONNX Pow: the result has the base's dtype).
_POW_SIG = _SIG + (Signature((I64, F32), (I64,)), Signature((I32, F32), (I32,)))


def _binary(name: str, summary: str, *, fused: bool = False) -> OpDef:
    return OpDef(name, summary, _AB, attrs=ACTIVATION_ATTRS if fused else (),
                 signatures=_POW_SIG if name == "pow" else _SIG,
                 shape="NumPy broadcasting of a and b", inplace="same_shape" if name in _INPLACE else "none",
                 fuses=FUSED_ACTIVATIONS if fused else (), eager=(name,), family="elementwise")


_INPLACE = ("add", "sub", "mul", "div")

OPS = [
    _binary("add", "a + b, then the fused activation", fused=True),
    _binary("sub", "a - b"),
    _binary("mul", "a * b"),
    _binary("div", "a / b (integers: truncated toward zero; a division by zero gives 0, as NumPy)"),
    _binary("pow", "a ** b (an integer base: exact for integer exponents >= 0, float32 exponents truncate toward "
                   "zero, 0 ** -n = 0)"),
    _binary("maximum", "elementwise max (NaN propagates)"),
    _binary("minimum", "elementwise min (NaN propagates)"),
]
