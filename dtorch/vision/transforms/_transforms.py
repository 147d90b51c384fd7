"""The transform classes (torchvision.transforms names and behavior).

Random transforms draw from dtorch's default generator, so `dt.manual_seed(s)` makes a pipeline
reproducible (and in DataLoader workers each worker is seeded with its own seed).
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import dtorch as dt

from . import functional as F
from .functional import InterpolationMode

__all__ = [
    "CenterCrop",
    "ColorJitter",
    "Compose",
    "Grayscale",
    "Lambda",
    "Normalize",
    "PILToTensor",
    "Pad",
    "RandomCrop",
    "RandomHorizontalFlip",
    "RandomResizedCrop",
    "RandomVerticalFlip",
    "Resize",
    "ToTensor",
]


def _rng() -> np.random.Generator:
    return dt.random.default_generator.np_rng  # type: ignore[no-any-return]


class Transform:
    """Base class: a callable `img -> img` with a readable repr."""

    def __call__(self, img: Any) -> Any:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.extra_repr()})"


class Compose(Transform):
    """Apply `transforms` one after another."""

    def __init__(self, transforms: Sequence[Callable[[Any], Any]]) -> None:
        transforms = list(transforms)
        for i, t in enumerate(transforms):
            if not callable(t):
                raise TypeError(f"Compose: transform {i} is not callable ({type(t).__name__})")
        self.transforms = transforms

    def __call__(self, img: Any) -> Any:
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self) -> str:
        lines = "".join(f"\n    {t}" for t in self.transforms)
        return f"{type(self).__name__}({lines}\n)"


class ToTensor(Transform):
    """PIL image or HxWxC NumPy array -> CxHxW tensor; uint8 becomes float32 in [0, 1]."""

    def __call__(self, pic: Any) -> Any:
        return F.to_tensor(pic)


class PILToTensor(Transform):
    """PIL image -> CxHxW tensor of the same dtype, unscaled."""

    def __call__(self, pic: Any) -> Any:
        return F.pil_to_tensor(pic)


class Normalize(Transform):
    """Per-channel `(x - mean) / std` on a float tensor image (apply ToTensor first)."""

    def __init__(self, mean: Sequence[float], std: Sequence[float], inplace: bool = False) -> None:
        m = np.asarray(mean, dtype=np.float64).reshape(-1)
        s = np.asarray(std, dtype=np.float64).reshape(-1)
        if m.size == 0 or s.size == 0:
            raise ValueError("Normalize: mean and std must not be empty")
        if np.any(s == 0):
            raise ValueError(f"Normalize: std {s.tolist()} contains 0, which would divide by zero")
        self.mean = m.tolist()
        self.std = s.tolist()
        self.inplace = inplace

    def __call__(self, tensor: Any) -> Any:
        return F.normalize(tensor, self.mean, self.std, self.inplace)

    def extra_repr(self) -> str:
        return f"mean={self.mean}, std={self.std}, inplace={self.inplace}"


class Resize(Transform):
    """Resize: an int sets the shorter side (aspect ratio kept), (h, w) sets both."""

    def __init__(self, size: int | Sequence[int], interpolation: Any = InterpolationMode.BILINEAR,
                 max_size: int | None = None, antialias: bool | None = True) -> None:
        if isinstance(size, numbers.Integral):
            size_v: int | list[int] = int(size)
            ok = int(size) > 0
        elif isinstance(size, Sequence) and len(size) in (1, 2):
            size_v = [int(v) for v in size]
            ok = all(isinstance(v, numbers.Integral) and v > 0 for v in size)
        else:
            ok = False
        if not ok:
            raise ValueError(f"Resize: size must be a positive int or a (height, width) pair, got {size!r}")
        if max_size is not None and not (isinstance(size_v, int) or len(size_v) == 1):
            raise ValueError("Resize: max_size applies only when size is a single int")
        self.size = size_v
        self.interpolation = F.to_interpolation_mode(interpolation)
        self.max_size = max_size
        self.antialias = antialias

    def __call__(self, img: Any) -> Any:
        return F.resize(img, self.size, self.interpolation, self.max_size, self.antialias)

    def extra_repr(self) -> str:
        return (f"size={self.size}, interpolation={self.interpolation.value}, max_size={self.max_size}, "
                f"antialias={self.antialias}")


class CenterCrop(Transform):
    """Crop the center to `size` ((h, w) or an int for a square); smaller images are zero-padded."""

    def __init__(self, size: int | Sequence[int]) -> None:
        self.size = F.setup_size(size, "CenterCrop size")

    def __call__(self, img: Any) -> Any:
        return F.center_crop(img, self.size)

    def extra_repr(self) -> str:
        return f"size={self.size}"


class Pad(Transform):
    """Pad every side: `padding` as int, (left/right, top/bottom) or (left, top, right, bottom)."""

    def __init__(self, padding: int | Sequence[int], fill: Any = 0, padding_mode: str = "constant") -> None:
        F.parse_padding(padding)
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError(f"Pad: padding_mode must be constant, edge, reflect or symmetric, got {padding_mode!r}")
        self.padding = padding
        self.fill = fill
        self.padding_mode = padding_mode

    def __call__(self, img: Any) -> Any:
        return F.pad(img, self.padding, self.fill, self.padding_mode)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, fill={self.fill}, padding_mode={self.padding_mode}"


class RandomCrop(Transform):
    """Crop a random `size` region, after optional `padding` (and padding up to `size` if `pad_if_needed`)."""

    def __init__(self, size: int | Sequence[int], padding: int | Sequence[int] | None = None,
                 pad_if_needed: bool = False, fill: Any = 0, padding_mode: str = "constant") -> None:
        self.size = F.setup_size(size, "RandomCrop size")
        if padding is not None:
            F.parse_padding(padding)
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError("RandomCrop: padding_mode must be constant, edge, reflect or symmetric, got "
                             f"{padding_mode!r}")
        self.padding = padding
        self.pad_if_needed = pad_if_needed
        self.fill = fill
        self.padding_mode = padding_mode

    @staticmethod
    def get_params(img: Any, output_size: tuple[int, int]) -> tuple[int, int, int, int]:
        """(top, left, height, width) of a random crop of `output_size`."""
        _, h, w = F.get_dimensions(img)
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(f"RandomCrop: required crop size {(th, tw)} is larger than the input image size "
                             f"{(h, w)}; use pad_if_needed=True or a smaller size")
        if (h, w) == (th, tw):
            return 0, 0, h, w
        rng = _rng()
        i = int(rng.integers(0, h - th + 1))
        j = int(rng.integers(0, w - tw + 1))
        return i, j, th, tw

    def __call__(self, img: Any) -> Any:
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        _, h, w = F.get_dimensions(img)
        if self.pad_if_needed and w < self.size[1]:
            img = F.pad(img, [self.size[1] - w, 0], self.fill, self.padding_mode)
        if self.pad_if_needed and h < self.size[0]:
            img = F.pad(img, [0, self.size[0] - h], self.fill, self.padding_mode)
        i, j, th, tw = self.get_params(img, self.size)
        return F.crop(img, i, j, th, tw)

    def extra_repr(self) -> str:
        return f"size={self.size}, padding={self.padding}"


class RandomResizedCrop(Transform):
    """A random crop of random area (`scale`) and aspect ratio (`ratio`), resized to `size` (torchvision's
    sampler: 10 tries, then a central crop clamped to `ratio`)."""

    def __init__(self, size: int | Sequence[int], scale: tuple[float, float] = (0.08, 1.0),
                 ratio: tuple[float, float] = (3.0 / 4.0, 4.0 / 3.0),
                 interpolation: Any = InterpolationMode.BILINEAR, antialias: bool | None = True) -> None:
        self.size = F.setup_size(size, "RandomResizedCrop size")
        if not (isinstance(scale, Sequence) and len(scale) == 2 and isinstance(ratio, Sequence) and len(ratio) == 2):
            raise TypeError("RandomResizedCrop: scale and ratio must each be a (min, max) pair")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            warnings.warn("RandomResizedCrop: scale and ratio should be of kind (min, max)", stacklevel=2)
        if scale[0] < 0 or ratio[0] <= 0:
            raise ValueError(f"RandomResizedCrop: scale must be >= 0 and ratio > 0, got scale={scale}, ratio={ratio}")
        self.scale = (float(scale[0]), float(scale[1]))
        self.ratio = (float(ratio[0]), float(ratio[1]))
        self.interpolation = F.to_interpolation_mode(interpolation)
        self.antialias = antialias

    @staticmethod
    def get_params(img: Any, scale: Sequence[float], ratio: Sequence[float]) -> tuple[int, int, int, int]:
        """(top, left, height, width) of a random crop, as torchvision draws it."""
        _, height, width = F.get_dimensions(img)
        area = height * width
        rng = _rng()
        log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
        for _ in range(10):
            target_area = area * float(rng.uniform(scale[0], scale[1]))
            aspect_ratio = math.exp(float(rng.uniform(log_ratio[0], log_ratio[1])))
            w = round(math.sqrt(target_area * aspect_ratio))
            h = round(math.sqrt(target_area / aspect_ratio))
            if 0 < w <= width and 0 < h <= height:
                i = int(rng.integers(0, height - h + 1))
                j = int(rng.integers(0, width - w + 1))
                return i, j, h, w
        in_ratio = float(width) / float(height)
        if in_ratio < min(ratio):
            w = width
            h = round(w / min(ratio))
        elif in_ratio > max(ratio):
            h = height
            w = round(h * max(ratio))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def __call__(self, img: Any) -> Any:
        i, j, h, w = self.get_params(img, self.scale, self.ratio)
        return F.resized_crop(img, i, j, h, w, list(self.size), self.interpolation, self.antialias)

    def extra_repr(self) -> str:
        return (f"size={self.size}, scale={tuple(round(s, 4) for s in self.scale)}, "
                f"ratio={tuple(round(r, 4) for r in self.ratio)}, interpolation={self.interpolation.value}, "
                f"antialias={self.antialias}")


def _check_probability(p: float, who: str) -> float:
    if not isinstance(p, numbers.Real) or not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"{who}: p must be a probability in [0, 1], got {p!r}")
    return float(p)


class RandomHorizontalFlip(Transform):
    """Mirror left-right with probability `p`."""

    def __init__(self, p: float = 0.5) -> None:
        self.p = _check_probability(p, "RandomHorizontalFlip")

    def __call__(self, img: Any) -> Any:
        F.check_image(img, "RandomHorizontalFlip")
        return F.hflip(img) if float(_rng().random()) < self.p else img

    def extra_repr(self) -> str:
        return f"p={self.p}"


class RandomVerticalFlip(Transform):
    """Mirror top-bottom with probability `p`."""

    def __init__(self, p: float = 0.5) -> None:
        self.p = _check_probability(p, "RandomVerticalFlip")

    def __call__(self, img: Any) -> Any:
        F.check_image(img, "RandomVerticalFlip")
        return F.vflip(img) if float(_rng().random()) < self.p else img

    def extra_repr(self) -> str:
        return f"p={self.p}"


def _jitter_range(value: Any, name: str, center: float = 1.0, bound: tuple[float, float] = (0, math.inf),
                  clip_first_on_zero: bool = True) -> tuple[float, float] | None:
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"ColorJitter: if {name} is a single number, it must be non-negative, got {value}")
        lo, hi = center - float(value), center + float(value)
        if clip_first_on_zero:
            lo = max(lo, 0.0)
    elif isinstance(value, Sequence) and len(value) == 2:
        lo, hi = float(value[0]), float(value[1])
    else:
        raise TypeError(f"ColorJitter: {name} should be a single number or a (min, max) pair, got {value!r}")
    if not bound[0] <= lo <= hi <= bound[1]:
        raise ValueError(f"ColorJitter: {name} values should lie between {bound} (min <= max), got {(lo, hi)}")
    if lo == hi == center:
        return None
    return lo, hi


class ColorJitter(Transform):
    """Randomly change brightness, contrast, saturation and hue, applied in a random order.

    Each of brightness/contrast/saturation is a number v (factor drawn from [max(0, 1 - v), 1 + v]) or a
    (min, max) pair; hue is a number h in [0, 0.5] (shift drawn from [-h, h]) or a pair within [-0.5, 0.5].
    """

    def __init__(self, brightness: Any = 0, contrast: Any = 0, saturation: Any = 0, hue: Any = 0) -> None:
        self.brightness = _jitter_range(brightness, "brightness")
        self.contrast = _jitter_range(contrast, "contrast")
        self.saturation = _jitter_range(saturation, "saturation")
        self.hue = _jitter_range(hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    @staticmethod
    def get_params(brightness: tuple[float, float] | None, contrast: tuple[float, float] | None,
                   saturation: tuple[float, float] | None, hue: tuple[float, float] | None
                   ) -> tuple[list[int], float | None, float | None, float | None, float | None]:
        """The order (a permutation of 0..3) and the four factors (None where that jitter is off)."""
        rng = _rng()
        order = rng.permutation(4).tolist()
        factors = [None if r is None else float(rng.uniform(r[0], r[1]))
                   for r in (brightness, contrast, saturation, hue)]
        return order, factors[0], factors[1], factors[2], factors[3]

    def __call__(self, img: Any) -> Any:
        F.check_image(img, "ColorJitter")
        order, b, c, s, h = self.get_params(self.brightness, self.contrast, self.saturation, self.hue)
        for fn_id in order:
            if fn_id == 0 and b is not None:
                img = F.adjust_brightness(img, b)
            elif fn_id == 1 and c is not None:
                img = F.adjust_contrast(img, c)
            elif fn_id == 2 and s is not None:
                img = F.adjust_saturation(img, s)
            elif fn_id == 3 and h is not None:
                img = F.adjust_hue(img, h)
        return img

    def extra_repr(self) -> str:
        return (f"brightness={self.brightness}, contrast={self.contrast}, saturation={self.saturation}, "
                f"hue={self.hue}")


class Grayscale(Transform):
    """Convert to grayscale with 1 or 3 (identical) output channels."""

    def __init__(self, num_output_channels: int = 1) -> None:
        if num_output_channels not in (1, 3):
            raise ValueError(f"Grayscale: num_output_channels must be 1 or 3, got {num_output_channels}")
        self.num_output_channels = num_output_channels

    def __call__(self, img: Any) -> Any:
        F.check_image(img, "Grayscale")
        return F.rgb_to_grayscale(img, self.num_output_channels)

    def extra_repr(self) -> str:
        return f"num_output_channels={self.num_output_channels}"


class Lambda(Transform):
    """Apply a user function as a transform."""

    def __init__(self, lambd: Callable[[Any], Any]) -> None:
        if not callable(lambd):
            raise TypeError(f"Lambda: argument should be callable, got {type(lambd).__name__}")
        self.lambd = lambd

    def __call__(self, img: Any) -> Any:
        return self.lambd(img)

    def extra_repr(self) -> str:
        return getattr(self.lambd, "__name__", repr(self.lambd))
