"""Tests for the bundled digits data set and its ImageFolder export."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from dtorch.data import Dataset
from dtorch.vision.datasets import Digits, ImageFolder, write_digits_image_folder
from dtorch.vision.datasets import digits as digits_module

CLASSES = [str(d) for d in range(10)]


def _scaled(pixels: np.ndarray) -> np.ndarray:
    return ((pixels.astype(np.uint16) * 255 + 8) // 16).astype(np.uint8)


def _pngs(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.png"))


# --- the data -------------------------------------------------------------------------------


def test_packaged_file_loads_without_pickle() -> None:
    path = Path(digits_module.__file__).with_name("digits.npz")
    with np.load(path, allow_pickle=False) as npz:
        assert sorted(npz.files) == ["images", "labels", "train_mask"]
        assert npz["images"].dtype == np.uint8
        assert npz["images"].shape == (1797, 8, 8)
        assert npz["labels"].shape == (1797,)
        assert npz["train_mask"].dtype == bool


def test_split_sizes() -> None:
    assert len(Digits(train=None)) == 1797
    assert len(Digits(train=True)) == 1437
    assert len(Digits(train=False)) == 360
    assert len(Digits()) == 1437  # train is the default


def test_train_and_test_partition_all() -> None:
    train, test, full = Digits(train=True), Digits(train=False), Digits(train=None)
    train_idx, test_idx = set(train.indices.tolist()), set(test.indices.tolist())
    assert not train_idx & test_idx
    assert train_idx | test_idx == set(range(1797))
    np.testing.assert_array_equal(full.data[train.indices], train.data)
    np.testing.assert_array_equal(full.data[test.indices], test.data)
    assert [full.targets[i] for i in test.indices] == test.targets
    # Every class is in both splits.
    assert set(train.targets) == set(test.targets) == set(range(10))


def test_split_is_the_documented_permutation() -> None:
    order = np.random.RandomState(0).permutation(1797)
    np.testing.assert_array_equal(Digits(train=True).indices, np.sort(order[:1437]))
    np.testing.assert_array_equal(Digits(train=False).indices, np.sort(order[1437:]))


def test_data_matches_scikit_learn() -> None:
    import sklearn.datasets as datasets  # a test extra: the oracle the file was exported from
    reference = datasets.load_digits()
    full = Digits(train=None)
    np.testing.assert_array_equal(full.data, reference.images.astype(np.uint8))
    assert full.targets == reference.target.tolist()


def test_attributes() -> None:
    ds = Digits(train=False)
    assert isinstance(ds, Dataset)
    assert ds.classes == CLASSES
    assert isinstance(ds.targets, list) and all(type(t) is int for t in ds.targets)
    assert ds.data.dtype == np.uint8 and ds.data.shape == (360, 8, 8)
    assert ds.data.min() == 0 and ds.data.max() == 16
    assert "360" in repr(ds)


# --- items ----------------------------------------------------------------------------------


def test_getitem_grey_8x8() -> None:
    ds = Digits(train=True)
    image, label = ds[0]
    assert isinstance(image, Image.Image)
    assert image.mode == "L" and image.size == (8, 8)
    assert type(label) is int and label == ds.targets[0]
    np.testing.assert_array_equal(np.asarray(image), _scaled(ds.data[0]))
    values = np.concatenate([np.asarray(ds[i][0]).ravel() for i in range(50)])
    assert values.min() == 0 and values.max() == 255


def test_getitem_rgb_resized() -> None:
    ds = Digits(train=False, size=32, rgb=True)
    image, label = ds[5]
    assert image.mode == "RGB" and image.size == (32, 32)
    assert label == ds.targets[5]
    pixels = np.asarray(image)
    assert pixels.shape == (32, 32, 3)
    np.testing.assert_array_equal(pixels[..., 0], pixels[..., 1])
    np.testing.assert_array_equal(pixels[..., 0], pixels[..., 2])
    expected = Image.fromarray(_scaled(ds.data[5])).resize((32, 32), Image.Resampling.BILINEAR)
    np.testing.assert_array_equal(pixels[..., 0], np.asarray(expected))


def test_grey_resized_and_rgb_8x8() -> None:
    assert Digits(size=16)[0][0].size == (16, 16)
    assert Digits(size=16)[0][0].mode == "L"
    assert Digits(rgb=True)[0][0].mode == "RGB"
    assert Digits(rgb=True)[0][0].size == (8, 8)


def test_negative_and_numpy_indices() -> None:
    ds = Digits(train=False)
    assert ds[-1][1] == ds.targets[-1]
    assert ds[np.int64(3)][1] == ds.targets[3]


def test_transforms_are_applied() -> None:
    ds = Digits(
        train=False,
        transform=lambda img: np.asarray(img, dtype=np.float32) / 255.0,
        target_transform=lambda t: t * 10,
    )
    image, target = ds[0]
    assert isinstance(image, np.ndarray) and image.dtype == np.float32
    assert target == ds.targets[0] * 10


# --- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("train", ["train", 1, 0.0])
def test_bad_train(train: object) -> None:
    with pytest.raises(ValueError, match=r"train must be True .* False .* or None"):
        Digits(train=train)  # type: ignore[arg-type]


@pytest.mark.parametrize("size", [0, -8, 2.5, "8", True])
def test_bad_size(size: object) -> None:
    with pytest.raises(ValueError, match="size must be a positive int"):
        Digits(size=size)  # type: ignore[arg-type]


@pytest.mark.parametrize("rgb", ["yes", 1, None])
def test_bad_rgb(rgb: object) -> None:
    with pytest.raises(ValueError, match="rgb must be True or False"):
        Digits(rgb=rgb)  # type: ignore[arg-type]


def test_bad_transforms() -> None:
    with pytest.raises(TypeError, match="transform must be a callable or None"):
        Digits(transform="to_tensor")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="target_transform must be a callable or None"):
        Digits(target_transform=3)  # type: ignore[arg-type]


def test_bad_index() -> None:
    ds = Digits(train=False)
    with pytest.raises(IndexError, match="out of range"):
        ds[360]
    with pytest.raises(IndexError, match="out of range"):
        ds[-361]
    with pytest.raises(TypeError, match="must be integers"):
        ds["0"]  # type: ignore[index]


# --- ImageFolder export ---------------------------------------------------------------------


def test_write_image_folder(tmp_path: Path) -> None:
    folder = write_digits_image_folder(tmp_path / "digits", size=16, rgb=True, split="test")
    assert folder == tmp_path / "digits" / "test"
    assert sorted(p.name for p in folder.iterdir()) == CLASSES
    files = _pngs(folder)
    assert len(files) == 360
    test = Digits(train=False)
    counts = Counter(str(t) for t in test.targets)
    assert {c: len(list((folder / c).glob("*.png"))) for c in CLASSES} == counts
    first = folder / str(test.targets[0]) / f"{test.indices[0]:04d}.png"
    with Image.open(first) as image:
        assert image.mode == "RGB" and image.size == (16, 16)
        np.testing.assert_array_equal(
            np.asarray(image), np.asarray(Digits(False, size=16, rgb=True)[0][0])
        )
    # Nothing but the split folder is left under root (no temporary folders).
    assert [p.name for p in (tmp_path / "digits").iterdir()] == ["test"]


def test_write_image_folder_grey_train(tmp_path: Path) -> None:
    folder = write_digits_image_folder(tmp_path, size=8, rgb=False, split="train")
    assert len(_pngs(folder)) == 1437
    with Image.open(_pngs(folder)[0]) as image:
        assert image.mode == "L" and image.size == (8, 8)


def test_write_image_folder_all(tmp_path: Path) -> None:
    folder = write_digits_image_folder(tmp_path, split="all")
    assert folder.name == "all"
    assert len(_pngs(folder)) == 1797


def test_write_image_folder_is_idempotent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = write_digits_image_folder(tmp_path, size=12, split="test")
    stamps = {p: p.stat().st_mtime_ns for p in _pngs(folder)}

    def fail(*args: object) -> None:
        raise AssertionError("an existing, complete tree must be reused, not rewritten")

    monkeypatch.setattr(digits_module, "_write_png", fail)
    again = write_digits_image_folder(str(tmp_path), size=12, split="test")
    assert again == folder
    assert {p: p.stat().st_mtime_ns for p in _pngs(folder)} == stamps


def test_write_image_folder_refuses_a_different_tree(tmp_path: Path) -> None:
    write_digits_image_folder(tmp_path, size=12, rgb=True, split="test")
    with pytest.raises(FileExistsError, match="size=13"):
        write_digits_image_folder(tmp_path, size=13, rgb=True, split="test")
    with pytest.raises(FileExistsError, match="rgb=False"):
        write_digits_image_folder(tmp_path, size=12, rgb=False, split="test")
    # An incomplete tree (a file removed) is not reused, and not deleted either.
    victim = _pngs(tmp_path / "test")[0]
    victim.unlink()
    with pytest.raises(FileExistsError, match="remove it or choose another root"):
        write_digits_image_folder(tmp_path, size=12, rgb=True, split="test")
    assert len(_pngs(tmp_path / "test")) == 359


def test_write_image_folder_failure_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_write = digits_module._write_png
    calls = 0

    def flaky(image: Image.Image, path: Path) -> None:
        nonlocal calls
        calls += 1
        if calls == 100:
            raise OSError("disk full")
        real_write(image, path)

    monkeypatch.setattr(digits_module, "_write_png", flaky)
    with pytest.raises(OSError, match="disk full"):
        write_digits_image_folder(tmp_path, split="test")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"split": "val"}, "split must be one of 'train', 'test' or 'all'"),
        ({"split": True}, "split must be one of"),
        ({"size": 0}, "size must be a positive int"),
        ({"size": 4.0}, "size must be a positive int"),
        ({"rgb": "RGB"}, "rgb must be True or False"),
    ],
)
def test_write_image_folder_bad_args(
    tmp_path: Path, kwargs: dict[str, object], pattern: str
) -> None:
    with pytest.raises(ValueError, match=pattern):
        write_digits_image_folder(tmp_path, **kwargs)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_image_folder_reads_the_export(tmp_path: Path) -> None:
    folder = write_digits_image_folder(tmp_path, size=8, rgb=False, split="test")
    ds = ImageFolder(folder)
    assert len(ds) == 360
    assert ds.classes == CLASSES
    image, label = ds[0]
    assert image.size == (8, 8)
    assert label == ds.targets[0]
    assert sorted(Counter(ds.targets).items()) == sorted(
        Counter(Digits(train=False).targets).items()
    )
