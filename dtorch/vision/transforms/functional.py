"""Image functions behind the transforms: conversion, geometry and normalization.

Images are PIL images or `dt.Tensor`s shaped `[..., C, H, W]`; geometric functions accept both and
return the same kind. Color adjustments live in `_color.py` and are re-exported here.
"""

from __future__ import annotations

import numbers
import sys
from collections.abc import Sequence
from enum import Enum
from typing import Any, cast

import numpy as np
from PIL import Image

import dtorch as dt

from ._color import (
    adjust_brightness,
    adjust_contrast,
    adjust_hue,
    adjust_saturation,
    rgb_to_grayscale,
)

__all__ = [
    "InterpolationMode",
    "adjust_brightness",
    "adjust_contrast",
    "adjust_hue",
    "adjust_saturation",
    "center_crop",
    "crop",
    "get_dimensions",
    "get_image_num_channels",
    "get_image_size",
    "hflip",
    "normalize",
    "pad",
    "pil_to_tensor",
    "resize",
    "resized_crop",
    "rgb_to_grayscale",
    "to_tensor",
    "vflip",
]


class InterpolationMode(Enum):
    """How `resize` fills in pixels (the torchvision names)."""

    NEAREST = "nearest"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


_PIL_FILTERS = {
    InterpolationMode.NEAREST: Image.Resampling.NEAREST,
    InterpolationMode.BILINEAR: Image.Resampling.BILINEAR,
    InterpolationMode.BICUBIC: Image.Resampling.BICUBIC,
    InterpolationMode.BOX: Image.Resampling.BOX,
    InterpolationMode.HAMMING: Image.Resampling.HAMMING,
    InterpolationMode.LANCZOS: Image.Resampling.LANCZOS,
}
_FROM_PIL = {int(v): k for k, v in _PIL_FILTERS.items()}


def to_interpolation_mode(value: Any) -> InterpolationMode:
    """Accept an `InterpolationMode`, its name ("bilinear") or a PIL resampling constant."""
    if isinstance(value, InterpolationMode):
        return value
    if isinstance(value, str):
        try:
            return InterpolationMode(value.lower())
        except ValueError:
            pass
    elif isinstance(value, (int, np.integer)) and int(value) in _FROM_PIL:
        return _FROM_PIL[int(value)]
    names = ", ".join(m.value for m in InterpolationMode)
    raise ValueError(f"interpolation must be an InterpolationMode or one of {names}, got {value!r}")


def _is_pil(img: Any) -> bool:
    return isinstance(img, Image.Image)


def check_image(img: Any, who: str) -> None:
    """Raise a TypeError naming `who` unless `img` is a PIL image or an image tensor `[..., C, H, W]`."""
    if _is_pil(img):
        return
    if dt.is_tensor(img):
        if len(img.shape) < 2:
            raise ValueError(f"{who}: expected an image tensor shaped [..., C, H, W] or [H, W], got shape "
                             f"{tuple(img.shape)}")
        return
    hint = " (convert NumPy arrays with ToTensor() first)" if isinstance(img, np.ndarray) else ""
    raise TypeError(f"{who}: expected a PIL Image or a dt.Tensor image, got {type(img).__name__}{hint}")


def _array(img: Any) -> np.ndarray:
    return img.detach().numpy()  # shares memory with the tensor


def _wrap(arr: np.ndarray) -> Any:
    return dt.from_numpy(np.ascontiguousarray(arr))


def get_dimensions(img: Any) -> list[int]:
    """[channels, height, width] of a PIL image or an image tensor."""
    check_image(img, "get_dimensions")
    if _is_pil(img):
        return [len(img.getbands()), img.height, img.width]
    shape = tuple(img.shape)
    channels = 1 if len(shape) == 2 else shape[-3]
    return [channels, shape[-2], shape[-1]]


def get_image_size(img: Any) -> list[int]:
    """[width, height], as torchvision returns it."""
    _, h, w = get_dimensions(img)
    return [w, h]


def get_image_num_channels(img: Any) -> int:
    return get_dimensions(img)[0]


# ----- conversion -----

def to_tensor(pic: Any) -> Any:
    """PIL image or HxWxC / HxW NumPy array -> CxHxW tensor; uint8 data becomes float32 in [0, 1]."""
    if _is_pil(pic):
        dtypes = {"I": np.int32, "I;16" if sys.byteorder == "little" else "I;16B": np.int16, "F": np.float32}
        arr = np.array(pic, dtype=dtypes.get(pic.mode, np.uint8), copy=True)
        if pic.mode == "1":
            arr = arr * np.uint8(255)
        arr = arr.reshape(pic.height, pic.width, len(pic.getbands()))
    elif isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"ToTensor: a NumPy image must be HxW or HxWxC, got {pic.ndim} dimensions "
                             f"(shape {pic.shape})")
        arr = pic[:, :, None] if pic.ndim == 2 else pic
    elif dt.is_tensor(pic):
        raise TypeError("ToTensor: the input is already a dt.Tensor; drop ToTensor() from the pipeline (or use "
                        "it only on PIL images and NumPy arrays)")
    else:
        raise TypeError(f"ToTensor: expected a PIL Image or a NumPy array, got {type(pic).__name__}")
    chw = np.ascontiguousarray(arr.transpose(2, 0, 1))
    if chw.dtype == np.uint8:
        chw = chw.astype(np.float32) / np.float32(255)
    return dt.from_numpy(chw)


def pil_to_tensor(pic: Any) -> Any:
    """PIL image -> CxHxW tensor of its own dtype (uint8 for 8-bit modes), values unscaled."""
    if not _is_pil(pic):
        raise TypeError(f"PILToTensor: expected a PIL Image, got {type(pic).__name__}")
    arr = np.array(pic, copy=True)
    if arr.dtype == np.bool_:
        arr = arr.astype(np.uint8)
    elif arr.dtype.kind == "u" and arr.dtype.itemsize > 1:
        arr = arr.astype(np.int32)  # dtorch has no uint16/uint32: widen to a signed type that holds them
    arr = arr.reshape(pic.height, pic.width, len(pic.getbands()))
    return dt.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))


def normalize(tensor: Any, mean: Sequence[float], std: Sequence[float], inplace: bool = False) -> Any:
    """(tensor - mean) / std per channel, for a float image tensor shaped [..., C, H, W]."""
    if _is_pil(tensor) or isinstance(tensor, np.ndarray):
        what = "a PIL Image" if _is_pil(tensor) else "a NumPy array"
        raise TypeError(f"Normalize: expected a dt.Tensor image, got {what}; apply ToTensor() before Normalize "
                        "in the pipeline")
    if not dt.is_tensor(tensor):
        raise TypeError(f"Normalize: expected a dt.Tensor image, got {type(tensor).__name__}")
    if not tensor.dtype.is_floating_point:
        raise TypeError(f"Normalize: expected a floating point tensor, got {tensor.dtype}; convert it with "
                        ".float() or ToTensor()")
    if len(tensor.shape) < 3:
        raise ValueError(f"Normalize: expected a tensor image of size (..., C, H, W), got shape "
                         f"{tuple(tensor.shape)}")
    arr = _array(tensor)
    channels = arr.shape[-3]
    m = np.asarray(mean, dtype=arr.dtype).reshape(-1)
    s = np.asarray(std, dtype=arr.dtype).reshape(-1)
    for name, v in (("mean", m), ("std", s)):
        if v.size not in (1, channels):
            raise ValueError(f"Normalize: {name} has {v.size} values but the image has {channels} channels")
    if np.any(s == 0):
        raise ValueError(f"Normalize: std {list(np.asarray(std).reshape(-1))} contains 0 (after conversion to "
                         f"{arr.dtype}), which would divide by zero")
    m3, s3 = m.reshape(-1, 1, 1), s.reshape(-1, 1, 1)
    if inplace:
        np.subtract(arr, m3, out=arr)
        np.divide(arr, s3, out=arr)
        return tensor
    return dt.from_numpy(((arr - m3) / s3).astype(arr.dtype, copy=False))


# ----- geometry -----

def _pil_resize_channels(arr: np.ndarray, size: tuple[int, int], resample: Image.Resampling) -> np.ndarray:
    """Resize each HxW plane of `arr` ([..., H, W]) with Pillow; uint8 stays uint8, the rest goes via float32."""
    h, w = size
    planes = arr.reshape(-1, arr.shape[-2], arr.shape[-1])
    out_dtype = arr.dtype
    work = planes if planes.dtype == np.uint8 else planes.astype(np.float32)
    out = np.stack([np.asarray(Image.fromarray(np.ascontiguousarray(p)).resize((w, h), resample))
                    for p in work]) if len(work) else np.empty((0, h, w), work.dtype)
    if out_dtype.kind in "iub" and out_dtype != np.uint8:
        out = np.round(out)
    return out.astype(out_dtype, copy=False).reshape(*arr.shape[:-2], h, w)


def compute_resized_output_size(height: int, width: int, size: Sequence[int],
                                max_size: int | None = None) -> list[int]:
    """torchvision's rule: one number resizes the shorter side keeping the aspect ratio; (h, w) is exact."""
    if len(size) == 2:
        if max_size is not None:
            raise ValueError("Resize: max_size applies only when size is a single int; got size="
                             f"{list(size)} and max_size={max_size}")
        return [int(size[0]), int(size[1])]
    short, long = (width, height) if width <= height else (height, width)
    new_short, new_long = int(size[0]), int(int(size[0]) * long / short)
    if max_size is not None:
        if max_size <= new_short:
            raise ValueError(f"Resize: max_size = {max_size} must be strictly greater than the requested size "
                             f"for the smaller edge = {new_short}")
        if new_long > max_size:
            new_short, new_long = int(max_size * new_short / new_long), max_size
    new_w, new_h = (new_short, new_long) if width <= height else (new_long, new_short)
    return [new_h, new_w]


def resize(img: Any, size: int | Sequence[int], interpolation: Any = InterpolationMode.BILINEAR,
           max_size: int | None = None, antialias: bool | None = True) -> Any:
    """Resize to `size`: an int (or [int]) sets the shorter side, (h, w) sets both.

    Tensors are resized plane by plane with Pillow's filters (which antialias when shrinking, as
    torchvision's `antialias=True`).
    """
    check_image(img, "resize")
    mode = to_interpolation_mode(interpolation)
    raw: list[Any] = [size] if isinstance(size, numbers.Integral) else list(cast(Sequence[int], size))
    if len(raw) not in (1, 2) or not all(isinstance(v, numbers.Integral) and int(v) > 0 for v in raw):
        raise ValueError(f"Resize: size must be a positive int or a (height, width) pair, got {size!r}")
    _, h, w = get_dimensions(img)
    out_h, out_w = compute_resized_output_size(h, w, [int(v) for v in raw], max_size)
    if (out_h, out_w) == (h, w):
        return img.copy() if _is_pil(img) else img
    if _is_pil(img):
        return img.resize((out_w, out_h), _PIL_FILTERS[mode])
    return _wrap(_pil_resize_channels(_array(img), (out_h, out_w), _PIL_FILTERS[mode]))


def crop(img: Any, top: int, left: int, height: int, width: int) -> Any:
    """The `height` x `width` region at (top, left); parts outside the image are zero."""
    check_image(img, "crop")
    if _is_pil(img):
        return img.crop((left, top, left + width, top + height))
    arr = _array(img)
    h, w = arr.shape[-2:]
    if top < 0 or left < 0 or top + height > h or left + width > w:
        pad_spec = [max(-left, 0), max(-top, 0), max(left + width - w, 0), max(top + height - h, 0)]
        arr = _pad_array(arr, pad_spec, 0, "constant")
        top, left = max(top, 0), max(left, 0)
    return _wrap(arr[..., top:top + height, left:left + width])


def center_crop(img: Any, output_size: int | Sequence[int]) -> Any:
    """The central region of `output_size`; smaller images are zero-padded first (as torchvision)."""
    th, tw = setup_size(output_size, "CenterCrop size")
    _, h, w = get_dimensions(img)
    if tw > w or th > h:
        padding = [(tw - w) // 2 if tw > w else 0, (th - h) // 2 if th > h else 0,
                   (tw - w + 1) // 2 if tw > w else 0, (th - h + 1) // 2 if th > h else 0]
        img = pad(img, padding, fill=0)
        _, h, w = get_dimensions(img)
        if (th, tw) == (h, w):
            return img
    top = round((h - th) / 2.0)
    left = round((w - tw) / 2.0)
    return crop(img, top, left, th, tw)


def resized_crop(img: Any, top: int, left: int, height: int, width: int, size: int | Sequence[int],
                 interpolation: Any = InterpolationMode.BILINEAR, antialias: bool | None = True) -> Any:
    return resize(crop(img, top, left, height, width), size, interpolation, antialias=antialias)


def hflip(img: Any) -> Any:
    check_image(img, "hflip")
    if _is_pil(img):
        return img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    return _wrap(_array(img)[..., ::-1])


def vflip(img: Any) -> Any:
    check_image(img, "vflip")
    if _is_pil(img):
        return img.transpose(Image.Transpose.FLIP_TOP_BOTTOM)
    return _wrap(_array(img)[..., ::-1, :])


def setup_size(size: Any, what: str) -> tuple[int, int]:
    """An int or a one/two-element sequence -> (h, w)."""
    if isinstance(size, numbers.Integral):
        pair = (int(size), int(size))
    elif isinstance(size, Sequence) and len(size) == 1:
        pair = (int(size[0]), int(size[0]))
    elif isinstance(size, Sequence) and len(size) == 2:
        pair = (int(size[0]), int(size[1]))
    else:
        raise ValueError(f"{what} must be an int or a (height, width) pair, got {size!r}")
    if pair[0] <= 0 or pair[1] <= 0:
        raise ValueError(f"{what} must be positive, got {size!r}")
    return pair


def parse_padding(padding: Any) -> list[int]:
    """int -> all sides; (lr, tb); (left, top, right, bottom)."""
    if isinstance(padding, numbers.Integral):
        p = [int(padding)] * 4
    elif isinstance(padding, Sequence) and len(padding) in (1, 2, 4):
        vals = [int(v) for v in padding]
        p = vals * 4 if len(vals) == 1 else [vals[0], vals[1], vals[0], vals[1]] if len(vals) == 2 else vals
    else:
        raise ValueError(f"padding must be an int or a sequence of 1, 2 or 4 ints, got {padding!r}")
    if any(v < 0 for v in p):
        raise ValueError(f"padding must be non-negative, got {padding!r}")
    return p


_PAD_MODES = ("constant", "edge", "reflect", "symmetric")


def _pad_array(arr: np.ndarray, ltrb: list[int], fill: Any, mode: str) -> np.ndarray:
    left, top, right, bottom = ltrb
    widths = [(0, 0)] * (arr.ndim - 2) + [(top, bottom), (left, right)]
    if mode != "constant":
        return np.pad(arr, widths, mode=cast(Any, mode))
    if isinstance(fill, Sequence) and not isinstance(fill, str):
        if arr.ndim < 3 or len(fill) not in (1, arr.shape[-3]):
            raise ValueError(f"pad: fill {fill!r} must be one number or one per channel")
        out = np.pad(arr, widths, mode="constant")
        vals = np.asarray(fill, dtype=arr.dtype).reshape(-1, 1, 1)
        mask = np.ones(arr.shape[-2:], dtype=bool)
        mask = np.pad(mask, [(top, bottom), (left, right)], constant_values=False)
        return np.where(mask, out, vals)
    return np.pad(arr, widths, mode="constant", constant_values=np.asarray(fill).astype(arr.dtype))


def pad(img: Any, padding: Any, fill: Any = 0, padding_mode: str = "constant") -> Any:
    """Pad every side (`padding` as int, (lr, tb) or (l, t, r, b)) with `fill` or by edge/reflect/symmetric."""
    check_image(img, "pad")
    if padding_mode not in _PAD_MODES:
        raise ValueError(f"pad: padding_mode must be one of {', '.join(_PAD_MODES)}, got {padding_mode!r}")
    ltrb = parse_padding(padding)
    if not _is_pil(img):
        return _wrap(_pad_array(_array(img), ltrb, fill, padding_mode))
    if padding_mode == "constant" and img.mode != "P":
        bands = len(img.getbands())
        color = tuple(fill) if isinstance(fill, Sequence) else (fill,) * bands
        if len(color) == 1 and bands > 1:
            color = color * bands
        if len(color) != bands:
            raise ValueError(f"pad: fill {fill!r} must be one number or {bands} numbers for a {img.mode} image")
        color_arg: Any = color[0] if bands == 1 else color
        if img.mode in ("F", "I"):
            color_arg = float(color[0]) if img.mode == "F" else int(color[0])
        out = Image.new(img.mode, (img.width + ltrb[0] + ltrb[2], img.height + ltrb[1] + ltrb[3]), color_arg)
        out.paste(img, (ltrb[0], ltrb[1]))
        return out
    arr = np.asarray(img)
    hwc = arr if arr.ndim == 3 else arr[:, :, None]
    padded = _pad_array(hwc.transpose(2, 0, 1), ltrb, fill if padding_mode == "constant" else 0, padding_mode)
    padded = np.ascontiguousarray(padded.transpose(1, 2, 0))
    size = (padded.shape[1], padded.shape[0])
    out = Image.fromarray(padded[:, :, 0]) if img.mode == "1" else Image.frombytes(img.mode, size, padded.tobytes())
    if img.mode == "P" and img.getpalette() is not None:
        out.putpalette(img.getpalette())
    return out
