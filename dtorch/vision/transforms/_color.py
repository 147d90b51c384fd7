"""Color adjustments for PIL images (Pillow's ImageEnhance, as torchvision) and image tensors (NumPy).

Tensor images are float in [0, 1] or uint8 in [0, 255], shaped [..., C, H, W] with C = 1 or 3.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PIL import Image, ImageEnhance

import dtorch as dt

_GRAY_WEIGHTS = (0.2989, 0.587, 0.114)


def _is_pil(img: Any) -> bool:
    return isinstance(img, Image.Image)


def _tensor_array(img: Any, who: str) -> np.ndarray:
    if not dt.is_tensor(img):
        raise TypeError(f"{who}: expected a PIL Image or a dt.Tensor image, got {type(img).__name__}")
    arr = img.detach().numpy()
    if arr.ndim < 3 or arr.shape[-3] not in (1, 3):
        raise ValueError(f"{who}: expected a tensor image shaped [..., C, H, W] with 1 or 3 channels, got shape "
                         f"{arr.shape}")
    return arr


def _bound(arr: np.ndarray) -> float:
    return 1.0 if arr.dtype.kind == "f" else float(np.iinfo(arr.dtype).max)


def _blend(img1: np.ndarray, img2: np.ndarray | float, ratio: float) -> np.ndarray:
    bound = _bound(img1)
    out = np.clip(ratio * img1.astype(np.float32) + (1.0 - ratio) * np.asarray(img2, dtype=np.float32), 0, bound)
    return out.astype(img1.dtype)


def _gray_array(arr: np.ndarray) -> np.ndarray:
    if arr.shape[-3] == 1:
        return arr
    r, g, b = (arr[..., i, :, :].astype(np.float32) for i in range(3))
    gray = _GRAY_WEIGHTS[0] * r + _GRAY_WEIGHTS[1] * g + _GRAY_WEIGHTS[2] * b
    return gray.astype(arr.dtype)[..., None, :, :]


def _check_factor(factor: float, name: str) -> None:
    if factor < 0:
        raise ValueError(f"{name} factor must be non-negative, got {factor}")


def adjust_brightness(img: Any, brightness_factor: float) -> Any:
    """0 gives black, 1 the original image, 2 twice the brightness."""
    _check_factor(brightness_factor, "brightness")
    if _is_pil(img):
        return ImageEnhance.Brightness(img).enhance(brightness_factor)
    arr = _tensor_array(img, "adjust_brightness")
    return dt.from_numpy(_blend(arr, 0.0, brightness_factor))


def adjust_contrast(img: Any, contrast_factor: float) -> Any:
    """0 gives a solid gray image (the mean), 1 the original, 2 twice the contrast."""
    _check_factor(contrast_factor, "contrast")
    if _is_pil(img):
        return ImageEnhance.Contrast(img).enhance(contrast_factor)
    arr = _tensor_array(img, "adjust_contrast")
    mean = _gray_array(arr).astype(np.float32).mean(axis=(-3, -2, -1), keepdims=True)
    return dt.from_numpy(_blend(arr, mean, contrast_factor))


def adjust_saturation(img: Any, saturation_factor: float) -> Any:
    """0 gives a grayscale image, 1 the original, 2 twice the saturation."""
    _check_factor(saturation_factor, "saturation")
    if _is_pil(img):
        return ImageEnhance.Color(img).enhance(saturation_factor)
    arr = _tensor_array(img, "adjust_saturation")
    if arr.shape[-3] == 1:
        return img
    return dt.from_numpy(_blend(arr, _gray_array(arr), saturation_factor))


def _rgb_to_hsv(rgb: np.ndarray) -> np.ndarray:
    r, g, b = rgb[..., 0, :, :], rgb[..., 1, :, :], rgb[..., 2, :, :]
    maxc = np.maximum(np.maximum(r, g), b)
    minc = np.minimum(np.minimum(r, g), b)
    eqc = maxc == minc
    cr = maxc - minc
    s = cr / np.where(eqc, 1.0, maxc)
    div = np.where(eqc, 1.0, cr)
    rc, gc, bc = (maxc - r) / div, (maxc - g) / div, (maxc - b) / div
    hr = (maxc == r) * (bc - gc)
    hg = ((maxc == g) & (maxc != r)) * (2.0 + rc - bc)
    hb = ((maxc != g) & (maxc != r)) * (4.0 + gc - rc)
    h = np.fmod((hr + hg + hb) / 6.0 + 1.0, 1.0)
    return np.stack((h, s, maxc), axis=-3)


def _hsv_to_rgb(hsv: np.ndarray) -> np.ndarray:
    h, s, v = hsv[..., 0, :, :], hsv[..., 1, :, :], hsv[..., 2, :, :]
    i = np.floor(h * 6.0)
    f = h * 6.0 - i
    i = i.astype(np.int32) % 6
    p = np.clip(v * (1.0 - s), 0.0, 1.0)
    q = np.clip(v * (1.0 - s * f), 0.0, 1.0)
    t = np.clip(v * (1.0 - s * (1.0 - f)), 0.0, 1.0)
    r = np.choose(i, (v, q, p, p, t, v))
    g = np.choose(i, (t, v, v, q, p, p))
    b = np.choose(i, (p, p, t, v, v, q))
    return np.stack((r, g, b), axis=-3)


def adjust_hue(img: Any, hue_factor: float) -> Any:
    """Rotate the hue by `hue_factor` of a full turn (in [-0.5, 0.5]); grayscale images are unchanged."""
    if not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f"hue_factor must lie in [-0.5, 0.5], got {hue_factor}")
    if _is_pil(img):
        mode = img.mode
        if mode in ("L", "1", "I", "F"):
            return img
        h, s, v = img.convert("HSV").split()
        shift = np.uint8(int(hue_factor * 255) % 256)
        np_h = np.asarray(h, dtype=np.uint8) + shift  # wraps around modulo 256, as a hue turn should
        h = Image.frombytes("L", img.size, np.ascontiguousarray(np_h).tobytes())
        return Image.merge("HSV", (h, s, v)).convert(mode)
    arr = _tensor_array(img, "adjust_hue")
    if arr.shape[-3] == 1:
        return img
    is_int = arr.dtype.kind != "f"
    work = arr.astype(np.float32) / np.float32(_bound(arr)) if is_int else arr.astype(np.float32)
    hsv = _rgb_to_hsv(work)
    hsv[..., 0, :, :] = np.mod(hsv[..., 0, :, :] + hue_factor, 1.0)
    rgb = _hsv_to_rgb(hsv)
    if is_int:
        rgb = rgb * np.float32(_bound(arr) + 1 - 1e-3)
    return dt.from_numpy(np.ascontiguousarray(rgb.astype(arr.dtype)))


def rgb_to_grayscale(img: Any, num_output_channels: int = 1) -> Any:
    """Luma (ITU-R 601-2) grayscale, with 1 or 3 identical output channels."""
    if num_output_channels not in (1, 3):
        raise ValueError(f"num_output_channels must be 1 or 3, got {num_output_channels}")
    if _is_pil(img):
        gray = img.convert("L")
        return Image.merge("RGB", (gray, gray, gray)) if num_output_channels == 3 else gray
    arr = _tensor_array(img, "rgb_to_grayscale")
    gray = _gray_array(arr)
    if num_output_channels == 3:
        gray = np.broadcast_to(gray, (*gray.shape[:-3], 3, *gray.shape[-2:]))
    return dt.from_numpy(np.ascontiguousarray(gray))
