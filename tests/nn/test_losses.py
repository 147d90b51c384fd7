"""Loss functions and loss layers against PyTorch: reductions, weights, ignore_index, label smoothing,
probability targets, gradients (input and target), autocast and every error path."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from tensor_oracle import assert_close

import dtorch as dt
import dtorch.nn.functional as F
from dtorch import nn
from dtorch.autograd import gradcheck

RTOL, ATOL = 1e-5, 1e-5
REDUCTIONS = ["mean", "sum", "none"]


def _f(x: np.ndarray, rg: bool = True, layout: str = "contiguous") -> tuple[dt.Tensor, torch.Tensor]:
    if layout == "transposed":
        buf = np.ascontiguousarray(np.swapaxes(x, -1, -2))
        d = dt.tensor(buf, dtype=dt.float32).transpose(-1, -2)
        t = torch.tensor(buf, dtype=torch.float32).transpose(-1, -2)
        if rg:
            d = d.detach().requires_grad_()
            t = t.detach().requires_grad_()
        return d, t
    return dt.tensor(x, dtype=dt.float32, requires_grad=rg), torch.tensor(x, dtype=torch.float32, requires_grad=rg)


def _i(x: np.ndarray) -> tuple[dt.Tensor, torch.Tensor]:
    return dt.tensor(x, dtype=dt.int64), torch.tensor(x, dtype=torch.int64)


def _check(yd: dt.Tensor, yt: torch.Tensor, ins: list[tuple[dt.Tensor, torch.Tensor]]) -> None:
    assert_close(yd, yt, rtol=RTOL, atol=ATOL)
    g = np.random.default_rng(0).standard_normal(tuple(yt.shape))
    yd.backward(dt.tensor(g, dtype=dt.float32))
    yt.backward(torch.tensor(g, dtype=torch.float32))
    for d, t in ins:
        assert_close(d.grad, t.grad, rtol=RTOL, atol=ATOL)


# ---------------------------------------------------------------------------------------------- cross entropy

CE_SHAPES = [((6, 5), "contiguous"), ((5,), "contiguous"), ((3, 4, 5), "transposed"), ((2, 3, 2, 4), "contiguous")]


@pytest.mark.parametrize("shape,layout", CE_SHAPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_class_indices(shape: tuple[int, ...], layout: str, reduction: str, weighted: bool,
                                     smoothing: float) -> None:
    rng = np.random.default_rng(len(shape) * 7 + int(weighted))
    c = shape[0] if len(shape) == 1 else shape[1]
    tshape = () if len(shape) == 1 else shape[:1] + shape[2:]
    target = rng.integers(0, c, tshape)
    if target.size > 2:
        target.reshape(-1)[1] = 3  # some targets equal ignore_index below
    xd, xt = _f(rng.standard_normal(shape) * 3, layout=layout)
    td, tt = _i(target)
    kw: dict[str, Any] = {"reduction": reduction, "label_smoothing": smoothing, "ignore_index": 3}
    wd = wt = None
    if weighted:
        w = rng.uniform(0.2, 2.0, c)
        wd, wt = dt.tensor(w, dtype=dt.float32), torch.tensor(w, dtype=torch.float32)
    _check(F.cross_entropy(xd, td, weight=wd, **kw), TF.cross_entropy(xt, tt, weight=wt, **kw), [(xd, xt)])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 4)])
def test_cross_entropy_probability_targets(reduction: str, weighted: bool, smoothing: float,
                                           shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(17)
    p = rng.uniform(0, 1, shape)
    p /= p.sum(axis=1, keepdims=True)
    xd, xt = _f(rng.standard_normal(shape) * 2)
    pd, pt = _f(p)
    kw: dict[str, Any] = {"reduction": reduction, "label_smoothing": smoothing}
    wd = wt = None
    if weighted:
        w = rng.uniform(0.2, 2.0, shape[1])
        wd, wt = dt.tensor(w, dtype=dt.float32), torch.tensor(w, dtype=torch.float32)
    _check(F.cross_entropy(xd, pd, weight=wd, **kw), TF.cross_entropy(xt, pt, weight=wt, **kw),
           [(xd, xt), (pd, pt)])


def test_cross_entropy_edge_cases() -> None:
    x = np.random.default_rng(2).standard_normal((3, 4))
    xd, xt = _f(x)
    td, tt = _i(np.full(3, -100))
    for red in ("mean", "sum", "none"):
        for ls in (0.0, 0.1):
            assert_close(F.cross_entropy(xd, td, reduction=red, label_smoothing=ls),
                         TF.cross_entropy(xt, tt, reduction=red, label_smoothing=ls), equal_nan=True)
    assert np.isnan(F.cross_entropy(xd, td).item())
    ed, et = _f(np.zeros((0, 4)))
    zd, zt = _i(np.zeros(0, dtype=np.int64))
    for red in ("mean", "sum", "none"):
        assert_close(F.cross_entropy(ed, zd, reduction=red), TF.cross_entropy(et, zt, reduction=red))
    big = np.array([[1000.0, -1000.0, 0.0], [-5e3, 5e3, 1.0]])
    bd, bt = _f(big)
    ti = np.array([1, 0])
    _check(F.cross_entropy(bd, dt.tensor(ti)), TF.cross_entropy(bt, torch.tensor(ti)), [(bd, bt)])
    u8 = np.array([0, 3, 1], dtype=np.uint8)
    assert_close(F.cross_entropy(xd, dt.tensor(u8)), TF.cross_entropy(xt, torch.tensor(u8)), rtol=RTOL, atol=ATOL)


def test_cross_entropy_gradcheck() -> None:
    rng = np.random.default_rng(5)
    x = dt.tensor(rng.standard_normal((4, 3)), dtype=dt.float64, requires_grad=True)
    t = dt.tensor([0, 2, -100, 1])
    w = dt.tensor([0.5, 1.0, 2.0], dtype=dt.float64)
    for red in ("mean", "sum", "none"):
        assert gradcheck(lambda a, r=red: F.cross_entropy(a, t, weight=w, reduction=r, label_smoothing=0.1), (x,))
    p = dt.tensor(rng.uniform(0, 1, (4, 3)), dtype=dt.float64, requires_grad=True)
    assert gradcheck(lambda a, b: F.cross_entropy(a, b, weight=w, label_smoothing=0.2), (x, p))
    xs = dt.tensor(rng.standard_normal((2, 3, 2)), dtype=dt.float64, requires_grad=True)
    assert gradcheck(lambda a: F.cross_entropy(a, dt.tensor([[0, 2], [1, 1]])), (xs,))


def test_cross_entropy_errors() -> None:
    x = dt.randn(3, 5)
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte"):
        F.cross_entropy(x, dt.rand(3))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte"):
        F.cross_entropy(x, dt.tensor([1, 2, 3], dtype=dt.int32))
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target batch_size \(2\)"):
        F.cross_entropy(x, dt.tensor([1, 2]))
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.cross_entropy(x, dt.tensor([1, 2, 7]))
    with pytest.raises(IndexError, match="Target -3 is out of bounds"):
        F.cross_entropy(x, dt.tensor([1, 2, -3]))
    with pytest.raises(RuntimeError, match=r"Expected target size \[2, 4\], got \[2, 5\]"):
        F.cross_entropy(dt.randn(2, 3, 4), dt.zeros(2, 5, dtype=dt.int64))
    with pytest.raises(RuntimeError, match="multi-target not supported"):
        F.cross_entropy(x, dt.zeros(3, 1, dtype=dt.int64))
    with pytest.raises(RuntimeError, match="ignore_index is not supported for floating point target"):
        F.cross_entropy(x, dt.rand(3, 5), ignore_index=1)
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0"):
        F.cross_entropy(x, dt.tensor([1, 2, 3]), label_smoothing=1.5)
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        F.cross_entropy(x, dt.tensor([1, 2, 3]), reduction="avg")
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 5 classes"):
        F.cross_entropy(x, dt.tensor([1, 2, 3]), weight=dt.ones(4))
    with pytest.raises(NotImplementedError, match="floating point"):
        F.cross_entropy(dt.ones(3, 5, dtype=dt.int64), dt.tensor([1, 2, 3]))
    with pytest.raises(RuntimeError, match="0-D"):
        F.cross_entropy(dt.tensor(1.0), dt.tensor(0))
    with pytest.raises(RuntimeError, match="expected scalar type"):
        F.cross_entropy(x.double(), dt.tensor([1, 2, 3]), weight=dt.ones(5))
    with pytest.raises(TypeError, match="must be Tensor"):
        F.cross_entropy(x, [1, 2, 3])  # type: ignore[arg-type]


def test_legacy_size_average_reduce() -> None:
    x, t = dt.randn(4, 3), dt.tensor([0, 1, 2, 1])
    with pytest.warns(UserWarning, match="size_average and reduce"):
        s = F.cross_entropy(x, t, size_average=False)
    np.testing.assert_allclose(s.item(), F.cross_entropy(x, t, reduction="sum").item(), rtol=1e-6)
    with pytest.warns(UserWarning):
        assert tuple(F.nll_loss(x, t, reduce=False).shape) == (4,)


# ---------------------------------------------------------------------------------------------- nll


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(5, 4), (4,), (2, 4, 3)])
def test_nll_loss(reduction: str, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(3)
    c = shape[0] if len(shape) == 1 else shape[1]
    tshape = () if len(shape) == 1 else shape[:1] + shape[2:]
    target = rng.integers(0, c, tshape)
    if target.size > 1:
        target.reshape(-1)[0] = -100
    w = rng.uniform(0.5, 2, c)
    xd, xt = _f(rng.standard_normal(shape))
    td, tt = _i(target)
    _check(F.nll_loss(xd, td, weight=dt.tensor(w, dtype=dt.float32), reduction=reduction),
           TF.nll_loss(xt, tt, weight=torch.tensor(w, dtype=torch.float32), reduction=reduction), [(xd, xt)])
    x = dt.tensor(rng.standard_normal(shape), dtype=dt.float64, requires_grad=True)
    assert gradcheck(lambda a: F.nll_loss(a, td, reduction=reduction), (x,))


def test_nll_loss_errors() -> None:
    with pytest.raises(ValueError, match=r"Expected 1 or more dimensions \(got 0\)"):
        F.nll_loss(dt.tensor(1.0), dt.tensor(0))
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.nll_loss(dt.randn(3, 5), dt.tensor([1, 2, 7]))
    with pytest.raises(ValueError, match="batch_size"):
        F.nll_loss(dt.randn(3, 5), dt.tensor([1, 2]))
    with pytest.raises(NotImplementedError, match="floating point"):
        F.nll_loss(dt.ones(3, 5, dtype=dt.int64), dt.tensor([1, 2, 3]))


# ---------------------------------------------------------------------------------------------- regression

POINTWISE: list[tuple[str, dict[str, Any]]] = [
    ("mse_loss", {}), ("l1_loss", {}), ("smooth_l1_loss", {"beta": 0.5}), ("smooth_l1_loss", {"beta": 0.0}),
    ("huber_loss", {"delta": 0.7}),
]


@pytest.mark.parametrize("name,kw", POINTWISE)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_pointwise_losses(name: str, kw: dict[str, Any], reduction: str) -> None:
    rng = np.random.default_rng(8)
    xd, xt = _f(rng.standard_normal((4, 5)) * 2, layout="transposed")
    td, tt = _f(rng.standard_normal((4, 5)) * 2)
    _check(getattr(F, name)(xd, td, reduction=reduction, **kw), getattr(TF, name)(xt, tt, reduction=reduction, **kw),
           [(xd, xt), (td, tt)])


@pytest.mark.parametrize("name,kw", POINTWISE)
def test_pointwise_broadcast_weight_and_gradcheck(name: str, kw: dict[str, Any]) -> None:
    rng = np.random.default_rng(9)
    xd, xt = _f(rng.standard_normal((3, 1)))
    td, tt = _f(rng.standard_normal(4))
    with pytest.warns(UserWarning, match="different to the input size"):
        yd = getattr(F, name)(xd, td, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yt = getattr(TF, name)(xt, tt, **kw)
    _check(yd, yt, [(xd, xt), (td, tt)])
    if name != "smooth_l1_loss":
        w = rng.uniform(0.1, 2, (3, 4))
        ad, at = _f(rng.standard_normal((3, 4)))
        bd, bt = _f(rng.standard_normal((3, 4)))
        for red in REDUCTIONS:
            assert_close(getattr(F, name)(ad, bd, reduction=red, weight=dt.tensor(w, dtype=dt.float32), **kw),
                         getattr(TF, name)(at, bt, reduction=red, weight=torch.tensor(w, dtype=torch.float32), **kw),
                         rtol=RTOL, atol=ATOL)
        with pytest.raises(ValueError, match="Weights and input must have the same size"):
            getattr(F, name)(ad, bd, weight=dt.ones(4), **kw)
    # away from the kinks at |d| = 0 / beta / delta
    a = dt.tensor([[0.1, 2.0], [-1.5, 3.1]], dtype=dt.float64, requires_grad=True)
    b = dt.tensor([[1.0, -0.2], [0.4, 0.05]], dtype=dt.float64, requires_grad=True)
    for red in REDUCTIONS:
        assert gradcheck(lambda u, v, r=red: getattr(F, name)(u, v, reduction=r, **kw), (a, b))


def test_pointwise_dtype_promotion_and_errors() -> None:
    out = F.mse_loss(dt.randn(3), dt.randn(3, dtype=dt.float64))
    assert out.dtype is dt.float64
    assert F.l1_loss(dt.randn(3), dt.ones(3, dtype=dt.int64)).dtype is dt.float32
    assert np.isnan(F.mse_loss(dt.randn(0), dt.randn(0)).item())
    with pytest.raises(RuntimeError, match="do not broadcast"), pytest.warns(UserWarning):
        F.mse_loss(dt.randn(3, 2), dt.randn(4))
    with pytest.raises(RuntimeError, match="does not support negative values for beta"):
        F.smooth_l1_loss(dt.randn(3), dt.randn(3), beta=-1)
    with pytest.raises(RuntimeError, match="does not support non-positive values for delta"):
        F.huber_loss(dt.randn(3), dt.randn(3), delta=0)


# ---------------------------------------------------------------------------------------------- binary


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy(reduction: str, weighted: bool) -> None:
    rng = np.random.default_rng(10)
    x = rng.uniform(0.02, 0.98, (4, 3))
    x[0, 0], x[1, 1] = 0.0, 1.0  # exercises the -100 clamp of the logs
    xd, xt = _f(x)
    td, tt = _f(rng.uniform(0, 1, (4, 3)))
    wd = wt = None
    if weighted:
        w = rng.uniform(0.5, 2, 3)
        wd, wt = dt.tensor(w, dtype=dt.float32), torch.tensor(w, dtype=torch.float32)
    yd = F.binary_cross_entropy(xd, td, weight=wd, reduction=reduction)
    yt = TF.binary_cross_entropy(xt, tt, weight=wt, reduction=reduction)
    assert_close(yd, yt, rtol=RTOL, atol=1e-4)
    yd.sum().backward()
    yt.sum().backward()
    # torch's gradient at exactly 0 / 1 is +-1e12-scaled; compare the interior elements tightly
    mask = np.ones((4, 3), bool)
    mask[0, 0] = mask[1, 1] = False
    np.testing.assert_allclose(xd.grad.numpy()[mask], xt.grad.numpy()[mask], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(td.grad.numpy(), tt.grad.numpy(), rtol=1e-4, atol=1e-4)
    a = dt.tensor(rng.uniform(0.1, 0.9, (3, 2)), dtype=dt.float64, requires_grad=True)
    b = dt.tensor(rng.uniform(0, 1, (3, 2)), dtype=dt.float64, requires_grad=True)
    assert gradcheck(lambda u, v: F.binary_cross_entropy(u, v, reduction=reduction), (a, b))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weight,pos_weight", [(False, False), (True, False), (False, True), (True, True)])
def test_bce_with_logits(reduction: str, weight: bool, pos_weight: bool) -> None:
    rng = np.random.default_rng(12)
    x = rng.standard_normal((4, 3)) * 3
    x[0, :] = [100.0, -100.0, 30.0]  # no overflow for large logits
    xd, xt = _f(x)
    td, tt = _f(rng.uniform(0, 1, (4, 3)))
    kd: dict[str, Any] = {"reduction": reduction}
    kt: dict[str, Any] = {"reduction": reduction}
    if weight:
        w = rng.uniform(0.5, 2, (4, 1))
        kd["weight"], kt["weight"] = dt.tensor(w, dtype=dt.float32), torch.tensor(w, dtype=torch.float32)
    if pos_weight:
        pw = rng.uniform(0.5, 3, 3)
        kd["pos_weight"], kt["pos_weight"] = dt.tensor(pw, dtype=dt.float32), torch.tensor(pw, dtype=torch.float32)
    _check(F.binary_cross_entropy_with_logits(xd, td, **kd), TF.binary_cross_entropy_with_logits(xt, tt, **kt),
           [(xd, xt), (td, tt)])
    a = dt.tensor(rng.standard_normal((3, 2)), dtype=dt.float64, requires_grad=True)
    b = dt.tensor(rng.uniform(0, 1, (3, 2)), dtype=dt.float64, requires_grad=True)
    pw64 = dt.tensor([0.5, 2.0], dtype=dt.float64) if pos_weight else None
    assert gradcheck(lambda u, v: F.binary_cross_entropy_with_logits(u, v, pos_weight=pw64, reduction=reduction),
                     (a, b))


def test_binary_errors() -> None:
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(dt.tensor([1.5]), dt.tensor([1.0]))
    with pytest.raises(RuntimeError, match="all elements of target should be between 0 and 1"):
        F.binary_cross_entropy(dt.tensor([0.5]), dt.tensor([2.0]))
    with pytest.raises(ValueError, match="different to the input size"):
        F.binary_cross_entropy(dt.rand(3), dt.rand(3, 1))
    with pytest.raises(RuntimeError, match="Found dtype"):
        F.binary_cross_entropy(dt.rand(3), dt.rand(3, dtype=dt.float64))
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(dt.rand(3), dt.rand(3, 1))
    with pytest.raises(RuntimeError, match="floating point"):
        F.binary_cross_entropy_with_logits(dt.rand(3), dt.ones(3, dtype=dt.int64))
    with pytest.raises(RuntimeError, match="must broadcast"):
        F.binary_cross_entropy_with_logits(dt.rand(3, 2), dt.rand(3, 2), pos_weight=dt.ones(3))
    assert F.binary_cross_entropy_with_logits(dt.rand(3), dt.rand(3, dtype=dt.float64)).dtype is dt.float64


# ---------------------------------------------------------------------------------------------- autocast, modules


def test_losses_under_autocast_are_float32() -> None:
    x = dt.randn(4, 3, dtype=dt.float16).requires_grad_()
    with dt.autocast(dtype=dt.float16):
        losses = [F.cross_entropy(x, dt.tensor([0, 1, 2, 1])), F.mse_loss(x, dt.zeros(4, 3)),
                  F.binary_cross_entropy_with_logits(x, dt.ones(4, 3)), F.l1_loss(x, dt.zeros(4, 3, dtype=dt.float16)),
                  F.nll_loss(F.log_softmax(x, 1), dt.tensor([0, 1, 2, 1]))]
    for loss in losses:
        assert loss.dtype is dt.float32
    sum(losses).backward()
    assert x.grad is not None and x.grad.dtype is dt.float16


LOSS_MODULES: list[tuple[str, dict[str, Any]]] = [
    ("CrossEntropyLoss", {}), ("CrossEntropyLoss", {"label_smoothing": 0.1, "ignore_index": 1}),
    ("NLLLoss", {"reduction": "sum"}), ("MSELoss", {}), ("L1Loss", {"reduction": "none"}),
    ("SmoothL1Loss", {"beta": 0.5}), ("HuberLoss", {"delta": 2.0}), ("BCELoss", {}), ("BCEWithLogitsLoss", {}),
]


@pytest.mark.parametrize("cls,kw", LOSS_MODULES)
def test_loss_modules(cls: str, kw: dict[str, Any]) -> None:
    md, mt = getattr(nn, cls)(**kw), getattr(torch.nn, cls)(**kw)
    assert repr(md) == repr(mt)
    assert list(md.state_dict()) == list(mt.state_dict())
    rng = np.random.default_rng(1)
    x = rng.uniform(0.05, 0.95, (4, 3))
    if cls in ("CrossEntropyLoss", "NLLLoss"):
        tgt_d, tgt_t = _i(np.array([0, 2, 1, 1]))
    else:
        tgt_d, tgt_t = _f(rng.uniform(0, 1, (4, 3)), rg=False)
    xd, xt = _f(x)
    _check(md(xd, tgt_d), mt(xt, tgt_t), [(xd, xt)])


def test_weighted_loss_modules_register_buffers() -> None:
    w = np.array([1.0, 2.0, 0.5])
    md = nn.CrossEntropyLoss(weight=dt.tensor(w, dtype=dt.float32))
    mt = torch.nn.CrossEntropyLoss(weight=torch.tensor(w, dtype=torch.float32))
    assert list(md.state_dict()) == list(mt.state_dict()) == ["weight"]
    x, t = np.random.default_rng(0).standard_normal((5, 3)), np.array([0, 1, 2, 2, 1])
    xd, xt = _f(x)
    _check(md(xd, dt.tensor(t)), mt(xt, torch.tensor(t)), [(xd, xt)])
    pw = dt.tensor([2.0, 1.0, 0.5])
    bd = nn.BCEWithLogitsLoss(pos_weight=pw)
    assert list(bd.state_dict()) == list(torch.nn.BCEWithLogitsLoss(pos_weight=torch.ones(3)).state_dict())
    assert bd.double().pos_weight.dtype is dt.float64
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        nn.MSELoss(reduction="mean ")
