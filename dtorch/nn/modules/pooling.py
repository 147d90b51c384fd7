"""Pooling layers: max, average and adaptive pooling in 1-D and 2-D, with PyTorch's signatures."""

from __future__ import annotations

from typing import Any

from ...tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AvgPool1d",
           "AvgPool2d", "MaxPool1d", "MaxPool2d"]


def _one_tuple(v: Any) -> tuple[int, ...]:
    return (v,) if isinstance(v, int) else tuple(v)


class _MaxPoolNd(Module):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """1-D max pooling over (N, C, L) or (C, L)."""

    def forward(self, input: Tensor) -> Any:
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                             self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """2-D max pooling over (N, C, H, W) or (C, H, W)."""

    def forward(self, input: Tensor) -> Any:
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                             self.return_indices)


class AvgPool1d(Module):
    """1-D average pooling over (N, C, L) or (C, L)."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = _one_tuple(kernel_size)  # PyTorch stores 1-tuples here
        self.stride = _one_tuple(stride if stride is not None else kernel_size)
        self.padding = _one_tuple(padding)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                             self.count_include_pad)


class AvgPool2d(Module):
    """2-D average pooling over (N, C, H, W) or (C, H, W)."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                             self.count_include_pad, self.divisor_override)


class _AdaptiveNd(Module):
    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveNd):
    """Average pooling of (N, C, L) to a fixed length."""

    def __init__(self, output_size: Any) -> None:
        super().__init__(output_size)

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptiveNd):
    """Average pooling of (N, C, H, W) to a fixed (oh, ow); `AdaptiveAvgPool2d(1)` is global average pooling."""

    def __init__(self, output_size: Any) -> None:
        super().__init__(output_size)

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveMaxPool1d(_AdaptiveNd):
    """Max pooling of (N, C, L) to a fixed length."""

    def forward(self, input: Tensor) -> Any:
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptiveNd):
    """Max pooling of (N, C, H, W) to a fixed (oh, ow)."""

    def forward(self, input: Tensor) -> Any:
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)
