"""Data movement: Reshape, Flatten, Squeeze/Unsqueeze, Transpose, Concat, Split, Slice, Gather, Expand, Pad,
DepthToSpace/SpaceToDepth, Tile."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..._export.graph import Value
from ..._export.lower import INT64_MAX
from .._registry import Ctx, translates
from ._common import norm_axes, norm_axis


def _ints(ctx: Ctx, i: int, what: str) -> list[int] | None:
    data = ctx.const(i, what)
    return None if data is None else [int(v) for v in np.asarray(data).reshape(-1)]


def _reshape_target(ctx: Ctx, x: Value, target: list[int], allowzero: bool) -> list[int]:
    """The output shape of ONNX Reshape (0 copies the input dim unless allowzero, one -1 is inferred)."""
    shape = ctx.shape(x)
    out = [shape[i] if t == 0 and not allowzero else t for i, t in enumerate(target)]
    if any(t == 0 for t in target) and not allowzero and len(target) > len(shape) and \
            any(t == 0 and i >= len(shape) for i, t in enumerate(target)):
        raise ctx.fail(f"shape {target} copies (0) a dimension the rank-{len(shape)} input does not have")
    if out.count(-1) > 1 or any(t < -1 for t in out):
        raise ctx.fail(f"shape {target} has more than one -1 or a negative size")
    total = int(np.prod(shape, dtype=np.int64))
    if -1 in out:
        rest = int(np.prod([t for t in out if t != -1], dtype=np.int64))
        if rest == 0 or total % rest:
            raise ctx.fail(f"cannot reshape {list(shape)} into {target}")
        out[out.index(-1)] = total // rest
    if int(np.prod(out, dtype=np.int64)) != total:
        raise ctx.fail(f"cannot reshape {list(shape)} ({total} elements) into {target}")
    return out


@translates("Reshape")
def reshape(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    target = _ints(ctx, 1, "shape")
    assert target is not None
    allowzero = bool(ctx.attr("allowzero", 0))
    out = _reshape_target(ctx, x, target, allowzero)
    if (allowzero and 0 in target) or len(target) > 8:
        return [ctx.reshape(x, out)]
    # The target as written (0 = copy, -1 = inferred) keeps working when a dynamic dimension changes.
    return [x if tuple(out) == ctx.shape(x) and target == [0] * len(out) else
            ctx.emit1("reshape", [x], {"shape": target})]


@translates("Flatten")
def flatten(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    shape = ctx.shape(x)
    axis = int(ctx.attr("axis", 1))
    axis = axis + len(shape) if axis < 0 else axis
    if not 0 <= axis <= len(shape):
        raise ctx.fail(f"axis {axis} is out of range for a rank-{len(shape)} input")
    lead = int(np.prod(shape[:axis], dtype=np.int64))
    return [ctx.reshape(x, [lead, int(np.prod(shape[axis:], dtype=np.int64))])]


def _axes_arg(ctx: Ctx, since: int) -> list[int] | None:
    """`axes` as an attribute before opset `since`, as an optional input from it."""
    if ctx.opset < since:
        a = ctx.attr("axes")
        return None if a is None else [int(v) for v in a]
    return _ints(ctx, 1, "axes")


@translates("Squeeze")
def squeeze(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    shape = ctx.shape(x)
    axes = _axes_arg(ctx, 13)
    if axes is None:
        axes = [i for i, s in enumerate(shape) if s == 1]
    axes = norm_axes(ctx, axes, len(shape))
    for a in axes:
        if shape[a] != 1:
            raise ctx.fail(f"dimension {a} of {list(shape)} is {shape[a]}, not 1")
    return [ctx.reshape(x, [s for i, s in enumerate(shape) if i not in axes])]


@translates("Unsqueeze")
def unsqueeze(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    shape = list(ctx.shape(x))
    axes = _axes_arg(ctx, 13)
    if axes is None:
        raise ctx.fail("axes is required")
    rank = len(shape) + len(axes)
    axes = sorted(norm_axes(ctx, axes, rank))
    for a in axes:
        shape.insert(a, 1)
    return [ctx.reshape(x, shape)]


@translates("Transpose")
def transpose(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    rank = len(x.shape)
    perm = [int(p) for p in ctx.attr("perm", list(range(rank))[::-1])]
    if sorted(perm) != list(range(rank)):
        raise ctx.fail(f"perm {perm} is not a permutation of 0..{rank - 1}")
    if perm == list(range(rank)):
        return [x]
    return [ctx.emit1("permute", [x], {"perm": perm})]


@translates("Concat")
def concat(ctx: Ctx) -> Sequence[Value]:
    xs = [ctx.input(i) for i in range(ctx.num_inputs) if ctx.has_input(i)]
    if not xs:
        raise ctx.fail("it has no inputs")
    rank = len(xs[0].shape)
    axis = norm_axis(ctx, int(ctx.attr("axis", 0)), rank)
    if len(xs) == 1:
        return [xs[0]]
    return [ctx.emit1("concat", xs, {"axis": axis})]


def _slice_axis(ctx: Ctx, x: Value, axis: int, start: int, end: int) -> Value:
    return ctx.emit1("slice", [x], {"axes": [axis], "starts": [start], "ends": [end]})


@translates("Split")
def split(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    shape = ctx.shape(x)
    axis = norm_axis(ctx, int(ctx.attr("axis", 0)), len(shape))
    dim = shape[axis]
    n = ctx.num_outputs
    sizes = [int(s) for s in ctx.attr("split")] if ctx.opset < 13 and ctx.attr("split") is not None else \
        (_ints(ctx, 1, "split") if ctx.opset >= 13 else None)
    if sizes is None:
        parts = int(ctx.attr("num_outputs", n))
        if parts != n:
            raise ctx.fail(f"num_outputs {parts} differs from its {n} outputs")
        if ctx.opset >= 18 and "num_outputs" in ctx.attrs:
            chunk = -(-dim // n)
            sizes = [min(chunk, dim - i * chunk) for i in range(n)]
        else:
            if dim % n:
                raise ctx.fail(f"dimension {axis} ({dim}) does not split evenly into {n} outputs")
            sizes = [dim // n] * n
    if len(sizes) != n or sum(sizes) != dim or any(s < 0 for s in sizes):
        raise ctx.fail(f"split sizes {sizes} do not cover dimension {axis} ({dim}) in {n} outputs")
    outs, at = [], 0
    for s in sizes:
        outs.append(_slice_axis(ctx, x, axis, at, at + s))
        at += s
    return outs


@translates("Slice")
def slice_(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    shape = ctx.shape(x)
    starts, ends = _ints(ctx, 1, "starts"), _ints(ctx, 2, "ends")
    assert starts is not None and ends is not None
    axes = _ints(ctx, 3, "axes") or list(range(len(starts)))
    steps = _ints(ctx, 4, "steps") or [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.fail(f"starts {starts}, ends {ends}, axes {axes} and steps {steps} differ in length")
    axes = norm_axes(ctx, axes, len(shape))
    if any(s == 0 for s in steps):
        raise ctx.fail("a step is 0")
    if ctx.varying & {1, 2, 3, 4}:
        return [_slice_following(ctx, x, axes, starts, ends, steps)]
    pos = [(a, s, e, st) for a, s, e, st in zip(axes, starts, ends, steps) if st > 0]
    y = x
    if pos:
        # An end at or past the dimension is 'to the end' (INT64_MAX), the same whatever its size.
        canon_ends = [INT64_MAX if e >= shape[a] else e for a, _, e, _ in pos]
        if not all(s == 0 and e == INT64_MAX and st == 1 for (_, s, _, st), e in zip(pos, canon_ends)):
            y = ctx.emit1("slice", [y], {"axes": [a for a, *_ in pos], "starts": [s for _, s, _, _ in pos],
                                         "ends": canon_ends, "steps": [st for *_, st in pos]})
    for a, s, e, st in ((a, s, e, st) for a, s, e, st in zip(axes, starts, ends, steps) if st < 0):
        idx = np.arange(shape[a], dtype=np.int64)[slice(s, e, st)]
        y = ctx.emit1("index_select", [y, ctx.constant(idx)], {"axis": a})
    return [y]


def _slice_following(ctx: Ctx, x: Value, axes: list[int], starts: list[int], ends: list[int],
                     steps: list[int]) -> Value:
    """A slice whose bounds follow a dynamic dimension (e.g. a position-id buffer cut to the sequence length,
    buffer[:, :seq]): per axis, an index_select of an arange whose length the dynamic-dimension merge ties to that
    dimension. Its start and step must not change with the dimension."""
    y = x
    shape = ctx.shape(x)
    for a, s, e, st in zip(axes, starts, ends, steps):
        idx = np.arange(shape[a], dtype=np.int64)[slice(s, e, st)]
        if len(idx) == shape[a] and st == 1:
            continue
        if len(idx) == 0:
            y = _slice_axis(ctx, y, a, 0, 0)
            continue
        first = ctx.constant(np.array(idx[0], dtype=np.int64))
        y = ctx.emit1("index_select", [y, ctx.emit1("arange", [first], {"shape": [len(idx)], "step": float(st)})],
                      {"axis": a})
    return y


@translates("Gather")
def gather(ctx: Ctx) -> Sequence[Value]:
    x, idx = ctx.input(0), ctx.input(1)
    shape = ctx.shape(x)
    axis = norm_axis(ctx, int(ctx.attr("axis", 0)), len(shape))
    out_shape = [*shape[:axis], *ctx.shape(idx), *shape[axis + 1:]]
    if idx.is_const and idx.data is not None:
        i = idx.data.astype(np.int64)
        if i.size and (i.min() < -shape[axis] or i.max() >= shape[axis]):
            raise ctx.fail(f"indices {i.reshape(-1).tolist()[:8]} are out of range for dimension {axis} "
                           f"({shape[axis]})")
        flat = ctx.constant(np.where(i < 0, i + shape[axis], i).reshape(-1))
        return [ctx.reshape(ctx.emit1("index_select", [x, flat], {"axis": axis}), out_shape)]
    if np.dtype(idx.dtype) != np.int64:
        idx = ctx.emit1("cast", [idx], {"to": "int64"})
    if axis == 0 and len(shape) == 2 and x.is_const:
        return [ctx.emit1("embedding", [idx, x])]
    flat = idx if len(idx.shape) == 1 else ctx.reshape(idx, [-1])
    return [ctx.reshape(ctx.emit1("index_select", [x, flat], {"axis": axis}), out_shape)]


@translates("Expand")
def expand(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    target = _ints(ctx, 1, "shape")
    assert target is not None
    shape = ctx.shape(x)
    try:
        out = list(np.broadcast_shapes(shape, tuple(target)))
    except ValueError:
        raise ctx.fail(f"shape {target} does not broadcast with the input {list(shape)}") from None
    if tuple(out) == shape and ctx.fold:  # (not folding: the target follows a dynamic dim, keep the operator)
        return [x]
    lead = len(out) - len(shape)
    attr = [0 if i >= lead and out[i] == shape[i - lead] else out[i] for i in range(len(out))]
    return [ctx.emit1("expand", [x], {"shape": attr})]


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate", "wrap": "circular"}


@translates("Pad")
def pad(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    rank = len(x.shape)
    mode = ctx.attr("mode", "constant")
    if mode not in _PAD_MODES:
        raise ctx.fail(f"mode {mode!r} is not one of {', '.join(_PAD_MODES)}")
    pads = _ints(ctx, 1, "pads")
    assert pads is not None
    value = ctx.const(2, "constant_value") if ctx.has_input(2) else None
    axes = _ints(ctx, 3, "axes") if ctx.has_input(3) else None
    axes = norm_axes(ctx, axes, rank) if axes is not None else list(range(rank))
    if len(pads) != 2 * len(axes):
        raise ctx.fail(f"pads {pads} must have 2 x {len(axes)} values")
    lo, hi = [0] * rank, [0] * rank
    for k, a in enumerate(axes):
        lo[a], hi[a] = pads[k], pads[len(axes) + k]
    torch_order: list[int] = []
    for d in reversed(range(rank)):
        torch_order += [lo[d], hi[d]]
    while torch_order[-2:] == [0, 0] and len(torch_order) > 2:
        torch_order = torch_order[:-2]
    if not any(torch_order):
        return [x]
    attrs: dict[str, object] = {"pads": torch_order, "mode": _PAD_MODES[mode]}
    if mode == "constant" and value is not None and np.asarray(value).size:
        attrs["value"] = float(np.asarray(value).reshape(-1)[0])
    return [ctx.emit1("pad", [x], attrs)]


@translates("DepthToSpace")
def depth_to_space(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    n, c, h, w = ctx.shape(x)
    b = int(ctx.attr("blocksize"))
    if b < 1 or c % (b * b):
        raise ctx.fail(f"blocksize {b} does not divide the {c} channels into b*b groups")
    if ctx.attr("mode", "DCR") == "DCR":
        t = ctx.reshape(x, [n, b, b, c // (b * b), h, w])
        t = ctx.emit1("permute", [t], {"perm": [0, 3, 4, 1, 5, 2]})
    else:
        t = ctx.reshape(x, [n, c // (b * b), b, b, h, w])
        t = ctx.emit1("permute", [t], {"perm": [0, 1, 4, 2, 5, 3]})
    return [ctx.reshape(t, [n, c // (b * b), h * b, w * b])]


@translates("SpaceToDepth")
def space_to_depth(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    n, c, h, w = ctx.shape(x)
    b = int(ctx.attr("blocksize"))
    if b < 1 or h % b or w % b:
        raise ctx.fail(f"blocksize {b} does not divide the spatial size {h}x{w}")
    t = ctx.reshape(x, [n, c, h // b, b, w // b, b])
    t = ctx.emit1("permute", [t], {"perm": [0, 3, 5, 1, 2, 4]})
    return [ctx.reshape(t, [n, c * b * b, h // b, w // b])]


@translates("Tile")
def tile(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    reps = _ints(ctx, 1, "repeats")
    assert reps is not None
    if len(reps) != len(x.shape) or any(r < 0 for r in reps):
        raise ctx.fail(f"repeats {reps} must have one non-negative value per dimension")
    y = x
    for axis, r in enumerate(reps):
        if r != 1:
            y = ctx.emit1("concat", [y] * r, {"axis": axis}) if r > 0 else \
                _slice_axis(ctx, y, axis, 0, 0)
    return [y]


@translates("Range")
def range_(ctx: Ctx) -> Sequence[Value]:
    """Reached only when the length follows a dynamic dimension (known bounds fold): e.g. position ids
    torch.arange(seq). The runtime's arange, whose length the dynamic-dimension merge ties to that dimension."""
    vals = []
    for i, what in enumerate(("start", "limit", "delta")):
        v = ctx.const(i, what)
        assert v is not None
        if np.asarray(v).size != 1:
            raise ctx.fail(f"{what} must be a scalar, got shape {list(np.shape(v))}")
        vals.append(np.asarray(v).reshape(()))
    start, limit, delta = vals
    dtype = np.dtype(start.dtype)
    if dtype.name not in ("float32", "int64", "int32"):
        raise ctx.fail(f"Range of {dtype.name}; the runtime's arange takes float32, int64, int32")
    if float(delta) == 0.0:
        raise ctx.fail("delta is 0")
    n = max(int(np.ceil((float(limit) - float(start)) / float(delta))), 0)
    return [ctx.emit1("arange", [ctx.constant(start)], {"shape": [n], "step": float(delta)})]


@translates("ConstantOfShape")
def constant_of_shape(ctx: Ctx) -> Sequence[Value]:
    """Reached only when the shape comes from a dynamic dimension (known shapes fold): an Expand of the value."""
    target = _ints(ctx, 0, "input")
    assert target is not None
    if 0 in target:
        raise ctx.fail(f"shape {target} has a 0 (an empty tensor), which the runtime's expand cannot make")
    value = ctx.attr("value")
    arr = np.zeros(1, np.float32) if value is None else np.asarray(value).reshape(-1)[:1]
    c = ctx.constant(arr.reshape([1] * len(target)))
    return [ctx.emit1("expand", [c], {"shape": target})]
