"""Functional resampling: `interpolate` (nearest, nearest-exact, linear, bilinear, area) and `upsample`.

Output sizes and scale factors follow torch.nn.functional.interpolate, including
recompute_scale_factor: with a scale factor and recompute_scale_factor None/False the kernels map
positions with that factor; with True (and always for an explicit size) they use in / out.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import _functions as F
from ..._prims import upsampling as U
from ...tensor import Tensor

__all__ = ["interpolate", "upsample", "upsample_bilinear", "upsample_nearest"]

_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")
_LINEAR = {"linear": 1, "bilinear": 2, "trilinear": 3, "bicubic": 2}


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _sizes(x: Tensor, size: Any, scale_factor: Any, recompute_scale_factor: bool | None,
           dim: int) -> tuple[tuple[int, ...], tuple[float | None, ...]]:
    """(output size, scale factors handed to the kernel) per spatial dim, as PyTorch computes them."""
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    spatial = tuple(x.shape[2:])
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input "
                                 f"with spatial dimensions of {list(spatial)} and output size of {list(size)}. Please "
                                 f"provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, "
                                 f"...,oK) format.")
            out = tuple(size)
        else:
            out = (size,) * dim
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in out):
            raise TypeError(f"expected size to be an int or a tuple of ints, but got {size!r}")
        return tuple(int(v) for v in out), (None,) * dim
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if isinstance(scale_factor, (list, tuple)):
        if len(scale_factor) != dim:
            raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {list(spatial)} and scale_factor of shape "
                             f"{list(scale_factor)}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                             f"scale_factor in (s1, s2, ...,sK) format.")
        scales = tuple(scale_factor)
    else:
        scales = (scale_factor,) * dim
    if not all(_is_num(s) for s in scales):
        raise TypeError(f"expected scale_factor to be a float or a tuple of floats, but got {scale_factor!r}")
    out = tuple(math.floor(float(n) * float(s)) for n, s in zip(spatial, scales))
    if recompute_scale_factor:
        return out, (None,) * dim
    return out, tuple(float(s) for s in scales)


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resample (N, C, L) or (N, C, H, W) input to `size` or by `scale_factor`, as PyTorch's interpolate."""
    if not isinstance(input, Tensor):
        raise TypeError(f"interpolate(): argument 'input' must be Tensor, not {type(input).__name__}")
    if mode not in _MODES:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    if mode in _LINEAR:
        align_corners = bool(align_corners) if align_corners is not None else False
    elif align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if antialias:
        raise NotImplementedError("interpolate(antialias=True) is not supported by dtorch; use antialias=False")
    if input.ndim not in (3, 4):
        raise NotImplementedError(f"Input Error: dtorch supports 3D (N, C, L) and 4D (N, C, H, W) input for "
                                  f"interpolate, got {input.ndim}D input of size {list(input.shape)}")
    dim = input.ndim - 2
    if mode in _LINEAR and _LINEAR[mode] != dim:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {_LINEAR[mode] + 2}D input")
    if mode == "bicubic":
        raise NotImplementedError("interpolate(mode='bicubic') is not supported by dtorch yet; use 'bilinear'")
    if mode == "area" and size is None:
        recompute_scale_factor = True
    out_size, scales = _sizes(input, size, scale_factor, recompute_scale_factor, dim)
    if any(s <= 0 for s in out_size) or any(s == 0 for s in input.shape[2:]):
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input size "
                           f"{list(input.shape[2:])} and output size {list(out_size)}")
    if mode == "area":
        from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d

        return adaptive_avg_pool2d(input, out_size) if dim == 2 else adaptive_avg_pool1d(input, out_size)
    x = F.unsqueeze(input, 2) if dim == 1 else input
    size2 = (1,) + out_size if dim == 1 else out_size
    scales2 = (None,) + scales if dim == 1 else scales
    if mode in ("nearest", "nearest-exact"):
        out = U.UpsampleNearest2d.apply(x, output_size=size2, scales=scales2, exact=mode == "nearest-exact")
    else:
        if not input.is_floating_point():
            raise NotImplementedError(f'"upsample_{mode}" not implemented for {input.dtype}; convert the input '
                                      f"with .float() first")
        out = U.UpsampleBilinear2d.apply(x, output_size=size2, scales=scales2, align_corners=align_corners)
    return F.squeeze(out, 2) if dim == 1 else out


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """Deprecated alias of `interpolate`, kept for PyTorch compatibility."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: `interpolate(..., mode='nearest')`."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: `interpolate(..., mode='bilinear', align_corners=True)`."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
