"""Batch normalization layers: BatchNorm1d, BatchNorm2d, BatchNorm3d."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import creation as _C
from ... import dtypes as _dt
from ...device import check_device
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]


class _BatchNorm(Module):
    """Shared state and forward of the BatchNorm layers (per-channel statistics over all other dims).

    `bias=False` (with affine) learns only the scale. `momentum` weighs the new batch statistic in the
    running average; `momentum=None` keeps a cumulative
    average (weight 1 / num_batches_tracked). With `track_running_stats=False` batch statistics are used in
    eval mode too.
    """

    _ranks: tuple[int, ...] = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        check_device(device)
        d = _dt.get_default_dtype() if dtype is None else _dt.as_dtype(dtype)
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(_C.ones(num_features, dtype=d))
            if bias:
                self.bias = Parameter(_C.zeros(num_features, dtype=d))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", _C.zeros(num_features, dtype=d))
            self.register_buffer("running_var", _C.ones(num_features, dtype=d))
            self.register_buffer("num_batches_tracked", Tensor._wrap(np.array(0, dtype=np.int64)))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean._data[...] = 0
            self.running_var._data[...] = 1
            self.num_batches_tracked._data[...] = 0

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim not in self._ranks:
            want = " or ".join(f"{r}D" for r in self._ranks)
            raise ValueError(f"expected {want} input (got {input.ndim}D input)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked._data[...] += 1
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked._data)
        use_batch_stats = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if keep else None, self.running_var if keep else None,
                            self.weight, self.bias, use_batch_stats, factor, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L) input."""

    _ranks = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W) input."""

    _ranks = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch norm over (N, C, D, H, W) input."""

    _ranks = (5,)
