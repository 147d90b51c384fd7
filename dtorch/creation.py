"""Tensor creation: `tensor`, `zeros`, `ones`, `full`, `arange`, `linspace`, random tensors and `*_like`."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from . import dtypes as _dt
from .device import check_device
from .random import rng
from .tensor import Size, Tensor


def _finish(arr: np.ndarray, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    check_device(device)
    if dtype is not None:
        arr = arr.astype(_dt.as_dtype(dtype).np, copy=False)
    t = Tensor._wrap(arr)
    if requires_grad:
        t.requires_grad = True
    return t


def _size(size: Sequence[Any]) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        size = tuple(size[0])
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = s.item()
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"size must be a sequence of ints, got {type(s).__name__} in {tuple(size)}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
        out.append(int(s))
    return tuple(out)


def _infer(data: Any) -> np.ndarray:
    if isinstance(data, Tensor):
        return np.array(data._data, copy=True)
    if isinstance(data, np.ndarray):
        _dt.from_numpy_dtype(data.dtype)
        return np.array(data, copy=True)
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in data):
        data = [x.tolist() if isinstance(x, Tensor) else x for x in data]
    try:
        arr = np.array(data)
    except ValueError as e:
        raise ValueError(f"could not build a tensor from this data (ragged nested sequences?): {e}") from None
    if arr.dtype == object or arr.dtype.kind in "USV":
        raise TypeError(f"could not infer a dtype for {type(data).__name__} data; tensors hold numbers or bools")
    if arr.dtype.kind == "f":
        arr = arr.astype(_dt.get_default_dtype().np)
    elif arr.dtype.kind in "iu":
        arr = arr.astype(np.int64)
    elif arr.dtype.kind == "c":
        raise TypeError("complex tensors are not supported by dtorch")
    return arr


def tensor(data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of `data` (nested lists, scalars, NumPy arrays or tensors)."""
    return _finish(_infer(data), dtype, device, requires_grad)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    if isinstance(data, Tensor):
        check_device(device)
        return data if dtype is None else data.to(dtype)
    if isinstance(data, np.ndarray):
        _dt.from_numpy_dtype(data.dtype)
        return _finish(data, dtype, device, False)
    return tensor(data, dtype=dtype, device=device)


asarray = as_tensor


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor sharing memory with `ndarray` (same dtype, same buffer)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    _dt.from_numpy_dtype(ndarray.dtype)
    return Tensor._wrap(ndarray)


def _dtype_or_default(dtype: Any) -> np.dtype:
    return (_dt.as_dtype(dtype) if dtype is not None else _dt.get_default_dtype()).np


def zeros(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False, out: Any = None) -> Tensor:
    return _finish(np.zeros(_size(size), _dtype_or_default(dtype)), None, device, requires_grad)


def ones(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    return _finish(np.ones(_size(size), _dtype_or_default(dtype)), None, device, requires_grad)


def empty(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:
    return _finish(np.empty(_size(size), _dtype_or_default(dtype)), None, device, requires_grad)


def full(size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    d = _dt.as_dtype(dtype) if dtype is not None else _dt.scalar_dtype(fill_value)
    sz = _size((size,) if isinstance(size, (int, np.integer)) else tuple(size))
    return _finish(np.full(sz, fill_value, dtype=d.np), None, device, requires_grad)


def eye(n: int, m: int | None = None, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    return _finish(np.eye(n, m, dtype=_dtype_or_default(dtype)), None, device, requires_grad)


def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    start, end, step = vals
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"arange: upper bound and larger bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    is_int = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in vals)
    d = _dt.as_dtype(dtype) if dtype is not None else (_dt.int64 if is_int else _dt.get_default_dtype())
    n = max(int(math.ceil((end - start) / step)), 0)
    arr = (start + np.arange(n, dtype=np.float64) * step) if not is_int else np.arange(start, end, step, np.int64)
    return _finish(arr.astype(d.np), None, device, requires_grad)


def linspace(start: Any, end: Any, steps: int, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    if steps < 0:
        raise RuntimeError(f"linspace: number of steps must be non-negative, got {steps}")
    arr = np.linspace(float(start), float(end), int(steps), dtype=np.float64)
    return _finish(arr.astype(_dtype_or_default(dtype)), None, device, requires_grad)


def logspace(start: Any, end: Any, steps: int, base: float = 10.0, *, dtype: Any = None, device: Any = None) -> Tensor:
    arr = np.logspace(float(start), float(end), int(steps), base=base)
    return _finish(arr.astype(_dtype_or_default(dtype)), None, device, False)


def _float_dtype(dtype: Any, name: str) -> np.dtype:
    d = _dtype_or_default(dtype)
    if d.kind != "f" and d.name != "bfloat16":
        raise RuntimeError(f"{name} expects a floating point dtype, got {_dt.as_dtype(d)}")
    return d


def randn(*size: Any, generator: Any = None, dtype: Any = None, device: Any = None,
          requires_grad: bool = False) -> Tensor:
    d = _float_dtype(dtype, "randn")
    arr = rng(generator).standard_normal(_size(size), dtype=np.float32 if d != np.float64 else np.float64)
    return _finish(arr.astype(d, copy=False), None, device, requires_grad)


def rand(*size: Any, generator: Any = None, dtype: Any = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    d = _float_dtype(dtype, "rand")
    arr = rng(generator).random(_size(size), dtype=np.float32 if d != np.float64 else np.float64)
    return _finish(arr.astype(d, copy=False), None, device, requires_grad)


def randint(low: int, high: Any = None, size: Any = None, *, generator: Any = None, dtype: Any = None,
            device: Any = None, requires_grad: bool = False) -> Tensor:
    if size is None:
        if high is None or not isinstance(high, (tuple, list, Size)):
            raise TypeError("randint() missing required argument 'size' (a tuple of ints)")
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    arr = rng(generator).integers(low, high, size=_size((size,) if isinstance(size, int) else tuple(size)))
    d = _dt.as_dtype(dtype).np if dtype is not None else np.int64
    return _finish(arr.astype(d), None, device, requires_grad)


def randperm(n: int, *, generator: Any = None, dtype: Any = None, device: Any = None) -> Tensor:
    if n < 0:
        raise RuntimeError(f"randperm: n must be non-negative, got {n}")
    arr = rng(generator).permutation(n).astype(_dt.as_dtype(dtype).np if dtype is not None else np.int64)
    return _finish(arr, None, device, False)


def normal(mean: Any, std: Any, size: Any = None, *, generator: Any = None) -> Tensor:
    m = mean._data if isinstance(mean, Tensor) else mean
    s = std._data if isinstance(std, Tensor) else std
    shape = _size(tuple(size)) if size is not None else np.broadcast_shapes(np.shape(m), np.shape(s))
    arr = rng(generator).normal(m, s, size=shape)
    return Tensor._wrap(arr.astype(_dt.get_default_dtype().np if not isinstance(mean, Tensor) else mean._data.dtype))


def bernoulli(input: Tensor, p: Any = None, *, generator: Any = None) -> Tensor:  # noqa: A002
    probs = input._data if p is None else np.full(input._data.shape, p)
    return Tensor._wrap((rng(generator).random(input._data.shape) < probs).astype(input._data.dtype))


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *, generator: Any = None) -> Tensor:  # noqa: A002
    probs = input._data.astype(np.float64)
    r = rng(generator)
    rows = probs.reshape(-1, probs.shape[-1])
    out = [r.choice(rows.shape[1], size=num_samples, replace=replacement, p=row / row.sum()) for row in rows]
    res = np.asarray(out, dtype=np.int64)
    return Tensor._wrap(res.reshape(probs.shape[:-1] + (num_samples,)))


def _like(fn: Any) -> Any:
    def like(input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False,
             **kw: Any) -> Tensor:
        return fn(input.shape, dtype=dtype or input.dtype, device=device, requires_grad=requires_grad, **kw)

    return like


zeros_like = _like(zeros)
ones_like = _like(ones)
empty_like = _like(empty)
rand_like = _like(rand)
randn_like = _like(randn)


def full_like(input: Tensor, fill_value: Any, *, dtype: Any = None, device: Any = None,  # noqa: A002
              requires_grad: bool = False) -> Tensor:
    return full(input.shape, fill_value, dtype=dtype or input.dtype, device=device, requires_grad=requires_grad)


def randint_like(input: Tensor, low: int, high: int | None = None, *, dtype: Any = None,  # noqa: A002
                 generator: Any = None) -> Tensor:
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(input.shape), dtype=dtype or input.dtype, generator=generator)
