"""ImageFolder and DatasetFolder: torchvision's folder semantics, loading, and the errors a user can hit."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import dtorch as dt
from dtorch.data import DataLoader
from dtorch.vision import transforms as T
from dtorch.vision.datasets.folder import IMG_EXTENSIONS, DatasetFolder, ImageFolder


def _save(path: Path, color: int, mode: str = "RGB", size: tuple[int, int] = (6, 4)) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new(mode, size, color if mode == "L" else (color, 0, 255 - color)).save(path)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "pets"
    _save(root / "dog" / "b.png", 10)
    _save(root / "dog" / "a.jpg", 20)
    _save(root / "dog" / "puppies" / "c.bmp", 30)  # nested folders count for their class
    _save(root / "cat" / "z.PNG", 40)  # extensions are matched case-insensitively
    _save(root / "cat" / "gray.png", 50, mode="L")
    (root / "cat" / "notes.txt").write_text("not an image")
    _save(root / "bird" / "x.webp", 60)
    (root / "README.md").write_text("files at the top level are not classes")
    return root


def _expected_samples(root: Path, classes: list[str]) -> list[tuple[str, int]]:
    out = []
    for idx, name in enumerate(classes):
        for folder, _, files in sorted(os.walk(root / name)):
            for f in sorted(files):
                if f.lower().endswith(IMG_EXTENSIONS):
                    out.append((os.path.join(folder, f), idx))
    return out


def test_classes_samples_and_targets(tree: Path) -> None:
    ds = ImageFolder(tree)
    assert ds.classes == ["bird", "cat", "dog"]
    assert ds.class_to_idx == {"bird": 0, "cat": 1, "dog": 2}
    assert ds.samples == _expected_samples(tree, ds.classes)
    assert [os.path.basename(p) for p, _ in ds.samples] == ["x.webp", "gray.png", "z.PNG", "a.jpg", "b.png",
                                                              "c.bmp"]
    assert ds.targets == [0, 1, 1, 2, 2, 2]
    assert ds.imgs is ds.samples and len(ds) == 6
    assert "Number of datapoints: 6" in repr(ds)


def test_items_are_rgb_images_with_their_class(tree: Path) -> None:
    ds = ImageFolder(str(tree))
    img, target = ds[1]  # the grayscale file is converted to RGB
    assert isinstance(img, Image.Image) and img.mode == "RGB" and img.size == (6, 4) and target == 1
    assert np.asarray(img)[0, 0].tolist() == [50, 50, 50]
    img, target = ds[3]
    assert np.asarray(img)[0, 0].tolist() == [20, 0, 235] and target == 2


def test_transforms_and_data_loader(tree: Path) -> None:
    ds = ImageFolder(tree, transform=T.Compose([T.Resize((8, 8)), T.ToTensor()]),
                     target_transform=lambda y: y * 10)
    x, y = ds[0]
    assert tuple(x.shape) == (3, 8, 8) and x.dtype == dt.float32 and y == 0
    batches = list(DataLoader(ds, batch_size=4))
    assert tuple(batches[0][0].shape) == (4, 3, 8, 8)
    assert batches[0][1].tolist() == [0, 10, 10, 20] and batches[1][1].tolist() == [20, 20]


def test_is_valid_file_replaces_the_extension_filter(tree: Path) -> None:
    ds = ImageFolder(tree, is_valid_file=lambda p: p.endswith((".png", ".txt")), allow_empty=True)
    assert sorted(os.path.basename(p) for p, _ in ds.samples) == ["b.png", "gray.png", "notes.txt"]
    assert ds.classes == ["bird", "cat", "dog"]  # bird is kept (empty) since allow_empty=True


def test_dataset_folder_with_custom_loader(tmp_path: Path) -> None:
    for cls, value in (("neg", -1.0), ("pos", 1.0)):
        (tmp_path / cls).mkdir()
        for k in range(2):
            np.save(tmp_path / cls / f"{k}.npy", np.full(3, value * (k + 1)))
    ds = DatasetFolder(tmp_path, loader=np.load, extensions=(".npy",))
    assert ds.classes == ["neg", "pos"] and len(ds) == 4
    arr, target = ds[3]
    assert arr.tolist() == [2.0, 2.0, 2.0] and target == 1
    x, y = next(iter(DataLoader(ds, batch_size=4)))
    assert tuple(x.shape) == (4, 3) and x.dtype == dt.float64 and y.tolist() == [0, 0, 1, 1]


def test_missing_root(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(FileNotFoundError, match="does not exist") as info:
        ImageFolder(missing)
    assert str(missing) in str(info.value)


def test_root_is_a_file(tmp_path: Path) -> None:
    f = tmp_path / "file.png"
    _save(f, 1)
    with pytest.raises(NotADirectoryError, match="not a folder"):
        ImageFolder(f)


def test_no_class_folder(tmp_path: Path) -> None:
    _save(tmp_path / "loose.png", 1)
    with pytest.raises(FileNotFoundError, match="Couldn't find any class folder") as info:
        ImageFolder(tmp_path)
    assert str(tmp_path) in str(info.value)


def test_class_folder_without_images_names_folder_and_extensions(tree: Path) -> None:
    (tree / "empty_class").mkdir()
    (tree / "text_only").mkdir()
    (tree / "text_only" / "a.txt").write_text("x")
    with pytest.raises(FileNotFoundError) as info:
        ImageFolder(tree)
    msg = str(info.value)
    assert "empty_class, text_only" in msg and str(tree) in msg
    assert ".jpg" in msg and ".png" in msg and ".webp" in msg
    ds = ImageFolder(tree, allow_empty=True)
    assert ds.class_to_idx["text_only"] == 4 and len(ds) == 6


def test_bad_arguments(tree: Path) -> None:
    with pytest.raises(TypeError, match="transform must be callable"):
        ImageFolder(tree, transform="resize")
    with pytest.raises(TypeError, match="loader must be callable"):
        DatasetFolder(tree, loader=None, extensions=(".png",))
    with pytest.raises(ValueError, match="exactly one of extensions and is_valid_file"):
        DatasetFolder(tree, loader=np.load)


@pytest.mark.parametrize("workers", [0, 2])
def test_a_truncated_image_names_its_file_and_index(tree: Path, workers: int) -> None:
    bad = tree / "dog" / "b.png"
    noise = np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8)
    Image.fromarray(noise).save(bad)
    bad.write_bytes(bad.read_bytes()[:4000])  # a PNG cut short inside its image data
    ds = ImageFolder(str(tree), transform=T.ToTensor())
    index = [p for p, _ in ds.samples].index(str(bad))
    with pytest.raises(Exception) as e:
        for _ in DataLoader(ds, batch_size=1, num_workers=workers):
            pass
    msg = str(e.value)
    assert f"cannot load sample {index}" in msg and str(bad) in msg, msg


def test_a_symlink_loop_is_not_followed_and_is_named(tree: Path) -> None:
    os.symlink(tree / "dog", tree / "dog" / "puppies" / "again")  # dog/puppies/again -> dog: a loop
    with pytest.warns(UserWarning, match=r"puppies/again' is a symbolic link back to .*dog'"):
        ds = ImageFolder(str(tree))
    dogs = [p for p, c in ds.samples if c == ds.class_to_idx["dog"]]
    assert len(dogs) == len(set(dogs)) == 3  # each image once
    os.unlink(tree / "dog" / "puppies" / "again")
    os.symlink(tree / "bird", tree / "cat" / "birds")  # not a loop: followed, as torchvision does
    ds = ImageFolder(str(tree))
    assert any("/cat/birds/x.webp" in p for p, _ in ds.samples)
