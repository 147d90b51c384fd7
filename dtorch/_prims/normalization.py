"""Normalization primitives: batch_norm, layer_norm, group_norm, each one fused Function.

The input is viewed as a 3-D array whose middle axis carries the per-channel (batch_norm) or per-group
(group_norm) statistics, so every reduction is one `einsum` over the other axes and there are no Python
loops over channels. batch_norm saves the centered input from forward for backward. float16/bfloat16
inputs are computed in float32 and rounded once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.function import Function
from .pointwise import wide

__all__ = ["BatchNorm", "GroupNorm", "LayerNorm"]


def _prod(shape: tuple[int, ...]) -> int:
    out = 1
    for s in shape:
        out *= s
    return out


def _grads_for(mask: tuple[bool, ...], values: tuple[Any, ...]) -> tuple[Any, ...]:
    """Keep one gradient per tensor input (inputs passed as None are not parents)."""
    return tuple(v for present, v in zip(mask, values) if present)


def _needs(fn: Function) -> tuple[bool, bool, bool]:
    """Which of (input, weight, bias) want a gradient; weight and bias only where they were given (fn.mask)."""
    it = iter(fn.needs_input_grad)
    need_x = next(it)
    return need_x, bool(fn.mask[1] and next(it)), bool(fn.mask[2] and next(it))  # type: ignore[attr-defined]


def _scale_shift(xhat: np.ndarray, weight: Any, bias: Any, shape: tuple[int, ...]) -> tuple[np.ndarray, Any]:
    """xhat * weight + bias (each optional, reshaped to `shape`) in the wide dtype, and the reshaped weight."""
    w = None if weight is None else wide(weight).reshape(shape)
    y = xhat.copy() if w is None else xhat * w
    if bias is not None:
        y += wide(bias).reshape(shape)
    return y, w


class BatchNorm(Function):
    """y = (x - mean) / sqrt(var + eps) * weight + bias over channel dim 1 of (N, C, *).

    Training: batch statistics (biased variance) normalize, and the running buffers (when given) are
    updated in place with the unbiased variance: r = (1 - momentum) * r + momentum * stat. Eval: the
    running statistics normalize.
    """

    name = "batch_norm"

    def forward(self, x: np.ndarray, weight: np.ndarray | None, bias: np.ndarray | None,
                running_mean: np.ndarray | None, running_var: np.ndarray | None, training: bool = True,
                momentum: float = 0.1, eps: float = 1e-5) -> np.ndarray:
        self.mask = (True, weight is not None, bias is not None, running_mean is not None, running_var is not None)
        n, c = x.shape[0], x.shape[1]
        x3 = wide(x).reshape(n, c, _prod(x.shape[2:]))
        m = x3.shape[0] * x3.shape[2]
        self.in_shape, self.m, self.training = x.shape, m, training
        w = None if weight is None else wide(weight)
        self.weight = w
        if not training:
            mean = wide(running_mean) if running_mean is not None else np.zeros(c, x3.dtype)
            var = wide(running_var) if running_var is not None else np.ones(c, x3.dtype)
            invstd = 1.0 / np.sqrt(var.astype(x3.dtype) + eps)
            scale = invstd if w is None else w * invstd
            shift = -mean * scale
            if bias is not None:
                shift += wide(bias)
            y = x3 * scale[:, None].astype(x3.dtype, copy=False)
            y += shift[:, None]
            self.save(x3, mean.astype(x3.dtype), invstd)
            return y.reshape(x.shape).astype(x.dtype, copy=False)
        if m == 0:
            self.save(x3, None, np.zeros(c, x3.dtype))
            return x.copy()
        mean = np.einsum("ncl->c", x3) / m
        xc = x3 - mean[:, None]
        var = np.einsum("ncl,ncl->c", xc, xc) / m
        invstd = 1.0 / np.sqrt(var + eps)
        if running_mean is not None:
            new = (1.0 - momentum) * wide(running_mean) + momentum * mean
            np.copyto(running_mean, new, casting="unsafe")
        if running_var is not None:
            unbiased = var * (m / (m - 1)) if m > 1 else np.full_like(var, np.nan)
            new = (1.0 - momentum) * wide(running_var) + momentum * unbiased
            np.copyto(running_var, new, casting="unsafe")
        # the centered input is saved (xhat = xc * invstd is never materialized: one pass fewer)
        self.save(xc, None, invstd)
        k = invstd if w is None else w * invstd
        y = xc * k[:, None].astype(xc.dtype, copy=False)
        if bias is not None:
            y += wide(bias)[:, None]
        return y.reshape(x.shape).astype(x.dtype, copy=False)

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        saved, mean, invstd = self.saved
        n, c = self.in_shape[0], self.in_shape[1]
        g3 = wide(grad).reshape(n, c, _prod(self.in_shape[2:]))
        need_x, need_w, need_b = _needs(self)
        w = self.weight
        k = invstd if w is None else w * invstd
        gx = gw = gb = None
        if self.training:
            xc = saved
            if self.m == 0:
                gx = np.zeros(self.in_shape, grad.dtype)
                gw = np.zeros(c, grad.dtype)
                gb = np.zeros(c, grad.dtype)
            else:
                gb_ = np.einsum("ncl->c", g3)
                gw_ = np.einsum("ncl,ncl->c", g3, xc) * invstd
                gw, gb = gw_, gb_
                if need_x:
                    # dx = k * (g - mean(g) - xhat * mean(g * xhat)), per channel, with xhat = xc * invstd
                    tmp = xc * (gw_ * invstd * (1.0 / self.m)).astype(xc.dtype, copy=False)[:, None]
                    gx = np.subtract(g3, tmp, out=tmp)
                    gx -= (gb_ * (1.0 / self.m))[:, None]
                    gx *= k[:, None]
        else:
            x3 = saved
            if need_x:
                gx = g3 * k[:, None].astype(g3.dtype, copy=False)
            if need_b:
                gb = np.einsum("ncl->c", g3)
            if need_w:
                xhat = (x3 - mean[:, None]) * invstd[:, None]
                gw = np.einsum("ncl,ncl->c", g3, xhat)
        out_x = None if gx is None else gx.reshape(self.in_shape).astype(grad.dtype, copy=False)
        return _grads_for(self.mask, (out_x, gw if need_w else None, gb if need_b else None, None, None))


class LayerNorm(Function):
    """Normalize over the trailing `ndim` dims (biased variance), then elementwise weight and bias."""

    name = "layer_norm"

    def forward(self, x: np.ndarray, weight: np.ndarray | None, bias: np.ndarray | None, ndim: int = 1,
                eps: float = 1e-5) -> np.ndarray:
        self.mask = (True, weight is not None, bias is not None)
        self.wshape = None if weight is None else weight.shape
        self.bshape = None if bias is None else bias.shape
        d = _prod(x.shape[x.ndim - ndim:])
        x2 = wide(x).reshape(_prod(x.shape[:x.ndim - ndim]), d)
        self.in_shape, self.d = x.shape, d
        if x2.size == 0:
            self.save(x2, np.zeros((x2.shape[0], 1), x2.dtype), None)
            return x.copy()
        mean = np.mean(x2, axis=1, keepdims=True)
        xhat = x2 - mean
        var = np.einsum("md,md->m", xhat, xhat)[:, None] / d
        invstd = 1.0 / np.sqrt(var + eps)
        xhat *= invstd
        y, w = _scale_shift(xhat, weight, bias, (-1,))
        self.save(xhat, invstd, w)
        return y.reshape(x.shape).astype(x.dtype, copy=False)

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        xhat, invstd, w = self.saved
        g2 = wide(grad).reshape(xhat.shape)
        need_x, need_w, need_b = _needs(self)
        gx = gw = gb = None
        if need_w:
            gw = np.einsum("md,md->d", g2, xhat).reshape(self.wshape)
        if need_b:
            gb = np.einsum("md->d", g2).reshape(self.bshape)
        if need_x and xhat.size:
            gy = g2 if w is None else g2 * w
            # dx = invstd * (gy - mean(gy) - xhat * mean(gy * xhat)), per row
            a = np.einsum("md,md->m", gy, xhat)[:, None] * (1.0 / self.d)
            b = np.mean(gy, axis=1, keepdims=True)
            gx = xhat * a
            gx = np.subtract(gy, gx, out=gx)
            gx -= b
            gx *= invstd
            gx = gx.reshape(self.in_shape).astype(grad.dtype, copy=False)
        elif need_x:
            gx = np.zeros(self.in_shape, grad.dtype)
        return _grads_for(self.mask, (gx, gw, gb))


class GroupNorm(Function):
    """Normalize (N, C, *) over groups of C // num_groups channels and all spatial positions, then apply a
    per-channel weight and bias."""

    name = "group_norm"

    def forward(self, x: np.ndarray, weight: np.ndarray | None, bias: np.ndarray | None, num_groups: int = 1,
                eps: float = 1e-5) -> np.ndarray:
        self.mask = (True, weight is not None, bias is not None)
        n, c = x.shape[0], x.shape[1]
        g = num_groups
        x4 = wide(x).reshape(n, g, c // g, _prod(x.shape[2:]))
        k = x4.shape[2] * x4.shape[3]
        self.in_shape, self.k = x.shape, k
        if x4.size == 0:
            self.save(x4, np.zeros((n, g, 1, 1), x4.dtype), None)
            return x.copy()
        mean = np.einsum("ngcl->ng", x4)[:, :, None, None] / k
        xhat = x4 - mean
        var = np.einsum("ngcl,ngcl->ng", xhat, xhat)[:, :, None, None] / k
        invstd = 1.0 / np.sqrt(var + eps)
        xhat *= invstd
        y, w = _scale_shift(xhat, weight, bias, (g, c // g, 1))
        self.save(xhat, invstd, w)
        return y.reshape(x.shape).astype(x.dtype, copy=False)

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        xhat, invstd, w = self.saved
        g4 = wide(grad).reshape(xhat.shape)
        need_x, need_w, need_b = _needs(self)
        gx = gw = gb = None
        if need_w:
            gw = np.einsum("ngcl,ngcl->gc", g4, xhat).reshape(-1)
        if need_b:
            gb = np.einsum("ngcl->gc", g4).reshape(-1)
        if need_x and xhat.size:
            gy = g4 if w is None else g4 * w
            a = np.einsum("ngcl,ngcl->ng", gy, xhat)[:, :, None, None] * (1.0 / self.k)
            b = np.einsum("ngcl->ng", gy)[:, :, None, None] * (1.0 / self.k)
            gx = xhat * a
            gx = np.subtract(gy, gx, out=gx)
            gx -= b
            gx *= invstd
            gx = gx.reshape(self.in_shape).astype(grad.dtype, copy=False)
        elif need_x:
            gx = np.zeros(self.in_shape, grad.dtype)
        return _grads_for(self.mask, (gx, gw, gb))
