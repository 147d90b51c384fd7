"""Softmax primitives along one dim, numerically stable (the row maximum is subtracted before exp)."""

from __future__ import annotations

import numpy as np

from ...autograd.function import Function
from ...ops.elementwise import _wide

__all__ = ["LogSoftmax", "Softmax"]


def _shifted(w: np.ndarray, dim: int) -> np.ndarray:
    """w - max(w, dim) as a new array; rows that are all -inf stay -inf-free (shift by 0)."""
    if w.shape[dim] == 0:
        return w.copy()
    m = np.max(w, axis=dim, keepdims=True)
    if not np.isfinite(m).all():
        m = np.where(np.isfinite(m), m, 0)
    return np.subtract(w, m)


class Softmax(Function):
    name = "softmax"

    def forward(self, x: np.ndarray, dim: int) -> np.ndarray:
        z = _shifted(_wide(x), dim)
        e = np.exp(z, out=z)
        with np.errstate(invalid="ignore", divide="ignore"):
            e /= np.sum(e, axis=dim, keepdims=True)
        out = e.astype(x.dtype, copy=False)
        self.save(e)
        self.dim = dim
        return out

    def backward(self, grad: np.ndarray) -> np.ndarray:
        (y,) = self.saved
        g = _wide(grad)
        gy = g * y
        gy -= y * np.sum(gy, axis=self.dim, keepdims=True)
        return gy.astype(grad.dtype, copy=False)


class LogSoftmax(Function):
    name = "log_softmax"

    def forward(self, x: np.ndarray, dim: int) -> np.ndarray:
        z = _shifted(_wide(x), dim)
        with np.errstate(divide="ignore", invalid="ignore"):
            lse = np.log(np.sum(np.exp(z), axis=dim, keepdims=True))
            z -= lse
        self.save(z)
        self.dim = dim
        return z.astype(x.dtype, copy=False)

    def backward(self, grad: np.ndarray) -> np.ndarray:
        (y,) = self.saved
        g = _wide(grad)
        gx = np.exp(y)
        gx *= -np.sum(g, axis=self.dim, keepdims=True)
        gx += g
        return gx.astype(grad.dtype, copy=False)
