"""Matrix multiplication with PyTorch's 1-D / batched broadcasting rules."""

from __future__ import annotations

import numpy as np

from ..autograd.function import Function, unbroadcast
from ..dtypes import LOW_FLOAT_NP


def _low(x: np.ndarray) -> bool:
    return x.dtype in LOW_FLOAT_NP


class MatMul(Function):
    name = "matmul"

    def forward(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.ndim == 0 or b.ndim == 0:
            raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                               f"{a.ndim}D and {b.ndim}D")
        ka = a.shape[-1]
        kb = b.shape[-2] if b.ndim > 1 else b.shape[0]
        if ka != kb:
            sa = tuple(a.shape) if a.ndim > 1 else (a.shape[0],)
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({'x'.join(map(str, sa))} and "
                               f"{'x'.join(map(str, b.shape))}): the last dim of the first ({ka}) must equal "
                               f"the {'first' if b.ndim == 1 else 'second-to-last'} dim of the second ({kb})")
        self.save(a, b)
        if _low(a):
            return np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype)
        return np.matmul(a, b)

    def backward(self, g: np.ndarray) -> tuple[np.ndarray | None, ...]:
        a, b = self.saved
        low = _low(g)
        if low:
            a, b, gw = a.astype(np.float32), b.astype(np.float32), g.astype(np.float32)
        else:
            gw = g
        a2 = a[None, :] if a.ndim == 1 else a
        b2 = b[:, None] if b.ndim == 1 else b
        if a.ndim == 1 and b.ndim == 1:
            g2 = np.reshape(gw, (1, 1))
        elif a.ndim == 1:
            g2 = np.expand_dims(gw, -2)
        elif b.ndim == 1:
            g2 = np.expand_dims(gw, -1)
        else:
            g2 = gw
        ga = gb = None
        if self.needs_input_grad[0]:
            ga = np.matmul(g2, np.swapaxes(b2, -1, -2))
            ga = unbroadcast(ga, a2.shape).reshape(a.shape)
            if low:
                ga = ga.astype(g.dtype)
        if self.needs_input_grad[1]:
            gb = np.matmul(np.swapaxes(a2, -1, -2), g2)
            gb = unbroadcast(gb, b2.shape).reshape(b.shape)
            if low:
                gb = gb.astype(g.dtype)
        return ga, gb
