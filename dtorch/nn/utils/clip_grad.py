"""Gradient clipping: `clip_grad_norm_` (rescale all gradients so their joint norm is at most max_norm)
and `clip_grad_value_` (clamp each gradient element). Both work in place on `p.grad`, outside autograd.
"""

from __future__ import annotations

import math
import types
import warnings
from collections.abc import Iterable
from typing import Any

import numpy as np

from ...tensor import Tensor

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]


def _as_list(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        return [parameters]
    is_generator = isinstance(parameters, types.GeneratorType)
    params = list(parameters)
    if is_generator and not params:
        warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", UserWarning,
                      stacklevel=3)
    return params


def _norm_of(arr: np.ndarray, p: float) -> float:
    """The p-norm of all elements of `arr`, accumulated in float64."""
    a = np.abs(arr.astype(np.float64, copy=False)).ravel()
    if a.size == 0:
        return 0.0
    if p == math.inf:
        return float(a.max())
    if p == -math.inf:
        return float(a.min())
    if p == 0:
        return float(np.count_nonzero(a))
    if p == 1:
        return float(a.sum())
    if p == 2:
        return float(np.sqrt(np.dot(a, a)))
    return float(np.sum(a ** p) ** (1.0 / p))


def get_total_norm(tensors: Tensor | Iterable[Tensor], norm_type: float | str = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """The norm of the norms of `tensors` (as if all were concatenated into one vector)."""
    ts = [tensors] if isinstance(tensors, Tensor) else [t for t in tensors if t is not None]
    p = _norm_type(norm_type)
    if not ts:
        return Tensor._wrap(np.array(0.0, dtype=np.float32))
    dtype = np.result_type(*(t._data.dtype for t in ts))
    if dtype.kind != "f" and dtype.name != "bfloat16":
        dtype = np.dtype(np.float32)
    total = _norm_of(np.array([_norm_of(t._data, p) for t in ts]), p)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                           f"so it cannot be clipped. To disable this error and scale the gradients by the "
                           f"non-finite norm anyway, set `error_if_nonfinite=False`")
    with np.errstate(over="ignore"):
        return Tensor._wrap(np.array(total, dtype=dtype))


def _norm_type(norm_type: float | str) -> float:
    try:
        return float(norm_type)
    except (TypeError, ValueError):
        raise ValueError(f"norm_type must be a number or 'inf', got {norm_type!r}") from None


def clip_grads_with_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, total_norm: Tensor | float,
                          foreach: bool | None = None) -> None:
    """Scale every gradient by min(1, max_norm / (total_norm + 1e-6)), in place."""
    params = _as_list(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return
    tn = total_norm._data if isinstance(total_norm, Tensor) else np.asarray(total_norm, dtype=np.float32)
    one = tn.dtype.type
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # computed in the norm's dtype, as PyTorch does, then applied to every gradient
        coef = np.minimum(one(float(max_norm)) / (tn + one(1e-6)), one(1.0))
        for g in grads:
            arr = g._data
            if not arr.flags.writeable:
                arr = g._data = arr.copy()
            np.multiply(arr, coef.astype(arr.dtype), out=arr, casting="unsafe")


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float | str = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Rescale the gradients of `parameters` in place so that their total `norm_type`-norm is at most
    `max_norm`. Returns the total norm before clipping, as a 0-d Tensor. `foreach` is accepted for
    PyTorch compatibility and has no effect."""
    params = _as_list(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(params, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float | str = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Deprecated spelling of `clip_grad_norm_`."""
    warnings.warn("`dtorch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`dtorch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient element of `parameters` into [-clip_value, clip_value], in place."""
    value = float(clip_value)
    for p in _as_list(parameters):
        g: Any = p.grad
        if g is None:
            continue
        if not g._data.flags.writeable:
            g._data = g._data.copy()
        np.clip(g._data, -value, value, out=g._data, casting="unsafe")
