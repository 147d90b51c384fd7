"""Reductions and softmax along dimensions."""

from __future__ import annotations

from ._schema import MAX_DIMS as _MAXD
from ._schema import Attr, OpDef, Operand, flag


def _reduce(name: str, summary: str) -> OpDef:
    return OpDef(name, summary, (Operand("x"),),
                 attrs=(Attr("axes", "ints", None, lo=-_MAXD, hi=_MAXD - 1, length=(0, _MAXD),
                             doc="absent = every dimension; an empty list reduces nothing"),
                        flag("keepdim", 0)),
                 shape="the reduced dims removed (kept as 1 with keepdim)", eager=(name,), family="reduce")


def _softmax(name: str, summary: str) -> OpDef:
    return OpDef(name, summary, (Operand("x"),), attrs=(Attr("dim", "int", -1, lo=-_MAXD, hi=_MAXD - 1),),
                 eager=(name,), family="reduce")


OPS = [
    _reduce("mean", "mean over `axes`"),
    _reduce("sum", "sum over `axes`"),
    _softmax("softmax", "exp(x - max) / sum along `dim`"),
    _softmax("log_softmax", "log of softmax along `dim`"),
]
