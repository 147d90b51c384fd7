"""Comparisons (equal, less, greater: bool results), selection (where) and dtype conversion (cast)."""

from __future__ import annotations

from ._schema import BOOL, F32, I32, I64, MOVABLE_DTYPES, Attr, OpDef, Operand, Signature

_AB = (Operand("a", "any shape"), Operand("b", "broadcastable with a, a's dtype"))
#: The dtypes the comparisons take (both operands the same dtype; integers compare exactly).
_COMPARED = (F32, I64, I32)
#: The dtypes cast converts between (every ordered pair of two different ones is a signature).
CAST_DTYPES = (F32, I64, I32, BOOL)


def _compare(name: str, summary: str) -> OpDef:
    return OpDef(name, summary, _AB, signatures=tuple(Signature((d, d), (BOOL,)) for d in _COMPARED),
                 shape="NumPy broadcasting of a and b", eager=("compare",), family="compare")


_CAST_DOC = ("x converted to the dtype `to` (numpy astype, ONNX Cast): float -> integer truncates toward zero and "
             "saturates (NaN -> 0, +inf and values above the integer's range -> its max, -inf and values below -> "
             "its min); int64 -> int32 keeps the low 32 bits (wraps, as torch and numpy do); integer -> float32 "
             "rounds to nearest even; anything -> bool is x != 0 (NaN -> true); bool -> number is 0 / 1")

OPS = [
    _compare("equal", "a == b elementwise (torch.eq; NaN == NaN is false)"),
    _compare("less", "a < b elementwise (torch.lt; false where either is NaN)"),
    _compare("greater", "a > b elementwise (torch.gt; false where either is NaN)"),
    OpDef("where", "x where cond else y, elementwise (torch.where)",
          (Operand("cond", "bool, broadcastable"), Operand("x", "broadcastable"), Operand("y", "broadcastable, x's dtype")),
          outputs=(Operand("out"),), signatures=tuple(Signature((BOOL, d, d), (d,)) for d in MOVABLE_DTYPES),
          shape="NumPy broadcasting of cond, x and y", eager=("where",), family="compare"),
    OpDef("cast", _CAST_DOC, (Operand("x", "any shape"),),
          attrs=(Attr("to", "string", choices=CAST_DTYPES, doc="the output dtype; never the input's own"),),
          signatures=tuple(Signature((s,), (d,)) for d in CAST_DTYPES for s in CAST_DTYPES if s != d),
          eager=("cast",), family="compare", dtype_attr="to"),
]
