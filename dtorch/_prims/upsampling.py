"""Resampling primitives over (N, C, H, W): nearest (and nearest-exact) and bilinear interpolation.

The source positions follow PyTorch's CPU kernels exactly, including where they compute in float32:
a given scale factor s maps output index i to input position i / s (else the ratio in / out is
used). Each spatial axis is resampled separately; the backward is the transposed resampling, done
as two small dense matrix products. Attributes (shared with export and the runtime):
  upsample_nearest2d: output_size (oh, ow), scales (sh or None, sw or None), exact
  upsample_bilinear2d: output_size (oh, ow), scales (sh or None, sw or None), align_corners
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import Function
from .pointwise import wide


def _scale(in_size: int, out_size: int, scale: float | None, dtype: type) -> np.floating:
    """compute_scales_value: 1/scale when a positive scale factor was given, else in/out (in `dtype`)."""
    if scale is not None and scale > 0:
        return dtype(1.0 / scale)
    return dtype(in_size) / dtype(out_size)


def nearest_indices(in_size: int, out_size: int, scale: float | None, exact: bool) -> np.ndarray:
    """Source index of every output index along one axis."""
    dst = np.arange(out_size)
    if not exact:
        if out_size == in_size:
            return dst
        if out_size == 2 * in_size:
            return dst >> 1
    s = _scale(in_size, out_size, scale, np.float32)
    if exact:
        src = np.floor(((dst + 0.5) * np.float64(s)).astype(np.float32))
    else:
        src = np.floor(dst.astype(np.float32) * s)
    return np.minimum(src.astype(np.int64), in_size - 1)


def linear_weights(in_size: int, out_size: int, scale: float | None, align_corners: bool,
                   dtype: type) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(i0, i1, w0, w1) along one axis: output j = w0[j] * x[i0[j]] + w1[j] * x[i1[j]]."""
    dst = np.arange(out_size)
    if out_size == in_size:
        return dst, dst, np.ones(out_size, dtype), np.zeros(out_size, dtype)
    if align_corners:
        s = dtype(in_size - 1) / dtype(out_size - 1) if out_size > 1 else dtype(0)
        real = s * dst.astype(dtype)
    else:
        s = _scale(in_size, out_size, scale, dtype)
        real = np.maximum(s * (dst.astype(dtype) + dtype(0.5)) - dtype(0.5), dtype(0))
    i0 = np.minimum(np.floor(real).astype(np.int64), in_size - 1)
    lam = np.clip(real - i0.astype(dtype), dtype(0), dtype(1)).astype(dtype)
    i1 = i0 + (i0 < in_size - 1)
    return i0, i1, (dtype(1) - lam).astype(dtype), lam


def _matrix(rows: list[tuple[np.ndarray, np.ndarray]], out_size: int, in_size: int, dtype: np.dtype) -> np.ndarray:
    """Dense (out, in) resampling matrix from (index, weight) pairs; repeated indices add up."""
    m = np.zeros((out_size, in_size), dtype=dtype)
    j = np.arange(out_size)
    for idx, w in rows:
        m[j, idx] += w
    return m


def _apply_t(g: np.ndarray, mh: np.ndarray, mw: np.ndarray) -> np.ndarray:
    """mh^T @ g @ mw for g (N, C, OH, OW): the adjoint of a separable resampling."""
    n, c, oh, ow = g.shape
    t = (g.reshape(-1, ow) @ mw).reshape(n * c, oh, mw.shape[1])
    return np.matmul(mh.T, t).reshape(n, c, mh.shape[1], mw.shape[1])


class UpsampleNearest2d(Function):
    name = "upsample_nearest2d"

    def forward(self, x: np.ndarray, output_size: tuple[int, int],
                scales: tuple[float | None, float | None] = (None, None), exact: bool = False) -> np.ndarray:
        h, w = x.shape[2:]
        oh, ow = output_size
        ih = nearest_indices(h, oh, scales[0], exact)
        iw = nearest_indices(w, ow, scales[1], exact)
        self.shape, self.idx = x.shape, (ih, iw)
        return x[:, :, ih[:, None], iw[None, :]]

    def backward(self, grad: np.ndarray) -> np.ndarray:
        h, w = self.shape[2:]
        ih, iw = self.idx
        g = wide(grad)
        one = np.ones(1, g.dtype)
        mh = _matrix([(ih, one)], len(ih), h, g.dtype)
        mw = _matrix([(iw, one)], len(iw), w, g.dtype)
        return _apply_t(g, mh, mw).astype(grad.dtype, copy=False)


class UpsampleBilinear2d(Function):
    name = "upsample_bilinear2d"

    def forward(self, x: np.ndarray, output_size: tuple[int, int],
                scales: tuple[float | None, float | None] = (None, None), align_corners: bool = False) -> np.ndarray:
        h, w = x.shape[2:]
        oh, ow = output_size
        xw = wide(x)
        ct = xw.dtype.type
        h0, h1, a0, a1 = linear_weights(h, oh, scales[0], align_corners, ct)
        w0, w1, b0, b1 = linear_weights(w, ow, scales[1], align_corners, ct)
        # along W first, then along H: the same operation order as PyTorch's separable CPU kernel
        t = xw[:, :, :, w0] * b0 + xw[:, :, :, w1] * b1
        out = t[:, :, h0, :] * a0[:, None] + t[:, :, h1, :] * a1[:, None]
        self.shape = x.shape
        self.weights = ((h0, h1, a0, a1), (w0, w1, b0, b1))
        return out.astype(x.dtype, copy=False)

    def backward(self, grad: np.ndarray) -> np.ndarray:
        h, w = self.shape[2:]
        (h0, h1, a0, a1), (w0, w1, b0, b1) = self.weights
        g = wide(grad)
        mh = _matrix([(h0, a0), (h1, a1)], len(h0), h, g.dtype)
        mw = _matrix([(w0, b0), (w1, b1)], len(w0), w, g.dtype)
        return _apply_t(g, mh, mw).astype(grad.dtype, copy=False)
