"""Pooling primitives over (N, C, H, W): max, average, adaptive average and adaptive max.

Windowed pools loop over the kh*kw kernel taps (never over batch, channels or positions): each tap
is one strided view of the padded input covering every output position at once. Reduced-precision
floats are computed in float32 and rounded once. Attributes (shared with export and the runtime):
  max_pool2d / max_pool2d_indices: kernel_size, stride, padding (ph, pw), dilation, ceil_mode
  avg_pool2d: kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
  adaptive_avg_pool2d / adaptive_max_pool2d(_indices): output_size (oh, ow)
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import Function
from .pointwise import wide


def pool_out_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """PyTorch's pooling output size (a ceil-mode window must start inside the input or left padding)."""
    span = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = span // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _padded(x: np.ndarray, ph: int, pw: int, hp: int, wp: int, value: float) -> np.ndarray:
    """x on an (hp, wp) grid, offset by (ph, pw), filled with `value` elsewhere."""
    n, c, h, w = x.shape
    if (ph, pw, hp, wp) == (0, 0, h, w):
        return x
    out = np.full((n, c, hp, wp), value, dtype=x.dtype)
    out[:, :, ph:ph + h, pw:pw + w] = x
    return out


class _Windows:
    """Shapes of one windowed pool: output size, padded grid size and the per-tap slices."""

    def __init__(self, shape: tuple[int, ...], k: tuple[int, int], s: tuple[int, int], p: tuple[int, int],
                 d: tuple[int, int], ceil_mode: bool) -> None:
        self.shape = shape
        self.k, self.s, self.p, self.d = k, s, p, d
        h, w = shape[2:]
        self.oh = pool_out_size(h, k[0], s[0], p[0], d[0], ceil_mode)
        self.ow = pool_out_size(w, k[1], s[1], p[1], d[1], ceil_mode)
        # a ceil-mode window may run past the bottom/right padding: extend the grid to hold it
        self.hp = max(h + 2 * p[0], (self.oh - 1) * s[0] + d[0] * (k[0] - 1) + 1)
        self.wp = max(w + 2 * p[1], (self.ow - 1) * s[1] + d[1] * (k[1] - 1) + 1)

    def taps(self) -> list[tuple[int, int, tuple[slice, slice, slice, slice]]]:
        (kh, kw), (sh, sw), (dh, dw) = self.k, self.s, self.d
        out = []
        for i in range(kh):
            for j in range(kw):
                key = (slice(None), slice(None), slice(i * dh, i * dh + sh * (self.oh - 1) + 1, sh),
                       slice(j * dw, j * dw + sw * (self.ow - 1) + 1, sw))
                out.append((i, j, key))
        return out

    def crop(self, grid: np.ndarray) -> np.ndarray:
        h, w = self.shape[2:]
        return grid[:, :, self.p[0]:self.p[0] + h, self.p[1]:self.p[1] + w]


def _lowest(dtype: np.dtype) -> float | int:
    return -np.inf if dtype.kind == "f" else int(np.iinfo(dtype).min)


def _max_windows(x: np.ndarray, win: _Windows) -> tuple[np.ndarray, np.ndarray]:
    """(values, winning tap per output) with PyTorch's rule: first maximum, a NaN always wins (the last)."""
    xw = wide(x)
    low = _lowest(xw.dtype)
    grid = _padded(xw, win.p[0], win.p[1], win.hp, win.wp, low)
    n, c = x.shape[:2]
    best = np.full((n, c, win.oh, win.ow), low, dtype=xw.dtype)
    # the first tap that lies inside the input wins when every value is the lowest (e.g. all -inf)
    tap_type = np.int16 if win.k[0] * win.k[1] < 2**15 else np.int64  # less memory traffic per tap
    arg = np.broadcast_to(_first_valid_tap(win).astype(tap_type), best.shape).copy()
    has_nan = xw.dtype.kind == "f" and bool(np.isnan(xw).any())
    for t, (_, _, key) in enumerate(win.taps()):
        v = grid[key]
        m = v > best
        if has_nan:
            m |= np.isnan(v)
        np.copyto(best, v, where=m)
        np.copyto(arg, t, where=m)
    return best.astype(x.dtype, copy=False), arg


def _first_valid_tap(win: _Windows) -> np.ndarray:
    h, w = win.shape[2:]
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = win.k, win.s, win.p, win.d
    rows = np.arange(win.oh)[:, None] * sh - ph + np.arange(kh)[None, :] * dh
    cols = np.arange(win.ow)[:, None] * sw - pw + np.arange(kw)[None, :] * dw
    i0 = np.argmax((rows >= 0) & (rows < h), axis=1)
    j0 = np.argmax((cols >= 0) & (cols < w), axis=1)
    return (i0[:, None] * kw + j0[None, :]).astype(np.int64)


def _tap_to_flat(arg: np.ndarray, win: _Windows) -> np.ndarray:
    """Winning taps -> PyTorch's indices: the flat h * W + w position inside each input plane."""
    w = win.shape[3]
    kw = win.k[1]
    i, j = np.divmod(arg.astype(np.int64), kw)
    rows = np.arange(win.oh)[:, None] * win.s[0] - win.p[0] + i * win.d[0]
    cols = np.arange(win.ow)[None, :] * win.s[1] - win.p[1] + j * win.d[1]
    return (rows * w + cols).astype(np.int64)


class MaxPool2d(Function):
    name = "max_pool2d"

    def forward(self, x: np.ndarray, kernel_size: tuple[int, int], stride: tuple[int, int],
                padding: tuple[int, int] = (0, 0), dilation: tuple[int, int] = (1, 1),
                ceil_mode: bool = False) -> np.ndarray:
        win = _Windows(x.shape, kernel_size, stride, padding, dilation, ceil_mode)
        out, arg = _max_windows(x, win)
        self.win = win
        self.save(arg)
        return out

    def backward(self, grad: np.ndarray) -> np.ndarray:
        (arg,) = self.saved
        win = self.win
        g = wide(grad)
        n, c = win.shape[:2]
        grid = np.zeros((n, c, win.hp, win.wp), dtype=g.dtype)
        zero = np.zeros((), dtype=g.dtype)
        for t, (_, _, key) in enumerate(win.taps()):
            grid[key] += np.where(arg == t, g, zero)
        return np.ascontiguousarray(win.crop(grid)).astype(grad.dtype, copy=False)


class MaxPool2dIndices(Function):
    """The argmax positions of max_pool2d (flat h * W + w per plane, int64); not differentiable."""

    name = "max_pool2d_indices"
    differentiable = False

    def forward(self, x: np.ndarray, kernel_size: tuple[int, int], stride: tuple[int, int],
                padding: tuple[int, int] = (0, 0), dilation: tuple[int, int] = (1, 1),
                ceil_mode: bool = False) -> np.ndarray:
        win = _Windows(x.shape, kernel_size, stride, padding, dilation, ceil_mode)
        return _tap_to_flat(_max_windows(x, win)[1], win)


def _avg_divisor(win: _Windows, count_include_pad: bool, divisor_override: int | None) -> np.ndarray:
    """(OH, OW) divisors with PyTorch's rules (windows clipped to the padded input, optionally to the input)."""
    if divisor_override is not None:
        return np.full((win.oh, win.ow), float(divisor_override))
    sizes = []
    for o, size, k, s, p in zip((win.oh, win.ow), win.shape[2:], win.k, win.s, win.p):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, size + p)
        if count_include_pad:
            sizes.append(end - start)
        else:
            sizes.append(np.minimum(end, size) - np.maximum(start, 0))
    return np.outer(sizes[0], sizes[1]).astype(np.float64)


class AvgPool2d(Function):
    name = "avg_pool2d"

    def forward(self, x: np.ndarray, kernel_size: tuple[int, int], stride: tuple[int, int],
                padding: tuple[int, int] = (0, 0), ceil_mode: bool = False, count_include_pad: bool = True,
                divisor_override: int | None = None) -> np.ndarray:
        win = _Windows(x.shape, kernel_size, stride, padding, (1, 1), ceil_mode)
        xw = wide(x)
        acc = xw.dtype if xw.dtype.kind == "f" else np.int64
        grid = _padded(xw, padding[0], padding[1], win.hp, win.wp, 0)
        total = np.zeros((x.shape[0], x.shape[1], win.oh, win.ow), dtype=acc)
        for _, _, key in win.taps():
            total += grid[key]
        div = _avg_divisor(win, count_include_pad, divisor_override)
        self.win, self.div = win, div
        if acc == np.int64:  # integer average pooling truncates toward zero, as PyTorch's CPU kernel
            safe = np.where(div > 0, div, 1).astype(np.int64)
            q = np.abs(total) // safe
            return np.where(div > 0, np.sign(total) * q, 0).astype(x.dtype)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(div > 0, total / div.astype(acc), 0)
        return out.astype(x.dtype, copy=False)

    def backward(self, grad: np.ndarray) -> np.ndarray:
        win = self.win
        g = wide(grad)
        with np.errstate(invalid="ignore", divide="ignore"):
            gd = np.where(self.div > 0, g / self.div.astype(g.dtype), 0).astype(g.dtype, copy=False)
        n, c = win.shape[:2]
        grid = np.zeros((n, c, win.hp, win.wp), dtype=g.dtype)
        for _, _, key in win.taps():
            grid[key] += gd
        return np.ascontiguousarray(win.crop(grid)).astype(grad.dtype, copy=False)


def adaptive_bounds(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's adaptive windows: start = floor(i * size / out), end = ceil((i + 1) * size / out)."""
    i = np.arange(out)
    return (i * size) // out, -((-(i + 1) * size) // out)


def _avg_matrix(size: int, out: int) -> np.ndarray:
    start, end = adaptive_bounds(size, out)
    cols = np.arange(size)
    inside = (cols[None, :] >= start[:, None]) & (cols[None, :] < end[:, None])
    return inside / (end - start)[:, None]


class AdaptiveAvgPool2d(Function):
    name = "adaptive_avg_pool2d"

    def forward(self, x: np.ndarray, output_size: tuple[int, int]) -> np.ndarray:
        oh, ow = output_size
        n, c, h, w = x.shape
        xw = wide(x)
        self.shape, self.out_size, self.dtype = x.shape, (oh, ow), x.dtype
        if (oh, ow) == (1, 1):  # global average pooling
            self.mode = "global"
            return xw.mean(axis=(2, 3), keepdims=True).astype(x.dtype, copy=False)
        if oh and ow and h % oh == 0 and w % ow == 0:  # equal, non-overlapping windows
            self.mode = "blocks"
            out = xw.reshape(n, c, oh, h // oh, ow, w // ow).mean(axis=(3, 5))
            return out.astype(x.dtype, copy=False)
        self.mode = "matrix"  # out = Ph @ x @ Pw^T with averaging matrices
        self.ph = _avg_matrix(h, oh).astype(xw.dtype)
        self.pw = _avg_matrix(w, ow).astype(xw.dtype)
        return np.matmul(self.ph, np.matmul(xw, self.pw.T)).astype(x.dtype, copy=False)

    def backward(self, grad: np.ndarray) -> np.ndarray:
        n, c, h, w = self.shape
        oh, ow = self.out_size
        g = wide(grad)
        if self.mode == "global":
            gx = np.broadcast_to(g / (h * w), self.shape)
        elif self.mode == "blocks":
            kh, kw = h // oh, w // ow
            gb = (g / (kh * kw))[:, :, :, None, :, None]
            gx = np.broadcast_to(gb, (n, c, oh, kh, ow, kw)).reshape(self.shape)
        else:
            gx = np.matmul(self.ph.T, np.matmul(g, self.pw))
        return np.ascontiguousarray(gx, dtype=self.dtype)


def _argmax_nan_last(flat: np.ndarray) -> np.ndarray:
    """argmax over the last axis: the first maximum, or the last NaN when there is one (PyTorch's rule)."""
    idx = np.argmax(flat, axis=-1)
    if flat.dtype.kind == "f":
        nan = np.isnan(flat)
        if nan.any():
            last = flat.shape[-1] - 1 - np.argmax(nan[..., ::-1], axis=-1)
            idx = np.where(nan.any(axis=-1), last, idx)
    return idx


def _adaptive_max(x: np.ndarray, output_size: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """(values, flat h * W + w indices) of adaptive max pooling."""
    oh, ow = output_size
    n, c, h, w = x.shape
    xw = wide(x)
    if oh and ow and h % oh == 0 and w % ow == 0:  # equal windows: one reshape, one argmax
        kh, kw = h // oh, w // ow
        blocks = xw.reshape(n, c, oh, kh, ow, kw).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, oh, ow, kh * kw)
        a = _argmax_nan_last(blocks)
        vals = np.take_along_axis(blocks, a[..., None], axis=-1)[..., 0]
        i, j = np.divmod(a, kw)
        idx = (np.arange(oh)[:, None] * kh + i) * w + np.arange(ow)[None, :] * kw + j
        return vals.astype(x.dtype, copy=False), idx.astype(np.int64)
    hs, he = adaptive_bounds(h, oh)
    ws, we = adaptive_bounds(w, ow)
    vals = np.empty((n, c, oh, ow), dtype=x.dtype)
    idx = np.empty((n, c, oh, ow), dtype=np.int64)
    for r in range(oh):  # one window per output cell, each over all of N and C at once
        for q in range(ow):
            win = xw[:, :, hs[r]:he[r], ws[q]:we[q]]
            width = int(we[q] - ws[q])
            a = _argmax_nan_last(win.reshape(n, c, -1))
            vals[:, :, r, q] = np.take_along_axis(win.reshape(n, c, -1), a[..., None], axis=-1)[..., 0]
            i, j = np.divmod(a, width)
            idx[:, :, r, q] = (hs[r] + i) * w + ws[q] + j
    return vals, idx


class AdaptiveMaxPool2d(Function):
    name = "adaptive_max_pool2d"

    def forward(self, x: np.ndarray, output_size: tuple[int, int]) -> np.ndarray:
        vals, idx = _adaptive_max(x, output_size)
        self.shape = x.shape
        self.save(idx)
        return vals

    def backward(self, grad: np.ndarray) -> np.ndarray:
        (idx,) = self.saved
        n, c, h, w = self.shape
        planes = np.arange(n * c, dtype=np.int64).reshape(n, c, 1, 1) * (h * w)
        flat = (idx + planes).ravel()
        gx = np.bincount(flat, weights=wide(grad).ravel().astype(np.float64), minlength=n * c * h * w)
        return gx.reshape(self.shape).astype(grad.dtype)


class AdaptiveMaxPool2dIndices(Function):
    """The argmax positions of adaptive_max_pool2d (flat h * W + w per plane, int64); not differentiable."""

    name = "adaptive_max_pool2d_indices"
    differentiable = False

    def forward(self, x: np.ndarray, output_size: tuple[int, int]) -> np.ndarray:
        return _adaptive_max(x, output_size)[1]
