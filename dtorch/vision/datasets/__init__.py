"""Data sets for ``dtorch.vision``: the bundled 8x8 digits and folder-of-images readers."""

from .digits import Digits, write_digits_image_folder
from .folder import DatasetFolder, ImageFolder

__all__ = ["DatasetFolder", "Digits", "ImageFolder", "write_digits_image_folder"]
