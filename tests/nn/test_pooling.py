"""max/avg/adaptive pooling (functional and layers) against PyTorch, plus float64 gradchecks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import dtorch as dt
import dtorch.nn.functional as F
from dtorch import nn
from dtorch.autograd import gradcheck


def _check(fd: Callable[[Any], Any], ft: Callable[[Any], Any], x: np.ndarray, how: str = "contiguous",
           grad: bool = True, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Forward (values and indices) and input gradient of dtorch vs torch on the same input."""
    if how == "transposed":
        buf = np.ascontiguousarray(np.swapaxes(x, -1, -2))
        xd0, xt0 = dt.tensor(buf, requires_grad=grad), torch.tensor(buf, requires_grad=grad)
        xd, xt = xd0.transpose(-1, -2), xt0.transpose(-1, -2)
    elif how == "strided":
        buf = np.repeat(x, 2, axis=-1)
        xd0, xt0 = dt.tensor(buf, requires_grad=grad), torch.tensor(buf, requires_grad=grad)
        xd, xt = xd0[..., ::2], xt0[..., ::2]
    else:
        xd0, xt0 = dt.tensor(x, requires_grad=grad), torch.tensor(x, requires_grad=grad)
        xd, xt = xd0, xt0
    yd, yt = fd(xd), ft(xt)
    if isinstance(yt, tuple):
        np.testing.assert_array_equal(yd[1].numpy(), yt[1].numpy())
        assert yd[1].dtype is dt.int64
        yd, yt = yd[0], yt[0]
    assert yd.shape == tuple(yt.shape)
    np.testing.assert_allclose(yd.detach().numpy(), yt.detach().numpy(), rtol=rtol, atol=atol)
    if grad and yt.numel():
        go = np.random.default_rng(0).standard_normal(tuple(yt.shape)).astype(x.dtype)
        yd.backward(dt.tensor(go))
        yt.backward(torch.tensor(go))
        np.testing.assert_allclose(xd0.grad.numpy(), xt0.grad.numpy(), rtol=rtol, atol=atol)


WINDOWS = [  # kernel, stride, padding, dilation, ceil_mode
    (2, None, 0, 1, False), (3, 2, 1, 1, False), (3, 2, 1, 1, True), (3, 1, 1, 2, False),
    ((2, 3), (1, 2), (1, 0), (2, 1), True), (3, 3, 1, 1, True), (2, 3, 0, 1, True),
]
SHAPES = [(2, 3, 9, 11), (1, 2, 8, 8), (3, 7, 7)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("win", WINDOWS)
def test_max_pool2d_matches_torch(shape: tuple, win: tuple) -> None:
    k, s, p, d, c = win
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    _check(lambda a: F.max_pool2d(a, k, s, p, d, c, return_indices=True),
           lambda a: TF.max_pool2d(a, k, s, p, d, c, return_indices=True), x)
    _check(lambda a: F.max_pool2d(a, k, s, p, d, c), lambda a: TF.max_pool2d(a, k, s, p, d, c), x, "transposed")


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("win", [w for w in WINDOWS if w[3] == 1])
@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("divisor", [None, 3])
def test_avg_pool2d_matches_torch(shape: tuple, win: tuple, count_include_pad: bool, divisor: Any) -> None:
    k, s, p, _, c = win
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    _check(lambda a: F.avg_pool2d(a, k, s, p, c, count_include_pad, divisor),
           lambda a: TF.avg_pool2d(a, k, s, p, c, count_include_pad, divisor), x, "strided")


@pytest.mark.parametrize("shape", [(2, 3, 9, 11), (1, 2, 8, 8), (3, 7, 7), (2, 3, 4, 16)])
@pytest.mark.parametrize("out", [1, (2, 3), (3, None), (4, 5), (5, 2), 7, (8, 8)])
def test_adaptive_pools_match_torch(shape: tuple, out: Any) -> None:
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    _check(lambda a: F.adaptive_avg_pool2d(a, out), lambda a: TF.adaptive_avg_pool2d(a, out), x, "transposed")
    _check(lambda a: F.adaptive_max_pool2d(a, out, True), lambda a: TF.adaptive_max_pool2d(a, out, True), x)


def test_global_average_pool_simplenet_shape() -> None:
    x = np.random.default_rng(3).standard_normal((64, 128, 4, 4)).astype(np.float32)
    _check(lambda a: nn.AdaptiveAvgPool2d(1)(a), lambda a: torch.nn.AdaptiveAvgPool2d(1)(a), x)
    _check(lambda a: F.adaptive_avg_pool2d(a, 1), lambda a: TF.adaptive_avg_pool2d(a, 1), x[:0])


def test_pool1d_forms() -> None:
    x = np.random.default_rng(4).standard_normal((2, 3, 10)).astype(np.float32)
    _check(lambda a: F.max_pool1d(a, 3, 2, 1, return_indices=True),
           lambda a: TF.max_pool1d(a, 3, 2, 1, return_indices=True), x)
    _check(lambda a: F.avg_pool1d(a, 3, 2, 1, True, False), lambda a: TF.avg_pool1d(a, 3, 2, 1, True, False), x[0])
    _check(lambda a: F.adaptive_avg_pool1d(a, 4), lambda a: TF.adaptive_avg_pool1d(a, 4), x)
    _check(lambda a: F.adaptive_max_pool1d(a, 4, True), lambda a: TF.adaptive_max_pool1d(a, 4, True), x)
    _check(lambda a: nn.MaxPool1d(2)(a), lambda a: torch.nn.MaxPool1d(2)(a), x)
    _check(lambda a: nn.AvgPool1d(3, 1, 1)(a), lambda a: torch.nn.AvgPool1d(3, 1, 1)(a), x)


def test_max_pool_nan_and_all_negative_infinity() -> None:
    x = np.random.default_rng(5).standard_normal((1, 2, 6, 6)).astype(np.float32)
    x[0, 0, 1, 1] = x[0, 0, 1, 2] = np.nan
    x[0, 1] = -np.inf  # every value the lowest: the first in-bounds position wins
    _check(lambda a: F.max_pool2d(a, 3, 1, 1, return_indices=True),
           lambda a: TF.max_pool2d(a, 3, 1, 1, return_indices=True), x, grad=False)
    for out in ((4, 4), (3, 3)):
        _check(lambda a, out=out: F.adaptive_max_pool2d(a, out, return_indices=True),
               lambda a, out=out: TF.adaptive_max_pool2d(a, out, return_indices=True), x, grad=False)


def test_integer_and_half_inputs() -> None:
    xi = np.random.default_rng(6).integers(-50, 50, (2, 3, 8, 8))
    _check(lambda a: F.max_pool2d(a, 3, 2, 1, ceil_mode=True), lambda a: TF.max_pool2d(a, 3, 2, 1, ceil_mode=True),
           xi, grad=False)
    for cip in (True, False):
        _check(lambda a, cip=cip: F.avg_pool2d(a, 3, 2, 1, True, cip),
               lambda a, cip=cip: TF.avg_pool2d(a, 3, 2, 1, True, cip), xi, grad=False)
    xh = np.random.default_rng(7).standard_normal((2, 3, 8, 8)).astype(np.float16)
    for fd, ft in ((lambda a: F.max_pool2d(a, 3, 2, 1), lambda a: TF.max_pool2d(a, 3, 2, 1)),
                   (lambda a: F.avg_pool2d(a, 3, 2, 1), lambda a: TF.avg_pool2d(a, 3, 2, 1)),
                   (lambda a: F.adaptive_avg_pool2d(a, (3, 5)), lambda a: TF.adaptive_avg_pool2d(a, (3, 5)))):
        _check(fd, ft, xh, rtol=3e-3, atol=3e-3)
        assert fd(dt.tensor(xh)).dtype is dt.float16


def test_empty_batch_and_zero_output() -> None:
    x = np.zeros((0, 3, 8, 8), np.float32)
    _check(lambda a: F.max_pool2d(a, 2), lambda a: TF.max_pool2d(a, 2), x)
    _check(lambda a: F.avg_pool2d(a, 2), lambda a: TF.avg_pool2d(a, 2), x)
    y = np.ones((2, 3, 8, 8), np.float32)
    _check(lambda a: F.adaptive_avg_pool2d(a, (0, 2)), lambda a: TF.adaptive_avg_pool2d(a, (0, 2)), y, grad=False)


@pytest.mark.parametrize("fn", [
    lambda a: F.max_pool2d(a, 3, 2, 1, 2, True), lambda a: F.avg_pool2d(a, 3, 2, 1, True, False),
    lambda a: F.adaptive_avg_pool2d(a, (3, 2)), lambda a: F.adaptive_max_pool2d(a, (3, 2)),
    lambda a: F.avg_pool2d(a, (2, 3), 1, (1, 1), divisor_override=5)])
def test_pooling_gradcheck(fn: Callable[[Any], Any]) -> None:
    x = dt.tensor(np.random.default_rng(8).permutation(2 * 2 * 5 * 6).reshape(2, 2, 5, 6) / 7.0,
                  dtype=dt.float64, requires_grad=True)  # distinct values: max pooling is differentiable
    assert gradcheck(fn, (x,))


def test_pooling_module_repr_and_forward() -> None:
    pairs = [(nn.MaxPool2d(2), torch.nn.MaxPool2d(2)),
             (nn.MaxPool2d(3, 2, 1, ceil_mode=True), torch.nn.MaxPool2d(3, 2, 1, ceil_mode=True)),
             (nn.AvgPool2d(2), torch.nn.AvgPool2d(2)),
             (nn.AvgPool2d(3, 2, 1, True, False, 2), torch.nn.AvgPool2d(3, 2, 1, True, False, 2)),
             (nn.AdaptiveAvgPool2d(1), torch.nn.AdaptiveAvgPool2d(1)),
             (nn.AdaptiveAvgPool2d((None, 3)), torch.nn.AdaptiveAvgPool2d((None, 3))),
             (nn.AdaptiveMaxPool2d((2, 3)), torch.nn.AdaptiveMaxPool2d((2, 3))),
             (nn.MaxPool1d(2), torch.nn.MaxPool1d(2)), (nn.AvgPool1d(3), torch.nn.AvgPool1d(3)),
             (nn.AdaptiveAvgPool1d(2), torch.nn.AdaptiveAvgPool1d(2))]
    for md, mt in pairs:
        assert repr(md) == repr(mt)
    x = np.random.default_rng(9).standard_normal((2, 3, 8, 9)).astype(np.float32)
    for md, mt in pairs[:7]:
        _check(md, mt, x)
    md, mt = nn.MaxPool2d(2, return_indices=True), torch.nn.MaxPool2d(2, return_indices=True)
    _check(md, mt, x)
    _check(nn.AdaptiveMaxPool2d(3, return_indices=True), torch.nn.AdaptiveMaxPool2d(3, return_indices=True), x)


def test_pooling_errors_like_torch() -> None:
    x, xt = dt.randn(2, 3, 8, 8), torch.randn(2, 3, 8, 8)
    cases = [
        (RuntimeError, lambda: F.max_pool2d(dt.randn(8, 8), 2), lambda: TF.max_pool2d(torch.randn(8, 8), 2),
         "3D or 4D"),
        (RuntimeError, lambda: F.max_pool2d(dt.randn(2, 0, 8, 8), 2),
         lambda: TF.max_pool2d(torch.randn(2, 0, 8, 8), 2), "3D or 4D"),
        (RuntimeError, lambda: F.max_pool2d(x, 3, padding=2), lambda: TF.max_pool2d(xt, 3, padding=2),
         "pad should be at most half of effective kernel size"),
        (RuntimeError, lambda: F.max_pool2d(x, 2, stride=0), lambda: TF.max_pool2d(xt, 2, stride=0), "stride"),
        (RuntimeError, lambda: F.max_pool2d(x, 2, dilation=0), lambda: TF.max_pool2d(xt, 2, dilation=0),
         "dilation should be greater than zero"),
        (RuntimeError, lambda: F.max_pool2d(x, 2, padding=-1), lambda: TF.max_pool2d(xt, 2, padding=-1),
         "pad must be non-negative"),
        (RuntimeError, lambda: F.max_pool2d(x, 9), lambda: TF.max_pool2d(xt, 9), "Output size is too small"),
        (RuntimeError, lambda: F.max_pool2d(x, (2, 2, 2)), lambda: TF.max_pool2d(xt, (2, 2, 2)),
         "kernel_size must either be a single int, or a tuple of 2 ints"),
        (RuntimeError, lambda: F.avg_pool2d(x, 9), lambda: TF.avg_pool2d(xt, 9), "Output size is too small"),
        (RuntimeError, lambda: F.avg_pool2d(x, 3, padding=2), lambda: TF.avg_pool2d(xt, 3, padding=2),
         "pad should be at most half"),
        (RuntimeError, lambda: F.avg_pool2d(x, 2, divisor_override=0),
         lambda: TF.avg_pool2d(xt, 2, divisor_override=0), "divisor must be not zero"),
        (RuntimeError, lambda: F.adaptive_avg_pool2d(x, (-1, 2)), lambda: TF.adaptive_avg_pool2d(xt, (-1, 2)),
         "greater than or equal to 0"),
        (RuntimeError, lambda: F.adaptive_avg_pool2d(dt.randn(8, 8), 2),
         lambda: TF.adaptive_avg_pool2d(torch.randn(8, 8), 2), "Expected 3D or 4D tensor"),
        (RuntimeError, lambda: F.adaptive_max_pool2d(dt.randn(2, 3, 0, 8), 2),
         lambda: TF.adaptive_max_pool2d(torch.randn(2, 3, 0, 8), 2), "non-zero size for non-batch dimensions"),
        (RuntimeError, lambda: F.adaptive_max_pool2d(x, (1, 2, 3)), lambda: TF.adaptive_max_pool2d(xt, (1, 2, 3)),
         "output_size"),
        (NotImplementedError, lambda: F.adaptive_avg_pool2d(dt.ones(1, 1, 4, 4, dtype=dt.int64), 2),
         lambda: TF.adaptive_avg_pool2d(torch.ones(1, 1, 4, 4, dtype=torch.int64), 2), "not implemented"),
        (RuntimeError, lambda: F.max_pool1d(dt.randn(8), 2), lambda: TF.max_pool1d(torch.randn(8), 2), "2D or 3D"),
    ]
    for exc, fd, ft, match in cases:
        with pytest.raises(exc, match=match):
            fd()
        with pytest.raises(exc):
            ft()
    with pytest.raises(TypeError, match="must be Tensor"):
        F.max_pool2d(np.zeros((1, 1, 4, 4)), 2)
