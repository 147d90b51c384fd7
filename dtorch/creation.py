"""Tensor creation: `tensor`, `zeros`, `ones`, `full`, `arange`, `linspace`, random tensors and `*_like`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

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
    if isinstance(data, (np.ndarray, np.generic)):
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
    arr = _infer(data)
    if dtype is not None and not isinstance(data, (Tensor, np.ndarray, np.generic)):
        d = _dt.as_dtype(dtype)
        if d.np.kind in "iu" and arr.dtype.kind in "iu" and arr.size:
            info = np.iinfo(d.np)
            if arr.min() < info.min or arr.max() > info.max:
                raise RuntimeError(f"value cannot be converted to type {d.name} without overflow")
    return _finish(arr, dtype, device, requires_grad)


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


def _num(v: Any, name: str) -> Any:
    if isinstance(v, Tensor):
        v = v.item()
    if not isinstance(v, (int, float, np.number)) or isinstance(v, (bool, np.bool_)):
        raise TypeError(f"arange(): argument '{name}' must be a Number, not {type(v).__name__}")
    return v


def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """Values from `start` up to (not including) `end` in steps of `step`, computed as PyTorch does."""
    if end is None:
        start, end = 0, start
    start, end, step = _num(start, "start"), _num(end, "end"), _num(step, "step")
    is_int = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
    d = _dt.as_dtype(dtype) if dtype is not None else (_dt.int64 if is_int else _dt.get_default_dtype())
    if d is _dt.bool_:
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
    for v in (start, end):
        if not math.isfinite(v):
            raise RuntimeError(f"unsupported range: {start} -> {end}")
    if step == 0:
        raise RuntimeError("step must be nonzero")
    # like PyTorch: bounds and step are first converted to the accumulation type of the result dtype
    if not d.is_floating_point:
        xs, xe, xst = int(start), int(end), int(step)
        if xst == 0:
            raise RuntimeError(f"step must be nonzero (step {step} is 0 once converted to {d})")
    else:
        xs, xe, xst = float(start), float(end), float(step)
    if not ((xst > 0 and xe >= xs) or (xst < 0 and xe <= xs)):
        raise RuntimeError(f"upper bound and lower bound inconsistent with step sign (start={start}, end={end}, "
                           f"step={step})")
    if d is _dt.int64:
        sgn = (xst > 0) - (xst < 0)
        num = xe - xs + xst - sgn
        n = abs(num) // abs(xst) * (1 if (num >= 0) == (xst > 0) else -1)
    else:
        n = math.ceil((float(end) - float(start)) / float(step))
    n = max(int(n), 0)
    if d.is_floating_point:
        acc = np.float64 if d.itemsize >= 4 else np.float32
        arr = (acc(xs) + np.arange(n, dtype=acc) * acc(xst)).astype(d.np)
    else:
        arr = (xs + np.arange(n, dtype=np.int64) * xst).astype(d.np)
    return _finish(arr, None, device, requires_grad)


def linspace(start: Any, end: Any, steps: int, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """`steps` values evenly spaced from `start` to `end` inclusive."""
    if isinstance(start, Tensor):
        start = start.item()
    if isinstance(end, Tensor):
        end = end.item()
    if not isinstance(steps, (int, np.integer)) or isinstance(steps, bool):
        raise TypeError(f"linspace(): argument 'steps' must be int, not {type(steps).__name__}")
    if steps < 0:
        raise RuntimeError(f"number of steps must be non-negative, got {steps}")
    d = _dt.as_dtype(dtype) if dtype is not None else _dt.get_default_dtype()
    if d is _dt.bool_:
        raise NotImplementedError("\"linspace_cpu\" not implemented for 'Bool'")
    if d.is_floating_point:
        arr = np.linspace(float(start), float(end), int(steps), dtype=np.float64)
    else:
        # PyTorch's integer kernel: the first half counts up from start, the second half down from end
        s0, e0 = int(start), int(end)
        step = (e0 - s0) / (steps - 1) if steps > 1 else 0.0
        e0 = s0 if steps == 1 else e0
        idx = np.arange(steps)
        half = steps // 2
        arr = np.where(idx < half, s0 + step * idx, e0 - step * (steps - idx - 1))
        arr = np.trunc(arr)
    return _finish(arr.astype(d.np), None, device, requires_grad)


def logspace(start: Any, end: Any, steps: int, base: float = 10.0, *, dtype: Any = None, device: Any = None) -> Tensor:
    arr = np.logspace(float(start), float(end), int(steps), base=base)
    return _finish(arr.astype(_dtype_or_default(dtype)), None, device, False)


def _float_dtype(dtype: Any, name: str) -> np.dtype:
    d = _dtype_or_default(dtype)
    if d.kind != "f" and d is not _dt.BF16_NP:
        raise NotImplementedError(f"{name}() is only implemented for floating point dtypes, got "
                                  f"{_dt.as_dtype(d)}; pass dtype=dtorch.float32 (or use randint)")
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


def bernoulli(input: Tensor, p: Any = None, *, generator: Any = None) -> Tensor:
    probs = input._data if p is None else np.full(input._data.shape, p)
    return Tensor._wrap((rng(generator).random(input._data.shape) < probs).astype(input._data.dtype))


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *, generator: Any = None) -> Tensor:
    probs = input._data.astype(np.float64)
    r = rng(generator)
    rows = probs.reshape(-1, probs.shape[-1])
    out = [r.choice(rows.shape[1], size=num_samples, replace=replacement, p=row / row.sum()) for row in rows]
    res = np.asarray(out, dtype=np.int64)
    return Tensor._wrap(res.reshape(probs.shape[:-1] + (num_samples,)))


def _like(fn: Any) -> Any:
    def like(input: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False,
             memory_format: Any = None, **kw: Any) -> Tensor:
        return fn(input.shape, dtype=dtype or input.dtype, device=device, requires_grad=requires_grad, **kw)

    return like


zeros_like = _like(zeros)
ones_like = _like(ones)
empty_like = _like(empty)
rand_like = _like(rand)
randn_like = _like(randn)


def full_like(input: Tensor, fill_value: Any, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    return full(input.shape, fill_value, dtype=dtype or input.dtype, device=device, requires_grad=requires_grad)


def randint_like(input: Tensor, low: int, high: int | None = None, *, dtype: Any = None,
                 generator: Any = None) -> Tensor:
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(input.shape), dtype=dtype or input.dtype, generator=generator)
