"""Resize (opsets 11 to 19) and Upsample: the runtime's `resize` operator, attributes from dtorch/onnx/_resize.py."""

from __future__ import annotations

from collections.abc import Sequence

from ..._export.graph import Value
from .._registry import Ctx, translates
from .._resize import resize_attrs


@translates("Resize")
def resize(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    roi = ctx.const(1, "roi") if ctx.has_input(1) else None
    scales = ctx.const(2, "scales") if ctx.has_input(2) else None
    sizes = ctx.const(3, "sizes") if ctx.has_input(3) else None
    try:
        attrs = resize_attrs(ctx.shape(x), ctx.attrs, roi, scales, sizes)
    except ValueError as e:
        raise ctx.fail(str(e)) from None
    return [ctx.emit1("resize", [x], attrs)]
