"""Shape ops: reshape/view, permute/transpose, squeeze/unsqueeze, expand, cat/stack/split, pad."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import dtypes as _dt
from .._prims import shape as S
from .._tensor import Tensor, _norm_dim
from ._common import _infer_shape, _shape_arg
from .index import select
from .pointwise import where

# --------------------------------------------------------------------------- shapes

def reshape(input: Tensor, *shape: Any) -> Tensor:
    shp = _infer_shape(_shape_arg(shape), input._data.size, input._data.shape)
    if shp == input._data.shape:
        return S.Reshape.apply(input, shape=shp) if input._rg else Tensor._wrap(input._data)
    return S.Reshape.apply(input, shape=shp)


def view(input: Tensor, *shape: Any) -> Tensor:
    if len(shape) == 1 and isinstance(shape[0], _dt.dtype):
        raise NotImplementedError("view(dtype) is not supported; use .to(dtype)")
    shp = _infer_shape(_shape_arg(shape), input._data.size, input._data.shape)
    probe = input._data.view()
    try:
        probe.shape = shp
    except AttributeError:
        raise RuntimeError(f"view size is not compatible with input tensor's size and stride (at least one dimension "
                           f"spans across two contiguous subspaces). Use .reshape(...) instead. (view size "
                           f"{list(shp)}, input size {list(input.shape)}, stride {list(input.stride())})") from None
    return S.Reshape.apply(input, shape=shp)


def permute(input: Tensor, *dims: Any) -> Tensor:
    if not dims:
        raise TypeError('permute() missing 1 required positional arguments: "dims"')
    d = _shape_arg(dims)
    nd = input.ndim
    if len(d) != nd:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the length "
                           f"of the desired ordering of dimensions i.e. input.dim() = {nd} is not equal to "
                           f"len(dims) = {len(d)}")
    nd_ = tuple(_norm_dim(x, nd) for x in d)
    if len(set(nd_)) != nd:
        raise RuntimeError(f"permute(): duplicate dims are not allowed, got {list(d)}")
    return S.Permute.apply(input, dims=nd_)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    nd = input.ndim
    if nd == 0:
        _norm_dim(dim0, 0)
        _norm_dim(dim1, 0)
        return reshape(input, ())
    perm = list(range(nd))
    a, b = _norm_dim(dim0, nd), _norm_dim(dim1, nd)
    perm[a], perm[b] = perm[b], perm[a]
    return S.Permute.apply(input, dims=tuple(perm))


swapaxes = swapdims = transpose


def t(input: Tensor) -> Tensor:
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return reshape(input, input._data.shape) if input.ndim < 2 else transpose(input, 0, 1)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    if input.ndim == 0:
        return reshape(input, 1)
    s, e = _norm_dim(start_dim, input.ndim), _norm_dim(end_dim, input.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shp = input._data.shape
    new = shp[:s] + (int(np.prod(shp[s:e + 1])),) + shp[e + 1:]
    return reshape(input, new)


def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    d = _norm_dim(dim, input.ndim)
    shp = input._data.shape
    inner = _infer_shape(tuple(sizes), shp[d], (shp[d],))
    return reshape(input, shp[:d] + inner + shp[d + 1:])


def squeeze(input: Tensor, dim: Any = None) -> Tensor:
    shp = input._data.shape
    if dim is None:
        new = tuple(s for s in shp if s != 1)
    else:
        dims = {_norm_dim(d, input.ndim) for d in ((dim,) if isinstance(dim, int) else dim)}
        new = tuple(s for i, s in enumerate(shp) if not (i in dims and s == 1))
    return reshape(input, new)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    nd = input.ndim + 1
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})")
    d = dim % nd
    shp = input._data.shape
    return reshape(input, shp[:d] + (1,) + shp[d:])


def expand(input: Tensor, *sizes: Any) -> Tensor:
    shp = _shape_arg(sizes)
    cur = input._data.shape
    if len(shp) < len(cur):
        raise RuntimeError(f"expand: the number of sizes provided ({len(shp)}) must be greater or equal to the "
                           f"number of dimensions in the tensor ({len(cur)})")
    lead = len(shp) - len(cur)
    out = []
    for i, s in enumerate(shp):
        c = cur[i - lead] if i >= lead else None
        if s == -1:
            if c is None:
                raise RuntimeError("expand: -1 is not allowed in a leading, non-existing dimension")
            s = c
        if c is not None and c != s and c != 1:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({c}) at "
                               f"non-singleton dimension {i}.  Target sizes: {list(shp)}.  Tensor sizes: {list(cur)}")
        out.append(s)
    return S.Expand.apply(input, shape=tuple(out))


def broadcast_to(input: Tensor, shape: Sequence[int]) -> Tensor:
    return expand(input, tuple(shape))


def repeat(input: Tensor, *sizes: Any) -> Tensor:
    reps = _shape_arg(sizes)
    if len(reps) < input.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    x = reshape(input, (1,) * (len(reps) - input.ndim) + input._data.shape)
    shp = x._data.shape
    inter = []
    for r, s in zip(reps, shp):
        inter += [r, s]
    y = expand(reshape(x, tuple(v for s in shp for v in (1, s))), tuple(inter))
    return reshape(y, tuple(r * s for r, s in zip(reps, shp)))


def tile(input: Tensor, dims: Sequence[int]) -> Tensor:
    dims = tuple(dims)
    if len(dims) < input.ndim:
        dims = (1,) * (input.ndim - len(dims)) + dims
    return repeat(input, dims)


def contiguous(input: Tensor) -> Tensor:
    return input if input._data.flags.c_contiguous else S.Copy.apply(input)


def clone(input: Tensor) -> Tensor:
    return S.Copy.apply(input)


def flip(input: Tensor, *dims: Any, **kwargs: Any) -> Tensor:
    """Reverse the order of elements along `dims` (`flip(x, (0, 1))`, `x.flip(0, 1)` or `flip(x, dims=0)`)."""
    if "dims" in kwargs:
        dims = (kwargs.pop("dims"),)
    if kwargs or not dims:
        raise TypeError("flip() missing 1 required positional argument: 'dims'")
    dims = _shape_arg((dims[0],) if len(dims) == 1 and isinstance(dims[0], (int, np.integer)) else dims)
    key = [slice(None)] * input.ndim
    for d in dims:
        key[_norm_dim(d, input.ndim)] = slice(None, None, -1)
    return S.Index.apply(input, key=tuple(key))


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    d = _norm_dim(dim, input.ndim)
    key = (slice(None),) * d + (slice(start, start + length),)
    return S.Index.apply(input, key=key)


def _seq_of_tensors(tensors: Any, name: str) -> list[Tensor]:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' must be a tuple or list of Tensors, not "
                        f"{type(tensors).__name__}")
    if not tensors:
        if name == "stack":
            raise RuntimeError("stack expects a non-empty TensorList")
        raise ValueError(f"{name}(): expected a non-empty list of Tensors")
    for i, x in enumerate(tensors):
        if not isinstance(x, Tensor):
            raise TypeError(f"{name}(): expected Tensor as element {i} in argument 0, but got {type(x).__name__}")
    return list(tensors)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    ts = _seq_of_tensors(tensors, "cat")
    for i, x in enumerate(ts):
        if x.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    ts = [x for x in ts if not (x.ndim == 1 and x.shape[0] == 0)] or ts[:1]  # legacy: empty 1-D tensors skipped
    ref = ts[0]
    d = _norm_dim(dim, ref.ndim)
    for i, x in enumerate(ts):
        if x.ndim != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} and {x.ndim}")
        for k in range(ref.ndim):
            if k != d and x._data.shape[k] != ref._data.shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                   f"{ref._data.shape[k]} but got size {x._data.shape[k]} for tensor number {i} in "
                                   f"the list.")
    out_dt = ref.dtype
    for x in ts[1:]:
        out_dt = _dt.promote_types(out_dt, x.dtype)
    ts = [x if x.dtype is out_dt else x.type(out_dt) for x in ts]
    return S.Cat.apply(*ts, dim=d)


concat = concatenate = cat


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    ts = _seq_of_tensors(tensors, "stack")
    ref = ts[0]
    for i, x in enumerate(ts):
        if x._data.shape != ref._data.shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(ref.shape)} at entry 0 and "
                               f"{list(x.shape)} at entry {i}")
    nd = ref.ndim + 1
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})")
    out_dt = ref.dtype
    for x in ts[1:]:
        out_dt = _dt.promote_types(out_dt, x.dtype)
    ts = [x if x.dtype is out_dt else x.type(out_dt) for x in ts]
    return S.Stack.apply(*ts, dim=dim % nd)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    return cat([x if x.ndim > 1 else unsqueeze(x, 0) for x in tensors], 0)


def split(tensor: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    d = _norm_dim(dim, tensor.ndim)
    n = tensor._data.shape[d]
    if isinstance(split_size_or_sections, (int, np.integer)):
        step = int(split_size_or_sections)
        if step <= 0 and n > 0:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
        sizes = [builtins.min(step, n - i) for i in range(0, n, step)] if n else [0]
    else:
        sizes = list(split_size_or_sections)
        if builtins.sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                               f"dimension {dim}), but got split_sizes={sizes}")
    out, start = [], 0
    for s in sizes:
        out.append(narrow(tensor, d, start, s))
        start += s
    return tuple(out)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _norm_dim(dim, input.ndim)
    n = input.shape[d]
    if n == 0:
        return tuple(narrow(input, d, 0, 0) for _ in range(chunks))
    return split(input, -(-n // chunks), d)


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    d = _norm_dim(dim, input.ndim)
    return tuple(select(input, d, i) for i in range(input.shape[d]))




def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise RuntimeError(f"Padding length must be divisible by 2 and at most twice the number of dimensions "
                           f"({input.ndim}), got {len(pad)}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"pad mode {mode!r} is not supported; use constant, reflect, replicate or circular")
    return S.Pad.apply(input, pad=tuple(int(p) for p in pad), mode=mode, value=0.0 if value is None else value)


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    mask = np.tril(np.ones(input._data.shape[-2:], dtype=bool), diagonal)
    return where(Tensor._wrap(mask), input, Tensor._wrap(np.zeros((), input._data.dtype)))


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    mask = np.triu(np.ones(input._data.shape[-2:], dtype=bool), diagonal)
    return where(Tensor._wrap(mask), input, Tensor._wrap(np.zeros((), input._data.dtype)))


def einsum(equation: str, *operands: Any) -> Tensor:
    raise NotImplementedError("einsum is not implemented in dtorch yet; use matmul/permute/reshape")


__all__ = ["broadcast_to", "cat", "chunk", "clone", "concat", "concatenate", "contiguous", "einsum", "expand",
           "flatten", "flip", "hstack", "narrow", "pad", "permute", "repeat", "reshape", "split", "squeeze", "stack",
           "swapaxes", "swapdims", "t", "tile", "transpose", "tril", "triu", "unbind", "unflatten", "unsqueeze",
           "view", "vstack"]
