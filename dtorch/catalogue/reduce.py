"""Reductions and softmax along dimensions."""

from __future__ import annotations

from ._schema import F32, I32, I64, Attr, OpDef, Operand, Signature, flag
from ._schema import MAX_DIMS as _MAXD


def _reduce(name: str, summary: str, dtypes: tuple[str, ...] = (F32,), eager: str | None = None) -> OpDef:
    return OpDef(name, summary, (Operand("x"),),
                 attrs=(Attr("axes", "ints", None, lo=-_MAXD, hi=_MAXD - 1, length=(0, _MAXD),
                             doc="absent = every dimension; an empty list reduces nothing"),
                        flag("keepdim", 0)),
                 signatures=tuple(Signature((d,), (d,)) for d in dtypes),
                 shape="the reduced dims removed (kept as 1 with keepdim)", eager=(eager or name,), family="reduce")


def _softmax(name: str, summary: str) -> OpDef:
    return OpDef(name, summary, (Operand("x"),), attrs=(Attr("dim", "int", -1, lo=-_MAXD, hi=_MAXD - 1),),
                 eager=(name,), family="reduce")


OPS = [
    _reduce("mean", "mean over `axes`"),
    _reduce("sum", "sum over `axes`"),
    # eager: dtorch's Amax primitive serves amax and amin (largest=False), and max()/min() without a dim
    _reduce("amax", "max over `axes` (torch.amax: NaN propagates; a reduced dimension of size 0 is an error)",
            (F32, I64), "amax"),
    _reduce("amin", "min over `axes` (torch.amin: NaN propagates; a reduced dimension of size 0 is an error)",
            (F32, I64), "amax"),
    OpDef("cumsum", "running sums along `axis` (torch.cumsum, ONNX CumSum): y[..i..] = x[..0..] + .. + x[..i..], or "
          "with `exclusive` the sum of the elements before i (0 at the first), with `reverse` from the end; float32 adds in "
          "float32 one element at a time in that order, integers wrap around on overflow",
          (Operand("x"),),
          attrs=(Attr("axis", "int", lo=0, hi=_MAXD - 1, doc="a rank-0 x takes 0"),
                 flag("exclusive", 0, "leave out the element itself"), flag("reverse", 0, "sum from the end")),
          signatures=tuple(Signature((d,), (d,)) for d in (F32, I64, I32)), eager=("cumsum",), family="reduce"),
    _softmax("softmax", "exp(x - max) / sum along `dim`"),
    _softmax("log_softmax", "log of softmax along `dim`"),
]
