"""Computer-vision helpers (the torchvision API): `transforms` and `datasets`."""

from . import datasets, transforms

__all__ = ["datasets", "transforms"]
