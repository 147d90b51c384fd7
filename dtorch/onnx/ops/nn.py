"""Neural-network operators: convolutions, Gemm/MatMul, normalizations, pooling, softmax."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..._export.graph import Value
from .._registry import Ctx, translates
from ._common import norm_axis, scalar_const, spatial_pads


def _to_2d(ctx: Ctx, x: Value, what: str) -> tuple[Value, bool]:
    """A 1-D (N, C, L) operand as (N, C, 1, L); 2-D ones unchanged. Returns (value, was 1-D)."""
    rank = len(x.shape)
    if rank == 4:
        return x, False
    if rank == 3:
        n, c, length = ctx.shape(x)
        return ctx.reshape(x, [n, c, 1, length]), True
    raise ctx.fail(f"{what} has rank {rank}; dtorch supports 1-D and 2-D {ctx.op_type} (rank-3 or rank-4 inputs)")


def _spatial_attr(ctx: Ctx, name: str, n: int, default: int) -> list[int]:
    v = [int(a) for a in ctx.attr(name, [default] * n)]
    if len(v) != n:
        raise ctx.fail(f"{name} {v} must have {n} values")
    return v


def _from_1d(ctx: Ctx, y: Value, was_1d: bool) -> Value:
    if not was_1d:
        return y
    n, c, _, length = ctx.shape(y)
    return ctx.reshape(y, [n, c, length])


def _conv_operands(ctx: Ctx, x: Value, w: Value) -> tuple[Value, Value, int, bool, list[int], list[int], list[int]]:
    """Conv / ConvTranspose / QLinearConv: (x as 2-D, weight as 2-D, spatial dims, was 1-D, kernel, strides,
    dilations)."""
    nsp = len(x.shape) - 2
    x2, was_1d = _to_2d(ctx, x, "the input")
    if was_1d:
        w = ctx.reshape(w, [w.shape[0], w.shape[1], 1, w.shape[2]])
    kernel = [int(k) for k in ctx.attr("kernel_shape", list(w.shape[-nsp:]))][-nsp:]
    strides = _spatial_attr(ctx, "strides", nsp, 1)
    dilations = _spatial_attr(ctx, "dilations", nsp, 1)
    return x2, w, nsp, was_1d, kernel, strides, dilations


def conv2d_operands(ctx: Ctx, x: Value, w: Value) -> tuple[Value, Value, dict[str, object], bool]:
    """A Conv-like node's input and weight as 2-D, the conv2d attributes of its own (stride, dilation, padding,
    groups), and whether it was 1-D (undo with `_from_1d`)."""
    x2, w2, _, was_1d, kernel, strides, dil = _conv_operands(ctx, x, w)
    begin, end = spatial_pads(ctx, ctx.shape(x)[2:], kernel, strides, dil)
    if was_1d:
        strides, dil, begin, end = [1, *strides], [1, *dil], [0, *begin], [0, *end]
    attrs = {"stride": strides, "dilation": dil, "padding": [begin[0], end[0], begin[1], end[1]],
             "groups": int(ctx.attr("group", 1))}
    return x2, w2, attrs, was_1d


@translates("Conv")
def conv(ctx: Ctx) -> Sequence[Value]:
    x2, w, attrs, was_1d = conv2d_operands(ctx, ctx.input(0), ctx.input(1))
    return [_from_1d(ctx, ctx.emit1("conv2d", [x2, w, ctx.optional(2)], attrs), was_1d)]


@translates("ConvTranspose")
def conv_transpose(ctx: Ctx) -> Sequence[Value]:
    x, w, b = ctx.input(0), ctx.input(1), ctx.optional(2)
    x2, w, nsp, was_1d, kernel, strides, dil = _conv_operands(ctx, x, w)
    out_pad = _spatial_attr(ctx, "output_padding", nsp, 0)
    ins = ctx.shape(x)[2:]
    full = [s * (i - 1) + (k - 1) * d + 1 for i, k, s, d in zip(ins, kernel, strides, dil)]
    auto = ctx.attr("auto_pad", "NOTSET")
    out_shape = ctx.attr("output_shape")
    if out_shape is not None or auto in ("SAME_UPPER", "SAME_LOWER"):
        target = [int(o) for o in out_shape][-nsp:] if out_shape is not None else [i * s for i, s in zip(ins, strides)]
        # A negative total (output_shape larger than the full result) pads the end, as ONNX's reference does:
        # those elements get the bias only.
        total = [f + op - t for f, op, t in zip(full, out_pad, target)]
        if auto == "SAME_UPPER":
            begin = [t // 2 for t in total]
        else:
            begin = [t - t // 2 for t in total]
        end = [t - bg for t, bg in zip(total, begin)]
    elif auto == "VALID":
        begin, end = [0] * nsp, [0] * nsp
    else:
        pads = [int(p) for p in ctx.attr("pads", [0] * (2 * nsp))]
        begin, end = pads[:nsp], pads[nsp:]
    # The kernel crops `padding` at both ends and adds `output_padding` at the end (PyTorch's rule); crop the rest.
    length = [f + op - bg - e for f, op, bg, e in zip(full, out_pad, begin, end)]
    kpad, kop, extra = [], [], []
    for f, bg, n_out, s, d in zip(full, begin, length, strides, dil):
        op_k = n_out - (f - 2 * bg)
        if bg < 0:
            raise ctx.fail(f"its output_shape / pads put output elements before the first one the transposed "
                           f"convolution produces (pads begin at {begin}), which the runtime's conv_transpose2d "
                           f"cannot do")
        if 0 <= op_k < max(s, d):
            kpad.append(bg)
            kop.append(op_k)
            extra.append(0)
        elif op_k < 0:
            kpad.append(bg)
            kop.append(0)
            extra.append(-op_k)
        else:
            raise ctx.fail(f"its pads {begin + end} / output_padding {out_pad} give an output the runtime's "
                           f"conv_transpose2d cannot produce")
    if was_1d:
        strides, dil, kpad, kop, extra = [1, *strides], [1, *dil], [0, *kpad], [0, *kop], [0, *extra]
    attrs = {"stride": strides, "dilation": dil, "padding": kpad, "output_padding": kop,
             "groups": int(ctx.attr("group", 1))}
    y = ctx.emit1("conv_transpose2d", [x2, w, b], attrs)
    if any(extra):
        axes = [i + 2 for i, e in enumerate(extra) if e]
        y = ctx.emit1("slice", [y], {"axes": axes, "starts": [0] * len(axes),
                                     "ends": [int(y.shape[a]) - extra[a - 2] for a in axes]})
    return [_from_1d(ctx, y, was_1d)]


@translates("Gemm")
def gemm(ctx: Ctx) -> Sequence[Value]:
    a, b, c = ctx.input(0), ctx.input(1), ctx.optional(2)
    alpha, beta = float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
    trans_a, trans_b = int(ctx.attr("transA", 0)), int(ctx.attr("transB", 0))
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise ctx.fail(f"Gemm takes 2-D A and B, got {list(a.shape)} and {list(b.shape)}")
    if trans_a:
        a = ctx.emit1("permute", [a], {"perm": [1, 0]})
    n = int(b.shape[0] if trans_b else b.shape[1])
    if b.is_const and b.data is not None:
        wt = b.data if trans_b else b.data.T
        w = ctx.constant(np.ascontiguousarray(wt * np.float32(alpha) if alpha != 1.0 else wt, dtype=np.float32))
        bias = None
        if c is not None and c.is_const and c.data is not None and c.data.size in (1, n) and \
                (c.data.ndim <= 1 or (c.data.ndim == 2 and c.data.shape[0] == 1)):
            bias = ctx.constant(np.ascontiguousarray(np.broadcast_to(c.data.reshape(-1) * np.float32(beta), (n,)),
                                                     dtype=np.float32))
            c = None
        y = ctx.emit1("linear", [a, w, bias])
    else:
        if trans_b:
            b = ctx.emit1("permute", [b], {"perm": [1, 0]})
        y = ctx.emit1("matmul", [a, b])
        if alpha != 1.0:
            y = ctx.emit1("mul", [y, scalar_const(ctx, alpha)])
    if c is not None and beta != 0.0:
        if beta != 1.0:
            c = ctx.emit1("mul", [c, scalar_const(ctx, beta)])
        y = ctx.emit1("add", [y, c])
    return [y]


@translates("MatMul")
def matmul(ctx: Ctx) -> Sequence[Value]:
    a, b = ctx.input(0), ctx.input(1)
    if b.is_const and b.data is not None and b.data.ndim == 2 and len(a.shape) >= 1 and not a.is_const:
        w = ctx.constant(np.ascontiguousarray(b.data.T, dtype=np.float32))
        return [ctx.emit1("linear", [a, w, None])]
    return [ctx.emit1("matmul", [a, b])]


@translates("BatchNormalization")
def batch_norm(ctx: Ctx) -> Sequence[Value | None]:
    x, scale, bias, mean, var = (ctx.input(i) for i in range(5))
    eps = float(ctx.attr("epsilon", 1e-5))
    if not int(ctx.attr("training_mode", 0)):
        return [ctx.emit1("batch_norm", [x, mean, var, scale, bias], {"eps": eps}), None, None]
    # training_mode=1 (opset 14+): normalize with the batch's own statistics (the population variance over every dim
    # but the channel's), and give the updated running statistics as outputs 1 and 2 when they are used.
    axes = {"axes": [0, *range(2, len(x.shape))], "keepdim": 0}
    cur_mean = ctx.emit1("mean", [x], axes)
    bshape = [1, int(x.shape[1])] + [1] * (len(x.shape) - 2)
    d = ctx.emit1("sub", [x, ctx.reshape(cur_mean, bshape)])
    cur_var = ctx.emit1("mean", [ctx.emit1("mul", [d, d])], axes)
    y = ctx.emit1("batch_norm", [x, cur_mean, cur_var, scale, bias], {"eps": eps})
    momentum = float(ctx.attr("momentum", 0.9))

    def running(old: Value, cur: Value) -> Value:
        return ctx.emit1("add", [ctx.emit1("mul", [old, scalar_const(ctx, momentum)]),
                                 ctx.emit1("mul", [cur, scalar_const(ctx, 1.0 - momentum)])])

    return [y, running(mean, cur_mean) if ctx.output_used(1) else None,
            running(var, cur_var) if ctx.output_used(2) else None]


@translates("InstanceNormalization")
def instance_norm(ctx: Ctx) -> Sequence[Value]:
    x, scale, bias = ctx.input(0), ctx.input(1), ctx.input(2)
    return [ctx.emit1("group_norm", [x, scale, bias], {"groups": int(x.shape[1]),
                                                       "eps": float(ctx.attr("epsilon", 1e-5))})]


def _per_channel(ctx: Ctx, v: Value | None, groups: int, channels: int, what: str) -> Value | None:
    if v is None or v.shape == (channels,):
        return v
    if v.is_const and v.data is not None and v.data.size == groups:
        return ctx.constant(np.repeat(v.data.reshape(-1).astype(np.float32), channels // groups))
    raise ctx.fail(f"{what} has shape {list(v.shape)}; expected ({channels},) or ({groups},)")


@translates("GroupNormalization")
def group_norm(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    groups = int(ctx.attr("num_groups", 0))
    c = int(x.shape[1])
    if groups < 1 or c % groups:
        raise ctx.fail(f"num_groups {groups} does not divide the {c} channels")
    scale = _per_channel(ctx, ctx.optional(1), groups, c, "scale")
    bias = _per_channel(ctx, ctx.optional(2), groups, c, "bias")
    return [ctx.emit1("group_norm", [x, scale, bias], {"groups": groups, "eps": float(ctx.attr("epsilon", 1e-5))})]


@translates("LayerNormalization")
def layer_norm(ctx: Ctx) -> Sequence[Value | None]:
    x = ctx.input(0)
    rank = len(x.shape)
    axis = norm_axis(ctx, int(ctx.attr("axis", -1)), rank)
    norm_shape = tuple(int(s) for s in x.shape[axis:])
    params = []
    for i, what in ((1, "Scale"), (2, "B")):
        v = ctx.optional(i)
        if v is not None and tuple(v.shape) != norm_shape:
            if not (v.is_const and v.data is not None):
                raise ctx.fail(f"{what} has shape {list(v.shape)}, not the normalized shape {list(norm_shape)}")
            try:
                v = ctx.constant(np.ascontiguousarray(np.broadcast_to(v.data, norm_shape), dtype=np.float32))
            except ValueError:
                raise ctx.fail(f"{what} of shape {list(v.shape)} does not broadcast to {list(norm_shape)}") from None
        params.append(v)
    eps = float(ctx.attr("epsilon", 1e-5))
    y = ctx.emit1("layer_norm", [x, *params], {"normalized_ndim": rank - axis, "eps": eps})
    if not (ctx.output_used(1) or ctx.output_used(2)):
        return [y, None, None]
    # Mean and InvStdDev (training graphs, the backend tests): the statistics over the normalized dims, kept as 1.
    axes = {"axes": list(range(axis, rank)), "keepdim": 1}
    mean = ctx.emit1("mean", [x], axes)
    d = ctx.emit1("sub", [x, mean])
    var = ctx.emit1("mean", [ctx.emit1("mul", [d, d])], axes)
    inv = ctx.emit1("rsqrt", [ctx.emit1("add", [var, scalar_const(ctx, eps)])])
    return [y, mean, inv]


def _softmax_like(ctx: Ctx, op: str) -> Sequence[Value]:
    x = ctx.input(0)
    rank = len(x.shape)
    if ctx.opset >= 13:
        return [ctx.emit1(op, [x], {"dim": norm_axis(ctx, int(ctx.attr("axis", -1)), rank)})]
    # Before opset 13 the input is coerced to 2-D at `axis` and normalized over everything after it.
    axis = norm_axis(ctx, int(ctx.attr("axis", 1)), rank) if rank else 0
    if axis == rank - 1:
        return [ctx.emit1(op, [x], {"dim": -1})]
    shape = ctx.shape(x)
    lead = int(np.prod(shape[:axis], dtype=np.int64))
    flat = ctx.reshape(x, [lead, -1])
    return [ctx.reshape(ctx.emit1(op, [flat], {"dim": -1}), list(shape))]


@translates("Softmax")
def softmax(ctx: Ctx) -> Sequence[Value]:
    return _softmax_like(ctx, "softmax")


@translates("LogSoftmax")
def log_softmax(ctx: Ctx) -> Sequence[Value]:
    return _softmax_like(ctx, "log_softmax")


@translates("GlobalAveragePool", "GlobalMaxPool")
def global_pool(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    axes = list(range(2, len(x.shape)))
    op = "mean" if ctx.op_type == "GlobalAveragePool" else "amax"
    return [ctx.emit1(op, [x], {"axes": axes, "keepdim": 1})]


def _pool_geometry(ctx: Ctx, x: Value) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
    nsp = len(x.shape) - 2
    if "kernel_shape" not in ctx.attrs:
        raise ctx.fail("kernel_shape is required")
    kernel = [int(k) for k in ctx.attr("kernel_shape")]
    if len(kernel) != nsp:
        raise ctx.fail(f"kernel_shape {kernel} does not match the {nsp} spatial dims of the input")
    strides = _spatial_attr(ctx, "strides", nsp, 1)
    dil = _spatial_attr(ctx, "dilations", nsp, 1)
    begin, end = spatial_pads(ctx, ctx.shape(x)[2:], kernel, strides, dil)
    return kernel, strides, dil, begin, end


def _ceil_extra(size: int, k: int, s: int, d: int, b: int, e: int) -> int:
    """Extra end padding that makes a floor-mode pool give ONNX's ceil-mode output size: ceil((size + b + e -
    ((k-1)d+1)) / s) + 1 windows, less one when the last would start past the input and its left padding."""
    span = (k - 1) * d + 1
    out = -(-(size + b + e - span) // s) + 1
    if (out - 1) * s >= size + b:
        out -= 1
    return max(0, (out - 1) * s + span - (size + b + e))


#: A 2-D pool over a rank-4 value: (x, kernel, strides, dilations, pads begin, pads end) -> rank-4 value.
Pool2d = Callable[[Value, list[int], list[int], list[int], list[int], list[int]], Value]


def _pool_nd(ctx: Ctx, x: Value, geometry: tuple[list[int], ...], pool2d: Pool2d) -> Value:
    """A 1-D, 2-D or 3-D pool through 2-D ones. 1-D: as (N, C, 1, L). 3-D: max and average pools are separable over a
    box window (the window's count of real or padded elements is the product of its counts per axis), so pool
    (H, W) with the (N, C*D, H, W) view, then D with the (N, C, D, H'*W') view and a (kd, 1) window."""
    kernel, strides, dil, begin, end = geometry
    rank = len(x.shape)
    if rank == 4:
        return pool2d(x, kernel, strides, dil, begin, end)
    if rank == 3:
        x2, _ = _to_2d(ctx, x, "the input")
        return _from_1d(ctx, pool2d(x2, [1, *kernel], [1, *strides], [1, *dil], [0, *begin], [0, *end]), True)
    if rank == 5:
        n, c, d, h, w = ctx.shape(x)
        hw = pool2d(ctx.reshape(x, [n, c * d, h, w]), kernel[1:], strides[1:], dil[1:], begin[1:], end[1:])
        h2, w2 = int(hw.shape[2]), int(hw.shape[3])
        y = pool2d(ctx.reshape(hw, [n, c, d, h2 * w2]), [kernel[0], 1], [strides[0], 1], [dil[0], 1], [begin[0], 0],
                   [end[0], 0])
        return ctx.reshape(y, [n, c, int(y.shape[2]), h2, w2])
    raise ctx.fail(f"the input has rank {rank}; dtorch supports 1-D, 2-D and 3-D {ctx.op_type} (rank 3 to 5)")


@translates("MaxPool")
def max_pool(ctx: Ctx) -> Sequence[Value | None]:
    if ctx.output_used(1):
        raise ctx.fail("its Indices output is used, which dtorch does not support")
    if int(ctx.attr("storage_order", 0)) not in (0, 1):
        raise ctx.fail("storage_order must be 0 or 1")
    x = ctx.input(0)
    ceil = int(ctx.attr("ceil_mode", 0))

    def pool2d(x2: Value, kernel: list[int], strides: list[int], dil: list[int], begin: list[int],
               end: list[int]) -> Value:
        sizes = ctx.shape(x2)[2:]
        if ceil:
            end = [e + _ceil_extra(sz, k, s, d, b, e)
                   for sz, k, s, d, b, e in zip(sizes, kernel, strides, dil, begin, end)]
        sym = begin == end and all(2 * p <= k for p, k in zip(begin, kernel))
        if not sym and any(begin + end):
            low = -128.0 if np.dtype(x2.dtype) == np.int8 else float("-inf")  # an int8 max_pool2d (quantized)
            x2 = ctx.emit1("pad", [x2], {"pads": [begin[1], end[1], begin[0], end[0]], "value": low})
            begin = end = [0, 0]
        return ctx.emit1("max_pool2d", [x2], {"kernel": kernel, "stride": strides, "padding": begin, "dilation": dil})

    return [_pool_nd(ctx, x, _pool_geometry(ctx, x), pool2d), None]


@translates("AveragePool")
def average_pool(ctx: Ctx) -> Sequence[Value]:
    x = ctx.input(0)
    include = int(ctx.attr("count_include_pad", 0))
    ceil = int(ctx.attr("ceil_mode", 0))

    def pool2d(x2: Value, kernel: list[int], strides: list[int], dil: list[int], begin: list[int],
               end: list[int]) -> Value:
        if any(d != 1 for d in dil):
            return _dilated_avg_pool(ctx, x2, kernel, strides, dil, begin, end, include, ceil)
        if begin == end and all(2 * p <= k for p, k in zip(begin, kernel)):
            return ctx.emit1("avg_pool2d", [x2], {"kernel": kernel, "stride": strides, "padding": begin,
                                                  "ceil_mode": ceil, "count_include_pad": include})
        return _padded_avg_pool(ctx, x2, kernel, strides, begin, end, include, ceil)

    return [_pool_nd(ctx, x, _pool_geometry(ctx, x), pool2d)]


def _avg_pool_parts(ctx: Ctx, x: Value, kernel: list[int], strides: list[int], dil: list[int], begin: list[int],
                    end: list[int], include: int, ceil: int) -> tuple[Value, Value]:
    """The two inputs of a composed AveragePool: x zero-padded by the ONNX pads plus the ceil-mode overhang, and a
    constant mask of the same size that marks the elements a window counts (real ones, or real and ONNX padding with
    count_include_pad; never the overhang). Window sums of the one over those of the other are the average."""
    sizes = ctx.shape(x)[2:]
    extra = [_ceil_extra(sz, k, s, d, b, e) if ceil else 0
             for sz, k, s, d, b, e in zip(sizes, kernel, strides, dil, begin, end)]
    full_end = [e + x for e, x in zip(end, extra)]
    padded = ctx.emit1("pad", [x], {"pads": [begin[1], full_end[1], begin[0], full_end[0]]})
    mask = np.ones((1, 1, *sizes), dtype=np.float32)
    if include:
        mask = np.pad(mask, ((0, 0), (0, 0), (begin[0], end[0]), (begin[1], end[1])), constant_values=1.0)
        mask = np.pad(mask, ((0, 0), (0, 0), (0, extra[0]), (0, extra[1])))
    else:
        mask = np.pad(mask, ((0, 0), (0, 0), (begin[0], full_end[0]), (begin[1], full_end[1])))
    return padded, ctx.constant(mask)


def _padded_avg_pool(ctx: Ctx, x: Value, kernel: list[int], strides: list[int], begin: list[int], end: list[int],
                     include: int, ceil: int) -> Value:
    """Asymmetric padding: avg_pool2d counting every element, of the padded input over that of the mask."""
    padded, mask = _avg_pool_parts(ctx, x, kernel, strides, [1, 1], begin, end, include, ceil)
    attrs = {"kernel": kernel, "stride": strides, "padding": [0, 0], "count_include_pad": 1}
    return ctx.emit1("div", [ctx.emit1("avg_pool2d", [padded], attrs), ctx.emit1("avg_pool2d", [mask], attrs)])


def _dilated_avg_pool(ctx: Ctx, x: Value, kernel: list[int], strides: list[int], dil: list[int], begin: list[int],
                      end: list[int], include: int, ceil: int) -> Value:
    """A dilated AveragePool (the runtime's avg_pool2d has no dilation): the window sums are a conv2d with a kernel
    of ones and the dilation (depthwise over the padded input), over those of the mask."""
    padded, mask = _avg_pool_parts(ctx, x, kernel, strides, dil, begin, end, include, ceil)
    c = int(x.shape[1])
    attrs = {"stride": strides, "dilation": dil, "padding": [0, 0, 0, 0]}
    total = ctx.emit1("conv2d", [padded, ctx.constant(np.ones((c, 1, *kernel), dtype=np.float32)), None],
                      {**attrs, "groups": c})
    counts = ctx.emit1("conv2d", [mask, ctx.constant(np.ones((1, 1, *kernel), dtype=np.float32)), None],
                       {**attrs, "groups": 1})
    return ctx.emit1("div", [total, counts])
