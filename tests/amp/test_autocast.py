"""dt.autocast: matmul/conv/linear run in the reduced dtype; reductions, softmax and losses stay float32."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import dtorch as dt
import dtorch.nn as nn
import dtorch.nn.functional as F

DTYPES = [(dt.float16, torch.float16, "float16"), (dt.bfloat16, torch.bfloat16, "bfloat16")]


@pytest.mark.parametrize("ddt,tdt,name", DTYPES)
@pytest.mark.parametrize("spelling", ["object", "string"])
def test_matmul_linear_conv_run_in_reduced_dtype(ddt, tdt, name, spelling):
    x = dt.randn(2, 3, 8, 8)
    w = dt.randn(4, 3, 3, 3)
    a, b = dt.randn(5, 6), dt.randn(6, 7)
    lin_w, lin_b = dt.randn(3, 6), dt.randn(3)
    with dt.autocast(dtype=ddt if spelling == "object" else name):
        assert dt.is_tensor(a @ b) and (a @ b).dtype == ddt
        assert dt.matmul(a, b).dtype == ddt
        assert F.conv2d(x, w, padding=1).dtype == ddt
        assert F.linear(a, lin_w, lin_b).dtype == ddt
    # outside the block everything is float32 again
    assert (a @ b).dtype == dt.float32


@pytest.mark.parametrize("ddt,tdt,name", DTYPES)
def test_dtypes_match_torch_autocast(ddt, tdt, name):
    rng = np.random.default_rng(0)
    xa = rng.standard_normal((4, 10)).astype(np.float32)
    ya = rng.integers(0, 3, size=4)
    d_lin, t_lin = nn.Linear(10, 3), torch.nn.Linear(10, 3)
    with torch.no_grad():
        t_lin.weight.copy_(torch.from_numpy(d_lin.weight.detach().numpy()))
        t_lin.bias.copy_(torch.from_numpy(d_lin.bias.detach().numpy()))
    with dt.autocast(dtype=ddt):
        d_out = d_lin(dt.from_numpy(xa))
        d_soft = d_out.softmax(-1)
        d_sum = d_out.sum()
        d_loss = F.cross_entropy(d_out, dt.from_numpy(ya))
    with torch.autocast("cpu", dtype=tdt):
        t_out = t_lin(torch.from_numpy(xa))
        t_soft = t_out.softmax(-1)
        t_loss = torch.nn.functional.cross_entropy(t_out, torch.from_numpy(ya))
    assert d_out.dtype.name == str(t_out.dtype).split(".")[1]
    # dtorch's policy (see dtorch/amp/autocast_mode.py): softmax, like the norms and every reduction, stays
    # float32 under autocast; torch 2.13's CPU autocast keeps softmax in the reduced dtype.
    assert d_soft.dtype == dt.float32 and t_soft.dtype == tdt
    assert d_loss.dtype.name == str(t_loss.dtype).split(".")[1] == "float32"
    assert d_sum.dtype == dt.float32
    tol = 2e-2 if ddt is dt.float16 else 6e-2
    np.testing.assert_allclose(d_loss.item(), t_loss.item(), rtol=tol, atol=tol)
    np.testing.assert_allclose(d_out.float().detach().numpy(), t_out.float().detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("ddt", [dt.float16, dt.bfloat16])
def test_training_step_under_autocast_gives_float32_grads(ddt):
    from dtorch.models import SimpleNet

    dt.manual_seed(0)
    model = SimpleNet(10)
    opt = dt.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = dt.randn(8, 3, 16, 16), dt.randint(0, 10, (8,))
    before = [p.detach().numpy().copy() for p in model.parameters()]
    opt.zero_grad()
    with dt.autocast(dtype=ddt):
        loss = nn.CrossEntropyLoss()(model(x), y)
    assert loss.dtype == dt.float32
    loss.backward()
    for p in model.parameters():
        assert p.dtype == dt.float32 and p.grad is not None and p.grad.dtype == dt.float32
        assert np.isfinite(p.grad.numpy()).all()
    opt.step()
    assert any(not np.array_equal(b, p.detach().numpy()) for b, p in zip(before, model.parameters()))


def test_autocast_reduced_loss_is_close_to_float32():
    from dtorch.models import SimpleNet

    dt.manual_seed(1)
    model = SimpleNet(10)
    x, y = dt.randn(8, 3, 16, 16), dt.randint(0, 10, (8,))
    ref = nn.CrossEntropyLoss()(model(x), y).item()
    with dt.autocast(dtype=dt.float16):
        half = nn.CrossEntropyLoss()(model(x), y).item()
    assert abs(ref - half) < 1e-2


def test_nested_and_disabled_autocast():
    a, b = dt.randn(2, 2), dt.randn(2, 2)
    with dt.autocast(dtype=dt.float16):
        with dt.autocast(dtype=dt.bfloat16):
            assert (a @ b).dtype == dt.bfloat16
        assert (a @ b).dtype == dt.float16
        with dt.autocast(enabled=False):
            assert (a @ b).dtype == dt.float32
    with dt.amp.autocast("cpu", dtype=dt.bfloat16):
        assert (a @ b).dtype == dt.bfloat16


def test_autocast_as_decorator():
    @dt.autocast(dtype="float16")
    def f(a, b):
        return a @ b

    assert f(dt.randn(2, 2), dt.randn(2, 2)).dtype == dt.float16


@pytest.mark.parametrize("bad", [dt.int8, "float64x", "int32"])
def test_bad_autocast_dtype_is_an_error(bad):
    with pytest.raises((ValueError, TypeError), match="dtype"):
        dt.autocast(dtype=bad)


def test_autocast_other_device_is_an_error():
    with pytest.raises(dt.DeviceError, match="cuda"):
        dt.autocast("cuda", dtype=dt.float16)
