"""The fused linear primitive: y = x @ weight.T + bias over the last dim of x (any leading dims)."""

from __future__ import annotations

import numpy as np

from ..autograd.function import Function
from .pointwise import wide

__all__ = ["Linear"]


def _low(x: np.ndarray) -> bool:
    return x.dtype == np.float16 or x.dtype.name == "bfloat16"


class Linear(Function):
    """`x` (*, in_features), `weight` (out_features, in_features), optional `bias` (out_features,).
    float16/bfloat16 are multiplied in float32 and rounded once."""

    name = "linear"

    def forward(self, x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
        self.has_bias = bias is not None
        lead = x.shape[:-1]
        x2 = x.reshape(-1, x.shape[-1])
        low = _low(x)
        xw, ww = (wide(x2), wide(weight)) if low else (x2, weight)
        out = xw @ ww.T
        if bias is not None:
            out += wide(bias) if low else bias
        self.save(x2, weight)
        self.in_shape = x.shape
        return out.reshape(lead + (weight.shape[0],)).astype(x.dtype, copy=False)

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        x2, weight = self.saved
        g2 = grad.reshape(-1, weight.shape[0])
        low = _low(grad)
        if low:
            g2, x2, weight = wide(g2), wide(x2), wide(weight)
        gx = gw = gb = None
        need = self.needs_input_grad
        if need[0]:
            gx = (g2 @ weight).reshape(self.in_shape).astype(grad.dtype, copy=False)
        if need[1]:
            gw = (g2.T @ x2).astype(grad.dtype, copy=False)
        if self.has_bias and need[2]:
            gb = g2.sum(axis=0).astype(grad.dtype, copy=False)
        return (gx, gw, gb) if self.has_bias else (gx, gw)
