"""Loss primitives: cross_entropy (fused log_softmax + nll), nll_loss, the pointwise regression losses
(mse_loss, l1_loss, smooth_l1_loss, huber_loss) and the binary losses.

`reduction` is "mean", "sum" or "none", with PyTorch's semantics: class-index losses with a `weight` are
divided by the summed weight of the non-ignored targets (0/0 = nan when every target is ignored).
Arguments are validated by `dtorch.nn.functional`; these classes assume checked inputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.function import Function, unbroadcast
from .pointwise import wide

__all__ = [
    "BinaryCrossEntropy",
    "BinaryCrossEntropyWithLogits",
    "CrossEntropy",
    "HuberLoss",
    "L1Loss",
    "MseLoss",
    "NllLoss",
    "SmoothL1Loss",
]


def _rows(x: np.ndarray) -> np.ndarray:
    """(C,) -> (1, C); (N, C, d1, ...) -> (N * d1 * ..., C) with the class dim last."""
    if x.ndim == 1:
        return x[None, :]
    if x.ndim == 2:
        return x
    return np.moveaxis(x, 1, -1).reshape(-1, x.shape[1])


def _unrows(g2: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    if len(shape) <= 2:
        return g2.reshape(shape)
    moved = shape[:1] + shape[2:] + shape[1:2]
    return np.moveaxis(g2.reshape(moved), -1, 1)


def _out_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    return () if len(shape) == 1 else shape[:1] + shape[2:]


def _reduce(loss: np.ndarray, reduction: str, denom: Any = None) -> np.ndarray:
    if reduction == "none":
        return loss
    total = loss.sum()
    if reduction == "sum":
        return np.asarray(total)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(total / (loss.size if denom is None else denom))


def _grad_scale(g: np.ndarray, reduction: str, denom: Any, zero_if_empty: bool = False) -> Any:
    """The per-element factor d(reduced)/d(loss_i) times the incoming gradient. With `zero_if_empty`, a mean
    over zero total weight (every target ignored) passes back zeros, as PyTorch's class-index losses do."""
    if reduction == "none":
        return g
    if reduction == "mean" and zero_if_empty and denom == 0:
        return g * 0
    with np.errstate(invalid="ignore", divide="ignore"):
        return g / denom if reduction == "mean" else g


class _ClassIndexLoss(Function):
    """Shared target handling for cross_entropy and nll_loss with class-index targets."""

    def _targets(self, t: np.ndarray, c: int, ignore_index: int,
                 weight: np.ndarray | None, dtype: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        t = t.reshape(-1)
        valid = t != ignore_index
        bad = valid & ((t < 0) | (t >= c))
        if bad.any():
            raise IndexError(f"Target {int(t[bad][0])} is out of bounds: class-index targets must be in [0, {c}) "
                             f"(or equal ignore_index={ignore_index})")
        tt = np.where(valid, t, 0)
        wt = (wide(weight)[tt] if weight is not None else np.ones(t.shape, dtype)).astype(dtype, copy=False)
        wt = wt * valid
        return tt, valid, wt


class CrossEntropy(_ClassIndexLoss):
    """cross_entropy(logits, target): class indices (int target) or class probabilities (float target of the
    input's shape), with optional per-class `weight` and `label_smoothing`."""

    name = "cross_entropy"

    def forward(self, x: np.ndarray, target: np.ndarray, weight: np.ndarray | None = None, ignore_index: int = -100,
                reduction: str = "mean", label_smoothing: float = 0.0, probs: bool = False) -> np.ndarray:
        self.mask = (True, True, weight is not None)
        self.in_shape, self.reduction, self.eps, self.probs = x.shape, reduction, label_smoothing, probs
        c = x.shape[0] if x.ndim == 1 else x.shape[1]
        x2 = _rows(wide(x))
        z = x2 - (np.max(x2, axis=1, keepdims=True) if x2.size else 0)
        e = np.exp(z)
        s = e.sum(axis=1)
        lse = np.log(s)
        w = None if weight is None else wide(weight).astype(z.dtype, copy=False)
        eps = label_smoothing
        if probs:
            t2 = _rows(wide(target)).astype(z.dtype, copy=False)
            if eps:
                t2 = t2 * (1.0 - eps) + eps / c
            logp = z
            logp -= lse[:, None]
            tw = t2 if w is None else t2 * w
            loss = -np.einsum("mc,mc->m", logp, tw)
            self.denom = x2.shape[0]
            e /= s[:, None]
            self.save(e, logp, tw, w)
        else:
            tt, valid, wt = self._targets(target, c, ignore_index, weight, z.dtype)
            rows = np.arange(x2.shape[0])
            loss = (lse - z[rows, tt]) * wt
            if eps:
                zw = z.sum(axis=1) if w is None else z @ w
                wsum = c if w is None else w.sum()
                smooth = (lse * wsum - zw) * valid
                loss = loss * (1.0 - eps) + smooth * (eps / c)
            self.denom = wt.sum()
            e /= s[:, None]
            self.save(e, tt, valid, wt, w)
        out = _reduce(loss.reshape(_out_shape(x.shape)), reduction, self.denom)
        return out.astype(x.dtype, copy=False)

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        r = np.asarray(_grad_scale(wide(grad), self.reduction, self.denom, not self.probs)).reshape(-1)
        eps = self.eps
        gx = gt = None
        if self.probs:
            p, logp, tw, w = self.saved
            if self.needs_input_grad[0]:
                gx = p * (tw.sum(axis=1) * r)[:, None]
                gx -= tw * r[:, None]
                gx = _unrows(gx, self.in_shape).astype(grad.dtype, copy=False)
            if self.needs_input_grad[1]:
                gt2 = logp * (-(1.0 - eps) * r)[:, None]
                if w is not None:
                    gt2 *= w
                gt = _unrows(gt2, self.in_shape).astype(grad.dtype, copy=False)
        else:
            p, tt, valid, wt, w = self.saved
            c = p.shape[1]
            if self.needs_input_grad[0]:
                rv = r * valid
                wsum = c if w is None else w.sum()
                gx = p * (r * wt * (1.0 - eps) + rv * (eps * wsum / c))[:, None]
                gx[np.arange(p.shape[0]), tt] -= r * wt * (1.0 - eps)
                if eps:
                    gx -= (rv * (eps / c))[:, None] * (1.0 if w is None else w[None, :])
                gx = _unrows(gx, self.in_shape).astype(grad.dtype, copy=False)
        grads = (gx, gt, None)
        return tuple(g for present, g in zip(self.mask, grads) if present)


class NllLoss(_ClassIndexLoss):
    """nll_loss(log_probs, target): -weight[t] * log_probs[t] per sample, class dim 1 (or 0 for 1-D input)."""

    name = "nll_loss"

    def forward(self, x: np.ndarray, target: np.ndarray, weight: np.ndarray | None = None, ignore_index: int = -100,
                reduction: str = "mean") -> np.ndarray:
        self.mask = (True, True, weight is not None)
        self.in_shape, self.reduction = x.shape, reduction
        c = x.shape[0] if x.ndim == 1 else x.shape[1]
        x2 = _rows(wide(x))
        tt, _valid, wt = self._targets(target, c, ignore_index, weight, x2.dtype)
        loss = -x2[np.arange(x2.shape[0]), tt] * wt
        self.denom = wt.sum()
        self.save(tt, wt, x2.shape)
        out = _reduce(loss.reshape(_out_shape(x.shape)), reduction, self.denom)
        return out.astype(x.dtype, copy=False)

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        tt, wt, shape2 = self.saved
        r = np.asarray(_grad_scale(wide(grad), self.reduction, self.denom, True)).reshape(-1)
        gx2 = np.zeros(shape2, dtype=r.dtype)
        gx2[np.arange(shape2[0]), tt] = -(r * wt)
        gx = _unrows(gx2, self.in_shape).astype(grad.dtype, copy=False)
        return tuple(g for present, g in zip(self.mask, (gx, None, None)) if present)


class _Pointwise(Function):
    """A loss of the broadcast difference d = input - target, reduced; both inputs get gradients."""

    def forward(self, x: np.ndarray, target: np.ndarray, reduction: str = "mean", **attrs: Any) -> np.ndarray:
        xw, tw = wide(x), wide(target)
        d = np.subtract(xw, tw)
        self.shapes, self.reduction, self.kw = (x.shape, target.shape), reduction, attrs
        self.save(d)
        return _reduce(self.f(d, **attrs), reduction).astype(np.result_type(x.dtype, target.dtype), copy=False)

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        (d,) = self.saved
        gd = self.df(d, **self.kw) * _grad_scale(wide(grad), self.reduction, d.size)
        gx = unbroadcast(gd, self.shapes[0]).astype(grad.dtype, copy=False) if self.needs_input_grad[0] else None
        gt = None
        if len(self.needs_input_grad) > 1 and self.needs_input_grad[1]:
            gt = unbroadcast(-gd, self.shapes[1]).astype(grad.dtype, copy=False)
        return gx, gt

    def f(self, d: np.ndarray, **attrs: Any) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def df(self, d: np.ndarray, **attrs: Any) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


class MseLoss(_Pointwise):
    name = "mse_loss"

    def f(self, d: np.ndarray) -> np.ndarray:  # type: ignore[override]
        return d * d

    def df(self, d: np.ndarray) -> np.ndarray:  # type: ignore[override]
        return 2.0 * d


class L1Loss(_Pointwise):
    name = "l1_loss"

    def f(self, d: np.ndarray) -> np.ndarray:  # type: ignore[override]
        return np.abs(d)

    def df(self, d: np.ndarray) -> np.ndarray:  # type: ignore[override]
        return np.sign(d)


class SmoothL1Loss(_Pointwise):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta."""

    name = "smooth_l1_loss"

    def f(self, d: np.ndarray, beta: float = 1.0) -> np.ndarray:  # type: ignore[override]
        a = np.abs(d)
        if beta == 0:
            return a
        return np.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta)

    def df(self, d: np.ndarray, beta: float = 1.0) -> np.ndarray:  # type: ignore[override]
        if beta == 0:
            return np.sign(d)
        return np.where(d < -beta, -1.0, np.where(d > beta, 1.0, d / beta)).astype(d.dtype, copy=False)


class HuberLoss(_Pointwise):
    """0.5 d^2 where |d| < delta, else delta * (|d| - 0.5 delta)."""

    name = "huber_loss"

    def f(self, d: np.ndarray, delta: float = 1.0) -> np.ndarray:  # type: ignore[override]
        a = np.abs(d)
        return np.where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta))

    def df(self, d: np.ndarray, delta: float = 1.0) -> np.ndarray:  # type: ignore[override]
        return np.clip(d, -delta, delta)


def _bcast(w: np.ndarray | None, shape: tuple[int, ...], dtype: Any) -> Any:
    return 1.0 if w is None else np.broadcast_to(wide(w).astype(dtype, copy=False), shape)


class BinaryCrossEntropy(Function):
    """-weight * (t log(x) + (1 - t) log(1 - x)), each log clamped at -100 as PyTorch does."""

    name = "binary_cross_entropy"

    def forward(self, x: np.ndarray, target: np.ndarray, weight: np.ndarray | None = None,
                reduction: str = "mean") -> np.ndarray:
        self.mask = (True, True, weight is not None)
        xw, tw = wide(x), wide(target)
        with np.errstate(divide="ignore"):
            lx = np.maximum(np.log(xw), -100.0)
            l1x = np.maximum(np.log1p(-xw), -100.0)
        w = _bcast(weight, x.shape, xw.dtype)
        loss = -(tw * lx + (1.0 - tw) * l1x) * w
        self.reduction = reduction
        self.save(xw, tw, w)
        return _reduce(loss, reduction).astype(x.dtype, copy=False)

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        xw, tw, w = self.saved
        r = _grad_scale(wide(grad), self.reduction, xw.size) * w
        gx = gt = None
        if self.needs_input_grad[0]:
            gx = (r * (xw - tw) / np.maximum((1.0 - xw) * xw, 1e-12)).astype(grad.dtype, copy=False)
        if self.needs_input_grad[1]:
            # PyTorch differentiates the unclamped logs here: +-inf where x is exactly 0 or 1
            with np.errstate(divide="ignore"):
                gt = (r * (np.log1p(-xw) - np.log(xw))).astype(grad.dtype, copy=False)
        return tuple(g for present, g in zip(self.mask, (gx, gt, None)) if present)


class BinaryCrossEntropyWithLogits(Function):
    """weight * ((1 - t) x + (1 + (pos_weight - 1) t) softplus(-x)), computed without overflow."""

    name = "binary_cross_entropy_with_logits"

    def forward(self, x: np.ndarray, target: np.ndarray, weight: np.ndarray | None = None,
                pos_weight: np.ndarray | None = None, reduction: str = "mean") -> np.ndarray:
        self.mask = (True, True, weight is not None, pos_weight is not None)
        xw, tw = wide(x), wide(target)
        sp = np.logaddexp(-xw, 0.0)  # softplus(-x) = log(1 + exp(-x))
        if pos_weight is None:
            lw: Any = 1.0
            pw: Any = None
        else:
            pw = _bcast(pos_weight, x.shape, xw.dtype)
            lw = 1.0 + (pw - 1.0) * tw
        w = _bcast(weight, x.shape, xw.dtype)
        loss = ((1.0 - tw) * xw + lw * sp) * w
        self.reduction = reduction
        self.save(xw, tw, sp, lw, pw, w)
        return _reduce(loss, reduction).astype(x.dtype, copy=False)

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray | None, ...]:
        xw, tw, sp, lw, pw, w = self.saved
        r = _grad_scale(wide(grad), self.reduction, xw.size) * w
        gx = gt = None
        if self.needs_input_grad[0]:
            sig_neg = np.exp(-sp)  # sigmoid(x) = exp(-softplus(-x)); 1 - sigmoid(x) = sigmoid(-x)
            gx = (r * ((1.0 - tw) - lw * (1.0 - sig_neg))).astype(grad.dtype, copy=False)
        if self.needs_input_grad[1]:
            dt = -xw if pw is None else -xw + (pw - 1.0) * sp
            gt = (r * dt).astype(grad.dtype, copy=False)
        return tuple(g for present, g in zip(self.mask, (gx, gt, None, None)) if present)
