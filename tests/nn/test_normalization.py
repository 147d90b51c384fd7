"""batch_norm / layer_norm / group_norm / rms_norm and their layers against PyTorch."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from tensor_oracle import assert_close, pair, to_numpy

import dtorch as dt
import dtorch.nn.functional as F
from dtorch import nn
from dtorch.autograd import gradcheck

RTOL, ATOL = 1e-4, 1e-5


def _t(x: np.ndarray, rg: bool = False) -> tuple[dt.Tensor, torch.Tensor]:
    d = dt.tensor(x, dtype=dt.float32, requires_grad=rg)
    t = torch.tensor(x, dtype=torch.float32, requires_grad=rg)
    return d, t


def _copy_params(md: nn.Module, mt: torch.nn.Module) -> None:
    with torch.no_grad():
        for (_, pd), (_, pt) in zip(md.named_parameters(), mt.named_parameters()):
            pt.copy_(torch.from_numpy(pd.detach().numpy().copy()))


# ---------------------------------------------------------------------------------------------- batch_norm


@pytest.mark.parametrize("shape", [(8, 3), (6, 4, 5), (5, 3, 4, 4), (4, 2, 3, 2, 2)])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_functional(shape: tuple[int, ...], affine: bool, training: bool) -> None:
    rng = np.random.default_rng(sum(shape))
    c = shape[1]
    x = rng.standard_normal(shape) * 3 + 1
    xd, xt = pair(x, "float32", "transposed" if len(shape) > 2 else "contiguous", requires_grad=True)
    rm, rv = rng.standard_normal(c), rng.uniform(0.5, 2, c)
    rmd, rmt = _t(rm)
    rvd, rvt = _t(rv)
    wd = wt = bd = bt = None
    if affine:
        wd, wt = _t(rng.standard_normal(c), True)
        bd, bt = _t(rng.standard_normal(c), True)
    yd = F.batch_norm(xd, rmd, rvd, wd, bd, training=training, momentum=0.3, eps=1e-3)
    yt = TF.batch_norm(xt, rmt, rvt, wt, bt, training=training, momentum=0.3, eps=1e-3)
    assert_close(yd, yt, rtol=RTOL, atol=ATOL)
    assert_close(rmd, rmt, rtol=RTOL, atol=ATOL)
    assert_close(rvd, rvt, rtol=RTOL, atol=ATOL)
    g = rng.standard_normal(shape)
    yd.backward(dt.tensor(g, dtype=dt.float32))
    yt.backward(torch.tensor(g, dtype=torch.float32))
    assert_close(xd.grad, xt.grad, rtol=RTOL, atol=ATOL)
    if affine:
        assert_close(wd.grad, wt.grad, rtol=RTOL, atol=ATOL)
        assert_close(bd.grad, bt.grad, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradcheck(training: bool) -> None:
    rng = np.random.default_rng(1)
    x = dt.tensor(rng.standard_normal((3, 2, 2, 2)), dtype=dt.float64, requires_grad=True)
    w = dt.tensor(rng.standard_normal(2), dtype=dt.float64, requires_grad=True)
    b = dt.tensor(rng.standard_normal(2), dtype=dt.float64, requires_grad=True)
    rm = dt.tensor(rng.standard_normal(2), dtype=dt.float64)
    rv = dt.tensor(rng.uniform(0.5, 2, 2), dtype=dt.float64)
    # running buffers are only read in eval mode (training would update them on every evaluation)
    stats = (None, None) if training else (rm, rv)
    assert gradcheck(lambda a, c, e: F.batch_norm(a, *stats, c, e, training=training), (x, w, b))
    assert gradcheck(lambda a: F.batch_norm(a, *stats, None, None, training=training), (x,))


def _train_steps(md: nn.Module, mt: torch.nn.Module, shape: tuple[int, ...], steps: int = 4) -> None:
    rng = np.random.default_rng(42)
    for _ in range(steps):
        x = rng.standard_normal(shape) * 2 + 0.5
        xd, xt = _t(x)
        assert_close(md(xd), mt(xt), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("momentum", [0.1, 0.5, None])
def test_batchnorm2d_running_stats_and_eval(momentum: float | None) -> None:
    md, mt = nn.BatchNorm2d(3, momentum=momentum), torch.nn.BatchNorm2d(3, momentum=momentum)
    with dt.no_grad():
        md.weight.uniform_(0.5, 1.5)
        md.bias.uniform_(-1, 1)
    _copy_params(md, mt)
    _train_steps(md, mt, (5, 3, 4, 4))
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        assert_close(getattr(md, name), getattr(mt, name), rtol=RTOL, atol=ATOL)
    md.eval()
    mt.eval()
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 4))
    xd, xt = _t(x, True)
    yd, yt = md(xd), mt(xt)
    assert_close(yd, yt, rtol=RTOL, atol=ATOL)
    yd.sum().backward()
    yt.sum().backward()
    assert_close(xd.grad, xt.grad, rtol=RTOL, atol=ATOL)
    assert_close(md.weight.grad, mt.weight.grad, rtol=RTOL, atol=ATOL)
    assert_close(md.bias.grad, mt.bias.grad, rtol=RTOL, atol=ATOL)
    assert md.num_batches_tracked.item() == 4  # eval does not count


@pytest.mark.parametrize("kwargs", [{"affine": False}, {"track_running_stats": False},
                                    {"affine": False, "track_running_stats": False}, {"eps": 1e-2}])
def test_batchnorm1d_variants(kwargs: dict[str, Any]) -> None:
    md, mt = nn.BatchNorm1d(4, **kwargs), torch.nn.BatchNorm1d(4, **kwargs)
    assert repr(md) == repr(mt)
    assert list(md.state_dict()) == list(mt.state_dict())
    _train_steps(md, mt, (6, 4, 3))
    _train_steps(md, mt, (6, 4))
    md.eval()
    mt.eval()
    _train_steps(md, mt, (3, 4, 2), steps=1)


def test_batchnorm_input_rank_and_value_errors() -> None:
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        nn.BatchNorm2d(3)(dt.randn(2, 3, 4))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.BatchNorm1d(3)(dt.randn(2, 3, 4, 4))
    with pytest.raises(ValueError, match=r"expected 5D input \(got 4D input\)"):
        nn.BatchNorm3d(3)(dt.randn(2, 3, 4, 4))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        nn.BatchNorm1d(3)(dt.randn(1, 3))
    with pytest.raises(RuntimeError, match="running_mean should contain 5 elements not 3"):
        F.batch_norm(dt.randn(4, 5), dt.zeros(3), dt.ones(3), training=True)
    with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
        F.batch_norm(dt.randn(4, 3), None, None, training=False)
    with pytest.raises(RuntimeError, match="expected an input of shape"):
        F.batch_norm(dt.randn(4), None, None, training=True)
    with pytest.raises(RuntimeError, match="floating point"):
        F.batch_norm(dt.tensor([[1, 2], [3, 4]]), None, None, training=True)


def test_batchnorm_empty_batch_keeps_running_stats() -> None:
    m = nn.BatchNorm2d(3)
    out = m(dt.randn(0, 3, 2, 2))
    assert tuple(out.shape) == (0, 3, 2, 2)
    assert m.running_mean.tolist() == [0.0, 0.0, 0.0] and m.running_var.tolist() == [1.0, 1.0, 1.0]
    x = dt.randn(0, 3, requires_grad=True)
    F.batch_norm(x, None, None, training=True).sum().backward()
    assert tuple(x.grad.shape) == (0, 3)


def test_batch_norm_reduced_precision_and_autocast() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 3, 2, 2))
    xd, xt = pair(x, "bfloat16", requires_grad=True)
    w = rng.uniform(0.5, 1.5, 3)
    wd, wt = _t(w, True)
    yd = F.batch_norm(xd, None, None, wd, None, training=True)
    yt = TF.batch_norm(xt, None, None, wt, None, training=True)
    assert yd.dtype is dt.bfloat16
    assert_close(yd, yt)
    m = nn.BatchNorm2d(3).half()
    assert m.running_mean.dtype is dt.float16
    h = dt.tensor(x, dtype=dt.float16, requires_grad=True)
    assert m(h).dtype is dt.float16
    with dt.autocast(dtype=dt.float16):
        out = nn.BatchNorm2d(3)(h)
    assert out.dtype is dt.float32
    out.sum().backward()
    assert h.grad.dtype is dt.float16


# ---------------------------------------------------------------------------------------------- layer_norm


@pytest.mark.parametrize("shape,norm", [((4, 6), (6,)), ((2, 3, 5), (5,)), ((2, 3, 4), (3, 4)), ((0, 5), (5,)),
                                        ((5,), (5,))])
@pytest.mark.parametrize("affine,bias", [(True, True), (True, False), (False, False)])
def test_layer_norm(shape: tuple[int, ...], norm: tuple[int, ...], affine: bool, bias: bool) -> None:
    rng = np.random.default_rng(len(shape) * 10 + len(norm))
    md = nn.LayerNorm(norm, eps=1e-4, elementwise_affine=affine, bias=bias)
    mt = torch.nn.LayerNorm(norm, eps=1e-4, elementwise_affine=affine, bias=bias)
    assert repr(md) == repr(mt)
    with dt.no_grad():
        for p in md.parameters():
            p.normal_()
    _copy_params(md, mt)
    xd, xt = pair(rng.standard_normal(shape) * 2 + 1, "float32", "transposed" if len(shape) > 2 else "contiguous",
                  requires_grad=True)
    yd, yt = md(xd), mt(xt)
    assert_close(yd, yt, rtol=RTOL, atol=ATOL)
    g = rng.standard_normal(shape)
    yd.backward(dt.tensor(g, dtype=dt.float32))
    yt.backward(torch.tensor(g, dtype=torch.float32))
    assert_close(xd.grad, xt.grad, rtol=RTOL, atol=ATOL)
    for (_, pd), (_, pt) in zip(md.named_parameters(), mt.named_parameters()):
        assert_close(pd.grad, pt.grad, rtol=RTOL, atol=ATOL)


def test_layer_norm_gradcheck_and_errors() -> None:
    rng = np.random.default_rng(2)
    x = dt.tensor(rng.standard_normal((2, 3, 4)), dtype=dt.float64, requires_grad=True)
    w = dt.tensor(rng.standard_normal((3, 4)), dtype=dt.float64, requires_grad=True)
    b = dt.tensor(rng.standard_normal((3, 4)), dtype=dt.float64, requires_grad=True)
    assert gradcheck(lambda a, c, e: F.layer_norm(a, (3, 4), c, e), (x, w, b))
    assert gradcheck(lambda a: F.layer_norm(a, 4), (x,))
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\]"):
        F.layer_norm(dt.randn(4, 3), (4,))
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape as normalized_shape"):
        F.layer_norm(dt.randn(4, 3), (3,), weight=dt.ones(4))
    with dt.autocast(dtype=dt.bfloat16):
        out = nn.LayerNorm(3)(dt.randn(2, 3, dtype=dt.bfloat16))
    assert out.dtype is dt.float32


# ---------------------------------------------------------------------------------------------- group_norm


@pytest.mark.parametrize("shape,groups", [((4, 6), 3), ((3, 6, 5), 2), ((2, 4, 3, 3), 4), ((2, 4, 3, 3), 1),
                                          ((0, 6, 2), 3)])
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm(shape: tuple[int, ...], groups: int, affine: bool) -> None:
    rng = np.random.default_rng(shape[1] + groups)
    md, mt = nn.GroupNorm(groups, shape[1], affine=affine), torch.nn.GroupNorm(groups, shape[1], affine=affine)
    assert repr(md) == repr(mt)
    with dt.no_grad():
        for p in md.parameters():
            p.normal_()
    _copy_params(md, mt)
    xd, xt = pair(rng.standard_normal(shape) * 3, "float32", "transposed" if len(shape) > 2 else "contiguous",
                  requires_grad=True)
    yd, yt = md(xd), mt(xt)
    assert_close(yd, yt, rtol=RTOL, atol=ATOL)
    g = rng.standard_normal(shape)
    yd.backward(dt.tensor(g, dtype=dt.float32))
    yt.backward(torch.tensor(g, dtype=torch.float32))
    assert_close(xd.grad, xt.grad, rtol=RTOL, atol=ATOL)
    for (_, pd), (_, pt) in zip(md.named_parameters(), mt.named_parameters()):
        assert_close(pd.grad, pt.grad, rtol=RTOL, atol=ATOL)


def test_group_norm_gradcheck_and_errors() -> None:
    rng = np.random.default_rng(4)
    x = dt.tensor(rng.standard_normal((2, 4, 3)), dtype=dt.float64, requires_grad=True)
    w = dt.tensor(rng.standard_normal(4), dtype=dt.float64, requires_grad=True)
    b = dt.tensor(rng.standard_normal(4), dtype=dt.float64, requires_grad=True)
    assert gradcheck(lambda a, c, e: F.group_norm(a, 2, c, e), (x, w, b))
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(dt.randn(4, 6), 4)
    with pytest.raises(RuntimeError, match="Expected weight to be a vector of size equal to the number of channels"):
        F.group_norm(dt.randn(4, 6), 3, weight=dt.ones(4))
    with pytest.raises(RuntimeError, match="Expected at least 2 dimensions"):
        F.group_norm(dt.randn(6), 3)
    with pytest.raises(ValueError, match="divisible by num_groups"):
        nn.GroupNorm(4, 6)


def test_rms_norm_matches_torch() -> None:
    rng = np.random.default_rng(9)
    md, mt = nn.RMSNorm((3, 4)), torch.nn.RMSNorm((3, 4))
    assert repr(md) == repr(mt)
    with dt.no_grad():
        md.weight.normal_()
    _copy_params(md, mt)
    xd, xt = pair(rng.standard_normal((2, 3, 4)), "float32", requires_grad=True)
    yd, yt = md(xd), mt(xt)
    assert_close(yd, yt, rtol=RTOL, atol=ATOL)
    yd.sum().backward()
    yt.sum().backward()
    assert_close(xd.grad, xt.grad, rtol=RTOL, atol=ATOL)
    assert_close(md.weight.grad, mt.weight.grad, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(to_numpy(F.rms_norm(xd, 4, eps=1e-3)), to_numpy(TF.rms_norm(xt, [4], eps=1e-3)),
                               rtol=RTOL, atol=ATOL)


def test_norm_layer_reprs_and_state_dict_keys() -> None:
    pairs = [(nn.BatchNorm2d(8), torch.nn.BatchNorm2d(8)),
             (nn.BatchNorm1d(3, eps=1e-3, momentum=None), torch.nn.BatchNorm1d(3, eps=1e-3, momentum=None)),
             (nn.LayerNorm([2, 3]), torch.nn.LayerNorm([2, 3])), (nn.GroupNorm(2, 4), torch.nn.GroupNorm(2, 4))]
    for md, mt in pairs:
        assert repr(md) == repr(mt)
        assert list(md.state_dict()) == list(mt.state_dict())
    sd = nn.BatchNorm2d(2).state_dict()
    assert sd["num_batches_tracked"].dtype is dt.int64 and sd["num_batches_tracked"].ndim == 0


@pytest.mark.parametrize("p,dim", [(2.0, 1), (1.0, 0), (3.0, -1)])
def test_normalize_matches_torch(p: float, dim: int) -> None:
    x = np.random.default_rng(6).standard_normal((3, 4))
    x[0] = 0.0  # a zero row: the eps clamp, and a finite gradient
    xd, xt = pair(x, "float32", requires_grad=True)
    yd, yt = F.normalize(xd, p=p, dim=dim), TF.normalize(xt, p=p, dim=dim)
    assert_close(yd, yt, rtol=RTOL, atol=ATOL)
    g = np.random.default_rng(1).standard_normal((3, 4))
    yd.backward(dt.tensor(g, dtype=dt.float32))
    yt.backward(torch.tensor(g, dtype=torch.float32))
    assert_close(xd.grad, xt.grad, rtol=RTOL, atol=1e-4)
    with pytest.raises(RuntimeError, match="floating point"):
        F.normalize(dt.tensor([1, 2]))
