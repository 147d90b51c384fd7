"""Functional pooling: max/avg/adaptive pooling in 2-D, and their 1-D forms (run as 2-D over height 1).

Argument checking and PyTorch's argument conventions live here; the arithmetic and the gradients live
in the primitives of `dtorch/_prims/pooling.py`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import _functions as F
from ..._prims import pooling as P
from ...tensor import Tensor

__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d",
           "avg_pool1d", "avg_pool2d", "max_pool1d", "max_pool2d"]


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _pair(value: Any, what: str, op: str, n: int = 2) -> tuple[int, ...]:
    if _is_int(value):
        return (int(value),) * n
    if isinstance(value, (tuple, list)) and len(value) in (1, n) and all(_is_int(v) for v in value):
        return tuple(int(v) for v in value) * (n if len(value) == 1 else 1)
    raise RuntimeError(f"{op}: {what} must either be a single int, or a tuple of {n} ints, got {value!r}")


def _check_input(x: Any, op: str, nd: int) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")
    if x.ndim not in (nd + 1, nd + 2) or any(s == 0 for s in x.shape[-nd - 1:]):
        raise RuntimeError(f"{op}: Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with optional 0 dim batch size "
                           f"for input (non-zero channels and spatial sizes), but got: {list(x.shape)}")


def _window_args(x: Tensor, op: str, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
                 ceil_mode: bool) -> tuple[tuple[int, ...], ...]:
    k = _pair(kernel_size, "kernel_size", op)
    s = k if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else _pair(stride, "stride", op)
    p = _pair(padding, "padding", op)
    d = _pair(dilation, "dilation", op)
    if any(v <= 0 for v in k):
        raise RuntimeError(f"{op}: kernel size should be greater than zero, but got kernel_size={list(k)}")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"{op}: stride should be greater than zero, but got stride={list(s)}")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"{op}: dilation should be greater than zero, but got dilation={list(d)}")
    if any(v < 0 for v in p):
        raise RuntimeError(f"{op}: pad must be non-negative, but got pad={list(p)}")
    for kk, pp, dd in zip(k, p, d):
        if pp > (dd * (kk - 1) + 1) // 2:
            raise RuntimeError(f"{op}: pad should be at most half of effective kernel size, but got pad={pp}, "
                               f"kernel_size={kk} and dilation={dd}")
    c, h, w = x.shape[-3:]
    oh = P.pool_out_size(h, k[0], s[0], p[0], d[0], ceil_mode)
    ow = P.pool_out_size(w, k[1], s[1], p[1], d[1], ceil_mode)
    if oh < 1 or ow < 1:
        raise RuntimeError(f"{op}: Given input size: ({c}x{h}x{w}). Calculated output size: ({c}x{oh}x{ow}). "
                           f"Output size is too small; use a smaller kernel or more padding")
    return k, s, p, d


def _batched(x: Tensor, nd: int) -> tuple[Tensor, bool]:
    unbatched = x.ndim == nd + 1
    return (F.unsqueeze(x, 0) if unbatched else x), unbatched


def _unbatch(t: Tensor, unbatched: bool) -> Tensor:
    return F.squeeze(t, 0) if unbatched else t


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """2-D max pooling over (N, C, H, W) or (C, H, W); with return_indices also the flat argmax positions."""
    _check_input(input, "max_pool2d", 2)
    return _max_pool(input, "max_pool2d", kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _max_pool(input: Tensor, op: str, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
              ceil_mode: bool, return_indices: bool) -> Any:
    k, s, p, d = _window_args(input, op, kernel_size, stride, padding, dilation, ceil_mode)
    if input._data.dtype == np.bool_:
        raise RuntimeError(f"{op}: bool tensors are not supported; convert the input with .float() first")
    x, unbatched = _batched(input, 2)
    attrs = {"kernel_size": k, "stride": s, "padding": p, "dilation": d, "ceil_mode": bool(ceil_mode)}
    out = _unbatch(P.MaxPool2d.apply(x, **attrs), unbatched)
    if return_indices:
        return out, _unbatch(P.MaxPool2dIndices.apply(x, **attrs), unbatched)
    return out


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """2-D average pooling over (N, C, H, W) or (C, H, W), as torch.nn.functional.avg_pool2d."""
    _check_input(input, "avg_pool2d", 2)
    return _avg_pool(input, "avg_pool2d", kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def _avg_pool(input: Tensor, op: str, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool,
              count_include_pad: bool, divisor_override: int | None) -> Tensor:
    k, s, p, _ = _window_args(input, op, kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None:
        if not _is_int(divisor_override):
            raise TypeError(f"{op}: divisor_override must be an int or None, got {divisor_override!r}")
        if divisor_override == 0:
            raise RuntimeError(f"{op}: divisor must be not zero")
    if input._data.dtype == np.bool_:
        raise RuntimeError(f"{op}: bool tensors are not supported; convert the input with .float() first")
    x, unbatched = _batched(input, 2)
    out = P.AvgPool2d.apply(x, kernel_size=k, stride=s, padding=p, ceil_mode=bool(ceil_mode),
                            count_include_pad=bool(count_include_pad),
                            divisor_override=None if divisor_override is None else int(divisor_override))
    return _unbatch(out, unbatched)


def _adaptive_size(x: Tensor, output_size: Any, op: str, nd: int = 2) -> tuple[int, int]:
    if _is_int(output_size) or output_size is None:
        size = (output_size,) * nd
    elif isinstance(output_size, (tuple, list)) and len(output_size) == nd:
        size = tuple(output_size)
    else:
        raise RuntimeError(f"{op}: output_size must be an int or a tuple of {nd} ints (None keeps that input size), "
                           f"got {output_size!r}")
    full = x.shape[-nd:]
    out = tuple(int(full[i]) if v is None else v for i, v in enumerate(size))
    if not all(_is_int(v) for v in out):
        raise TypeError(f"{op}: output_size entries must be ints or None, got {output_size!r}")
    if any(v < 0 for v in out):
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 but received "
                           f"{list(out)}")
    return (1, out[0]) if nd == 1 else out  # type: ignore[return-value]


def _check_adaptive(x: Any, op: str, nd: int) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}(): Expected {nd + 1}D or {nd + 2}D tensor, but got {list(x.shape)}")
    for i in range(x.ndim - nd, x.ndim):
        if x.shape[i] == 0:
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch dimensions, but input has "
                               f"sizes {list(x.shape)} with dimension {i} being empty")
    if not x.is_floating_point():
        raise NotImplementedError(f'"{op}" not implemented for {x.dtype}; convert the input with .float() first')


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling to a fixed (oh, ow) output with PyTorch's adaptive windows."""
    _check_adaptive(input, "adaptive_avg_pool2d", 2)
    size = _adaptive_size(input, output_size, "adaptive_avg_pool2d")
    x, unbatched = _batched(input, 2)
    return _unbatch(P.AdaptiveAvgPool2d.apply(x, output_size=size), unbatched)


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max pooling to a fixed (oh, ow) output; with return_indices also the flat argmax positions."""
    _check_adaptive(input, "adaptive_max_pool2d", 2)
    size = _adaptive_size(input, output_size, "adaptive_max_pool2d")
    x, unbatched = _batched(input, 2)
    out = _unbatch(P.AdaptiveMaxPool2d.apply(x, output_size=size), unbatched)
    if return_indices:
        return out, _unbatch(P.AdaptiveMaxPool2dIndices.apply(x, output_size=size), unbatched)
    return out


# ----------------------------------------------------------------------------- 1-D forms


def _as_2d(input: Tensor, op: str) -> tuple[Tensor, bool]:
    _check_input(input, op, 1)
    x, unbatched = _batched(input, 1)
    return F.unsqueeze(x, 2), unbatched


def _from_2d(t: Tensor, unbatched: bool) -> Tensor:
    return _unbatch(F.squeeze(t, 2), unbatched)


def _one(value: Any, what: str, op: str) -> int:
    if value is None:
        return None  # type: ignore[return-value]
    if isinstance(value, (tuple, list)) and len(value) == 0:
        return None  # type: ignore[return-value]
    return _pair(value, what, op, 1)[0]


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """1-D max pooling over (N, C, L) or (C, L)."""
    k, s = _one(kernel_size, "kernel_size", "max_pool1d"), _one(stride, "stride", "max_pool1d")
    p, d = _one(padding, "padding", "max_pool1d"), _one(dilation, "dilation", "max_pool1d")
    x, unbatched = _as_2d(input, "max_pool1d")
    res = _max_pool(x, "max_pool1d", (1, k), None if s is None else (1, s), (0, p), (1, d), ceil_mode,
                    return_indices)
    if return_indices:
        return _from_2d(res[0], unbatched), _from_2d(res[1], unbatched)
    return _from_2d(res, unbatched)


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """1-D average pooling over (N, C, L) or (C, L)."""
    k, s = _one(kernel_size, "kernel_size", "avg_pool1d"), _one(stride, "stride", "avg_pool1d")
    p = _one(padding, "padding", "avg_pool1d")
    x, unbatched = _as_2d(input, "avg_pool1d")
    out = _avg_pool(x, "avg_pool1d", (1, k), None if s is None else (1, s), (0, p), ceil_mode, count_include_pad,
                    None)
    return _from_2d(out, unbatched)


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling of (N, C, L) or (C, L) to a fixed length."""
    _check_adaptive(input, "adaptive_avg_pool1d", 1)
    size = _adaptive_size(input, output_size, "adaptive_avg_pool1d", 1)
    x, unbatched = _batched(input, 1)
    return _from_2d(P.AdaptiveAvgPool2d.apply(F.unsqueeze(x, 2), output_size=size), unbatched)


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max pooling of (N, C, L) or (C, L) to a fixed length; with return_indices also the argmax positions."""
    _check_adaptive(input, "adaptive_max_pool1d", 1)
    size = _adaptive_size(input, output_size, "adaptive_max_pool1d", 1)
    x, unbatched = _batched(input, 1)
    x4 = F.unsqueeze(x, 2)
    out = _from_2d(P.AdaptiveMaxPool2d.apply(x4, output_size=size), unbatched)
    if return_indices:
        return out, _from_2d(P.AdaptiveMaxPool2dIndices.apply(x4, output_size=size), unbatched)
    return out
