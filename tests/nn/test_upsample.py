"""interpolate / Upsample (nearest, nearest-exact, linear, bilinear, area) against PyTorch."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import dtorch as dt
import dtorch.nn.functional as F
from dtorch import nn
from dtorch.autograd import gradcheck


def _check(x: np.ndarray, kw: dict[str, Any], how: str = "contiguous", rtol: float = 1e-5,
           atol: float = 1e-6) -> None:
    if how == "transposed":
        buf = np.ascontiguousarray(np.swapaxes(x, -1, -2))
        xd0, xt0 = dt.tensor(buf, requires_grad=True), torch.tensor(buf, requires_grad=True)
        xd, xt = xd0.transpose(-1, -2), xt0.transpose(-1, -2)
    else:
        xd0, xt0 = dt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        xd, xt = xd0, xt0
    yd, yt = F.interpolate(xd, **kw), TF.interpolate(xt, **kw)
    assert yd.shape == tuple(yt.shape), (kw, yd.shape, yt.shape)
    np.testing.assert_allclose(yd.detach().numpy(), yt.detach().numpy(), rtol=rtol, atol=atol, err_msg=str(kw))
    go = np.random.default_rng(0).standard_normal(tuple(yt.shape)).astype(x.dtype)
    yd.backward(dt.tensor(go))
    yt.backward(torch.tensor(go))
    np.testing.assert_allclose(xd0.grad.numpy(), xt0.grad.numpy(), rtol=rtol * 10, atol=atol * 10, err_msg=str(kw))


SHAPES = [(2, 3, 5, 7), (1, 2, 8, 8), (2, 1, 1, 1), (1, 1, 13, 4)]
MODES = [("nearest", None), ("nearest-exact", None), ("bilinear", False), ("bilinear", True)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode,align", MODES)
@pytest.mark.parametrize("size", [(10, 14), (3, 2), (8, 8), (13, 5), 7])
def test_interpolate_size(shape: tuple, mode: str, align: Any, size: Any) -> None:
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    _check(x, {"size": size, "mode": mode, "align_corners": align}, "transposed" if shape[0] == 2 else "contiguous")


@pytest.mark.parametrize("shape", SHAPES[:2])
@pytest.mark.parametrize("mode,align", MODES)
@pytest.mark.parametrize("scale", [2, 1.5, 0.5, (1.7, 2.3), 3, 0.33, 1.3, (2, 0.6)])
@pytest.mark.parametrize("recompute", [None, True])
def test_interpolate_scale_factor(shape: tuple, mode: str, align: Any, scale: Any, recompute: Any) -> None:
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    _check(x, {"scale_factor": scale, "mode": mode, "align_corners": align, "recompute_scale_factor": recompute})


@pytest.mark.parametrize("mode", ["nearest", "linear", "nearest-exact"])
def test_interpolate_1d(mode: str) -> None:
    x = np.random.default_rng(3).standard_normal((2, 3, 9)).astype(np.float32)
    for kw in ({"size": 4}, {"size": 18}, {"size": (7,)}, {"scale_factor": 1.7}, {"scale_factor": 0.4}):
        _check(x, dict(mode=mode, **kw))


def test_interpolate_area_and_float64_and_half() -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 7, 9)).astype(np.float32)
    _check(x, {"size": (3, 4), "mode": "area"})
    _check(x, {"scale_factor": 0.5, "mode": "area"})
    _check(x[:, :, 0], {"size": 4, "mode": "area"})
    _check(x.astype(np.float64), {"scale_factor": 1.5, "mode": "bilinear"}, rtol=1e-12, atol=1e-12)
    xh = x.astype(np.float16)
    for mode in ("nearest", "bilinear"):
        yd = F.interpolate(dt.tensor(xh), scale_factor=2, mode=mode)
        yt = TF.interpolate(torch.tensor(xh), scale_factor=2, mode=mode)
        assert yd.dtype is dt.float16
        np.testing.assert_allclose(yd.float().numpy(), yt.float().numpy(), rtol=3e-3, atol=3e-3)
    xi = rng.integers(0, 255, (1, 3, 4, 5)).astype(np.uint8)
    np.testing.assert_array_equal(F.interpolate(dt.tensor(xi), scale_factor=2.5).numpy(),
                                  TF.interpolate(torch.tensor(xi), scale_factor=2.5).numpy())


def test_empty_batch() -> None:
    x = np.zeros((0, 2, 4, 4), np.float32)
    for mode in ("nearest", "bilinear"):
        assert F.interpolate(dt.tensor(x), scale_factor=2, mode=mode).shape == (0, 2, 8, 8)


@pytest.mark.parametrize("kw", [{"size": (5, 7), "mode": "bilinear"}, {"scale_factor": 0.6, "mode": "bilinear",
                                                                        "align_corners": True},
                                {"size": (5, 2), "mode": "nearest"}, {"scale_factor": 1.5, "mode": "nearest-exact"}])
def test_interpolate_gradcheck(kw: dict) -> None:
    x = dt.tensor(np.random.default_rng(5).standard_normal((1, 2, 3, 4)), dtype=dt.float64, requires_grad=True)
    assert gradcheck(lambda a: F.interpolate(a, **kw), (x,))


@pytest.mark.filterwarnings("ignore:`nn.functional.upsample_bilinear` is deprecated")
def test_upsample_modules() -> None:
    pairs = [(nn.Upsample(scale_factor=2), torch.nn.Upsample(scale_factor=2)),
             (nn.Upsample(size=(3, 4), mode="bilinear"), torch.nn.Upsample(size=(3, 4), mode="bilinear")),
             (nn.Upsample(scale_factor=(1.5, 2), mode="bilinear", align_corners=True),
              torch.nn.Upsample(scale_factor=(1.5, 2), mode="bilinear", align_corners=True)),
             (nn.UpsamplingBilinear2d(scale_factor=2), torch.nn.UpsamplingBilinear2d(scale_factor=2)),
             (nn.UpsamplingNearest2d(size=5), torch.nn.UpsamplingNearest2d(size=5))]
    x = np.random.default_rng(6).standard_normal((2, 3, 4, 5)).astype(np.float32)
    for md, mt in pairs:
        assert repr(md) == repr(mt)
        np.testing.assert_allclose(md(dt.tensor(x)).numpy(), mt(torch.tensor(x)).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(F.upsample_bilinear(dt.tensor(x), scale_factor=2).numpy(),
                               torch.nn.functional.upsample_bilinear(torch.tensor(x), scale_factor=2).numpy(),
                               rtol=1e-5, atol=1e-6)


def test_interpolate_errors_like_torch() -> None:
    x, xt = dt.randn(2, 3, 5, 5), torch.randn(2, 3, 5, 5)
    cases = [
        (ValueError, {"size": 4, "scale_factor": 2}, "only one of size or scale_factor"),
        (ValueError, {}, "either size or scale_factor"),
        (ValueError, {"size": (2, 3, 4)}, "same number of spatial dimensions"),
        (ValueError, {"scale_factor": (1, 2, 3)}, "same number of spatial dimensions"),
        (ValueError, {"size": 4, "mode": "bilinear", "recompute_scale_factor": True}, "not meaningful"),
        (ValueError, {"size": 4, "align_corners": True}, "align_corners option can only be set"),
        (NotImplementedError, {"size": 4, "mode": "linear"}, "linear mode needs 3D input"),
        (NotImplementedError, {"size": 4, "mode": "foo"}, "foo"),
        (RuntimeError, {"scale_factor": 0.1}, "greater than 0"),
    ]
    for exc, kw, match in cases:
        with pytest.raises(exc, match=match):
            F.interpolate(x, **kw)
        with pytest.raises(exc):
            TF.interpolate(xt, **kw)
    with pytest.raises(NotImplementedError, match="bilinear"):
        F.interpolate(dt.ones(1, 1, 2, 2, dtype=dt.int64), size=4, mode="bilinear")
    with pytest.raises(TypeError, match="must be Tensor"):
        F.interpolate(np.zeros((1, 1, 2, 2)), size=4)
