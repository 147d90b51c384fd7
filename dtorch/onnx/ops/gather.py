"""Element and tuple gathers, running sums: GatherElements, GatherND, CumSum (the attention-mask and position-id paths of
exported text models: BERT, RoBERTa, GPT-2, DistilBERT)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..._export.graph import Value
from .._registry import Ctx, translates
from ._common import norm_axis


@translates("GatherElements")
def gather_elements(ctx: Ctx) -> Sequence[Value]:
    # gather_elements takes int64 and int32 indices (negative ones count from the end, as ONNX's), so they go as given.
    x, idx = ctx.input(0), ctx.input(1)
    rank = len(x.shape)
    if len(idx.shape) != rank:
        raise ctx.fail(f"indices have rank {len(idx.shape)}, data rank {rank}; GatherElements needs the same rank")
    axis = norm_axis(ctx, int(ctx.attr("axis", 0)), max(rank, 1))
    return [ctx.emit1("gather_elements", [x, idx], {"axis": axis})]


@translates("GatherND")
def gather_nd(ctx: Ctx) -> Sequence[Value]:
    x, idx = ctx.input(0), ctx.input(1)
    if np.dtype(idx.dtype) == np.int32:  # ONNX's indices are int64; the kernel takes only those
        idx = ctx.emit1("cast", [idx], {"to": "int64"})
    return [ctx.emit1("gather_nd", [x, idx], {"batch_dims": int(ctx.attr("batch_dims", 0))})]


@translates("CumSum")
def cumsum(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    axis = ctx.const(1, "axis")
    assert axis is not None
    a = np.asarray(axis).reshape(-1)
    if a.size != 1 or a.dtype.kind not in "iu":
        raise ctx.fail(f"axis must be one integer, got {np.asarray(axis).tolist()}")
    rank = len(x.shape)
    return [ctx.emit1("cumsum", [x], {"axis": norm_axis(ctx, int(a[0]), max(rank, 1)),
                                      "exclusive": int(bool(ctx.attr("exclusive", 0))),
                                      "reverse": int(bool(ctx.attr("reverse", 0)))})]
