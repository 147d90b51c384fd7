"""Dropout primitive: zero elements (or whole channels) with probability p, scale survivors by 1 / (1 - p)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.function import Function

__all__ = ["Dropout"]


class Dropout(Function):
    """Training-time dropout. `channelwise=True` drops whole channels of (N, C, *) (Dropout1d/2d/3d), else
    single elements. The mask is drawn from `rng` (a NumPy Generator), so a seeded dtorch generator repeats it."""

    name = "dropout"

    def forward(self, x: np.ndarray, p: float = 0.5, rng: Any = None, channelwise: bool = False) -> np.ndarray:
        shape = x.shape[:2] + (1,) * (x.ndim - 2) if channelwise else x.shape
        if p >= 1.0:
            mask = np.zeros(shape, dtype=x.dtype)
        else:
            keep = rng.random(shape, dtype=np.float32) >= np.float32(p)
            mask = np.multiply(keep, 1.0 / (1.0 - p), dtype=np.float32).astype(x.dtype, copy=False)
        self.save(mask)
        return x * mask

    def backward(self, grad: np.ndarray) -> np.ndarray:
        (mask,) = self.saved
        return grad * mask
