"""Datasets read from a folder tree `root/<class>/.../<file>` (torchvision's DatasetFolder and ImageFolder).

Classes are the sorted names of the subfolders of `root`; a sample is `(loader(path), class_index)`.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any

from PIL import Image

from dtorch.data import Dataset

__all__ = [
    "IMG_EXTENSIONS", "DatasetFolder", "ImageFolder", "default_loader", "find_classes",
    "has_file_allowed_extension", "is_image_file", "make_dataset", "pil_loader",
]

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")

PathLike = str | os.PathLike[str]


def has_file_allowed_extension(filename: str, extensions: str | tuple[str, ...]) -> bool:
    """Whether `filename` ends with one of `extensions` (case-insensitive)."""
    exts = (extensions,) if isinstance(extensions, str) else tuple(extensions)
    return filename.lower().endswith(tuple(e.lower() for e in exts))


def is_image_file(filename: str) -> bool:
    return has_file_allowed_extension(filename, IMG_EXTENSIONS)


def _check_root(root: PathLike) -> str:
    directory = os.path.expanduser(os.fspath(root))
    if not os.path.exists(directory):
        raise FileNotFoundError(f"Dataset folder '{directory}' does not exist; expected a folder holding one "
                                "subfolder per class")
    if not os.path.isdir(directory):
        raise NotADirectoryError(f"Dataset root '{directory}' is a file, not a folder; expected a folder holding "
                                 "one subfolder per class")
    return directory


def find_classes(directory: PathLike) -> tuple[list[str], dict[str, int]]:
    """The sorted class folder names under `directory`, and the map name -> index."""
    directory = _check_root(directory)
    classes = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir())
    if not classes:
        raise FileNotFoundError(f"Couldn't find any class folder in '{directory}': put each class's files in "
                                f"its own subfolder (e.g. '{os.path.join(directory, 'cat')}')")
    return classes, {name: i for i, name in enumerate(classes)}


def make_dataset(directory: PathLike, class_to_idx: dict[str, int] | None = None,
                 extensions: str | tuple[str, ...] | None = None,
                 is_valid_file: Callable[[str], bool] | None = None,
                 allow_empty: bool = False) -> list[tuple[str, int]]:
    """(path, class index) for every valid file under each class folder, in sorted order.

    A file is valid if it has one of `extensions`, or if `is_valid_file(path)` says so (give exactly one).
    Symbolic links are followed (as torchvision does), except one that leads back to a folder it is inside: that
    loop would list the same files again and again, so it is not entered and a warning names it.
    """
    directory = _check_root(directory)
    if class_to_idx is None:
        _, class_to_idx = find_classes(directory)
    elif not class_to_idx:
        raise ValueError("make_dataset: class_to_idx must have at least one class")
    if (extensions is None) == (is_valid_file is None):
        raise ValueError("make_dataset: pass exactly one of extensions and is_valid_file")
    if is_valid_file is not None:
        is_valid = is_valid_file
    else:
        exts = extensions or ()

        def is_valid(path: str) -> bool:
            return has_file_allowed_extension(path, exts)

    instances: list[tuple[str, int]] = []
    found: set[str] = set()
    for target_class in sorted(class_to_idx):
        class_index = class_to_idx[target_class]
        target_dir = os.path.join(directory, target_class)
        if not os.path.isdir(target_dir):
            continue
        for folder, fnames in _walk(target_dir):
            for fname in sorted(fnames):
                path = os.path.join(folder, fname)
                if is_valid(path):
                    instances.append((path, class_index))
                    found.add(target_class)
    empty = sorted(set(class_to_idx) - found)
    if empty and not allow_empty:
        if extensions is not None:
            listed = [extensions] if isinstance(extensions, str) else list(extensions)
            what = f"Supported extensions are: {', '.join(listed)}"
        else:
            what = "No file passed is_valid_file"
        raise FileNotFoundError(f"Found no valid file for the classes {', '.join(empty)} in '{directory}'. {what}. "
                                "Add files to those folders, remove the folders, or pass allow_empty=True.")
    return instances


def _walk(top: str) -> list[tuple[str, list[str]]]:
    """(folder, file names) under `top`, following symbolic links but not into a loop, in torchvision's order."""
    out = []
    for folder, dirnames, fnames in os.walk(top, followlinks=True):
        real, up = os.path.realpath(folder), os.path.dirname(folder)
        loop = None
        while folder != top and len(up) >= len(top):
            if os.path.realpath(up) == real:
                loop = up
                break
            up = os.path.dirname(up)
        if loop is not None:
            dirnames[:] = []
            warnings.warn(f"dataset folder {folder!r} is a symbolic link back to {loop!r}; not followed (a loop "
                          f"would list the same files again and again)", stacklevel=4)
            continue
        out.append((folder, fnames))
    return sorted(out)


def pil_loader(path: str) -> Image.Image:
    """Open an image file with Pillow and convert it to RGB (reading it fully, closing the file)."""
    with open(path, "rb") as f:
        img = Image.open(f)
        return img.convert("RGB")


def default_loader(path: str) -> Any:
    return pil_loader(path)


class DatasetFolder(Dataset[tuple[Any, int]]):
    """Samples `(loader(path), class_index)` from `root/<class>/**/<file>`.

    Attributes: `classes` (sorted folder names), `class_to_idx`, `samples` (list of (path, index)) and
    `targets` (the indices).
    """

    def __init__(self, root: PathLike, loader: Callable[[str], Any], extensions: tuple[str, ...] | None = None,
                 transform: Callable[[Any], Any] | None = None,
                 target_transform: Callable[[int], Any] | None = None,
                 is_valid_file: Callable[[str], bool] | None = None, allow_empty: bool = False) -> None:
        if not callable(loader):
            raise TypeError(f"{type(self).__name__}: loader must be callable, got {type(loader).__name__}")
        for name, fn in (("transform", transform), ("target_transform", target_transform),
                         ("is_valid_file", is_valid_file)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{type(self).__name__}: {name} must be callable, got {type(fn).__name__}")
        self.root = _check_root(root)
        classes, class_to_idx = self.find_classes(self.root)
        self.samples = self.make_dataset(self.root, class_to_idx, extensions, is_valid_file, allow_empty)
        self.loader = loader
        self.extensions = extensions
        self.transform = transform
        self.target_transform = target_transform
        self.classes = classes
        self.class_to_idx = class_to_idx
        self.targets = [s[1] for s in self.samples]

    @staticmethod
    def make_dataset(directory: PathLike, class_to_idx: dict[str, int],
                     extensions: tuple[str, ...] | None = None,
                     is_valid_file: Callable[[str], bool] | None = None,
                     allow_empty: bool = False) -> list[tuple[str, int]]:
        return make_dataset(directory, class_to_idx, extensions, is_valid_file, allow_empty)

    def find_classes(self, directory: PathLike) -> tuple[list[str], dict[str, int]]:
        return find_classes(directory)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        path, target = self.samples[index]
        try:
            sample = self.loader(path)
        except OSError as e:  # Pillow's "image file is truncated", "cannot identify image file", a vanished file
            raise OSError(f"{type(self).__name__}: cannot load sample {index}, {path!r}: {e}") from e
        if self.transform is not None:
            sample = self.transform(sample)
        out_target: Any = target
        if self.target_transform is not None:
            out_target = self.target_transform(target)
        return sample, out_target

    def __len__(self) -> int:
        return len(self.samples)

    def __repr__(self) -> str:
        lines = [f"Dataset {type(self).__name__}", f"    Number of datapoints: {len(self)}",
                 f"    Root location: {self.root}"]
        if self.transform is not None:
            lines.append("    StandardTransform")
            lines.append(f"Transform: {self.transform!r}".replace("\n", "\n    "))
        if self.target_transform is not None:
            lines.append(f"Target transform: {self.target_transform!r}")
        return "\n".join(lines)


class ImageFolder(DatasetFolder):
    """Images in `root/<class>/**/<image>` (files with an image extension, opened as RGB).

    `imgs` is the same list as `samples`.
    """

    def __init__(self, root: PathLike, transform: Callable[[Any], Any] | None = None,
                 target_transform: Callable[[int], Any] | None = None,
                 loader: Callable[[str], Any] = default_loader,
                 is_valid_file: Callable[[str], bool] | None = None, allow_empty: bool = False) -> None:
        super().__init__(root, loader, IMG_EXTENSIONS if is_valid_file is None else None, transform=transform,
                         target_transform=target_transform, is_valid_file=is_valid_file, allow_empty=allow_empty)
        self.imgs = self.samples
