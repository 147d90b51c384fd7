"""conv1d / conv2d / conv_transpose and the Conv layers against PyTorch, plus float64 gradchecks."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import dtorch as dt
import dtorch.nn.functional as F
from dtorch import nn
from dtorch.autograd import gradcheck


def _close(d: Any, t: Any, rtol: float = 1e-4, atol: float = 1e-4) -> None:
    dn = d.detach().numpy() if isinstance(d, dt.Tensor) else d
    tn = t.detach().numpy() if isinstance(t, torch.Tensor) else t
    assert dn.shape == tn.shape, (dn.shape, tn.shape)
    scale = max(1.0, float(np.abs(tn).max())) if tn.size else 1.0
    np.testing.assert_allclose(dn.astype(np.float64), tn.astype(np.float64), rtol=rtol, atol=atol * scale)


def _layout(x: np.ndarray, how: str, rg: bool = True) -> tuple[dt.Tensor, torch.Tensor]:
    """The same (N, C, ...) values as a dtorch and a torch leaf, contiguous or as a non-contiguous view."""
    if how == "transposed":  # a view whose last two dims are swapped in memory
        buf = np.ascontiguousarray(np.swapaxes(x, -1, -2))
        d = dt.tensor(buf, requires_grad=rg)
        t = torch.tensor(buf, requires_grad=rg)
        return d, t  # callers transpose both
    if how == "strided":  # every second element of the last dim
        buf = np.repeat(x, 2, axis=-1)
        return dt.tensor(buf, requires_grad=rg), torch.tensor(buf, requires_grad=rg)
    return dt.tensor(x, requires_grad=rg), torch.tensor(x, requires_grad=rg)


def _view(a: Any, how: str) -> Any:
    if how == "transposed":
        return a.transpose(-1, -2)
    if how == "strided":
        return a[..., ::2]
    return a


CONV2D_CASES = [
    # (N, C, H, W), O, kernel, stride, padding, dilation, groups, bias
    ((2, 3, 9, 8), 4, 3, 1, 1, 1, 1, True),
    ((1, 3, 7, 7), 5, (3, 2), (2, 1), (1, 0), 1, 1, False),
    ((3, 4, 11, 10), 6, 3, 2, 2, 2, 2, True),
    ((2, 4, 8, 9), 4, 3, 1, "same", 1, 4, True),  # depthwise
    ((2, 4, 8, 9), 8, 3, 2, 1, 1, 4, False),  # depthwise, multiplier 2
    ((2, 3, 8, 8), 2, 4, 1, "same", 1, 1, True),  # even kernel: asymmetric "same" padding
    ((2, 3, 8, 8), 2, (2, 3), 1, "same", (2, 1), 1, True),
    ((2, 3, 6, 7), 2, 3, 1, "valid", 1, 1, True),
    ((0, 3, 8, 8), 4, 3, 1, 1, 1, 1, True),  # empty batch
    ((5, 2, 5, 5), 3, 5, 1, 0, 1, 1, True),  # kernel covers the whole input
    ((4, 2, 16, 3), 3, 3, 3, 1, 1, 1, True),  # batch-first layout (1 < N < OW at stride > 1) ...
    ((3, 2, 4, 20), 3, 3, (1, 2), 1, 1, 1, True),
]


@pytest.mark.parametrize("case", CONV2D_CASES)
@pytest.mark.parametrize("how", ["contiguous", "transposed", "strided"])
@pytest.mark.filterwarnings("ignore:Using padding='same'")
def test_conv2d_matches_torch(case: tuple, how: str) -> None:
    shape, o, k, s, p, d, g, bias = case
    rng = np.random.default_rng(abs(hash((shape, o, how))) % 2**32)
    x = rng.standard_normal(shape).astype(np.float32)
    kk = (k, k) if isinstance(k, int) else k
    w = rng.standard_normal((o, shape[1] // g) + kk).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32) if bias else None
    src = np.swapaxes(x, -1, -2) if how == "transposed" else x
    xd0, xt0 = _layout(src, how)
    xd, xt = _view(xd0, how), _view(xt0, how)
    wd, wt = dt.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    bd = dt.tensor(b, requires_grad=True) if bias else None
    bt = torch.tensor(b, requires_grad=True) if bias else None
    yd = F.conv2d(xd, wd, bd, s, p, d, g)
    yt = TF.conv2d(xt, wt, bt, s, p, d, g)
    _close(yd, yt)
    assert yd.is_contiguous()
    go = rng.standard_normal(tuple(yt.shape)).astype(np.float32)
    yd.backward(dt.tensor(go))
    yt.backward(torch.tensor(go))
    _close(xd0.grad, xt0.grad)
    _close(wd.grad, wt.grad)
    if bias:
        _close(bd.grad, bt.grad)


@pytest.mark.parametrize("batch_last", [True, False])
@pytest.mark.parametrize("case", [CONV2D_CASES[0], CONV2D_CASES[2], CONV2D_CASES[4], CONV2D_CASES[8]])
def test_conv2d_both_column_layouts(case: tuple, batch_last: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both column layouts (the cost model picks one per call) give torch's results."""
    from dtorch._prims import conv as C

    monkeypatch.setattr(C, "_batch_last_is_cheaper", lambda *a: batch_last)
    test_conv2d_matches_torch(case, "strided")


def test_scratch_buffers_are_reused_and_never_shared() -> None:
    """Temporaries come back to the pool; outputs and saved columns are never handed out twice."""
    from dtorch._prims import conv as C

    x = dt.randn(8, 4, 9, 9, requires_grad=True)
    w = dt.randn(6, 4, 3, 3, requires_grad=True)
    y1 = F.conv2d(x, w, padding=1)
    y2 = F.conv2d(x, w, padding=1)  # y1's graph still holds its columns: y2 must get other buffers
    np.testing.assert_array_equal(y1.detach().numpy(), y2.detach().numpy())
    (y1.sum() + y2.sum()).backward()
    g1 = x.grad.numpy().copy()
    for _ in range(3):  # steady state: same results while buffers cycle through the pool
        x.grad = None
        F.conv2d(x, w, padding=1).sum().backward()
        np.testing.assert_allclose(x.grad.numpy() * 2, g1, rtol=1e-5, atol=1e-5)
    arr = np.ones((2, 2), np.float32)
    C.scratch.give(arr)  # not from the pool: ignored
    assert not any(a is arr for stack in C.scratch._free.values() for a in stack)


def test_conv2d_simplenet_shapes_batch64() -> None:
    rng = np.random.default_rng(0)
    for c, o, hw in ((3, 32, 32), (32, 64, 16)):
        x = rng.standard_normal((64, c, hw, hw)).astype(np.float32)
        w = (rng.standard_normal((o, c, 3, 3)) * 0.1).astype(np.float32)
        xd, xt = dt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        wd, wt = dt.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
        yd, yt = F.conv2d(xd, wd, None, 2, 1), TF.conv2d(xt, wt, None, 2, 1)
        _close(yd, yt)
        go = rng.standard_normal(tuple(yt.shape)).astype(np.float32)
        yd.backward(dt.tensor(go))
        yt.backward(torch.tensor(go))
        _close(xd.grad, xt.grad)
        _close(wd.grad, wt.grad, rtol=1e-4, atol=2e-4)


def test_conv2d_unbatched_and_only_weight_grad() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 7, 6)).astype(np.float32)
    w = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    wd, wt = dt.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    yd, yt = F.conv2d(dt.tensor(x), wd, padding=1), TF.conv2d(torch.tensor(x), wt, padding=1)
    assert yd.shape == (2, 7, 6)
    _close(yd, yt)
    yd.sum().backward()
    yt.sum().backward()
    _close(wd.grad, wt.grad)


@pytest.mark.parametrize("case", [((2, 3, 10), 4, 3, 1, 1, 1, 1), ((1, 4, 9), 6, 2, 2, 0, 2, 2),
                                  ((3, 2, 7), 2, 4, 1, "same", 1, 1), ((0, 2, 7), 2, 3, 1, 0, 1, 1)])
def test_conv1d_matches_torch(case: tuple) -> None:
    shape, o, k, s, p, d, g = case
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((o, shape[1] // g, k)).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32)
    xd, xt = dt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    wd, wt = dt.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    bd, bt = dt.tensor(b, requires_grad=True), torch.tensor(b, requires_grad=True)
    yd, yt = F.conv1d(xd, wd, bd, s, p, d, g), TF.conv1d(xt, wt, bt, s, p, d, g)
    _close(yd, yt)
    go = rng.standard_normal(tuple(yt.shape)).astype(np.float32)
    yd.backward(dt.tensor(go))
    yt.backward(torch.tensor(go))
    for a, c in ((xd, xt), (wd, wt), (bd, bt)):
        _close(a.grad, c.grad)
    if shape[0]:
        xu = dt.tensor(x[0])
        assert F.conv1d(xu, wd, bd, s, p, d, g).shape == tuple(TF.conv1d(xt[0], wt, bt, s, p, d, g).shape)


@pytest.mark.parametrize("case", [
    # (N, C, H, W), O, kernel, stride, padding, output_padding, dilation, groups
    ((2, 3, 5, 6), 4, 3, 2, 1, 1, 1, 1),
    ((2, 4, 4, 5), 6, (3, 2), (2, 3), (0, 1), (1, 2), 1, 2),
    ((1, 4, 5, 6), 4, 3, 1, 1, 0, 2, 4),
    ((3, 2, 3, 3), 2, 2, 2, 0, 0, 1, 1),
    ((2, 2, 4, 4), 3, 3, 3, 1, 2, 1, 1),  # output_padding > padding: the extra rows get only the bias
])
def test_conv_transpose2d_matches_torch(case: tuple) -> None:
    shape, o, k, s, p, op, d, g = case
    rng = np.random.default_rng(3)
    kk = (k, k) if isinstance(k, int) else k
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((shape[1], o // g) + kk).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32)
    xd, xt = dt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    wd, wt = dt.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    bd, bt = dt.tensor(b, requires_grad=True), torch.tensor(b, requires_grad=True)
    yd = F.conv_transpose2d(xd, wd, bd, s, p, op, g, d)
    yt = TF.conv_transpose2d(xt, wt, bt, s, p, op, g, d)
    _close(yd, yt)
    go = rng.standard_normal(tuple(yt.shape)).astype(np.float32)
    yd.backward(dt.tensor(go))
    yt.backward(torch.tensor(go))
    for a, c in ((xd, xt), (wd, wt), (bd, bt)):
        _close(a.grad, c.grad)


def test_conv_transpose1d_and_module_output_size() -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 7)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3)).astype(np.float32)
    _close(F.conv_transpose1d(dt.tensor(x), dt.tensor(w), None, 2, 1, 1),
           TF.conv_transpose1d(torch.tensor(x), torch.tensor(w), None, 2, 1, 1))
    md, mt = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1), torch.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1)
    _copy(md, mt)
    xi = rng.standard_normal((1, 3, 4, 5)).astype(np.float32)
    _close(md(dt.tensor(xi), output_size=[8, 10]), mt(torch.tensor(xi), output_size=[8, 10]))
    assert md(dt.tensor(xi)).shape == (1, 2, 7, 9)
    with pytest.raises(ValueError, match="valid sizes range"):
        md(dt.tensor(xi), output_size=[12, 10])
    assert repr(md) == repr(mt)


# ------------------------------------------------------------------------------------------ gradcheck


@pytest.mark.parametrize("kw", [{"stride": 2, "padding": 1}, {"padding": (2, 0), "dilation": (2, 1), "groups": 2},
                                {"padding": "same", "groups": 4}])
def test_conv2d_gradcheck(kw: dict) -> None:
    rng = np.random.default_rng(5)
    g = kw.get("groups", 1)
    x = dt.tensor(rng.standard_normal((2, 4, 5, 5)), dtype=dt.float64, requires_grad=True)
    w = dt.tensor(rng.standard_normal((4, 4 // g, 3, 3)), dtype=dt.float64, requires_grad=True)
    b = dt.tensor(rng.standard_normal(4), dtype=dt.float64, requires_grad=True)
    assert gradcheck(lambda a, c, e: F.conv2d(a, c, e, **kw), (x, w, b))


def test_conv1d_and_transpose_gradcheck() -> None:
    rng = np.random.default_rng(6)
    x = dt.tensor(rng.standard_normal((2, 2, 6)), dtype=dt.float64, requires_grad=True)
    w = dt.tensor(rng.standard_normal((3, 2, 3)), dtype=dt.float64, requires_grad=True)
    assert gradcheck(lambda a, c: F.conv1d(a, c, None, 2, 1), (x, w))
    x2 = dt.tensor(rng.standard_normal((1, 2, 3, 4)), dtype=dt.float64, requires_grad=True)
    w2 = dt.tensor(rng.standard_normal((2, 3, 3, 2)), dtype=dt.float64, requires_grad=True)
    b2 = dt.tensor(rng.standard_normal(3), dtype=dt.float64, requires_grad=True)
    assert gradcheck(lambda a, c, e: F.conv_transpose2d(a, c, e, 2, 1, 1), (x2, w2, b2))


# ------------------------------------------------------------------------------------------ dtypes, autocast


@pytest.mark.parametrize("name,tol", [("float16", 3e-3), ("bfloat16", 2e-2), ("float64", 1e-10)])
def test_conv2d_other_float_dtypes(name: str, tol: float) -> None:
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((2, 3, 6, 6)) * 0.5).astype(np.float32)
    w = (rng.standard_normal((4, 3, 3, 3)) * 0.2).astype(np.float32)
    ddt, tdt = getattr(dt, name), getattr(torch, name)
    xd = dt.tensor(x).to(ddt).requires_grad_()
    wd = dt.tensor(w).to(ddt).requires_grad_()
    xt = torch.tensor(x).to(tdt).requires_grad_()
    wt = torch.tensor(w).to(tdt).requires_grad_()
    yd, yt = F.conv2d(xd, wd, padding=1), TF.conv2d(xt, wt, padding=1)
    assert yd.dtype is ddt
    np.testing.assert_allclose(yd.float().detach().numpy(), yt.float().detach().numpy(), rtol=tol, atol=tol)
    yd.float().sum().backward()
    yt.float().sum().backward()
    assert xd.grad.dtype is ddt and wd.grad.dtype is ddt
    np.testing.assert_allclose(wd.grad.float().numpy(), wt.grad.float().numpy(), rtol=tol, atol=tol * 10)


def test_conv2d_under_autocast_runs_in_float16() -> None:
    m = nn.Conv2d(3, 4, 3, padding=1)
    x = dt.randn(2, 3, 5, 5)
    with dt.autocast(dtype=dt.float16):
        y = m(x)
    assert y.dtype is dt.float16
    ref = F.conv2d(x, m.weight, m.bias, padding=1)
    np.testing.assert_allclose(y.float().detach().numpy(), ref.detach().numpy(), rtol=1e-2, atol=1e-2)
    y.float().sum().backward()
    assert m.weight.grad.dtype is dt.float32


def test_conv2d_integer_input_like_torch() -> None:
    x = np.arange(2 * 2 * 5 * 5).reshape(2, 2, 5, 5) % 7
    w = np.arange(3 * 2 * 3 * 3).reshape(3, 2, 3, 3) % 5 - 2
    yd = F.conv2d(dt.tensor(x), dt.tensor(w), stride=2)
    yt = TF.conv2d(torch.tensor(x), torch.tensor(w), stride=2)
    assert yd.dtype is dt.int64
    np.testing.assert_array_equal(yd.numpy(), yt.numpy())


# ------------------------------------------------------------------------------------------ modules


def _copy(md: nn.Module, mt: torch.nn.Module) -> None:
    with torch.no_grad():
        for (_, pd), (_, pt) in zip(md.named_parameters(), mt.named_parameters()):
            pt.copy_(torch.from_numpy(pd.detach().numpy().copy()))


@pytest.mark.parametrize("args,kw", [
    ((3, 32, 3, 2, 1), {}),
    ((3, 32, (3, 5)), {"bias": False, "padding": "same", "dilation": 2, "padding_mode": "reflect"}),
    ((4, 4, 3), {"groups": 2, "padding": (1, 0), "dilation": (2, 1)}),
    ((4, 6, 2), {"padding": "valid", "stride": (1, 2)}),
    ((2, 3, 3), {"padding": 2, "padding_mode": "circular"}),
    ((2, 3, 3), {"padding": (1, 2), "padding_mode": "replicate"}),
])
def test_conv2d_module_repr_and_forward(args: tuple, kw: dict) -> None:
    md, mt = nn.Conv2d(*args, **kw), torch.nn.Conv2d(*args, **kw)
    assert repr(md) == repr(mt)
    _copy(md, mt)
    x = np.random.default_rng(8).standard_normal((2, args[0], 7, 8)).astype(np.float32)
    _close(md(dt.tensor(x)), mt(torch.tensor(x)))
    assert [n for n, _ in md.named_parameters()] == [n for n, _ in mt.named_parameters()]


def test_conv1d_and_transposed_module_repr() -> None:
    for a, b in ((nn.Conv1d(3, 4, 3), torch.nn.Conv1d(3, 4, 3)),
                 (nn.Conv1d(4, 4, 5, stride=2, padding=2, groups=4, bias=False),
                  torch.nn.Conv1d(4, 4, 5, stride=2, padding=2, groups=4, bias=False)),
                 (nn.ConvTranspose2d(4, 8, 3, 2, 1, 1), torch.nn.ConvTranspose2d(4, 8, 3, 2, 1, 1)),
                 (nn.ConvTranspose1d(2, 4, 3, groups=2, dilation=2), torch.nn.ConvTranspose1d(2, 4, 3, groups=2,
                                                                                            dilation=2))):
        assert repr(a) == repr(b)
        assert a.weight.shape == tuple(b.weight.shape)
    m = nn.Conv1d(3, 4, 3, padding=1)
    assert m(dt.randn(2, 3, 9)).shape == (2, 4, 9)


def test_conv_default_init_bounds_and_seed() -> None:
    dt.manual_seed(0)
    m = nn.Conv2d(16, 64, 3)
    bound = 1 / math.sqrt(16 * 9)
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound  # U(-a, a) has std a / sqrt(3)
    assert m.weight.dtype is dt.float32 and m.weight.requires_grad
    dt.manual_seed(0)
    np.testing.assert_array_equal(nn.Conv2d(16, 64, 3).weight.detach().numpy(), w)
    t = nn.ConvTranspose2d(8, 4, 3, groups=2)
    assert np.abs(t.weight.detach().numpy()).max() <= 1 / math.sqrt(2 * 9)  # fan_in uses weight.size(1)
    assert nn.Conv2d(2, 2, 3, dtype=dt.float64).weight.dtype is dt.float64


# ------------------------------------------------------------------------------------------ errors


def _both_raise(exc: type, fd: Any, ft: Any, match: str | None = None) -> None:
    with pytest.raises(exc, match=match):
        fd()
    with pytest.raises(exc):
        ft()


def test_conv2d_errors_like_torch() -> None:
    x, w = dt.randn(2, 3, 8, 8), dt.randn(4, 3, 3, 3)
    xt, wt = torch.randn(2, 3, 8, 8), torch.randn(4, 3, 3, 3)
    cases = [
        (RuntimeError, lambda: F.conv2d(dt.randn(2, 3), w), lambda: TF.conv2d(torch.randn(2, 3), wt),
         r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got input of size: \[2, 3\]"),
        (RuntimeError, lambda: F.conv2d(x, dt.randn(4, 2, 3, 3)), lambda: TF.conv2d(xt, torch.randn(4, 2, 3, 3)),
         "expected input.* to have 2 channels, but got 3 channels"),
        (RuntimeError, lambda: F.conv2d(dt.randn(2, 4, 8, 8), dt.randn(3, 2, 3, 3), groups=2),
         lambda: TF.conv2d(torch.randn(2, 4, 8, 8), torch.randn(3, 2, 3, 3), groups=2), "divisible by 2"),
        (RuntimeError, lambda: F.conv2d(x, w, groups=0), lambda: TF.conv2d(xt, wt, groups=0), "non-positive groups"),
        (RuntimeError, lambda: F.conv2d(x, w, stride=0), lambda: TF.conv2d(xt, wt, stride=0), "non-positive stride"),
        (RuntimeError, lambda: F.conv2d(x, w, padding=-1), lambda: TF.conv2d(xt, wt, padding=-1), "negative padding"),
        (RuntimeError, lambda: F.conv2d(x, w, dilation=0), lambda: TF.conv2d(xt, wt, dilation=0),
         "non-positive dilation"),
        (RuntimeError, lambda: F.conv2d(dt.randn(2, 3, 2, 2), w), lambda: TF.conv2d(torch.randn(2, 3, 2, 2), wt),
         "Kernel size can't be greater than actual input size"),
        (RuntimeError, lambda: F.conv2d(x, w, padding="same", stride=2),
         lambda: TF.conv2d(xt, wt, padding="same", stride=2), "not supported for strided convolutions"),
        (RuntimeError, lambda: F.conv2d(x, w, padding="foo"), lambda: TF.conv2d(xt, wt, padding="foo"),
         "Invalid padding string"),
        (RuntimeError, lambda: F.conv2d(x, w.double()), lambda: TF.conv2d(xt, wt.double()),
         r"Input type \(dtorch.float32\) and weight type \(dtorch.float64\) should be the same"),
        (RuntimeError, lambda: F.conv2d(x, w, dt.randn(4).double()), lambda: TF.conv2d(xt, wt, torch.randn(4).double()),
         "bias type"),
        (RuntimeError, lambda: F.conv2d(x, w, dt.randn(5)), lambda: TF.conv2d(xt, wt, torch.randn(5)),
         "expected bias to be 1-dimensional with 4 elements"),
        (RuntimeError, lambda: F.conv2d(x, w, stride=(1, 2, 3)), lambda: TF.conv2d(xt, wt, stride=(1, 2, 3)),
         "list of 2 values"),
        (TypeError, lambda: F.conv2d(x, w, stride=1.5), lambda: TF.conv2d(xt, wt, stride=1.5), "stride"),
        (RuntimeError, lambda: F.conv1d(dt.randn(2, 3, 5, 5), dt.randn(4, 3, 3)),
         lambda: TF.conv1d(torch.randn(2, 3, 5, 5), torch.randn(4, 3, 3)), "2D \\(unbatched\\) or 3D"),
        (RuntimeError, lambda: F.conv1d(dt.randn(2, 3, 2), dt.randn(4, 3, 3)),
         lambda: TF.conv1d(torch.randn(2, 3, 2), torch.randn(4, 3, 3)), "Kernel size can't be greater"),
        (RuntimeError, lambda: F.conv_transpose2d(x, dt.randn(3, 2, 3, 3), stride=2, output_padding=2),
         lambda: TF.conv_transpose2d(xt, torch.randn(3, 2, 3, 3), stride=2, output_padding=2),
         "output padding must be smaller"),
        (RuntimeError, lambda: F.conv_transpose2d(x, dt.randn(4, 2, 3, 3)),
         lambda: TF.conv_transpose2d(xt, torch.randn(4, 2, 3, 3)), "to have 4 channels"),
    ]
    for exc, fd, ft, match in cases:
        _both_raise(exc, fd, ft, match)
    with pytest.raises(TypeError, match="must be Tensor"):
        F.conv2d(np.zeros((1, 3, 8, 8)), w)
    with pytest.raises(RuntimeError, match="expected weight to be 4D"):
        F.conv2d(x, dt.randn(4, 3, 3))


def test_conv_module_errors_like_torch() -> None:
    base = {"in_channels": 4, "out_channels": 4, "kernel_size": 3}
    cases = [
        ({**base, "in_channels": 3, "groups": 2}, "in_channels must be divisible by groups"),
        ({**base, "out_channels": 3, "groups": 2}, "out_channels must be divisible by groups"),
        ({**base, "groups": 0}, "groups must be a positive integer"),
        ({**base, "padding_mode": "foo"}, "padding_mode must be one of"),
        ({**base, "padding": "same", "stride": 2}, "strided convolutions"),
        ({**base, "padding": "foo"}, "Invalid padding string"),
    ]
    for kw, match in cases:
        _both_raise(ValueError, lambda kw=kw: nn.Conv2d(**kw), lambda kw=kw: torch.nn.Conv2d(**kw), match)
    _both_raise(ValueError, lambda: nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect"),
                lambda: torch.nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect"), '"zeros" padding mode')
    with pytest.raises(RuntimeError, match="to have 3 channels"):
        nn.Conv2d(3, 4, 3)(dt.randn(1, 4, 8, 8))
