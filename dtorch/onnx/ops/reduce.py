"""Reductions: ReduceMean/Sum/Max/Min and the ones that decompose into them (SumSquare, L1, L2, LogSumExp)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..._export.graph import Value
from .._registry import Ctx, translates
from ._common import norm_axes

_REDUCE = {"ReduceMean": "mean", "ReduceSum": "sum", "ReduceMax": "amax", "ReduceMin": "amin",
           "ReduceSumSquare": "sum", "ReduceL1": "sum", "ReduceL2": "sum", "ReduceLogSum": "sum",
           "ReduceLogSumExp": "sum"}
#: The opset from which `axes` is an input instead of an attribute.
_AXES_INPUT_SINCE = {"ReduceSum": 13}


@translates(*_REDUCE)
def reduce(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    rank = len(x.shape)
    keep = int(ctx.attr("keepdims", 1))
    if ctx.opset >= _AXES_INPUT_SINCE.get(ctx.op_type, 18):
        data = ctx.const(1, "axes") if ctx.has_input(1) else None
        axes = None if data is None else [int(a) for a in np.asarray(data).reshape(-1)]
    else:
        a = ctx.attr("axes")
        axes = None if a is None else [int(v) for v in a]
    if not axes:
        if int(ctx.attr("noop_with_empty_axes", 0)):
            return [x]
        axes = list(range(rank))
    axes = norm_axes(ctx, axes, rank)
    attrs = {"axes": axes, "keepdim": keep}
    op = ctx.op_type
    if op == "ReduceSumSquare" or op == "ReduceL2":
        x = ctx.emit1("mul", [x, x])
    elif op == "ReduceL1":
        x = ctx.emit1("abs", [x])
    elif op == "ReduceLogSumExp":
        # log(sum(exp(x - max))) + max, stable for large inputs.
        m = ctx.emit1("amax", [x], {"axes": axes, "keepdim": 1})
        s = ctx.emit1("sum", [ctx.emit1("exp", [ctx.emit1("sub", [x, m])])], attrs)
        m2 = m if keep else ctx.reshape(m, [d for i, d in enumerate(ctx.shape(m)) if i not in axes])
        return [ctx.emit1("add", [ctx.emit1("log", [s]), m2])]
    if op in ("ReduceMax", "ReduceMin") and np.dtype(x.dtype) == np.bool_:
        # over bools (opset 20): any / all, as the max / min of the values as int64
        as_int = ctx.emit1("cast", [x], {"to": "int64"})
        return [ctx.emit1("cast", [ctx.emit1(_REDUCE[op], [as_int], attrs)], {"to": "bool"})]
    y = ctx.emit1(_REDUCE[op], [x], attrs)
    if op == "ReduceL2":
        y = ctx.emit1("sqrt", [y])
    elif op == "ReduceLogSum":
        y = ctx.emit1("log", [y])
    return [y]
