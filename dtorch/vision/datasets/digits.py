"""The 8x8 handwritten digits data set (scikit-learn's ``load_digits``), shipped with dtorch.

1,797 grey images of the digits 0..9, 8x8 pixels with values 0..16. The data lives in
``digits.npz`` next to this file (exported once by ``scripts/export_digits.py``), so nothing is
downloaded and nothing is unpickled.

The split is fixed: the first 1,437 indices (80 %, rounded down) of
``np.random.RandomState(0).permutation(1797)`` are the train split, the other 360 the test split.
It is stored in the file as a mask. Within a split, samples keep their original order.
"""

from __future__ import annotations

import operator
import os
import shutil
import tempfile
from collections.abc import Callable
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from dtorch.data import Dataset

__all__ = ["Digits", "write_digits_image_folder"]

NUM_SAMPLES = 1797
NUM_TRAIN = 1437
NUM_TEST = NUM_SAMPLES - NUM_TRAIN
CLASSES = [str(d) for d in range(10)]
_SPLITS = ("train", "test", "all")


@lru_cache(maxsize=1)
def _load_arrays() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Read (images, labels, train_mask) from the packaged ``digits.npz``, once per process."""
    source = resources.files("dtorch.vision.datasets").joinpath("digits.npz")
    with source.open("rb") as f, np.load(f, allow_pickle=False) as npz:
        images = np.ascontiguousarray(npz["images"], dtype=np.uint8)
        labels = np.asarray(npz["labels"], dtype=np.int64)
        train_mask = np.asarray(npz["train_mask"], dtype=bool)
    for array in (images, labels, train_mask):
        array.setflags(write=False)
    return images, labels, train_mask


def _check_bool(name: str, value: object) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        # ValueError, not TypeError: every bad argument of this module is a ValueError.
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _check_size(size: object) -> int:
    if isinstance(size, (bool, np.bool_)) or not isinstance(size, (int, np.integer)) or size < 1:
        raise ValueError(f"size must be a positive int (8 keeps the original 8x8), got {size!r}")
    return int(size)


def _check_callable(name: str, value: object) -> None:
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be a callable or None, got {type(value).__name__}")


def _split_indices(split: str) -> np.ndarray:
    _, _, train_mask = _load_arrays()
    if split == "train":
        return np.flatnonzero(train_mask)
    if split == "test":
        return np.flatnonzero(~train_mask)
    return np.arange(train_mask.shape[0])


def _to_image(pixels: np.ndarray, size: int, rgb: bool) -> Image.Image:
    """Scale 0..16 to 0..255 (rounded), resize bilinearly if needed, convert to L or RGB."""
    scaled = (pixels.astype(np.uint16) * 255 + 8) // 16
    image = Image.fromarray(scaled.astype(np.uint8))  # 2-D uint8 -> mode "L"
    if size != pixels.shape[0]:
        image = image.resize((size, size), Image.Resampling.BILINEAR)
    return image.convert("RGB") if rgb else image


class Digits(Dataset[tuple[Any, Any]]):
    """The 8x8 digits data set as PIL images, like ``torchvision.datasets.MNIST``.

    Args:
        train: ``True`` for the train split (1,437 samples), ``False`` for the test split (360),
            ``None`` for all 1,797 samples. The split is fixed (see the module docstring).
        transform: applied to the PIL image, e.g. ``dtorch.vision.transforms.ToTensor()``.
        target_transform: applied to the int label.
        size: side of the returned square image; 8 keeps the original, any other value resizes
            bilinearly.
        rgb: return mode ``"RGB"`` images (three equal channels) instead of ``"L"``.

    Attributes:
        classes: ``["0", ..., "9"]``.
        targets: the labels of this split, as a list of ints.
        data: the raw images of this split, a uint8 array of shape (N, 8, 8) with values 0..16.
    """

    def __init__(
        self,
        train: bool | None = True,
        transform: Callable[[Any], Any] | None = None,
        target_transform: Callable[[int], Any] | None = None,
        size: int = 8,
        rgb: bool = False,
    ) -> None:
        if train is None:
            split = "all"
        elif isinstance(train, (bool, np.bool_)):
            split = "train" if train else "test"
        else:
            raise ValueError(
                f"train must be True (train split), False (test split) or None (all), got {train!r}"
            )
        _check_callable("transform", transform)
        _check_callable("target_transform", target_transform)
        self.train = train
        self.split = split
        self.transform = transform
        self.target_transform = target_transform
        self.size = _check_size(size)
        self.rgb = _check_bool("rgb", rgb)
        self.classes = list(CLASSES)

        images, labels, _ = _load_arrays()
        self.indices = _split_indices(split)
        self.data: np.ndarray = images[self.indices]
        self.targets: list[int] = labels[self.indices].tolist()

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        n = len(self.targets)
        try:
            i = operator.index(index)
        except TypeError:
            raise TypeError(
                f"Digits indices must be integers, got {type(index).__name__}"
            ) from None
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of range for Digits({self.split!r}) of length {n}")
        image: Any = _to_image(self.data[i], self.size, self.rgb)
        target: Any = self.targets[i]
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def __repr__(self) -> str:
        return (
            f"Digits(split={self.split!r}, samples={len(self)}, size={self.size}, "
            f"mode={'RGB' if self.rgb else 'L'})"
        )


def _tree_matches(
    folder: Path, indices: np.ndarray, labels: np.ndarray, size: int, rgb: bool
) -> bool:
    """True if ``folder`` already holds exactly the expected ImageFolder tree."""
    expected: dict[str, set[str]] = {c: set() for c in CLASSES}
    for i in indices.tolist():
        expected[CLASSES[labels[i]]].add(f"{i:04d}.png")
    try:
        found_classes = {p.name for p in folder.iterdir() if p.is_dir()}
        if found_classes != set(expected):
            return False
        for name, files in expected.items():
            if {p.name for p in (folder / name).iterdir()} != files:
                return False
        probe = folder / CLASSES[labels[indices[0]]] / f"{indices[0]:04d}.png"
        with Image.open(probe) as image:
            return image.size == (size, size) and image.mode == ("RGB" if rgb else "L")
    except OSError:
        return False


def _write_png(image: Image.Image, path: Path) -> None:
    with open(path, "wb") as f:
        image.save(f, format="PNG")
        f.flush()
        os.fsync(f.fileno())


def write_digits_image_folder(
    root: str | os.PathLike[str],
    size: int = 32,
    rgb: bool = True,
    split: str = "train",
) -> Path:
    """Write a digits split as an ImageFolder tree ``root/<split>/<class>/<index>.png``.

    ``<index>`` is the sample's zero-padded position among all 1,797 digits, so file names are
    stable and unique across splits. The tree is written into a temporary folder under ``root``
    and renamed into place, so a reader never sees a half-written tree. If the tree already
    exists with the same files, size and mode, it is reused as is.

    Args:
        root: folder that will hold the split folder; created if missing.
        size: side of each square image in pixels (bilinear resize from 8x8).
        rgb: write ``"RGB"`` images if True, ``"L"`` (grey) images if False.
        split: ``"train"``, ``"test"`` or ``"all"`` (see :class:`Digits`).

    Returns:
        The split folder, ``Path(root) / split``, ready for ``ImageFolder``.

    Raises:
        ValueError: for a bad ``size``, ``rgb`` or ``split``.
        FileExistsError: if ``root/<split>`` exists but holds something else; it is never
            overwritten.
    """
    if split not in _SPLITS:
        raise ValueError(f"split must be one of 'train', 'test' or 'all', got {split!r}")
    size = _check_size(size)
    rgb = _check_bool("rgb", rgb)

    images, labels, _ = _load_arrays()
    indices = _split_indices(split)
    root_path = Path(root)
    target = root_path / split
    if target.exists():
        if _tree_matches(target, indices, labels, size, rgb):
            return target
        raise FileExistsError(
            f"{target} exists but does not hold the digits {split!r} split at size={size}, "
            f"rgb={rgb}; remove it or choose another root"
        )

    root_path.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{split}.tmp-", dir=root_path))
    try:
        for name in CLASSES:
            (tmp / name).mkdir()
        for i in indices.tolist():
            image = _to_image(images[i], size, rgb)
            _write_png(image, tmp / CLASSES[labels[i]] / f"{i:04d}.png")
        try:
            tmp.rename(target)
        except OSError:
            # Another process may have finished the same tree first; reuse it if so.
            if target.exists() and _tree_matches(target, indices, labels, size, rgb):
                return target
            raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target
