"""Lookup primitives: `embedding` (rows of a weight matrix by index) and `one_hot`.

Attributes (shared with export and the runtime):
  embedding: padding_idx (row that gets no gradient, or None), scale_grad_by_freq
  one_hot: num_classes
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import Function


class Embedding(Function):
    """embedding(weight (V, D), indices (any shape, integer)) -> (*indices.shape, D)."""

    name = "embedding"

    def forward(self, weight: np.ndarray, indices: np.ndarray, padding_idx: int | None = None,
                scale_grad_by_freq: bool = False) -> np.ndarray:
        idx = indices.astype(np.intp, copy=False)
        self.shape, self.padding_idx, self.scale = weight.shape, padding_idx, scale_grad_by_freq
        self.save(idx)
        return weight[idx]

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        (idx,) = self.saved
        flat = idx.ravel()
        g = grad.reshape(-1, self.shape[1])
        acc = np.float32 if g.dtype == np.float16 or g.dtype.name == "bfloat16" else g.dtype
        if self.scale:
            counts = np.bincount(flat, minlength=self.shape[0])
            g = g / counts[flat][:, None].astype(acc)
        gw = np.zeros(self.shape, dtype=acc)
        np.add.at(gw, flat, g.astype(acc, copy=False))
        if self.padding_idx is not None:
            gw[self.padding_idx] = 0
        return gw.astype(grad.dtype, copy=False), None


class OneHot(Function):
    """one_hot(indices int64) -> int64 (*indices.shape, num_classes); not differentiable."""

    name = "one_hot"
    differentiable = False

    def forward(self, indices: np.ndarray, num_classes: int) -> np.ndarray:
        out = np.zeros(indices.shape + (num_classes,), dtype=np.int64)
        np.put_along_axis(out, indices[..., None].astype(np.intp), 1, axis=-1)
        return out
