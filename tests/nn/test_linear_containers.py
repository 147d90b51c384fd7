"""Linear / Bilinear / Identity / Flatten / Unflatten and the containers, against PyTorch."""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from tensor_oracle import assert_close, pair

import dtorch as dt
import dtorch.nn.functional as F
from dtorch import nn
from dtorch.autograd import gradcheck

RTOL, ATOL = 1e-5, 1e-5


def _copy_params(md: nn.Module, mt: torch.nn.Module) -> None:
    with torch.no_grad():
        for (kd, pd), (kt, pt) in zip(md.named_parameters(), mt.named_parameters()):
            assert kd == kt
            pt.copy_(torch.from_numpy(pd.detach().numpy().copy()))


# ---------------------------------------------------------------------------------------------- linear


@pytest.mark.parametrize("shape,layout", [((5, 4), "contiguous"), ((4,), "contiguous"), ((2, 3, 4), "transposed"),
                                          ((0, 4), "contiguous"), ((3, 4), "strided")])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_torch(shape: tuple[int, ...], layout: str, bias: bool) -> None:
    rng = np.random.default_rng(len(shape))
    xd, xt = pair(rng.standard_normal(shape), "float32", layout, requires_grad=True)
    wd, wt = pair(rng.standard_normal((3, 4)), "float32", requires_grad=True)
    bd, bt = pair(rng.standard_normal(3), "float32", requires_grad=True) if bias else (None, None)
    yd, yt = F.linear(xd, wd, bd), TF.linear(xt, wt, bt)
    assert_close(yd, yt, rtol=RTOL, atol=ATOL)
    g = rng.standard_normal(tuple(yt.shape))
    yd.backward(dt.tensor(g, dtype=dt.float32))
    yt.backward(torch.tensor(g, dtype=torch.float32))
    for a, b in [(xd, xt), (wd, wt)] + ([(bd, bt)] if bias else []):
        assert_close(a.grad, b.grad, rtol=RTOL, atol=ATOL)


def test_linear_gradcheck_and_weight_shapes() -> None:
    rng = np.random.default_rng(0)
    x = dt.tensor(rng.standard_normal((2, 3, 4)), dtype=dt.float64, requires_grad=True)
    w = dt.tensor(rng.standard_normal((3, 4)), dtype=dt.float64, requires_grad=True)
    b = dt.tensor(rng.standard_normal(3), dtype=dt.float64, requires_grad=True)
    assert gradcheck(F.linear, (x, w, b))
    assert gradcheck(F.linear, (x, w))
    w1 = dt.tensor(rng.standard_normal(4), dtype=dt.float64, requires_grad=True)
    assert gradcheck(F.linear, (x, w1))
    xt = torch.tensor(x.detach().numpy())
    assert_close(F.linear(x, w1).detach(), TF.linear(xt, torch.tensor(w1.detach().numpy())))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_linear_reduced_precision(dtype: str) -> None:
    rng = np.random.default_rng(1)
    xd, xt = pair(rng.standard_normal((6, 8)), dtype, requires_grad=True)
    wd, wt = pair(rng.standard_normal((5, 8)) * 0.3, dtype, requires_grad=True)
    bd, bt = pair(rng.standard_normal(5), dtype, requires_grad=True)
    yd, yt = F.linear(xd, wd, bd), TF.linear(xt, wt, bt)
    assert_close(yd, yt)
    yd.sum().backward()
    yt.sum().backward()
    assert_close(wd.grad, wt.grad, rtol=2e-2, atol=2e-2)
    assert_close(xd.grad, xt.grad)


def test_linear_autocast_lowers_and_grads_reach_float32_params() -> None:
    lin = nn.Linear(4, 3)
    x = dt.randn(2, 4)
    with dt.autocast(dtype=dt.float16):
        y = lin(x)
        loss = F.cross_entropy(y, dt.tensor([0, 2]))
    assert y.dtype is dt.float16 and loss.dtype is dt.float32
    loss.backward()
    assert lin.weight.grad.dtype is dt.float32 and lin.bias.grad.dtype is dt.float32


def test_linear_errors() -> None:
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(4x3 and 2x5\)"):
        F.linear(dt.ones(4, 3), dt.ones(5, 2))
    with pytest.raises(RuntimeError, match=r"\(8x3 and 2x5\)"):
        F.linear(dt.ones(2, 4, 3), dt.ones(5, 2))
    with pytest.raises(RuntimeError, match="same dtype"):
        F.linear(dt.ones(4, 2), dt.ones(5, 2, dtype=dt.float64))
    with pytest.raises(TypeError, match="must be Tensor"):
        F.linear(np.ones((2, 2)), dt.ones(2, 2))  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="bias"):
        F.linear(dt.ones(4, 2), dt.ones(5, 2), dt.ones(3))
    assert F.linear(dt.ones(2, 3, dtype=dt.int64), dt.ones(4, 3, dtype=dt.int64)).tolist() == [[3] * 4] * 2


def test_linear_module_init_repr_and_forward() -> None:
    dt.manual_seed(0)
    a = nn.Linear(300, 200)
    dt.manual_seed(0)
    b = nn.Linear(300, 200)
    assert np.array_equal(a.weight.detach().numpy(), b.weight.detach().numpy())
    bound = 1 / math.sqrt(300)
    w = a.weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.98 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound
    assert np.abs(a.bias.detach().numpy()).max() <= bound
    assert a.weight.requires_grad and a.weight.dtype is dt.float32
    assert repr(nn.Linear(3, 4, bias=False)) == repr(torch.nn.Linear(3, 4, bias=False))
    assert repr(nn.Identity(54, unused="x")) == repr(torch.nn.Identity(54, unused="x"))
    assert nn.Linear(2, 3, dtype=dt.float64).weight.dtype is dt.float64
    md, mt = nn.Linear(5, 2), torch.nn.Linear(5, 2)
    _copy_params(md, mt)
    x = np.random.default_rng(2).standard_normal((3, 5))
    assert_close(md(dt.tensor(x, dtype=dt.float32)), mt(torch.tensor(x, dtype=torch.float32)), rtol=RTOL, atol=ATOL)
    with pytest.raises(dt.DeviceError, match="cuda"):
        nn.Linear(2, 2, device="cuda")


def test_bilinear_matches_torch() -> None:
    md, mt = nn.Bilinear(3, 4, 2), torch.nn.Bilinear(3, 4, 2)
    assert repr(md) == repr(mt)
    _copy_params(md, mt)
    rng = np.random.default_rng(4)
    ad, at = pair(rng.standard_normal((5, 3)), "float32", requires_grad=True)
    bd, bt = pair(rng.standard_normal((5, 4)), "float32", requires_grad=True)
    yd, yt = md(ad, bd), mt(at, bt)
    assert_close(yd, yt, rtol=RTOL, atol=ATOL)
    yd.sum().backward()
    yt.sum().backward()
    assert_close(ad.grad, at.grad, rtol=RTOL, atol=ATOL)
    assert_close(md.weight.grad, mt.weight.grad, rtol=RTOL, atol=ATOL)


def test_flatten_unflatten() -> None:
    rng = np.random.default_rng(3)
    xd, xt = pair(rng.standard_normal((2, 3, 4, 5)), "float32", "transposed", requires_grad=True)
    for md, mt in [(nn.Flatten(), torch.nn.Flatten()), (nn.Flatten(0, 2), torch.nn.Flatten(0, 2)),
                   (nn.Unflatten(1, (3, 1)), torch.nn.Unflatten(1, (3, 1))),
                   (nn.Unflatten(-1, (-1, 5)), torch.nn.Unflatten(-1, (-1, 5)))]:
        assert repr(md) == repr(mt)
        assert_close(md(xd), mt(xt))
    nn.Flatten()(xd).sum().backward()
    torch.nn.Flatten()(xt).sum().backward()
    assert_close(xd.grad, xt.grad)
    with pytest.raises(TypeError, match="unflattened_size"):
        nn.Unflatten(1, 6)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------- containers


def _net_pair() -> tuple[nn.Sequential, torch.nn.Sequential]:
    md = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dropout(0.2), nn.Linear(8, 3))
    mt = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Dropout(0.2),
                             torch.nn.Linear(8, 3))
    _copy_params(md, mt)
    return md, mt


def test_sequential_basics() -> None:
    md, mt = _net_pair()
    assert repr(md) == repr(mt)
    assert len(md) == 5 and isinstance(md[0], nn.Linear) and isinstance(md[-1], nn.Linear)
    assert [type(m).__name__ for m in md] == [type(m).__name__ for m in mt]
    md.eval()
    mt.eval()
    x = np.random.default_rng(0).standard_normal((6, 4))
    assert_close(md(dt.tensor(x, dtype=dt.float32)), mt(torch.tensor(x, dtype=torch.float32)), rtol=RTOL,
                 atol=ATOL)
    sub = md[1:3]
    assert isinstance(sub, nn.Sequential) and list(sub._modules) == ["1", "2"]
    assert repr(sub) == repr(mt[1:3])
    with pytest.raises(IndexError, match="out of range"):
        md[5]
    with pytest.raises(TypeError, match="indices must be integers"):
        md["0"]  # type: ignore[index]


def test_sequential_ordered_dict_and_mutation() -> None:
    od = OrderedDict([("fc", nn.Linear(2, 3)), ("act", nn.Tanh())])
    md = nn.Sequential(od)
    mt = torch.nn.Sequential(OrderedDict([("fc", torch.nn.Linear(2, 3)), ("act", torch.nn.Tanh())]))
    assert repr(md) == repr(mt)
    assert md.fc is od["fc"] and [n for n, _ in md.named_parameters()] == ["fc.weight", "fc.bias"]
    s = nn.Sequential(nn.ReLU(), nn.Tanh())
    s.append(nn.Sigmoid())
    s.insert(1, nn.Identity())
    s.extend([nn.GELU()])
    assert [type(m).__name__ for m in s] == ["ReLU", "Identity", "Tanh", "Sigmoid", "GELU"]
    s[0] = nn.SiLU()
    popped = s.pop(1)
    assert isinstance(popped, nn.Identity) and list(s._modules) == ["0", "1", "2", "3"]
    del s[1:3]
    assert [type(m).__name__ for m in s] == ["SiLU", "GELU"] and list(s._modules) == ["0", "1"]
    both = s + nn.Sequential(nn.ReLU())
    assert len(both) == 3 and len(s) == 2
    s += nn.Sequential(nn.Tanh())
    assert len(s) == 3
    with pytest.raises(ValueError, match="Sequential"):
        s + [nn.ReLU()]  # type: ignore[operator]


def test_module_list() -> None:
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    tl = torch.nn.ModuleList([torch.nn.Linear(2, 2) for _ in range(3)])
    assert repr(ml) == repr(tl)
    ml.append(nn.ReLU())
    tl.append(torch.nn.ReLU())
    ml.extend([nn.ReLU(), nn.Tanh()])
    tl.extend([torch.nn.ReLU(), torch.nn.Tanh()])
    ml.insert(0, nn.Tanh())
    tl.insert(0, torch.nn.Tanh())
    assert repr(ml) == repr(tl)
    assert len(ml) == 7 and len(list(ml.parameters())) == 6
    assert isinstance(ml[1:3], nn.ModuleList) and len(ml[1:3]) == 2
    del ml[0]
    del tl[0]
    assert repr(ml) == repr(tl) and list(ml._modules) == [str(i) for i in range(6)]
    ml[-1] = nn.Sigmoid()
    assert isinstance(ml[5], nn.Sigmoid)
    ml += [nn.ReLU()]
    assert len(ml) == 7 and len(ml + nn.ModuleList([nn.ReLU()])) == 8
    assert isinstance(ml.pop(0), nn.Linear) and len(ml) == 6
    assert repr(nn.ModuleList()) == repr(torch.nn.ModuleList())
    with pytest.raises(NotImplementedError, match="forward"):
        ml(dt.randn(2))
    with pytest.raises(TypeError, match="iterable"):
        nn.ModuleList().extend(nn.ReLU())  # type: ignore[arg-type]
    with pytest.raises(IndexError):
        ml[10]


def test_module_dict() -> None:
    md = nn.ModuleDict({"a": nn.Linear(2, 3), "b": nn.ReLU()})
    td = torch.nn.ModuleDict({"a": torch.nn.Linear(2, 3), "b": torch.nn.ReLU()})
    assert repr(md) == repr(td)
    md["c"] = nn.Tanh()
    assert list(md) == ["a", "b", "c"] and list(md.keys()) == ["a", "b", "c"] and "c" in md
    assert [type(v).__name__ for v in md.values()] == ["Linear", "ReLU", "Tanh"]
    md.update([("d", nn.GELU())])
    assert len(md) == 4 and isinstance(md.pop("d"), nn.GELU) and len(md) == 3
    del md["b"]
    assert [k for k, _ in md.items()] == ["a", "c"]
    assert [n for n, _ in md.named_parameters()] == ["a.weight", "a.bias"]
    with pytest.raises(KeyError):
        md["zz"]
    with pytest.raises(ValueError, match="length"):
        md.update([("x", nn.ReLU(), 1)])  # type: ignore[list-item]
    md.clear()
    assert len(md) == 0


def test_parameter_list_and_dict() -> None:
    pl = nn.ParameterList([nn.Parameter(dt.randn(2, 3)), dt.randn(4)])
    tl = torch.nn.ParameterList([torch.nn.Parameter(torch.randn(2, 3)), torch.randn(4)])
    assert repr(pl) == repr(tl).replace("torch.", "dtorch.")
    assert len(pl) == 2 and all(isinstance(p, nn.Parameter) for p in pl)
    assert [n for n, _ in pl.named_parameters()] == ["0", "1"]
    pl.append(dt.zeros(1))
    assert len(list(pl.parameters())) == 3 and tuple(pl[-1].shape) == (1,)
    pd = nn.ParameterDict({"w": dt.randn(2), "b": nn.Parameter(dt.zeros(1))})
    td = torch.nn.ParameterDict({"w": torch.randn(2), "b": torch.nn.Parameter(torch.zeros(1))})
    assert repr(pd) == repr(td).replace("torch.", "dtorch.")
    assert list(pd) == list(td) == ["b", "w"] and "w" in pd and isinstance(pd["w"], nn.Parameter)  # dicts sorted
    assert [n for n, _ in pd.named_parameters()] == [n for n, _ in td.named_parameters()]
    del pd["w"]
    assert list(pd.keys()) == ["b"] and len(list(pd.parameters())) == 1
