"""Convolution primitives: `conv2d` and `conv_transpose2d`, both as im2col + one BLAS GEMM.

Layout. The columns matrix has one row per (channel, kernel row, kernel column) and one column per
output position, built by one strided copy of a view (`as_strided`) of the zero-padded input. The
positions are ordered either "batch last" (OH, OW, N) or "batch first" (N, OH, OW). Batch last keeps
NumPy's innermost copy loops long (N elements, or OW*N at stride 1) on the small feature maps of
typical CNNs, at the price of transposing the input and output; batch first needs no transposes but
has OW-long inner loops. A small cost model (`_batch_last_is_cheaper`) picks one per call. The GEMM
result goes back to NCHW with one cache-blocked copy that also adds the bias.

Backward: d(weight) = g @ cols^T (one GEMM), d(columns) = weight^T @ g (one GEMM), then col2im as
kh*kw strided adds into a zero padded buffer, cropped and transposed back to NCHW with one copy.
Grouped convolutions use batched GEMMs over the groups (depthwise: one per channel, no Python loop).
Large temporaries (padded input, columns, GEMM results) come from a small reuse pool (`scratch`).

Attributes (shared with export and the runtime kernels):
  stride (sh, sw), padding (top, bottom, left, right), dilation (dh, dw), groups.
conv_transpose2d also has output_padding (oh, ow) and its padding is (ph, pw) as in PyTorch.
Reduced-precision floats (float16, bfloat16) are computed in float32 and rounded once.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..autograd.function import Function
from .pointwise import wide

# bytes of source per block in the cache-blocked NCHW <-> batch-last transposes
_BLOCK_BYTES = 1 << 15


class _Scratch:
    """Reuses conv's large temporary buffers across calls: fresh pages from the OS cost a page fault
    each (expensive in VMs), and a training step otherwise allocates and frees the same sizes again.

    `take` hands out a buffer; `give` returns buffers that `take` handed out (others are ignored);
    `take_tracked` hands out a view whose buffer comes back by itself once the view is garbage.
    """

    def __init__(self, cap_bytes: int = 1 << 28, per_shape: int = 4) -> None:
        self._free: dict[tuple[Any, ...], list[np.ndarray]] = {}
        self._lent: dict[int, weakref.ref[np.ndarray]] = {}  # id -> the array, to reject a reused id
        self._bytes, self._cap, self._per_shape = 0, cap_bytes, per_shape
        self._lock = threading.RLock()

    def take(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        key = (tuple(shape), np.dtype(dtype).str)
        with self._lock:
            stack = self._free.get(key)
            if stack:
                a = stack.pop()
                self._bytes -= a.nbytes
            else:
                a = np.empty(shape, dtype=dtype)
            if len(self._lent) > 4096:  # forget buffers that died without coming back
                self._lent = {k: r for k, r in self._lent.items() if r() is not None}
            self._lent[id(a)] = weakref.ref(a)
        return a

    def give(self, *arrays: np.ndarray | None) -> None:
        with self._lock:
            for a in arrays:
                ref = None if a is None else self._lent.get(id(a))
                if ref is None or ref() is not a:
                    continue
                del self._lent[id(a)]
                stack = self._free.setdefault((a.shape, a.dtype.str), [])
                if len(stack) < self._per_shape and self._bytes + a.nbytes <= self._cap:
                    stack.append(a)
                    self._bytes += a.nbytes

    def take_tracked(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        base = self.take(shape, dtype)
        view = base.view()
        weakref.finalize(view, self.give, base)
        return view


scratch = _Scratch()


@dataclass(frozen=True)
class Geometry:
    """Everything about one 2-D convolution's shapes, in the forward direction (input -> output)."""

    n: int
    c: int
    h: int
    w: int
    o: int
    kh: int
    kw: int
    sh: int
    sw: int
    dh: int
    dw: int
    pt: int
    pb: int
    pl: int
    pr: int
    groups: int
    oh: int
    ow: int
    batch_last: bool

    @property
    def hp(self) -> int:
        """Rows of the padded buffer (a negative bottom padding only means unused input rows)."""
        return self.h + self.pt + max(self.pb, 0)

    @property
    def wp(self) -> int:
        return self.w + self.pl + max(self.pr, 0)

    @property
    def positions(self) -> int:
        return self.n * self.oh * self.ow

    @property
    def pos_shape(self) -> tuple[int, int, int]:
        return (self.oh, self.ow, self.n) if self.batch_last else (self.n, self.oh, self.ow)


def geometry(xshape: tuple[int, ...], wshape: tuple[int, ...], o: int, stride: tuple[int, int],
             padding: tuple[int, int, int, int], dilation: tuple[int, int], groups: int) -> Geometry:
    n, c, h, w = xshape
    kh, kw = wshape[-2:]
    sh, sw = stride
    dh, dw = dilation
    pt, pb, pl, pr = padding
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (w + pl + pr - dw * (kw - 1) - 1) // sw + 1
    return Geometry(n, c, h, w, o, kh, kw, sh, sw, dh, dw, pt, pb, pl, pr, groups, oh, ow,
                    _batch_last_is_cheaper(n, c, h, w, o, kh * kw, oh, ow, sw))


def _batch_last_is_cheaper(n: int, c: int, h: int, w: int, o: int, taps: int, oh: int, ow: int, sw: int) -> bool:
    """A rough cost model (ns) of the copies around the GEMMs in each column layout.

    NumPy pays ~20 ns per innermost row of a strided copy or add, ~1 ns per element of a transposing copy.
    Batch first: im2col/col2im rows are OW long. Batch last: rows are N long (OW * N at stride 1), but
    the input and the output need a transposing copy each way.
    """
    if n <= 1:
        return True  # the two layouts are the same
    rows_first = c * taps * n * oh
    rows_last = c * taps * oh * (1 if sw == 1 else ow)
    transposed = n * (c * h * w + o * oh * ow)
    return 20 * rows_last + transposed < 20 * rows_first


# ----------------------------------------------------------------------------- layout helpers


def _bl_to_nchw(src: np.ndarray, dtype: np.dtype, bias: np.ndarray | None = None,
                out: np.ndarray | None = None) -> np.ndarray:
    """(C, H, W, N) array (any strides) -> (N, C, H, W) (new, or written into `out`), plus bias per C.

    Copied in blocks of about 32 KiB of the source so that both sides stay in the L1 cache.
    """
    c, h, w, n = src.shape
    if out is None:
        out = np.empty((n, c, h, w), dtype=dtype)
    b4 = None if bias is None else bias.reshape(-1, 1, 1)

    def put(dst: np.ndarray, part: np.ndarray, b: np.ndarray | None) -> None:
        if b is None:
            np.copyto(dst, part, casting="unsafe")
        else:
            np.add(part, b, out=dst, casting="unsafe")

    if n <= 1 or out.size == 0:
        put(out, src.transpose(3, 0, 1, 2), b4)
        return out
    spatial = max(8, _BLOCK_BYTES // (n * src.itemsize))
    if h * w <= spatial:
        step = max(1, spatial // (h * w))
        for c0 in range(0, c, step):
            put(out[:, c0:c0 + step], src[c0:c0 + step].transpose(3, 0, 1, 2),
                None if b4 is None else b4[c0:c0 + step])
    else:
        rows = max(1, spatial // w)
        for c0 in range(c):
            bc = None if b4 is None else b4[c0]
            for r0 in range(0, h, rows):
                put(out[:, c0, r0:r0 + rows], src[c0, r0:r0 + rows].transpose(2, 0, 1), bc)
    return out


def _zero_border(buf: np.ndarray, g: Geometry, axes: tuple[int, int]) -> None:
    """Zero the padding frame of a padded buffer whose spatial axes are `axes`."""
    ah, aw = axes
    for axis, lo, hi, size in ((ah, g.pt, g.pt + g.h, buf.shape[ah]), (aw, g.pl, g.pl + g.w, buf.shape[aw])):
        for sl in (slice(0, lo), slice(hi, size)):
            if sl.stop > sl.start:
                key = [slice(None)] * buf.ndim
                key[axis] = sl
                buf[tuple(key)] = 0


def pad_input(x: np.ndarray, g: Geometry) -> np.ndarray:
    """Zero-padded input in the column layout: (C, Hp, Wp, N) batch last, else (N, C, Hp, Wp)."""
    if g.batch_last:
        if g.pt == g.pb == g.pl == g.pr == 0:
            return np.ascontiguousarray(x.transpose(1, 2, 3, 0))
        xp = scratch.take((g.c, g.hp, g.wp, g.n), x.dtype)
        _zero_border(xp, g, (1, 2))
        xp[:, g.pt:g.pt + g.h, g.pl:g.pl + g.w, :] = x.transpose(1, 2, 3, 0)
        return xp
    if g.pt == g.pb == g.pl == g.pr == 0:
        return x
    xp = scratch.take((g.n, g.c, g.hp, g.wp), x.dtype)
    _zero_border(xp, g, (2, 3))
    xp[:, :, g.pt:g.pt + g.h, g.pl:g.pl + g.w] = x
    return xp


def im2col(xp: np.ndarray, g: Geometry) -> np.ndarray:
    """Columns (C*kh*kw, positions) from the padded input, one strided copy."""
    if g.batch_last:
        s_c, s_h, s_w, s_n = xp.strides
        shape = (g.c, g.kh, g.kw, g.oh, g.ow, g.n)
        strides = (s_c, s_h * g.dh, s_w * g.dw, s_h * g.sh, s_w * g.sw, s_n)
    else:
        s_n, s_c, s_h, s_w = xp.strides
        shape = (g.c, g.kh, g.kw, g.n, g.oh, g.ow)
        strides = (s_c, s_h * g.dh, s_w * g.dw, s_n, s_h * g.sh, s_w * g.sw)
    view = as_strided(xp, shape, strides, writeable=False)
    cols = scratch.take_tracked((g.c * g.kh * g.kw, g.positions), xp.dtype)
    np.copyto(cols.reshape(shape), view)
    return cols


def positions_to_nchw(res: np.ndarray, g: Geometry, channels: int, dtype: np.dtype,
                      bias: np.ndarray | None = None, out: np.ndarray | None = None) -> np.ndarray:
    """(channels, positions) GEMM result -> (N, channels, OH, OW) (new or `out`), adding bias per channel."""
    if g.batch_last:
        return _bl_to_nchw(res.reshape(channels, g.oh, g.ow, g.n), dtype, bias, out)
    src = res.reshape(channels, g.n, g.oh, g.ow).transpose(1, 0, 2, 3)
    if out is None:
        out = np.empty(src.shape, dtype=dtype)
    if bias is None:
        np.copyto(out, src, casting="unsafe")
    else:
        np.add(src, bias.reshape(-1, 1, 1), out=out, casting="unsafe")
    return out


def nchw_to_positions(a: np.ndarray, g: Geometry) -> np.ndarray:
    """(N, channels, OH, OW) -> contiguous (channels, positions) in the column order."""
    perm = (1, 2, 3, 0) if g.batch_last else (1, 0, 2, 3)
    src = a.transpose(perm)
    out = scratch.take((a.shape[1], a.size // max(a.shape[1], 1)), a.dtype)
    np.copyto(out.reshape(src.shape), src)
    return out


def _scatter_taps(buf: np.ndarray, taps: np.ndarray, g: Geometry, spatial: tuple[int, int]) -> None:
    """buf[grid] = sum over kernel taps of their column grads, on the padded grid (axes `spatial`).

    Without dilation, the taps (i, j) with i < sh and j < sw land on disjoint positions that tile the
    rectangle [0, sh*OH) x [0, sw*OW) exactly, so they are assigned (no zero fill, no read) and only
    the rest of the buffer is zeroed; the remaining taps are added. Otherwise: zero fill, then adds.
    """
    ah, aw = spatial
    rows_end, cols_end = g.sh * (g.oh - 1) + 1, g.sw * (g.ow - 1) + 1

    def region(i: int, j: int) -> tuple[slice, ...]:
        key = [slice(None)] * buf.ndim
        key[ah] = slice(i * g.dh, i * g.dh + rows_end, g.sh)
        key[aw] = slice(j * g.dw, j * g.dw + cols_end, g.sw)
        return tuple(key)

    def tap(i: int, j: int) -> np.ndarray:
        return taps[:, i, j]

    tiles = g.dh == 1 and g.dw == 1 and g.kh >= g.sh and g.kw >= g.sw
    if tiles:
        for axis, start in ((ah, g.sh * g.oh), (aw, g.sw * g.ow)):
            if start < buf.shape[axis]:
                key = [slice(None)] * buf.ndim
                key[axis] = slice(start, None)
                buf[tuple(key)] = 0
        first = {(i, j) for i in range(g.sh) for j in range(g.sw)}
        for i, j in sorted(first):
            buf[region(i, j)] = tap(i, j)
    else:
        buf.fill(0)
        first = set()
    for i in range(g.kh):
        for j in range(g.kw):
            if (i, j) not in first:
                buf[region(i, j)] += tap(i, j)


def col2im(cols: np.ndarray, g: Geometry, dtype: np.dtype, out: np.ndarray | None = None) -> np.ndarray:
    """Sum columns (C*kh*kw, positions) back onto the padded input grid; returns (N, C, H, W) (or fills `out`)."""
    taps = cols.reshape((g.c, g.kh, g.kw) + g.pos_shape)
    if g.batch_last:
        buf = scratch.take((g.c, g.hp, g.wp, g.n), cols.dtype)
        _scatter_taps(buf, taps, g, (1, 2))
        out = _bl_to_nchw(buf[:, g.pt:g.pt + g.h, g.pl:g.pl + g.w, :], dtype, None, out)
        scratch.give(buf)
        return out
    buf = scratch.take((g.c, g.n, g.hp, g.wp), cols.dtype)
    _scatter_taps(buf, taps, g, (2, 3))
    if out is None:
        out = np.empty((g.n, g.c, g.h, g.w), dtype=dtype)
    np.copyto(out, buf[:, :, g.pt:g.pt + g.h, g.pl:g.pl + g.w].transpose(1, 0, 2, 3), casting="unsafe")
    scratch.give(buf)
    return out


# ----------------------------------------------------------------------------- GEMMs (grouped or not)


def gemm_forward(w2: np.ndarray, cols: np.ndarray, groups: int) -> np.ndarray:
    """(O, K/groups) weight x (K, M) columns -> (O, M) (a scratch buffer)."""
    o, m = w2.shape[0], cols.shape[1]
    res = scratch.take((o, m), np.result_type(w2, cols))
    if groups == 1:
        return np.matmul(w2, cols, out=res)
    np.matmul(w2.reshape(groups, o // groups, -1), cols.reshape(groups, -1, m), out=res.reshape(groups, o // groups, m))
    return res


def gemm_weight_grad(g2: np.ndarray, cols: np.ndarray, groups: int) -> np.ndarray:
    """(O, M) output grad x (K, M) columns -> (O, K/groups) weight grad."""
    if groups == 1:
        return g2 @ cols.T
    o, m = g2.shape
    return np.matmul(g2.reshape(groups, o // groups, m),
                     cols.reshape(groups, -1, m).transpose(0, 2, 1)).reshape(o, -1)


def gemm_cols_grad(w2: np.ndarray, g2: np.ndarray, groups: int) -> np.ndarray:
    """(O, K/groups) weight, (O, M) output grad -> (K, M) columns grad (a scratch buffer)."""
    o, m = g2.shape
    res = scratch.take((w2.shape[1] * groups, m), np.result_type(w2, g2))
    if groups == 1:
        return np.matmul(w2.T, g2, out=res)
    og = o // groups
    wg = w2.reshape(groups, og, -1).transpose(0, 2, 1)
    gg = g2.reshape(groups, og, m)
    if og == 1:  # depthwise: an outer product per group, a broadcast beats a K=1 GEMM
        np.multiply(wg, gg, out=res.reshape(groups, -1, m))
    else:
        np.matmul(wg, gg, out=res.reshape(groups, -1, m))
    return res


# ----------------------------------------------------------------------------- primitives


class Conv2d(Function):
    """conv2d(input (N,C,H,W), weight (O,C/groups,kh,kw), bias (O,) or None) -> (N,O,OH,OW)."""

    name = "conv2d"

    def forward(self, x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None, *,
                stride: tuple[int, int] = (1, 1), padding: tuple[int, int, int, int] = (0, 0, 0, 0),
                dilation: tuple[int, int] = (1, 1), groups: int = 1) -> np.ndarray:
        self.dtypes = (x.dtype, weight.dtype, None if bias is None else bias.dtype)
        xw, ww = wide(x), wide(weight)
        g = geometry(x.shape, weight.shape, weight.shape[0], stride, padding, dilation, groups)
        w2 = ww.reshape(g.o, -1)
        xp = pad_input(xw, g)
        cols = im2col(xp, g)
        scratch.give(xp)
        res = gemm_forward(w2, cols, groups)
        out = positions_to_nchw(res, g, g.o, x.dtype, None if bias is None else wide(bias))
        scratch.give(res)
        self.geo, self.has_bias = g, bias is not None
        self.save(cols, w2)
        return out

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        cols, w2 = self.saved
        g = self.geo
        need = self.needs_input_grad
        g2 = nchw_to_positions(wide(grad), g)
        gx = gw = gb = None
        if need[0]:
            gcols = gemm_cols_grad(w2, g2, g.groups)
            gx = col2im(gcols, g, self.dtypes[0])
            scratch.give(gcols)
        if need[1]:
            gw = gemm_weight_grad(g2, cols, g.groups).reshape(g.o, -1, g.kh, g.kw).astype(self.dtypes[1], copy=False)
        if self.has_bias and need[2]:
            gb = g2.sum(axis=1).astype(self.dtypes[2], copy=False)
        scratch.give(g2)
        return (gx, gw, gb) if self.has_bias else (gx, gw)


class ConvTranspose2d(Function):
    """conv_transpose2d(input (N,C,H,W), weight (C,O/groups,kh,kw), bias (O,) or None) -> (N,O,OH,OW).

    The adjoint of conv2d: its forward is conv2d's input gradient (GEMM + col2im) and its input
    gradient is conv2d's forward (im2col + GEMM). `padding` is (ph, pw) as in PyTorch.
    """

    name = "conv_transpose2d"

    def forward(self, x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None, *,
                stride: tuple[int, int] = (1, 1), padding: tuple[int, int] = (0, 0),
                output_padding: tuple[int, int] = (0, 0), dilation: tuple[int, int] = (1, 1),
                groups: int = 1) -> np.ndarray:
        self.dtypes = (x.dtype, weight.dtype, None if bias is None else bias.dtype)
        xw, ww = wide(x), wide(weight)
        n, c, h, w = x.shape
        _, og, kh, kw = weight.shape
        o = og * groups
        oh = (h - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kh - 1) + output_padding[0] + 1
        ow = (w - 1) * stride[1] - 2 * padding[1] + dilation[1] * (kw - 1) + output_padding[1] + 1
        # the adjoint conv2d maps (N, O, oh, ow) onto (N, C, h, w); output_padding trims (possibly
        # below zero) its bottom/right padding so that it yields exactly h x w
        pads = (padding[0], padding[0] - output_padding[0], padding[1], padding[1] - output_padding[1])
        g = geometry((n, o, oh, ow), weight.shape, c, stride, pads, dilation, groups)
        w2 = ww.reshape(c, -1)
        x2 = nchw_to_positions(xw, g)
        gcols = gemm_cols_grad(w2, x2, groups)
        out = col2im(gcols, g, xw.dtype)
        scratch.give(gcols)
        if bias is not None:
            out += wide(bias).reshape(-1, 1, 1)
        self.geo, self.has_bias = g, bias is not None
        self.save(x2, w2)
        return out.astype(x.dtype, copy=False)

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        x2, w2 = self.saved
        g = self.geo
        need = self.needs_input_grad
        gwide = wide(grad)
        xp = pad_input(gwide, g)
        cols = im2col(xp, g)
        scratch.give(xp)
        gx = gw = gb = None
        if need[0]:
            res = gemm_forward(w2, cols, g.groups)
            gx = positions_to_nchw(res, g, g.o, self.dtypes[0])
            scratch.give(res)
        if need[1]:
            gw = gemm_weight_grad(x2, cols, g.groups).reshape(g.o, -1, g.kh, g.kw).astype(self.dtypes[1], copy=False)
        if self.has_bias:
            if need[2]:
                gb = gwide.sum(axis=(0, 2, 3)).astype(self.dtypes[2], copy=False)
            return gx, gw, gb
        return gx, gw
