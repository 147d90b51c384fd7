"""LayerNorm, GroupNorm and RMSNorm layers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import creation as _C
from ... import dtypes as _dt
from ...device import check_device
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["GroupNorm", "LayerNorm", "RMSNorm"]


def _dtype(dtype: Any, device: Any) -> _dt.dtype:
    check_device(device)
    return _dt.get_default_dtype() if dtype is None else _dt.as_dtype(dtype)


def _shape(normalized_shape: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(normalized_shape)


class _AffineNorm(Module):
    """A norm layer with an optional elementwise scale (ones) and shift (zeros) of shape `shape`."""

    def _make_affine(self, shape: tuple[int, ...], affine: bool, bias: bool, d: _dt.dtype) -> None:
        self.register_parameter("weight", Parameter(_C.ones(*shape, dtype=d)) if affine else None)
        self.register_parameter("bias", Parameter(_C.zeros(*shape, dtype=d)) if affine and bias else None)

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)


class LayerNorm(_AffineNorm):
    """Normalize over the trailing `normalized_shape` dims, then an elementwise affine transform."""

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        d = _dtype(dtype, device)
        self.normalized_shape = _shape(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self._make_affine(self.normalized_shape, elementwise_affine, bias, d)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(_AffineNorm):
    """Normalize (N, C, *) over `num_groups` groups of channels, then a per-channel affine transform."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device: Any = None, dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        d = _dtype(dtype, device)
        if num_groups <= 0 or num_channels % num_groups:
            raise ValueError(f"num_channels must be divisible by num_groups (got num_channels={num_channels}, "
                             f"num_groups={num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        self._make_affine((num_channels,), affine, bias, d)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """x / sqrt(mean(x^2 over the trailing dims) + eps) * weight."""

    def __init__(self, normalized_shape: int | Sequence[int], eps: float | None = None,
                 elementwise_affine: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        d = _dtype(dtype, device)
        self.normalized_shape = _shape(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_C.ones(*self.normalized_shape, dtype=d))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
