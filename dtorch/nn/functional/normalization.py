"""Normalization functions of `dtorch.nn.functional`: batch_norm, layer_norm, group_norm, rms_norm, normalize.

Under `dt.autocast` they run in float32 (reduced-precision inputs are cast up).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ... import _functions as _F
from ..._prims.normalization import BatchNorm, GroupNorm, LayerNorm
from ...amp.autocast_mode import autocast_args
from ...tensor import Tensor

__all__ = ["batch_norm", "group_norm", "layer_norm", "normalize", "rms_norm"]


def _float_input(x: Any, name: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(x).__name__}")
    if not x.is_floating_point():
        raise RuntimeError(f"{name}(): expected a floating point input, but got dtype {x.dtype}; convert it with "
                           f".float() first")
    return x


def _check_vec(t: Tensor | None, what: str, c: int) -> None:
    if t is None:
        return
    if not isinstance(t, Tensor):
        raise TypeError(f"batch_norm(): argument '{what}' must be Tensor or None, not {type(t).__name__}")
    if t.numel() != c:
        raise RuntimeError(f"{what} should contain {c} elements not {t.numel()}")


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize (N, C, *) per channel. Training uses batch statistics and, when running buffers are given,
    updates them in place (unbiased variance, `momentum` as the new-value weight); eval uses the buffers."""
    x = _float_input(input, "batch_norm")
    if x.ndim < 2:
        raise RuntimeError(f"batch_norm(): expected an input of shape (N, C) or (N, C, *), got a {x.ndim}-D input "
                           f"of shape {list(x.shape)}")
    c = x.shape[1]
    for what, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        _check_vec(t, what, c)
    if training:
        size = x.shape[0] * int(np.prod(x.shape[2:]))
        if size == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {x.shape}")
    elif running_mean is None or running_var is None:
        raise RuntimeError("running_mean must be defined in evaluation mode: pass running statistics, or use "
                           "training=True to normalize with batch statistics")
    x, weight, bias = autocast_args("fp32", x, weight, bias)
    return BatchNorm.apply(x, weight, bias, running_mean, running_var, training=bool(training),
                           momentum=float(momentum), eps=float(eps))


def _norm_shape(normalized_shape: Any) -> tuple[int, ...]:
    if isinstance(normalized_shape, (int, np.integer)):
        return (int(normalized_shape),)
    return tuple(int(s) for s in normalized_shape)


def layer_norm(input: Tensor, normalized_shape: Sequence[int] | int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize over the trailing dims given by `normalized_shape` (biased variance), then weight and bias."""
    x = _float_input(input, "layer_norm")
    shape = _norm_shape(normalized_shape)
    k = len(shape)
    if k == 0 or x.ndim < k or tuple(x.shape[x.ndim - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape [*, "
                           f"{', '.join(map(str, shape))}], but got input of size{list(x.shape)}")
    for what, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(f"Expected {what} to be of same shape as normalized_shape, but got {what} of shape "
                               f"{list(t.shape)} and normalized_shape = {list(shape)}")
    x, weight, bias = autocast_args("fp32", x, weight, bias)
    return LayerNorm.apply(x, weight, bias, ndim=k, eps=float(eps))


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize (N, C, *) over `num_groups` groups of channels, then a per-channel weight and bias."""
    x = _float_input(input, "group_norm")
    if x.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {x.ndim}")
    c = x.shape[1]
    if num_groups <= 0 or c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(x.shape)} and num_groups={num_groups}")
    for what, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.shape[0] != c):
            raise RuntimeError(f"Expected {what} to be a vector of size equal to the number of channels in input, "
                               f"but got {what} of shape {list(t.shape)} and input of shape {list(x.shape)}")
    x, weight, bias = autocast_args("fp32", x, weight, bias)
    return GroupNorm.apply(x, weight, bias, num_groups=int(num_groups), eps=float(eps))


def rms_norm(input: Tensor, normalized_shape: Sequence[int] | int, weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """x / sqrt(mean(x^2 over the trailing dims) + eps) * weight; eps defaults to the dtype's machine epsilon."""
    x = _float_input(input, "rms_norm")
    shape = _norm_shape(normalized_shape)
    k = len(shape)
    if k == 0 or x.ndim < k or tuple(x.shape[x.ndim - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape [*, "
                           f"{', '.join(map(str, shape))}], but got input of size{list(x.shape)}")
    (x,) = autocast_args("fp32", x)
    if eps is None:
        eps = float(np.finfo(np.float32 if x._data.dtype.itemsize < 4 else x._data.dtype).eps)
    dims = tuple(range(x.ndim - k, x.ndim))
    out = _F.mul(x, _F.rsqrt(_F.add(_F.mean(_F.mul(x, x), dim=dims, keepdim=True), eps)))
    return out if weight is None else _F.mul(out, weight)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Tensor | None = None) -> Tensor:
    """input / max(||input||_p along dim, eps)."""
    x = _float_input(input, "normalize")
    if out is not None:
        raise NotImplementedError("normalize(out=...) is not supported; use the returned tensor")
    if isinstance(p, (int, float)) and 0 < p < float("inf"):
        # max(||x||_p, eps) == max(sum |x|^p, eps^p) ** (1/p); clamping before the root gives a zero vector a
        # finite gradient (d/dx x / eps) instead of NaN. eps^p is kept above the dtype's smallest normal number.
        floor = max(float(eps) ** p, float(np.finfo(np.float32 if x._data.dtype.itemsize < 4 else
                                                    x._data.dtype).tiny))
        powered = _F.mul(x, x) if p == 2 else _F.pow(_F.abs(x), float(p))
        total = _F.clamp(_F.sum(powered, dim=dim, keepdim=True), min=floor)
        denom = _F.sqrt(total) if p == 2 else _F.pow(total, 1.0 / p)
    else:
        denom = _F.clamp(_F.norm(x, p, dim=dim, keepdim=True), min=eps)
    return _F.div(x, denom)
