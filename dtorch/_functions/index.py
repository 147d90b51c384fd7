"""Indexing: `x[key]`, `x[key] = v`, gather, index_select, select, nonzero."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .._prims import shape as S
from .._tensor import Tensor, _norm_dim
from ..autograd.grad_mode import is_grad_enabled
from ..dtypes import from_numpy_dtype
from ._common import as_tensor_like

# --------------------------------------------------------------------------- indexing

_BASIC = (int, slice)


def _is_seq_key(key: list[Any]) -> bool:
    """PyTorch reads a short list holding slices, None, Ellipsis, sequences or tensors as a tuple of indices."""
    return len(key) < 32 and any(k is None or k is Ellipsis or isinstance(k, (slice, list, tuple, Tensor, np.ndarray))
                                 for k in key)


def _index_key(key: Any, shape: tuple[int, ...] = ()) -> tuple[Any, ...]:
    """Normalize an index to NumPy form: tensors become arrays (0-d integer tensors become ints, uint8 masks bool)."""
    if isinstance(key, list) and _is_seq_key(key):
        key = tuple(key)
    elif not isinstance(key, tuple):
        key = (key,)
    out = []
    for k in key:
        if isinstance(k, Tensor):
            k = k._data
        if isinstance(k, np.ndarray):
            if k.dtype == np.uint8:
                k = k.astype(np.bool_)  # legacy byte masks, as in PyTorch
            elif k.dtype.kind in "iu":
                k = int(k) if k.ndim == 0 else k.astype(np.intp, copy=False)
            elif k.dtype != np.bool_:
                raise IndexError(f"tensors used as indices must be long, int, byte or bool tensors, got "
                                 f"{from_numpy_dtype(k.dtype)}")
        elif isinstance(k, (list, tuple)):
            k = np.asarray(k)
            if k.dtype.kind not in "biu" or (k.size == 0 and k.dtype.kind == "f"):
                if k.size == 0:
                    k = k.astype(np.intp)
                else:
                    raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        elif isinstance(k, (bool, np.bool_)):
            k = np.asarray(k)
        elif isinstance(k, np.integer):
            k = int(k)
        elif not (k is None or k is Ellipsis or isinstance(k, _BASIC)):
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                             f"valid indices (got {type(k).__name__})")
        if isinstance(k, slice) and k.step is not None and k.step <= 0:
            raise ValueError("step must be greater than zero")
        out.append(k)
    return tuple(out)


def _split_ints(key: tuple[Any, ...]) -> tuple[tuple[Any, ...], tuple[Any, ...]] | None:
    """PyTorch applies integer indices (selects) before advanced indexing, where NumPy treats them as advanced
    indices when arrays are present. Return (basic key, advanced key) to apply in turn, or None when the two
    readings agree."""
    has_array = has_int = False
    for k in key:
        if isinstance(k, np.ndarray) and k.ndim > 0:
            has_array = True
        elif isinstance(k, int) and not isinstance(k, bool):
            has_int = True
    if not (has_array and has_int):
        return None
    first: list[Any] = []
    second: list[Any] = []
    for k in key:
        if isinstance(k, np.ndarray) and k.ndim > 0:
            n = k.ndim if k.dtype == np.bool_ else 1
            first.extend([slice(None)] * n)
            second.append(k)
        elif isinstance(k, int) and not isinstance(k, bool):
            first.append(k)
        elif k is Ellipsis:
            first.append(k)
            second.append(k)
        else:  # slice, None, 0-d bool
            first.append(k)
            second.append(slice(None) if k is None or isinstance(k, slice) else k)
    return tuple(first), tuple(second)


def _index_error(e: Exception, key: Any, x: Tensor) -> IndexError:
    return IndexError(f"{e} (index {key!r} into a tensor of shape {list(x.shape)})")


def getitem(x: Tensor, key: Any) -> Tensor:
    """`x[key]`: basic indices give views of `x`, advanced (tensor/list/mask) indices copy, as in PyTorch."""
    k = key if isinstance(key, tuple) and all(isinstance(i, _BASIC) for i in key) else _index_key(key)
    if k.__class__ is not tuple:
        k = (k,)
    try:
        parts = _split_ints(k)
        if parts is None:
            return S.Index.apply(x, key=k)
        return S.Index.apply(S.Index.apply(x, key=parts[0]), key=parts[1])
    except IndexError as e:
        raise _index_error(e, key, x) from None


def _strip_leading_ones(v: Tensor, ndim: int) -> Tensor:
    shp = v._data.shape
    i = 0
    while len(shp) - i > ndim and shp[i] == 1:
        i += 1
    return v.reshape(shp[i:]) if i else v


def setitem(x: Tensor, key: Any, value: Any) -> None:
    """`x[key] = value`: writes into `x`'s buffer (so views of it see the change); recorded by autograd as an
    index_put when `x` or `value` requires grad."""
    k = _index_key(key)
    parts = _split_ints(k)
    if parts is not None:  # PyTorch applies integer indices first: address the same elements with flat positions
        try:
            flat = np.arange(x._data.size).reshape(x._data.shape)[parts[0]][parts[1]]
        except IndexError as e:
            raise _index_error(e, key, x) from None
        k = np.unravel_index(flat, x._data.shape)
    advanced = any(isinstance(i, np.ndarray) and i.ndim > 0 for i in k)
    if isinstance(value, Tensor):
        v = value
        mask_fill = len(k) == 1 and isinstance(k[0], np.ndarray) and k[0].dtype == np.bool_ and builtins.all(
            s == 1 for s in v._data.shape)  # PyTorch uses masked_fill here, which casts
        if advanced and not mask_fill and v._data.dtype != x._data.dtype:
            raise RuntimeError(f"Index put requires the source and destination dtypes match, got {x.dtype} for the "
                               f"destination and {v.dtype} for the source.")
    else:
        v = as_tensor_like(value, x)
    if v._data.dtype != x._data.dtype:
        v = v.type(x.dtype)
    if v._data.ndim and v._data.shape[0] == 1:  # PyTorch drops leading size-1 dims the target lacks
        try:
            target_ndim = x._data[k].ndim
        except IndexError as e:
            raise _index_error(e, key, x) from None
        v = _strip_leading_ones(v, target_ndim)
    if is_grad_enabled() and (x._rg or v._rg):
        try:
            res = S.IndexPut.apply(x, v, key=k)
        except ValueError as e:
            raise RuntimeError(f"shape mismatch: value tensor of shape {list(v.shape)} cannot be broadcast to the "
                               f"indexing result for index {key!r} of a tensor of shape {list(x.shape)} ({e})") from None
        x._inplace(res)
        return
    if not x._data.flags.writeable:
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a single "
                           "memory location (an expanded view); call .clone() before writing")
    try:
        x._data[k] = v._data
    except ValueError as e:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(v.shape)} cannot be broadcast to the "
                           f"indexing result for index {key!r} of a tensor of shape {list(x.shape)} ({e})") from None


def select(input: Tensor, dim: int, index: int) -> Tensor:
    d = _norm_dim(dim, input.ndim)
    return S.Index.apply(input, key=(slice(None),) * d + (int(index),))


def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:
    if index._data.dtype != np.int64:
        raise RuntimeError(f"gather(): Expected dtype int64 for index, got {index.dtype}")
    if index.ndim != input.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    d = _norm_dim(dim, input.ndim)
    big = [k for k in range(input.ndim) if k != d and index.shape[k] > input.shape[k]]
    if big:
        raise RuntimeError(f"Size does not match at dimension {big[0]} expected index {list(index.shape)} to be no larger "
                           f"than self {list(input.shape)} apart from dimension {d}")
    return S.Gather.apply(input, index._data, d)


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    d = _norm_dim(dim, input.ndim)
    return S.Index.apply(input, key=(slice(None),) * d + (index._data.astype(np.int64),))


def nonzero(input: Tensor, *, as_tuple: bool = False) -> Any:
    if input.ndim == 0:
        hit = builtins.bool(input._data)
        if as_tuple:
            return (Tensor._wrap(np.zeros(int(hit), np.int64)),)
        return Tensor._wrap(np.zeros((int(hit), 0), np.int64))
    idx = np.nonzero(input._data)
    if as_tuple:
        return tuple(Tensor._wrap(i.astype(np.int64)) for i in idx)
    return Tensor._wrap(np.stack(idx, axis=1).astype(np.int64) if idx else np.zeros((0, 0), np.int64))


__all__ = ["gather", "index_select", "nonzero", "select"]
