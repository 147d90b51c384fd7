"""Image transforms with torchvision's names and behavior; `functional` holds the plain functions."""

from . import functional
from ._transforms import (
    CenterCrop,
    ColorJitter,
    Compose,
    Grayscale,
    Lambda,
    Normalize,
    Pad,
    PILToTensor,
    RandomCrop,
    RandomHorizontalFlip,
    RandomResizedCrop,
    RandomVerticalFlip,
    Resize,
    ToTensor,
    Transform,
)
from .functional import InterpolationMode

__all__ = [
    "CenterCrop",
    "ColorJitter",
    "Compose",
    "Grayscale",
    "InterpolationMode",
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
    "Transform",
    "functional",
]
