"""Reductions: sum, mean, max/min (values), var, logsumexp, and index-returning argmax/argmin."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.function import Function
from ..dtypes import LOW_FLOAT_NP


def _axes(dim: Any, ndim: int) -> tuple[int, ...]:
    """Normalized reduction axes; a 0-d tensor accepts dims 0 and -1 and reduces nothing."""
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    n = max(ndim, 1)
    out: list[int] = []
    for d in dims:
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool):
            raise TypeError(f"reduction dims must be ints, got {type(d).__name__}")
        if not -n <= d < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
        a = int(d) % n
        if a in out:
            raise RuntimeError(f"dim {a} appears multiple times in the list of dims")
        out.append(a)
    return tuple(out) if ndim else ()


def _check_nonempty(x: np.ndarray, axes: tuple[int, ...], name: str, full: bool) -> None:
    """PyTorch's errors for max/min-like reductions of empty inputs."""
    if x.size:
        return
    if full:
        err = IndexError if name.startswith("arg") else RuntimeError  # PyTorch's choice of type, kept
        raise err(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                  f"reduction dim with the 'dim' argument.")
    for a in axes:
        if x.shape[a] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {a} to have non-zero size.")
    if x.ndim == 0:
        raise IndexError(f"{name}(): Expected reduction dim to have non-zero size.")


def _acc_dtype(x: np.ndarray) -> Any:
    if x.dtype in LOW_FLOAT_NP:
        return np.float32
    return None


def _expand_grad(g: np.ndarray, shape: tuple[int, ...], axes: tuple[int, ...], keepdim: bool) -> np.ndarray:
    if not keepdim and axes:
        g = np.expand_dims(g, axes)
    return np.broadcast_to(g, shape)


class Sum(Function):
    name = "sum"

    def forward(self, x: np.ndarray, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> np.ndarray:
        axes = _axes(dim, x.ndim)
        self.shape, self.axes, self.keepdim = x.shape, axes, keepdim
        if dtype is None and x.dtype.kind in "biu":
            dtype = np.int64
        acc = _acc_dtype(x) if dtype is None else dtype
        out = np.sum(x, axis=axes, keepdims=keepdim, dtype=acc)
        return np.asarray(out, dtype=dtype if dtype is not None else x.dtype)

    def backward(self, g: np.ndarray) -> np.ndarray:
        return _expand_grad(g, self.shape, self.axes, self.keepdim)


class Mean(Function):
    name = "mean"

    def forward(self, x: np.ndarray, dim: Any = None, keepdim: bool = False) -> np.ndarray:
        axes = _axes(dim, x.ndim)
        self.shape, self.axes, self.keepdim = x.shape, axes, keepdim
        self.count = int(np.prod([x.shape[a] for a in axes])) if axes else 1
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.mean(x, axis=axes, keepdims=keepdim, dtype=_acc_dtype(x))
        return np.asarray(out, dtype=x.dtype)

    def backward(self, g: np.ndarray) -> np.ndarray:
        return _expand_grad(g / max(self.count, 1) if self.count else g * np.nan, self.shape, self.axes, self.keepdim)


class Amax(Function):
    """Max (or min with `largest=False`) over dims; ties share the gradient evenly, like torch.amax."""

    name = "amax"

    def forward(self, x: np.ndarray, dim: Any = None, keepdim: bool = False, largest: bool = True) -> np.ndarray:
        axes = _axes(dim, x.ndim)
        _check_nonempty(x, axes, "amax" if largest else "amin", dim is None)
        out = (np.max if largest else np.min)(x, axis=axes, keepdims=True)
        self.save(x, out)
        self.axes, self.keepdim = axes, keepdim
        return out if keepdim else np.squeeze(out, axis=axes)

    def backward(self, g: np.ndarray) -> np.ndarray:
        x, out = self.saved
        mask = x == out
        count = mask.sum(axis=self.axes, keepdims=True)
        if not self.keepdim and self.axes:
            g = np.expand_dims(g, self.axes)
        return (g * mask / count).astype(g.dtype, copy=False)


class MaxDim(Function):
    """Max/min along one dim returning values; the grad goes to the first index that attains it."""

    name = "max_dim"

    def forward(self, x: np.ndarray, dim: int, keepdim: bool = False, largest: bool = True) -> np.ndarray:
        (d,) = _axes(dim, x.ndim) or (None,)
        if d is None:
            self.idx = np.zeros((), dtype=np.int64)
            self.shape, self.dim, self.keepdim = x.shape, None, keepdim
            return x.copy()
        _check_nonempty(x, (d,), "max" if largest else "min", False)
        idx = (np.argmax if largest else np.argmin)(x, axis=d)
        idx = np.expand_dims(idx, d)
        vals = np.take_along_axis(x, idx, axis=d)
        self.idx, self.shape, self.dim, self.keepdim = idx, x.shape, d, keepdim
        return vals if keepdim else np.squeeze(vals, axis=d)

    def indices(self) -> np.ndarray:
        if self.dim is None:
            return self.idx
        return self.idx if self.keepdim else np.squeeze(self.idx, axis=self.dim)

    def backward(self, g: np.ndarray) -> np.ndarray:
        if self.dim is None:
            return g
        if not self.keepdim:
            g = np.expand_dims(g, self.dim)
        out = np.zeros(self.shape, dtype=g.dtype)
        np.put_along_axis(out, self.idx, g, axis=self.dim)
        return out


class Var(Function):
    name = "var"

    def forward(self, x: np.ndarray, dim: Any = None, correction: float = 1, keepdim: bool = False) -> np.ndarray:
        axes = _axes(dim, x.ndim)
        n = int(np.prod([x.shape[a] for a in axes])) if axes else 1
        w = x.astype(np.float32) if _acc_dtype(x) else x
        mu = w.mean(axis=axes, keepdims=True)
        diff = w - mu
        denom = max(n - correction, 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.sum(diff * diff, axis=axes, keepdims=keepdim) / denom
        self.save(diff, denom)
        self.axes, self.keepdim = axes, keepdim
        return np.asarray(out, dtype=x.dtype)

    def backward(self, g: np.ndarray) -> np.ndarray:
        diff, denom = self.saved
        if not self.keepdim and self.axes:
            g = np.expand_dims(g, self.axes)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (g * 2.0 * diff / denom).astype(g.dtype, copy=False)


class Std(Var):
    """Standard deviation; where it is 0 the gradient is 0 (as PyTorch), not 0/0."""

    name = "std"

    def forward(self, x: np.ndarray, dim: Any = None, correction: float = 1, keepdim: bool = False) -> np.ndarray:
        var = super().forward(x, dim, correction, keepdim)
        out = np.sqrt(var.astype(np.float32) if _acc_dtype(var) else var).astype(x.dtype, copy=False)
        self.out = out
        return out

    def backward(self, g: np.ndarray) -> np.ndarray:
        out = self.out if self.keepdim or not self.axes else np.expand_dims(self.out, self.axes)
        with np.errstate(invalid="ignore", divide="ignore"):
            scaled = np.where(out == 0, np.zeros((), g.dtype), g / (2.0 * out)).astype(g.dtype, copy=False)
        return super().backward(scaled if self.keepdim or not self.axes else np.squeeze(scaled, self.axes))


class Norm(Function):
    """The 2-norm over dims; where it is 0 the gradient is 0 (as PyTorch)."""

    name = "norm"

    def forward(self, x: np.ndarray, dim: Any = None, keepdim: bool = False) -> np.ndarray:
        axes = _axes(dim, x.ndim)
        w = x.astype(np.float32) if _acc_dtype(x) else x
        out = np.sqrt(np.sum(w * w, axis=axes, keepdims=True))
        self.save(x, out)
        self.axes, self.keepdim = axes, keepdim
        res = out if keepdim else np.squeeze(out, axis=axes)
        return np.asarray(res, dtype=x.dtype)

    def backward(self, g: np.ndarray) -> np.ndarray:
        x, out = self.saved
        if not self.keepdim and self.axes:
            g = np.expand_dims(g, self.axes)
        with np.errstate(invalid="ignore", divide="ignore"):
            res = np.where(out == 0, 0.0, g * x / out)
        return res.astype(g.dtype, copy=False)


class LogSumExp(Function):
    name = "logsumexp"

    def forward(self, x: np.ndarray, dim: Any = None, keepdim: bool = False) -> np.ndarray:
        axes = _axes(dim, x.ndim)
        w = x.astype(np.float32) if _acc_dtype(x) else x
        m = np.max(w, axis=axes, keepdims=True) if w.size else np.zeros((1,) * w.ndim, w.dtype)
        m = np.where(np.isfinite(m), m, 0)
        lse = np.log(np.sum(np.exp(w - m), axis=axes, keepdims=True)) + m
        self.save(w, lse)
        self.axes, self.keepdim = axes, keepdim
        out = lse if keepdim else np.squeeze(lse, axis=axes)
        return np.asarray(out, dtype=x.dtype)

    def backward(self, g: np.ndarray) -> np.ndarray:
        w, lse = self.saved
        if not self.keepdim and self.axes:
            g = np.expand_dims(g, self.axes)
        return (g * np.exp(w - lse)).astype(g.dtype, copy=False)


class ArgMax(Function):
    name = "argmax"
    differentiable = False

    def forward(self, x: np.ndarray, dim: Any = None, keepdim: bool = False, largest: bool = True) -> np.ndarray:
        f = np.argmax if largest else np.argmin
        name = "argmax" if largest else "argmin"
        if dim is None:
            _check_nonempty(x, (), name, True)
            out = np.asarray(f(x), dtype=np.int64)
            return out.reshape((1,) * x.ndim) if keepdim else out
        (d,) = _axes(dim, x.ndim) or (None,)
        if d is None:
            return np.zeros((), dtype=np.int64)
        _check_nonempty(x, (d,), name, False)
        if x.size == 0:
            shape = list(x.shape)
            shape[d] = 1
            out = np.zeros(shape, dtype=np.int64)
            return out if keepdim else np.squeeze(out, axis=d)
        return np.asarray(f(x, axis=d, keepdims=keepdim), dtype=np.int64)


class Prod(Function):
    name = "prod"

    def forward(self, x: np.ndarray, dim: Any = None, keepdim: bool = False) -> np.ndarray:
        axes = _axes(dim, x.ndim)
        out = np.prod(x, axis=axes, keepdims=True, dtype=np.int64 if x.dtype.kind in "biu" else _acc_dtype(x))
        out = out.astype(np.int64 if x.dtype.kind in "biu" else x.dtype, copy=False)
        self.save(x, out)
        self.axes, self.keepdim = axes, keepdim
        return out if keepdim else np.squeeze(out, axis=axes)

    def backward(self, g: np.ndarray) -> np.ndarray:
        x, _ = self.saved
        if not self.keepdim and self.axes:
            g = np.expand_dims(g, self.axes)
        # product of all other elements, exact also where x has zeros
        moved = np.moveaxis(x, self.axes, tuple(range(-len(self.axes), 0))) if self.axes else x
        flat = moved.reshape(moved.shape[: moved.ndim - len(self.axes)] + (-1,))
        left = np.cumprod(np.concatenate([np.ones_like(flat[..., :1]), flat[..., :-1]], axis=-1), axis=-1)
        right = np.flip(np.cumprod(np.concatenate([np.ones_like(flat[..., :1]), np.flip(flat, -1)[..., :-1]],
                                                  axis=-1), axis=-1), -1)
        others = (left * right).reshape(moved.shape)
        others = np.moveaxis(others, tuple(range(-len(self.axes), 0)), self.axes) if self.axes else others
        return g * others


class CumSum(Function):
    name = "cumsum"

    def forward(self, x: np.ndarray, dim: int) -> np.ndarray:
        (self.d,) = _axes(dim, x.ndim) or (0,)
        if x.ndim == 0:
            return x.copy()
        return np.cumsum(x, axis=self.d, dtype=np.int64 if x.dtype.kind in "biu" else None).astype(
            np.int64 if x.dtype.kind in "biu" else x.dtype, copy=False)

    def backward(self, g: np.ndarray) -> np.ndarray:
        if g.ndim == 0:
            return g
        return np.flip(np.cumsum(np.flip(g, self.d), axis=self.d), self.d)
