"""Functional lookups: `embedding` (with padding_idx, max_norm, scale_grad_by_freq) and `one_hot`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._prims import sparse as E
from ...tensor import Tensor

__all__ = ["embedding", "one_hot"]


def _check_indices(input: Any, op: str) -> np.ndarray:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input._data.dtype not in (np.int64, np.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.dtype} instead (while checking arguments for {op}); "
                           f"convert it with .long()")
    return input._data


def resolve_padding_idx(padding_idx: int | None, num_embeddings: int) -> int | None:
    """A padding_idx in [-num_embeddings, num_embeddings) as a non-negative row, as PyTorch checks it."""
    if padding_idx is None:
        return None
    if padding_idx >= num_embeddings or padding_idx < -num_embeddings:
        raise AssertionError(f"Padding_idx must be within num_embeddings (got padding_idx={padding_idx} for "
                             f"num_embeddings={num_embeddings})")
    return int(padding_idx) % num_embeddings


def renorm_rows_(weight: Tensor, idx: np.ndarray, max_norm: float, norm_type: float) -> None:
    """Scale, in place and without autograd, each referenced row whose norm exceeds max_norm down to max_norm."""
    rows = np.unique(idx)
    w = weight._data
    sub = w[rows].astype(np.float64)
    norms = np.linalg.norm(sub, ord=norm_type, axis=1)
    big = norms > max_norm
    if big.any():
        scale = max_norm / (norms[big] + 1e-7)
        w[rows[big]] = (sub[big] * scale[:, None]).astype(w.dtype)


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Tensor:
    """Rows of `weight` (num_embeddings, dim) picked by the integer tensor `input`; shape (*input.shape, dim)."""
    idx = _check_indices(input, "embedding")
    if not isinstance(weight, Tensor):
        raise TypeError(f"embedding(): argument 'weight' must be Tensor, not {type(weight).__name__}")
    if weight.ndim != 2:
        raise RuntimeError(f"'weight' must be 2-D (num_embeddings, embedding_dim), got weight of size "
                           f"{list(weight.shape)}")
    if sparse:
        raise NotImplementedError("sparse gradients are not supported by dtorch; use sparse=False")
    num = weight._data.shape[0]
    pad = resolve_padding_idx(padding_idx, num)
    if idx.size and (idx.min() < 0 or idx.max() >= num):
        bad = int(idx.min()) if idx.min() < 0 else int(idx.max())
        raise IndexError(f"index out of range in self: embedding index {bad} is not in [0, {num}) for a weight with "
                         f"{num} rows")
    if max_norm is not None:
        renorm_rows_(weight, idx, float(max_norm), float(norm_type))
    return E.Embedding.apply(weight, input, padding_idx=pad, scale_grad_by_freq=bool(scale_grad_by_freq))


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding with a trailing dimension of num_classes (-1: infer as max + 1)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"one_hot(): argument 'tensor' must be Tensor, not {type(tensor).__name__}")
    if tensor._data.dtype != np.int64:
        raise RuntimeError(f"one_hot is only applicable to index tensor of type LongTensor, got {tensor.dtype}; "
                           f"convert it with .long()")
    data = tensor._data
    if num_classes == -1:
        if data.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor; pass num_classes")
        num_classes = int(data.max()) + 1
    if data.size:
        if data.min() < 0:
            raise RuntimeError("Class values must be non-negative.")
        if data.max() >= num_classes:
            raise RuntimeError(f"Class values must be smaller than num_classes (got {int(data.max())} for "
                               f"num_classes={num_classes}).")
    return E.OneHot.apply(tensor, num_classes=int(num_classes))
