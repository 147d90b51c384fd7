"""Functional convolutions: `conv2d`, `conv1d`, `conv_transpose2d`, `conv_transpose1d`.

Argument checking, PyTorch's argument conventions, autocast and "same"/"valid" padding live here;
the arithmetic and the gradients live in the primitives of `dtorch/_prims/conv.py`. conv1d runs as a
conv2d over a height-1 image.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import _functions as F
from ..._prims import conv as C
from ...tensor import Tensor

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d"]


def _int_tuple(value: Any, n: int, what: str, op: str) -> tuple[int, ...]:
    """An int or a sequence of n ints (PyTorch also accepts a 1-sequence) as an n-tuple."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),) * n
    if isinstance(value, (tuple, list)) and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                                for v in value):
        if len(value) == n:
            return tuple(int(v) for v in value)
        if len(value) == 1:
            return (int(value[0]),) * n
        raise RuntimeError(f"expected {what} to be a single integer value or a list of {n} values to match the "
                           f"convolution dimensions, but got {what}={list(value)}")
    raise TypeError(f"{op}(): argument '{what}' must be an int or a tuple of {n} ints, "
                    f"not {type(value).__name__} ({value!r})")


def _check_tensors(op: str, input: Tensor, weight: Tensor, bias: Tensor | None) -> None:
    for name, t in (("input", input), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if bias is not None and not isinstance(bias, Tensor):
        raise TypeError(f"{op}(): argument 'bias' must be Tensor or None, not {type(bias).__name__}")


def _check_dtypes(op: str, input: Tensor, weight: Tensor, bias: Tensor | None) -> None:
    if input._data.dtype != weight._data.dtype:
        raise RuntimeError(f"Input type ({input.dtype}) and weight type ({weight.dtype}) should be the same; "
                           f"convert one with .to(dtype)")
    if bias is not None and bias._data.dtype != input._data.dtype:
        raise RuntimeError(f"Input type ({input.dtype}) and bias type ({bias.dtype}) should be the same; "
                           f"convert one with .to(dtype)")
    if input._data.dtype == np.bool_:
        raise RuntimeError(f"{op}: bool tensors are not supported; convert the input and weight to float first")


def _check_positive(stride: tuple[int, ...], dilation: tuple[int, ...], groups: Any) -> None:
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"non-positive stride is not supported, got stride={list(stride)}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"non-positive dilation is not supported, got dilation={list(dilation)}")
    if not isinstance(groups, (int, np.integer)) or isinstance(groups, bool):
        raise TypeError(f"groups must be an int, got {type(groups).__name__}")
    if groups <= 0:
        raise RuntimeError(f"non-positive groups is not supported, got groups={groups}")


def _resolve_padding(padding: Any, ksize: tuple[int, int], stride: tuple[int, int], dilation: tuple[int, int],
                     nd: int, op: str) -> tuple[int, int, int, int]:
    """PyTorch padding (int, tuple, "valid", "same") -> explicit (top, bottom, left, right)."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0, 0, 0, 0)
        if padding != "same":
            raise RuntimeError(f"Invalid padding string: {padding!r}; expected 'same', 'valid', an int or a tuple")
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions; use stride=1 or an "
                               "explicit padding")
        out = []
        for k, d in zip(ksize, dilation):
            total = d * (k - 1)
            out += [total // 2, total - total // 2]  # the odd element goes bottom/right, as PyTorch
        return tuple(out)  # type: ignore[return-value]
    p = _int_tuple(padding, nd, "padding", op)
    if any(v < 0 for v in p):
        raise RuntimeError(f"negative padding is not supported, got padding={list(p)}")
    p2 = (0,) + p if nd == 1 else p
    return (p2[0], p2[0], p2[1], p2[1])


def _check_shapes(op: str, x: Tensor, weight: Tensor, bias: Tensor | None, groups: int,
                  pads: tuple[int, int, int, int], dilation: tuple[int, int], nd: int, shown_input: Any) -> None:
    ws = weight._data.shape
    if weight.ndim != nd + 2:
        raise RuntimeError(f"{op}: expected weight to be {nd + 2}D (out_channels, in_channels/groups, "
                           f"{'kernel' if nd == 1 else 'kH, kW'}), but got weight of size {list(ws)}")
    c = x._data.shape[1]
    if ws[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size {list(ws)} instead")
    if ws[1] * groups != c:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(ws)}, expected input{list(shown_input)} to "
                           f"have {ws[1] * groups} channels, but got {c} channels instead")
    if bias is not None and (bias.ndim != 1 or bias._data.shape[0] != ws[0]):
        raise RuntimeError(f"Given weight of size {list(ws)}, expected bias to be 1-dimensional with {ws[0]} "
                           f"elements, but got bias of size {list(bias.shape)} instead")
    h, w = x._data.shape[2:]
    kh, kw = weight._data.shape[2:] if nd == 2 else (1, ws[2])
    ph, pw = h + pads[0] + pads[1], w + pads[2] + pads[3]
    eh, ew = dilation[0] * (kh - 1) + 1, dilation[1] * (kw - 1) + 1
    if ph < eh or pw < ew:
        if nd == 1:
            raise RuntimeError(f"Calculated padded input size per channel: ({pw}). Kernel size: ({ew}). Kernel size "
                               f"can't be greater than actual input size")
        raise RuntimeError(f"Calculated padded input size per channel: ({ph} x {pw}). Kernel size: ({eh} x {ew}). "
                           f"Kernel size can't be greater than actual input size")


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-D convolution over an (N, C, H, W) or unbatched (C, H, W) input, as torch.nn.functional.conv2d."""
    from ...amp.autocast_mode import autocast_args

    _check_tensors("conv2d", input, weight, bias)
    if input.ndim not in (3, 4):
        raise RuntimeError(f"Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: "
                           f"{list(input.shape)}")
    st = _int_tuple(stride, 2, "stride", "conv2d")
    dil = _int_tuple(dilation, 2, "dilation", "conv2d")
    _check_positive(st, dil, groups)
    if weight.ndim != 4:
        raise RuntimeError(f"conv2d: expected weight to be 4D (out_channels, in_channels/groups, kH, kW), but got "
                           f"weight of size {list(weight.shape)}")
    pads = _resolve_padding(padding, weight._data.shape[2:], st, dil, 2, "conv2d")
    unbatched = input.ndim == 3
    x = F.unsqueeze(input, 0) if unbatched else input
    _check_shapes("conv2d", x, weight, bias, int(groups), pads, dil, 2, x.shape)
    x, weight, bias = autocast_args("lower", x, weight, bias)
    _check_dtypes("conv2d", x, weight, bias)
    out = C.Conv2d.apply(x, weight, bias, stride=st, padding=pads, dilation=dil, groups=int(groups))
    return F.squeeze(out, 0) if unbatched else out


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-D convolution over an (N, C, L) or unbatched (C, L) input, as torch.nn.functional.conv1d."""
    from ...amp.autocast_mode import autocast_args

    _check_tensors("conv1d", input, weight, bias)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: "
                           f"{list(input.shape)}")
    (s,) = _int_tuple(stride, 1, "stride", "conv1d")
    (d,) = _int_tuple(dilation, 1, "dilation", "conv1d")
    _check_positive((s,), (d,), groups)
    if weight.ndim != 3:
        raise RuntimeError(f"conv1d: expected weight to be 3D (out_channels, in_channels/groups, kernel), but got "
                           f"weight of size {list(weight.shape)}")
    pads = _resolve_padding(padding, (1, weight._data.shape[2]), (1, s), (1, d), 1, "conv1d")
    unbatched = input.ndim == 2
    x = F.unsqueeze(input, 0) if unbatched else input
    x4 = F.unsqueeze(x, 2)
    _check_shapes("conv1d", x4, weight, bias, int(groups), pads, (1, d), 1, x.shape)
    x4, w4, bias = autocast_args("lower", x4, F.unsqueeze(weight, 2), bias)
    _check_dtypes("conv1d", x4, w4, bias)
    out = C.Conv2d.apply(x4, w4, bias, stride=(1, s), padding=pads, dilation=(1, d), groups=int(groups))
    out = F.squeeze(out, 2)
    return F.squeeze(out, 0) if unbatched else out


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """2-D transposed convolution, as torch.nn.functional.conv_transpose2d (note: groups before dilation)."""
    from ...amp.autocast_mode import autocast_args

    _check_tensors("conv_transpose2d", input, weight, bias)
    if input.ndim not in (3, 4):
        raise RuntimeError(f"Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got input of "
                           f"size: {list(input.shape)}")
    st = _int_tuple(stride, 2, "stride", "conv_transpose2d")
    dil = _int_tuple(dilation, 2, "dilation", "conv_transpose2d")
    _check_positive(st, dil, groups)
    if isinstance(padding, str):
        raise TypeError(f"conv_transpose2d does not accept padding={padding!r}; give an int or a tuple")
    pad = _int_tuple(padding, 2, "padding", "conv_transpose2d")
    if any(p < 0 for p in pad):
        raise RuntimeError(f"negative padding is not supported, got padding={list(pad)}")
    opad = _int_tuple(output_padding, 2, "output_padding", "conv_transpose2d")
    return _conv_transpose(input, weight, bias, st, pad, opad, dil, int(groups), 2, autocast_args)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """1-D transposed convolution, as torch.nn.functional.conv_transpose1d."""
    from ...amp.autocast_mode import autocast_args

    _check_tensors("conv_transpose1d", input, weight, bias)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2D (unbatched) or 3D (batched) input to conv_transpose1d, but got input of "
                           f"size: {list(input.shape)}")
    (s,) = _int_tuple(stride, 1, "stride", "conv_transpose1d")
    (d,) = _int_tuple(dilation, 1, "dilation", "conv_transpose1d")
    _check_positive((s,), (d,), groups)
    (p,) = _int_tuple(padding, 1, "padding", "conv_transpose1d")
    if p < 0:
        raise RuntimeError(f"negative padding is not supported, got padding=[{p}]")
    (op,) = _int_tuple(output_padding, 1, "output_padding", "conv_transpose1d")
    unbatched = input.ndim == 2
    x = F.unsqueeze(input, 0) if unbatched else input
    if weight.ndim != 3:
        raise RuntimeError(f"conv_transpose1d: expected weight to be 3D (in_channels, out_channels/groups, kernel), "
                           f"but got weight of size {list(weight.shape)}")
    out = _conv_transpose(F.unsqueeze(x, 2), F.unsqueeze(weight, 2), bias, (1, s), (0, p), (0, op), (1, d),
                          int(groups), 1, autocast_args, shown=x.shape)
    out = F.squeeze(out, 2)
    return F.squeeze(out, 0) if unbatched else out


def _conv_transpose(input: Tensor, weight: Tensor, bias: Tensor | None, st: tuple[int, ...],
                    pad: tuple[int, ...], opad: tuple[int, ...], dil: tuple[int, ...], groups: int, nd: int,
                    autocast_args: Any, shown: Any = None) -> Tensor:
    op = f"conv_transpose{nd}d"
    unbatched = input.ndim == 3
    x = F.unsqueeze(input, 0) if unbatched else input
    shown = shown if shown is not None else x.shape
    ws = weight._data.shape
    if weight.ndim != 4:
        raise RuntimeError(f"{op}: expected weight to be 4D (in_channels, out_channels/groups, kH, kW), but got "
                           f"weight of size {list(ws)}")
    c = x._data.shape[1]
    if ws[0] != c or c % groups:
        raise RuntimeError(f"Given transposed=1, weight of size {list(ws)}, expected input{list(shown)} "
                           f"to have {ws[0]} channels, but got {c} channels instead (groups={groups})")
    if bias is not None and (bias.ndim != 1 or bias._data.shape[0] != ws[1] * groups):
        raise RuntimeError(f"Given transposed=1, weight of size {list(ws)}, expected bias to be 1-dimensional with "
                           f"{ws[1] * groups} elements, but got bias of size {list(bias.shape)} instead")
    for o, s, d in zip(opad, st, dil):
        if o < 0 or (o >= s and o >= d):
            raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got "
                               f"output_padding={list(opad[2 - nd:])}, stride={list(st[2 - nd:])}, "
                               f"dilation={list(dil[2 - nd:])}")
    h, w = x._data.shape[2:]
    for size, s, p, d, k, o in zip((h, w), st, pad, dil, ws[2:], opad):
        if (size - 1) * s - 2 * p + d * (k - 1) + o + 1 <= 0:
            raise RuntimeError(f"{op}: the output size would be non-positive for input of size {list(x.shape)}, "
                               f"weight {list(ws)}, stride {list(st)}, padding {list(pad)}; reduce the padding")
    x, weight, bias = autocast_args("lower", x, weight, bias)
    _check_dtypes(op, x, weight, bias)
    out = C.ConvTranspose2d.apply(x, weight, bias, stride=tuple(st), padding=tuple(pad), output_padding=tuple(opad),
                                  dilation=tuple(dil), groups=groups)
    return F.squeeze(out, 0) if unbatched else out
