"""`dtorch.nn.utils`: gradient clipping and parameter helpers."""

from __future__ import annotations

from collections.abc import Iterable

from ...tensor import Tensor
from .clip_grad import *

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm",
           "parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """Flatten and concatenate `parameters` into one 1-D tensor (differentiable, like `dt.cat`)."""
    from ..._functions import cat

    flat = []
    for p in parameters:
        if not isinstance(p, Tensor):
            raise TypeError(f"expected dtorch.Tensor, but got: {type(p).__name__}")
        flat.append(p.reshape(-1))
    if not flat:
        raise ValueError("parameters_to_vector() got an empty iterable of parameters")
    return cat(flat)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of the 1-D `vec` into `parameters` (replacing each one's data)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected dtorch.Tensor, but got: {type(vec).__name__}")
    params = list(parameters)
    need = sum(p.numel() for p in params)
    if vec.ndim != 1 or vec.numel() != need:
        raise ValueError(f"vector_to_parameters() needs a 1-D vector of {need} elements for these parameters, "
                         f"got shape {list(vec.shape)}")
    offset = 0
    for p in params:
        n = p.numel()
        p._data = vec._data[offset:offset + n].reshape(p._data.shape).astype(p._data.dtype, copy=False)
        offset += n
