"""Shape and data-movement primitives: reshape, permute, expand, index, index_put, cat, stack, pad, gather."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.function import Function, unbroadcast


class Reshape(Function):
    name = "reshape"

    def forward(self, x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        self.in_shape = x.shape
        return x.reshape(shape)

    def backward(self, g: np.ndarray) -> np.ndarray:
        return g.reshape(self.in_shape)


class Permute(Function):
    name = "permute"

    def forward(self, x: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
        self.dims = dims
        return x.transpose(dims)

    def backward(self, g: np.ndarray) -> np.ndarray:
        return g.transpose(np.argsort(self.dims))


class Expand(Function):
    name = "expand"

    def forward(self, x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        self.in_shape = x.shape
        return np.broadcast_to(x, shape)

    def backward(self, g: np.ndarray) -> np.ndarray:
        return unbroadcast(g, self.in_shape)


def _is_basic(key: tuple[Any, ...]) -> bool:
    return all(k is None or k is Ellipsis or isinstance(k, (int, slice)) for k in key)


class Index(Function):
    """`x[key]` with basic (view) and advanced (integer/boolean array) indexing."""

    name = "index"

    def forward(self, x: np.ndarray, key: tuple[Any, ...]) -> np.ndarray:
        self.in_shape, self.dtype, self.key = x.shape, x.dtype, key
        out = x[key]
        return out if isinstance(out, np.ndarray) else np.asarray(out)

    def backward(self, g: np.ndarray) -> np.ndarray:
        out = np.zeros(self.in_shape, dtype=g.dtype)
        if _is_basic(self.key):
            out[self.key] = g
        else:
            np.add.at(out, self.key, g)
        return out


class IndexPut(Function):
    """`x[key] = values` as a new tensor (PyTorch's index_put without accumulate)."""

    name = "index_put"

    def forward(self, x: np.ndarray, values: Any, key: tuple[Any, ...]) -> np.ndarray:
        out = x.copy()
        out[key] = values
        self.key, self.vshape = key, np.shape(values)
        return out

    def backward(self, g: np.ndarray) -> tuple[np.ndarray | None, ...]:
        gx = g.copy()
        gx[self.key] = 0
        gv = unbroadcast(np.asarray(g[self.key]), self.vshape) if len(self.parents) > 1 else None
        return (gx, gv) if len(self.parents) > 1 else (gx,)


class Cat(Function):
    name = "cat"

    def forward(self, *xs: np.ndarray, dim: int = 0) -> np.ndarray:
        self.sizes = [x.shape[dim] for x in xs]
        self.dim = dim
        return np.concatenate(xs, axis=dim)

    def backward(self, g: np.ndarray) -> tuple[np.ndarray | None, ...]:
        splits = np.cumsum(self.sizes)[:-1]
        return tuple(np.split(g, splits, axis=self.dim))


class Stack(Function):
    name = "stack"

    def forward(self, *xs: np.ndarray, dim: int = 0) -> np.ndarray:
        self.dim = dim
        return np.stack(xs, axis=dim)

    def backward(self, g: np.ndarray) -> tuple[np.ndarray | None, ...]:
        return tuple(np.moveaxis(g, self.dim, 0))


class Pad(Function):
    name = "pad"

    def forward(self, x: np.ndarray, pad: tuple[int, ...], mode: str = "constant", value: float = 0.0) -> np.ndarray:
        # `pad` is PyTorch order: (last_lo, last_hi, second_last_lo, second_last_hi, ...)
        widths = [(0, 0)] * x.ndim
        for i in range(len(pad) // 2):
            widths[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
        self.in_shape = x.shape
        crop = [(max(-lo, 0), max(-hi, 0)) for lo, hi in widths]
        if any(c != (0, 0) for c in crop):
            x = x[tuple(slice(lo, x.shape[i] - hi) for i, (lo, hi) in enumerate(crop))]
        self.widths = widths
        pos = [(max(lo, 0), max(hi, 0)) for lo, hi in widths]
        if mode == "constant":
            return np.pad(x, pos, mode="constant", constant_values=np.asarray(value, dtype=x.dtype))
        return np.pad(x, pos, mode={"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode])

    def backward(self, g: np.ndarray) -> np.ndarray:
        out = np.zeros(self.in_shape, dtype=g.dtype)
        src = []
        dst = []
        for (lo, hi), n in zip(self.widths, self.in_shape):
            slo, shi = max(lo, 0), max(hi, 0)
            dlo, dhi = max(-lo, 0), max(-hi, 0)
            src.append(slice(slo, g.shape[len(src)] - shi))
            dst.append(slice(dlo, n - dhi))
        if any(w != "constant" for w in ()):  # pragma: no cover
            pass
        out[tuple(dst)] = g[tuple(src)]
        return out


class Gather(Function):
    name = "gather"

    def forward(self, x: np.ndarray, index: np.ndarray, dim: int) -> np.ndarray:
        self.in_shape, self.index, self.dim = x.shape, index, dim
        # torch.gather: index may be smaller than x in the dims other than `dim` (take_along_axis would broadcast)
        idx = list(np.indices(index.shape, sparse=True))
        idx[dim] = index
        return np.ascontiguousarray(x[tuple(idx)])

    def backward(self, g: np.ndarray) -> np.ndarray:
        out = np.zeros(self.in_shape, dtype=g.dtype)
        idx = list(np.indices(self.index.shape, sparse=True))
        idx[self.dim] = self.index
        np.add.at(out, tuple(idx), g)
        return out


class Copy(Function):
    name = "copy"

    def forward(self, x: np.ndarray) -> np.ndarray:
        return np.array(x, copy=True, order="C")

    def backward(self, g: np.ndarray) -> np.ndarray:
        return g


VIEW_OPS = (Reshape, Permute, Expand, Index)


def is_view_node(node: Any) -> bool:
    """Whether `node` produced a view of its (first) input: reshape/permute/expand, basic indexing."""
    return isinstance(node, VIEW_OPS) and (not isinstance(node, Index) or _is_basic(node.key))


def replay_views(arr: np.ndarray, chain: tuple[tuple[type[Function], dict[str, Any]], ...]) -> np.ndarray:
    """Apply a recorded chain of view ops to `arr` (a view of `arr` when the chain is view-only)."""
    for cls, attrs in chain:
        arr = cls().forward(arr, **attrs)
    return arr


class CopySlices(Function):
    """The base of a view after an in-place op on the view: `base` with the view's region replaced by `value`.

    `chain` is the list of view ops (class, attrs) that lead from the base to the view. Backward sends the
    gradient of the region to `value` and the rest to `base`, as PyTorch's CopySlices does.
    """

    name = "copy_slices"

    def forward(self, base: np.ndarray, value: np.ndarray,
                chain: tuple[tuple[type[Function], dict[str, Any]], ...]) -> np.ndarray:
        self.chain, self.vshape = chain, np.shape(value)
        out = np.array(base, copy=True)
        replay_views(out, chain)[...] = value
        return out

    def _region(self, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        buf = np.empty_like(g)
        buf[...] = g
        region = replay_views(buf, self.chain)
        if not np.shares_memory(region, buf):  # pragma: no cover - chains are view-only by construction
            raise RuntimeError("internal error: copy_slices chain is not a view")
        return buf, region

    def backward(self, g: np.ndarray) -> tuple[np.ndarray | None, ...]:
        gb, region = self._region(g)
        gv = unbroadcast(np.array(region, copy=True), self.vshape)
        region[...] = 0
        return gb, gv
