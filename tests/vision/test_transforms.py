"""Transforms, checked against independent computations with Pillow, NumPy and colorsys."""

from __future__ import annotations

import colorsys

import numpy as np
import pytest
from PIL import Image, ImageEnhance

import dtorch as dt
from dtorch.vision import transforms as T
from dtorch.vision.transforms import functional as F


def _rgb(h: int = 30, w: int = 40, seed: int = 0) -> Image.Image:
    return Image.fromarray(np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8))


def _chw(img: Image.Image) -> np.ndarray:
    arr = np.asarray(img)
    return (arr[:, :, None] if arr.ndim == 2 else arr).transpose(2, 0, 1)


# ----- ToTensor / PILToTensor -----

def test_to_tensor_rgb_values_layout_and_dtype() -> None:
    img = _rgb()
    t = T.ToTensor()(img)
    assert dt.is_tensor(t) and t.dtype == dt.float32 and tuple(t.shape) == (3, 30, 40)
    expected = np.asarray(img).transpose(2, 0, 1).astype(np.float32) / np.float32(255)
    np.testing.assert_array_equal(t.numpy(), expected)
    assert 0.0 <= float(t.numpy().min()) and float(t.numpy().max()) <= 1.0


def test_to_tensor_other_modes() -> None:
    gray = _rgb().convert("L")
    t = T.ToTensor()(gray)
    assert tuple(t.shape) == (1, 30, 40)
    np.testing.assert_array_equal(t.numpy()[0], np.asarray(gray, np.float32) / np.float32(255))
    rgba = _rgb().convert("RGBA")
    assert tuple(T.ToTensor()(rgba).shape) == (4, 30, 40)
    binary = Image.fromarray(np.array([[True, False], [False, True]]))
    assert T.ToTensor()(binary).numpy().tolist() == [[[1.0, 0.0], [0.0, 1.0]]]
    floats = Image.fromarray(np.array([[0.5, 7.0]], dtype=np.float32))
    tf = T.ToTensor()(floats)
    assert tf.dtype == dt.float32 and tf.numpy().tolist() == [[[0.5, 7.0]]]  # not scaled
    ints = Image.fromarray(np.array([[1000, 2]], dtype=np.int32))
    assert T.ToTensor()(ints).dtype == dt.int32


def test_to_tensor_numpy_inputs() -> None:
    hwc = np.random.default_rng(1).integers(0, 256, (5, 6, 3), dtype=np.uint8)
    t = T.ToTensor()(hwc)
    np.testing.assert_array_equal(t.numpy(), hwc.transpose(2, 0, 1).astype(np.float32) / np.float32(255))
    assert tuple(T.ToTensor()(hwc[:, :, 0]).shape) == (1, 5, 6)
    f64 = np.full((2, 2, 1), 3.0)
    out = T.ToTensor()(f64)
    assert out.dtype == dt.float64 and out.numpy().max() == 3.0  # non-uint8 arrays keep dtype and values


def test_to_tensor_errors() -> None:
    with pytest.raises(TypeError, match="already a dt.Tensor"):
        T.ToTensor()(dt.zeros(3, 2, 2))
    with pytest.raises(TypeError, match="PIL Image or a NumPy array"):
        T.ToTensor()([[1, 2]])
    with pytest.raises(ValueError, match="HxW or HxWxC"):
        T.ToTensor()(np.zeros((1, 2, 2, 3), np.uint8))


def test_pil_to_tensor() -> None:
    img = _rgb()
    t = T.PILToTensor()(img)
    assert t.dtype == dt.uint8 and tuple(t.shape) == (3, 30, 40)
    np.testing.assert_array_equal(t.numpy(), _chw(img))
    with pytest.raises(TypeError, match="PIL Image"):
        T.PILToTensor()(np.zeros((2, 2, 3), np.uint8))


# ----- Normalize -----

def test_normalize_matches_numpy() -> None:
    x = T.ToTensor()(_rgb())
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    out = T.Normalize(mean, std)(x)
    ref = (x.numpy() - np.array(mean, np.float32)[:, None, None]) / np.array(std, np.float32)[:, None, None]
    assert out.dtype == dt.float32
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6, atol=1e-6)
    assert out is not x and not np.shares_memory(out.numpy(), x.numpy())


def test_normalize_inplace_and_batched() -> None:
    x = dt.from_numpy(np.ones((2, 3, 4, 4), np.float32))
    out = T.Normalize([0.5], [0.25], inplace=True)(x)
    assert out is x and float(x.numpy()[0, 0, 0, 0]) == 2.0


def test_normalize_errors() -> None:
    with pytest.raises(TypeError, match="apply ToTensor"):
        T.Normalize([0.5] * 3, [0.5] * 3)(_rgb())
    with pytest.raises(ValueError, match="contains 0"):
        T.Normalize([0.5, 0.5], [0.5, 0.0])
    with pytest.raises(TypeError, match="floating point"):
        T.Normalize([0.5], [0.5])(dt.zeros(1, 2, 2, dtype=dt.int64))
    with pytest.raises(ValueError, match="3 channels"):
        T.Normalize([0.5, 0.5], [0.5, 0.5])(dt.zeros(3, 2, 2))
    with pytest.raises(ValueError, match=r"\(\.\.\., C, H, W\)"):
        T.Normalize([0.5], [0.5])(dt.zeros(2, 2))


# ----- Resize -----

@pytest.mark.parametrize(("hw", "size", "expected"), [
    ((30, 40), 20, (20, 26)),    # landscape: shorter side (h) becomes 20, w = int(20 * 40 / 30)
    ((40, 30), 20, (26, 20)),    # portrait
    ((25, 25), 10, (10, 10)),
    ((30, 40), [15], (15, 20)),
    ((30, 40), (12, 7), (12, 7)),
    ((31, 17), 8, (14, 8)),      # int(8 * 31 / 17) = 14
])
def test_resize_output_size(hw: tuple[int, int], size, expected: tuple[int, int]) -> None:
    img = _rgb(*hw)
    out = T.Resize(size)(img)
    assert (out.height, out.width) == expected
    t = T.Resize(size)(T.ToTensor()(img))
    assert tuple(t.shape) == (3, *expected)


def test_resize_values_match_pillow_bilinear() -> None:
    img = _rgb(30, 40)
    out = T.Resize((12, 20))(img)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(img.resize((20, 12), Image.Resampling.BILINEAR)))
    nearest = T.Resize((12, 20), interpolation="nearest")(img)
    np.testing.assert_array_equal(np.asarray(nearest), np.asarray(img.resize((20, 12), Image.Resampling.NEAREST)))


def test_resize_tensor_is_per_channel_pillow() -> None:
    x = T.ToTensor()(_rgb(30, 40))
    out = T.Resize((15, 10))(x)
    for c in range(3):
        plane = Image.fromarray(x.numpy()[c]).resize((10, 15), Image.Resampling.BILINEAR)
        np.testing.assert_allclose(out.numpy()[c], np.asarray(plane), rtol=0, atol=1e-6)
    assert out.dtype == dt.float32


def test_resize_max_size_and_errors() -> None:
    out = T.Resize(20, max_size=22)(_rgb(30, 60))  # would be 20x40: the long side is capped at 22
    assert (out.height, out.width) == (11, 22)
    with pytest.raises(ValueError, match="size"):
        T.Resize(0)
    with pytest.raises(ValueError, match="size"):
        T.Resize((1, 2, 3))
    with pytest.raises(ValueError, match="interpolation"):
        T.Resize(4, interpolation="cubic-ish")
    with pytest.raises(TypeError, match="ToTensor"):
        T.Resize(4)(np.zeros((8, 8, 3), np.uint8))
    assert repr(T.Resize(8)) == "Resize(size=8, interpolation=bilinear, max_size=None, antialias=True)"


# ----- CenterCrop / Pad / RandomCrop -----

@pytest.mark.parametrize(("hw", "crop"), [((30, 40), (10, 10)), ((31, 40), (10, 11)), ((7, 9), (4, 4)),
                                          ((10, 10), (10, 10)), ((5, 6), (4, 1))])
def test_center_crop_offsets_follow_torchvision_rounding(hw: tuple[int, int], crop: tuple[int, int]) -> None:
    img = _rgb(*hw)
    h, w = hw
    th, tw = crop
    top, left = round((h - th) / 2.0), round((w - tw) / 2.0)
    expected = np.asarray(img)[top:top + th, left:left + tw]
    np.testing.assert_array_equal(np.asarray(T.CenterCrop(crop)(img)), expected)
    t = T.CenterCrop(crop)(T.PILToTensor()(img))
    np.testing.assert_array_equal(t.numpy(), expected.transpose(2, 0, 1))


def test_center_crop_larger_than_image_pads_with_zeros() -> None:
    img = _rgb(4, 4)
    out = np.asarray(T.CenterCrop((8, 7))(img))
    assert out.shape == (8, 7, 3)
    # padding (left, top, right, bottom) = (1, 2, 2, 2): the image sits at rows 2..5, columns 1..4
    np.testing.assert_array_equal(out[2:6, 1:5], np.asarray(img))
    assert out[:2].sum() == 0 and out[:, 0].sum() == 0 and out[6:].sum() == 0 and out[:, 5:].sum() == 0
    t = T.CenterCrop((8, 7))(T.PILToTensor()(img))
    np.testing.assert_array_equal(t.numpy(), out.transpose(2, 0, 1))


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric"])
def test_pad_matches_numpy(mode: str) -> None:
    img = _rgb(5, 6)
    out = T.Pad((1, 2, 3, 4), fill=0, padding_mode=mode)(img)
    expected = np.pad(np.asarray(img), [(2, 4), (1, 3), (0, 0)], mode=mode)
    np.testing.assert_array_equal(np.asarray(out), expected)
    t = T.Pad((1, 2, 3, 4), padding_mode=mode)(T.PILToTensor()(img))
    np.testing.assert_array_equal(t.numpy(), expected.transpose(2, 0, 1))


def test_pad_fill_color() -> None:
    out = np.asarray(T.Pad(1, fill=(10, 20, 30))(_rgb(2, 2)))
    assert out.shape == (4, 4, 3) and out[0, 0].tolist() == [10, 20, 30]
    t = T.Pad(1, fill=(10, 20, 30))(T.PILToTensor()(_rgb(2, 2)))
    assert t.numpy()[:, 0, 0].tolist() == [10, 20, 30]


def _find_window(big: np.ndarray, small: np.ndarray) -> list[tuple[int, int]]:
    h, w = small.shape[:2]
    return [(i, j) for i in range(big.shape[0] - h + 1) for j in range(big.shape[1] - w + 1)
            if np.array_equal(big[i:i + h, j:j + w], small)]


def test_random_crop_is_a_window_of_the_padded_image_and_reproducible() -> None:
    img = _rgb(10, 12)
    crop = T.RandomCrop((6, 7), padding=2)
    dt.manual_seed(0)
    outs = [np.asarray(crop(img)) for _ in range(5)]
    padded = np.pad(np.asarray(img), [(2, 2), (2, 2), (0, 0)])
    for o in outs:
        assert o.shape == (6, 7, 3) and _find_window(padded, o)
    dt.manual_seed(0)
    assert all(np.array_equal(o, np.asarray(crop(img))) for o in outs)
    assert len({o.tobytes() for o in outs}) > 1


def test_random_crop_pad_if_needed_and_errors() -> None:
    img = _rgb(4, 5)
    out = T.RandomCrop((6, 8), pad_if_needed=True, fill=7)(img)
    assert (out.height, out.width) == (6, 8)
    # pad_if_needed pads both sides by the missing amount, so the image is always fully inside
    assert _find_window(np.asarray(out), np.asarray(img))
    with pytest.raises(ValueError, match="larger than the input image"):
        T.RandomCrop(8)(img)
    assert np.array_equal(np.asarray(T.RandomCrop((4, 5))(img)), np.asarray(img))


# ----- RandomResizedCrop -----

def test_random_resized_crop_params_within_bounds() -> None:
    img = _rgb(40, 60)
    dt.manual_seed(1)
    for _ in range(50):
        i, j, h, w = T.RandomResizedCrop.get_params(img, (0.08, 1.0), (3 / 4, 4 / 3))
        assert 0 <= i and 0 <= j and 0 < h and 0 < w and i + h <= 40 and j + w <= 60
        area = h * w / (40 * 60)
        assert 0.05 <= area <= 1.05
    out = T.RandomResizedCrop(16)(img)
    assert (out.height, out.width) == (16, 16)
    assert tuple(T.RandomResizedCrop((8, 12))(T.ToTensor()(img)).shape) == (3, 8, 12)


def test_random_resized_crop_fallback_is_center_crop() -> None:
    img = _rgb(10, 100)  # aspect 10 is far outside (3/4, 4/3) and no attempt can fit
    i, j, h, w = T.RandomResizedCrop.get_params(img, (0.9, 1.0), (3 / 4, 4 / 3))
    assert (h, w) == (10, round(10 * 4 / 3)) and i == 0 and j == (100 - w) // 2
    tall = _rgb(100, 10)
    i, j, h, w = T.RandomResizedCrop.get_params(tall, (0.9, 1.0), (3 / 4, 4 / 3))
    assert (h, w) == (round(10 / (3 / 4)), 10) and j == 0 and i == (100 - h) // 2


def test_random_resized_crop_reproducible_with_manual_seed() -> None:
    tf = T.RandomResizedCrop(8)
    img = _rgb(30, 30)
    dt.manual_seed(5)
    a = [np.asarray(tf(img)) for _ in range(3)]
    dt.manual_seed(5)
    b = [np.asarray(tf(img)) for _ in range(3)]
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


# ----- flips -----

def test_horizontal_flip() -> None:
    img = _rgb(5, 6)
    np.testing.assert_array_equal(np.asarray(T.RandomHorizontalFlip(1.0)(img)), np.asarray(img)[:, ::-1])
    assert T.RandomHorizontalFlip(0.0)(img) is img
    t = T.RandomHorizontalFlip(1.0)(T.PILToTensor()(img))
    np.testing.assert_array_equal(t.numpy(), _chw(img)[:, :, ::-1])
    np.testing.assert_array_equal(np.asarray(T.RandomVerticalFlip(1.0)(img)), np.asarray(img)[::-1])
    flip = T.RandomHorizontalFlip()
    dt.manual_seed(0)
    flips = [flip(img) is not img for _ in range(400)]
    assert 150 < sum(flips) < 250
    dt.manual_seed(0)
    assert [flip(img) is not img for _ in range(400)] == flips
    with pytest.raises(ValueError, match="probability"):
        T.RandomHorizontalFlip(1.5)
    with pytest.raises(TypeError, match="PIL Image or a dt.Tensor"):
        T.RandomHorizontalFlip()(np.zeros((2, 2)))


# ----- color -----

@pytest.mark.parametrize(("kwargs", "enhancer", "factor"), [
    ({"brightness": (1.5, 1.5)}, ImageEnhance.Brightness, 1.5),
    ({"contrast": (0.4, 0.4)}, ImageEnhance.Contrast, 0.4),
    ({"saturation": (1.7, 1.7)}, ImageEnhance.Color, 1.7),
])
def test_color_jitter_single_factor_matches_image_enhance(kwargs: dict, enhancer, factor: float) -> None:
    img = _rgb()
    out = T.ColorJitter(**kwargs)(img)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(enhancer(img).enhance(factor)))


def test_color_jitter_hue_on_pil_is_an_hsv_shift() -> None:
    img = _rgb()
    out = T.ColorJitter(hue=(0.25, 0.25))(img)
    h, s, v = img.convert("HSV").split()
    shifted = ((np.asarray(h).astype(np.int64) + int(0.25 * 255)) % 256).astype(np.uint8)
    expected = Image.merge("HSV", (Image.fromarray(shifted), s, v)).convert("RGB")
    np.testing.assert_array_equal(np.asarray(out), np.asarray(expected))
    gray = img.convert("L")
    assert np.array_equal(np.asarray(T.ColorJitter(hue=0.3)(gray)), np.asarray(gray))


def test_color_jitter_hue_on_tensor_matches_colorsys() -> None:
    x = T.ToTensor()(_rgb(3, 4))
    out = F.adjust_hue(x, 0.2).numpy()
    src = x.numpy()
    for r in range(3):
        for c in range(4):
            hh, ss, vv = colorsys.rgb_to_hsv(*src[:, r, c].tolist())
            expected = colorsys.hsv_to_rgb((hh + 0.2) % 1.0, ss, vv)
            np.testing.assert_allclose(out[:, r, c], expected, atol=1e-5)


def test_tensor_brightness_contrast_saturation() -> None:
    x = T.ToTensor()(_rgb(6, 7))
    a = x.numpy()
    np.testing.assert_allclose(F.adjust_brightness(x, 1.3).numpy(), np.clip(a * 1.3, 0, 1), atol=1e-6)
    gray = 0.2989 * a[0] + 0.587 * a[1] + 0.114 * a[2]
    np.testing.assert_allclose(F.adjust_saturation(x, 0.0).numpy(), np.broadcast_to(gray, a.shape), atol=1e-6)
    np.testing.assert_allclose(F.adjust_contrast(x, 0.0).numpy(), np.full(a.shape, gray.mean()), atol=1e-5)
    jittered = T.ColorJitter(0.5, 0.5, 0.5, 0.1)(x)
    assert jittered.dtype == dt.float32 and tuple(jittered.shape) == (3, 6, 7)


def test_color_jitter_ranges_order_and_errors() -> None:
    cj = T.ColorJitter(brightness=0.4, contrast=1.5, saturation=(0.2, 0.9), hue=0.1)
    assert cj.brightness == (0.6, 1.4) and cj.contrast == (0.0, 2.5) and cj.saturation == (0.2, 0.9)
    assert cj.hue == (-0.1, 0.1) and T.ColorJitter().brightness is None
    dt.manual_seed(0)
    order, b, c, _s, h = T.ColorJitter.get_params(cj.brightness, cj.contrast, cj.saturation, cj.hue)
    assert sorted(order) == [0, 1, 2, 3] and 0.6 <= b <= 1.4 and 0.0 <= c <= 2.5 and -0.1 <= h <= 0.1
    orders = set()
    for _ in range(30):
        orders.add(tuple(T.ColorJitter.get_params(None, None, None, None)[0]))
    assert len(orders) > 1
    img = _rgb()
    dt.manual_seed(3)
    first = np.asarray(cj(img))
    dt.manual_seed(3)
    assert np.array_equal(first, np.asarray(cj(img)))
    with pytest.raises(ValueError, match="non-negative"):
        T.ColorJitter(brightness=-0.1)
    with pytest.raises(ValueError, match="hue"):
        T.ColorJitter(hue=0.6)
    with pytest.raises(TypeError, match="saturation"):
        T.ColorJitter(saturation="lots")


def test_grayscale() -> None:
    img = _rgb()
    one = T.Grayscale()(img)
    assert one.mode == "L"
    np.testing.assert_array_equal(np.asarray(one), np.asarray(img.convert("L")))
    three = np.asarray(T.Grayscale(3)(img))
    assert three.shape == (30, 40, 3) and (three[..., 0] == three[..., 2]).all()
    x = T.ToTensor()(img)
    g = T.Grayscale()(x).numpy()
    a = x.numpy()
    np.testing.assert_allclose(g[0], 0.2989 * a[0] + 0.587 * a[1] + 0.114 * a[2], atol=1e-6)
    assert tuple(T.Grayscale(3)(x).shape) == (3, 30, 40)
    with pytest.raises(ValueError, match="1 or 3"):
        T.Grayscale(2)


# ----- composition -----

def test_lambda_and_compose() -> None:
    double = T.Lambda(lambda t: t * 2)
    assert double(3) == 6
    with pytest.raises(TypeError, match="callable"):
        T.Lambda(5)
    pipeline = T.Compose([T.Resize(20), T.CenterCrop(16), T.ToTensor(), T.Normalize([0.5] * 3, [0.5] * 3)])
    out = pipeline(_rgb())
    assert tuple(out.shape) == (3, 16, 16) and out.dtype == dt.float32
    assert -1.0 <= float(out.numpy().min()) and float(out.numpy().max()) <= 1.0
    assert repr(pipeline).splitlines() == [
        "Compose(",
        "    Resize(size=20, interpolation=bilinear, max_size=None, antialias=True)",
        "    CenterCrop(size=(16, 16))",
        "    ToTensor()",
        "    Normalize(mean=[0.5, 0.5, 0.5], std=[0.5, 0.5, 0.5], inplace=False)",
        ")",
    ]
    with pytest.raises(TypeError, match="not callable"):
        T.Compose([T.ToTensor(), "nope"])


def test_augmentation_pipeline_reproducible_with_manual_seed() -> None:
    aug = T.Compose([T.RandomResizedCrop(12), T.RandomHorizontalFlip(), T.ColorJitter(0.3, 0.3, 0.3, 0.05),
                     T.RandomCrop(10, padding=1), T.ToTensor()])
    img = _rgb()
    dt.manual_seed(11)
    a = [aug(img).numpy() for _ in range(4)]
    dt.manual_seed(11)
    b = [aug(img).numpy() for _ in range(4)]
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(a[0], a[1])
