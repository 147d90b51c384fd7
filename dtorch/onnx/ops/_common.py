"""Helpers shared by the translators: axes, padding rules, float operands."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..._export.graph import Value
from .._registry import Ctx


def norm_axis(ctx: Ctx, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ctx.fail(f"axis {axis} is out of range for a rank-{rank} input")
    return axis % rank


def norm_axes(ctx: Ctx, axes: Sequence[int], rank: int) -> list[int]:
    out = [norm_axis(ctx, int(a), rank) for a in axes]
    if len(set(out)) != len(out):
        raise ctx.fail(f"axes {list(axes)} repeat a dimension")
    return out


def spatial_pads(ctx: Ctx, in_sizes: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                 dilations: Sequence[int]) -> tuple[list[int], list[int]]:
    """(begin, end) padding of each spatial dim from `pads` / `auto_pad` (Conv, MaxPool, AveragePool)."""
    n = len(in_sizes)
    auto = ctx.attr("auto_pad", "NOTSET")
    if auto == "NOTSET":
        pads = [int(p) for p in ctx.attr("pads", [0] * (2 * n))]
        if len(pads) != 2 * n:
            raise ctx.fail(f"pads {pads} must have {2 * n} values")
        return pads[:n], pads[n:]
    if auto == "VALID":
        return [0] * n, [0] * n
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise ctx.fail(f"auto_pad {auto!r} is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER")
    begin, end = [], []
    for size, k, s, d in zip(in_sizes, kernel, strides, dilations):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small, big = total // 2, total - total // 2
        begin.append(small if auto == "SAME_UPPER" else big)
        end.append(big if auto == "SAME_UPPER" else small)
    return begin, end


def as_float(ctx: Ctx, v: Value) -> Value:
    """A constant operand of another float/int dtype as float32 (ONNX's T1/T2 mixes, e.g. Pow's exponent)."""
    if np.dtype(v.dtype) == np.float32:
        return v
    if v.is_const and v.data is not None:
        return ctx.constant(v.data.astype(np.float32))
    return v


def scalar_const(ctx: Ctx, x: float) -> Value:
    return ctx.constant(np.array(x, dtype=np.float32))
