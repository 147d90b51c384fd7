"""Convolution layers: `Conv1d`, `Conv2d`, `ConvTranspose1d`, `ConvTranspose2d` with PyTorch's defaults."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import _functions as F
from ...autograd.grad_mode import no_grad
from ...creation import zeros
from ...tensor import Tensor
from .. import functional as NF
from ..parameter import Parameter
from .module import Module

__all__ = ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(value: Any, n: int, what: str) -> tuple[int, ...]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),) * n
    if isinstance(value, (tuple, list)) and len(value) == n and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
        return tuple(int(v) for v in value)
    raise TypeError(f"{what} must be an int or a tuple of {n} ints, got {value!r}")


class _ConvNd(Module):
    """Shared state and initialization of the convolution layers (`nd` spatial dims)."""

    _nd = 2
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 output_padding: Any = 0, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        nd = self._nd
        if not isinstance(groups, (int, np.integer)) or isinstance(groups, bool) or groups <= 0:
            raise ValueError(f"groups must be a positive integer, got {groups!r}")
        if in_channels % groups != 0:
            raise ValueError(f"in_channels must be divisible by groups (in_channels={in_channels}, groups={groups})")
        if out_channels % groups != 0:
            raise ValueError(f"out_channels must be divisible by groups (out_channels={out_channels}, "
                             f"groups={groups})")
        self.kernel_size = _ntuple(kernel_size, nd, "kernel_size")
        self.stride = _ntuple(stride, nd, "stride")
        self.dilation = _ntuple(dilation, nd, "dilation")
        self.output_padding = _ntuple(output_padding, nd, "output_padding")
        if any(k <= 0 for k in self.kernel_size):
            raise ValueError(f"kernel_size must be positive, got {self.kernel_size}")
        if isinstance(padding, str):
            if padding not in ("valid", "same"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            if self._transposed:
                raise ValueError(f"padding={padding!r} is not supported for {type(self).__name__}; "
                                 f"give an int or a tuple")
            self.padding: Any = padding
        else:
            self.padding = _ntuple(padding, nd, "padding")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {set(_PADDING_MODES)}, but got "
                             f"padding_mode={padding_mode!r}")
        if self._transposed and padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, int(groups)
        self.padding_mode = padding_mode
        self.transposed = self._transposed
        # F.pad order (last dim first) for non-zero padding modes; "same" puts the odd element last
        rev: list[int] = []
        for d, k, i in zip(reversed(self.dilation), reversed(self.kernel_size), range(nd - 1, -1, -1)):
            if padding == "same":
                total = d * (k - 1)
                rev += [total // 2, total - total // 2]
            elif padding == "valid":
                rev += [0, 0]
            else:
                rev += [self.padding[i]] * 2
        self._reversed_padding_repeated_twice = rev
        wshape = ((in_channels, out_channels // groups) if self._transposed
                  else (out_channels, in_channels // groups)) + self.kernel_size
        self.weight = Parameter(zeros(wshape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(zeros((out_channels,), dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """kaiming_uniform_(a=sqrt(5)) for the weight and U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the bias."""
        w = self.weight
        fan_in = w.shape[1] * math.prod(w.shape[2:])
        bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        # gain sqrt(2 / (1 + a^2)) with a = sqrt(5) times sqrt(3 / fan_in) is exactly 1 / sqrt(fan_in)
        with no_grad():
            w.uniform_(-bound, bound)
            if self.bias is not None:
                self.bias.uniform_(-bound, bound)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * len(self.kernel_size):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def _padded(self, input: Tensor) -> tuple[Tensor, Any]:
        if self.padding_mode == "zeros":
            return input, self.padding
        return F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode), 0


class _Conv(_ConvNd):
    """Conv1d / Conv2d: the constructor without output_padding, and a forward through `_conv`."""

    _conv: Any  # the nn.functional convolution of this rank

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device=device, dtype=dtype)

    def forward(self, input: Tensor) -> Tensor:
        x, pad = self._padded(input)
        return self._conv(x, self.weight, self.bias, self.stride, pad, self.dilation, self.groups)


class Conv1d(_Conv):
    """1-D convolution over (N, C_in, L) -> (N, C_out, L_out)."""

    _nd = 1
    _conv = staticmethod(NF.conv1d)


class Conv2d(_Conv):
    """2-D convolution over (N, C_in, H, W) -> (N, C_out, H_out, W_out)."""

    _nd = 2
    _conv = staticmethod(NF.conv2d)


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding, device=device, dtype=dtype)

    _conv: Any  # the nn.functional transposed convolution of this rank

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        opad = self._output_padding(input, output_size)
        return self._conv(input, self.weight, self.bias, self.stride, self.padding, opad, self.groups,
                                self.dilation)

    def _output_padding(self, input: Tensor, output_size: Any) -> tuple[int, ...]:
        if output_size is None:
            return self.output_padding
        nd = self._nd
        size = [int(s) for s in output_size]
        if len(size) == input.ndim:
            size = size[2:] if input.ndim == nd + 2 else size[1:]
        if len(size) != nd:
            raise ValueError(f"ConvTranspose{nd}D: for {input.ndim}D input, output_size must have {nd} or "
                             f"{nd + 2} elements (got {len(output_size)})")
        spatial = input.shape[-nd:]
        out = []
        for d in range(nd):
            lo = ((spatial[d] - 1) * self.stride[d] - 2 * self.padding[d] +
                  self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            hi = lo + self.stride[d] - 1
            if not lo <= size[d] <= hi:
                raise ValueError(f"requested an output size of {size}, but valid sizes range from {lo} to {hi} "
                                 f"(for an input of {list(spatial)})")
            out.append(size[d] - lo)
        return tuple(out)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution over (N, C_in, L) -> (N, C_out, L_out)."""

    _nd = 1
    _conv = staticmethod(NF.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution over (N, C_in, H, W) -> (N, C_out, H_out, W_out)."""

    _nd = 2
    _conv = staticmethod(NF.conv_transpose2d)
