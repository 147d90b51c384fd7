"""Dropout functions of `dtorch.nn.functional`: dropout, dropout1d/2d/3d, alpha-free and PyTorch-compatible."""

from __future__ import annotations

import warnings
from typing import Any

from ..._prims.dropout import Dropout
from ...random import rng
from ...tensor import Tensor

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d"]


def _check(input: Any, p: float, name: str) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return input


def _check_float(x: Tensor, name: str) -> None:
    if not x.is_floating_point():
        raise RuntimeError(f"{name}(): result type Float can't be cast to the desired output type {x.dtype}: "
                           f"dropout in training mode needs a floating point input; use .float() first")


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False,
            generator: Any = None) -> Tensor:
    """Zero each element with probability `p` and scale the rest by 1 / (1 - p); identity when not training."""
    x = _check(input, p, "dropout")
    if not training:
        return x
    _check_float(x, "dropout")
    if p == 0.0:
        return x
    out = Dropout.apply(x, p=float(p), rng=rng(generator))
    return x._inplace(out) if inplace else out


def _feature_dropout(x: Tensor, p: float, training: bool, inplace: bool, generator: Any, ranks: tuple[int, int],
                     name: str) -> Tensor:
    x = _check(x, p, name)
    if x.ndim not in ranks:
        if name == "dropout1d":
            raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {x.ndim}D input. Note that "
                               f"dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
                               f"dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
                               f"inputs).")
        warnings.warn(f"{name}: Received a {x.ndim}-D input to {name}, which is deprecated and will result in an "
                      f"error in a future release. Pass a {ranks[0]}-D (C, ...) or {ranks[1]}-D (N, C, ...) "
                      f"input, or use dropout instead.", UserWarning, stacklevel=3)
    if not training:
        return x
    _check_float(x, name)
    if p == 0.0:
        return x
    batched = x.ndim == ranks[1]
    src = x if batched else x.unsqueeze(0)
    out = Dropout.apply(src, p=float(p), rng=rng(generator), channelwise=True)
    if not batched:
        out = out.squeeze(0)
    return x._inplace(out) if inplace else out


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False,
              generator: Any = None) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L)."""
    return _feature_dropout(input, p, training, inplace, generator, (2, 3), "dropout1d")


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False,
              generator: Any = None) -> Tensor:
    """Zero whole channels of (N, C, H, W) or (C, H, W)."""
    return _feature_dropout(input, p, training, inplace, generator, (3, 4), "dropout2d")


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False,
              generator: Any = None) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W)."""
    return _feature_dropout(input, p, training, inplace, generator, (4, 5), "dropout3d")
