"""Activation primitives: gelu, silu, hardswish, hardsigmoid, leaky_relu, hardtanh (relu6), elu, softplus, mish,
and softmax/log_softmax along one dim (numerically stable: the row maximum is subtracted before exp).

Each is one `Function` whose `name` is the operator's kernel name. float16/bfloat16 inputs are computed in
float32 and rounded once. `relu`, `sigmoid` and `tanh` are core primitives (dtorch/_prims/pointwise.py).
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.function import Function
from .pointwise import wide

__all__ = ["Elu", "Gelu", "Hardsigmoid", "Hardswish", "Hardtanh", "LeakyRelu", "LogSoftmax", "Mish", "Silu", "Softmax",
           "Softplus"]

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _sigmoid(w: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        out = np.exp(-w)
        out += 1.0
        return np.reciprocal(out, out=out)


class _Act(Function):
    """Shared plumbing: forward saves the input; backward widens the gradient and rounds once."""

    def forward(self, x: np.ndarray, **attrs: object) -> np.ndarray:
        self.save(x)
        w = wide(x).reshape(x.shape or (1,))  # 0-d works as 1-element, so ufunc `out=` always gets an array
        return self.f(w, **attrs).reshape(x.shape).astype(x.dtype, copy=False)

    def backward(self, grad: np.ndarray) -> np.ndarray:
        (x,) = self.saved
        shape = x.shape or (1,)
        g = self.df(wide(grad).reshape(shape), wide(x).reshape(shape), **self.attrs)
        return g.reshape(x.shape).astype(grad.dtype, copy=False)

    def f(self, w: np.ndarray, **attrs: object) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def df(self, g: np.ndarray, w: np.ndarray, **attrs: object) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


class Gelu(_Act):
    """x * Phi(x); `approximate="tanh"` uses 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""

    name = "gelu"

    def f(self, w: np.ndarray, approximate: str = "none") -> np.ndarray:  # type: ignore[override]
        if approximate == "tanh":
            inner = np.tanh(_SQRT_2_OVER_PI * (w + 0.044715 * w * w * w))
            inner += 1.0
            inner *= w
            inner *= 0.5
            return inner
        from scipy.special import erf

        cdf = erf(w * _INV_SQRT_2)
        cdf += 1.0
        cdf *= w
        cdf *= 0.5
        return cdf

    def df(self, g: np.ndarray, w: np.ndarray, approximate: str = "none") -> np.ndarray:  # type: ignore[override]
        if approximate == "tanh":
            x2 = w * w
            t = np.tanh(_SQRT_2_OVER_PI * (w + 0.044715 * x2 * w))
            d = 0.5 * w * (1.0 - t * t) * (_SQRT_2_OVER_PI * (1.0 + 3.0 * 0.044715 * x2))
            d += 0.5 * (1.0 + t)
            return g * d
        from scipy.special import erf

        d = 0.5 * (1.0 + erf(w * _INV_SQRT_2))
        d += w * np.exp(-0.5 * w * w) * _INV_SQRT_2PI
        return g * d


class Silu(_Act):
    """x * sigmoid(x)."""

    name = "silu"

    def f(self, w: np.ndarray) -> np.ndarray:  # type: ignore[override]
        s = _sigmoid(w)
        s *= w
        return s

    def df(self, g: np.ndarray, w: np.ndarray) -> np.ndarray:  # type: ignore[override]
        s = _sigmoid(w)
        return g * s * (1.0 + w * (1.0 - s))


class Hardswish(_Act):
    """x * relu6(x + 3) / 6."""

    name = "hardswish"

    def f(self, w: np.ndarray) -> np.ndarray:  # type: ignore[override]
        return w * np.clip(w + 3.0, 0.0, 6.0) * (1.0 / 6.0)

    def df(self, g: np.ndarray, w: np.ndarray) -> np.ndarray:  # type: ignore[override]
        # PyTorch's piecewise derivative: 0 up to -3, x/3 + 1/2 on (-3, 3), 1 from 3 on.
        d = np.where(w <= -3.0, 0.0, np.where(w < 3.0, w / 3.0 + 0.5, 1.0))
        return g * d


class Hardsigmoid(_Act):
    """relu6(x + 3) / 6."""

    name = "hardsigmoid"

    def f(self, w: np.ndarray) -> np.ndarray:  # type: ignore[override]
        return np.clip(w + 3.0, 0.0, 6.0) * (1.0 / 6.0)

    def df(self, g: np.ndarray, w: np.ndarray) -> np.ndarray:  # type: ignore[override]
        return g * (((w > -3.0) & (w < 3.0)) * (1.0 / 6.0))


class LeakyRelu(_Act):
    """x for x > 0, negative_slope * x otherwise."""

    name = "leaky_relu"

    def f(self, w: np.ndarray, negative_slope: float = 0.01) -> np.ndarray:  # type: ignore[override]
        return np.where(w > 0, w, w * negative_slope)

    def df(self, g: np.ndarray, w: np.ndarray, negative_slope: float = 0.01) -> np.ndarray:  # type: ignore[override]
        return np.where(w > 0, g, g * negative_slope)


class Hardtanh(_Act):
    """clamp(x, min_val, max_val); relu6 is hardtanh(0, 6). The gradient is 0 at and beyond the bounds."""

    name = "hardtanh"

    def f(self, w: np.ndarray, min_val: float = -1.0, max_val: float = 1.0) -> np.ndarray:  # type: ignore[override]
        return np.clip(w, min_val, max_val)

    def df(self, g: np.ndarray, w: np.ndarray, min_val: float = -1.0,  # type: ignore[override]
           max_val: float = 1.0) -> np.ndarray:
        return g * ((w > min_val) & (w < max_val))


class Elu(_Act):
    """scale * (x if x > 0 else alpha * (exp(input_scale * x) - 1)); covers ELU, SELU and CELU."""

    name = "elu"

    def f(self, w: np.ndarray, alpha: float = 1.0, scale: float = 1.0,  # type: ignore[override]
          input_scale: float = 1.0) -> np.ndarray:
        neg = np.minimum(w, 0.0)
        neg *= input_scale
        neg = np.expm1(neg, out=neg)
        neg *= alpha
        out = np.where(w > 0, w, neg)
        if scale != 1.0:
            out *= scale
        return out

    def df(self, g: np.ndarray, w: np.ndarray, alpha: float = 1.0, scale: float = 1.0,  # type: ignore[override]
           input_scale: float = 1.0) -> np.ndarray:
        neg = np.exp(np.minimum(w, 0.0) * input_scale) * (alpha * input_scale * scale)
        return g * np.where(w > 0, scale, neg)


class Softplus(_Act):
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold."""

    name = "softplus"

    def f(self, w: np.ndarray, beta: float = 1.0, threshold: float = 20.0) -> np.ndarray:  # type: ignore[override]
        z = w * beta
        with np.errstate(over="ignore"):
            soft = np.logaddexp(z, 0.0)
        if beta != 1.0:
            soft /= beta
        return np.where(z > threshold, w, soft)

    def df(self, g: np.ndarray, w: np.ndarray, beta: float = 1.0,  # type: ignore[override]
           threshold: float = 20.0) -> np.ndarray:
        z = w * beta
        return np.where(z > threshold, g, g * _sigmoid(z))


class Mish(_Act):
    """x * tanh(softplus(x))."""

    name = "mish"

    def f(self, w: np.ndarray) -> np.ndarray:  # type: ignore[override]
        return w * np.tanh(np.logaddexp(w, 0.0))

    def df(self, g: np.ndarray, w: np.ndarray) -> np.ndarray:  # type: ignore[override]
        t = np.tanh(np.logaddexp(w, 0.0))
        return g * (t + w * _sigmoid(w) * (1.0 - t * t))


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
        z = _shifted(wide(x), dim)
        e = np.exp(z, out=z)
        with np.errstate(invalid="ignore", divide="ignore"):
            e /= np.sum(e, axis=dim, keepdims=True)
        out = e.astype(x.dtype, copy=False)
        self.save(e)
        self.dim = dim
        return out

    def backward(self, grad: np.ndarray) -> np.ndarray:
        (y,) = self.saved
        g = wide(grad)
        gy = g * y
        gy -= y * np.sum(gy, axis=self.dim, keepdims=True)
        return gy.astype(grad.dtype, copy=False)


class LogSoftmax(Function):
    name = "log_softmax"

    def forward(self, x: np.ndarray, dim: int) -> np.ndarray:
        z = _shifted(wide(x), dim)
        with np.errstate(divide="ignore", invalid="ignore"):
            lse = np.log(np.sum(np.exp(z), axis=dim, keepdims=True))
            z -= lse
        self.save(z)
        self.dim = dim
        return z.astype(x.dtype, copy=False)

    def backward(self, grad: np.ndarray) -> np.ndarray:
        (y,) = self.saved
        g = wide(grad)
        gx = np.exp(y)
        gx *= -np.sum(g, axis=self.dim, keepdims=True)
        gx += g
        return gx.astype(grad.dtype, copy=False)
