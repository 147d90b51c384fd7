"""In-place ops against PyTorch: add_/mul_/clamp_/zero_/fill_/copy_, `+=` and friends, writes through views to
the base, dtype rules of in-place results, and autograd through in-place ops."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from tensor_oracle import DTYPES, assert_close, pair, same_outcome, sample

import dtorch as dt

OPS = {
    "add_": lambda m, x: x.add_(2),
    "add_tensor": lambda m, x: x.add_(m.ones(x.shape[-1:], dtype=x.dtype)),
    "add_alpha": lambda m, x: x.add_(m.ones(x.shape[-1:], dtype=x.dtype), alpha=3),
    "sub_": lambda m, x: x.sub_(1),
    "mul_": lambda m, x: x.mul_(3),
    "mul_float": lambda m, x: x.mul_(1.5),
    "div_": lambda m, x: x.div_(2),
    "clamp_": lambda m, x: x.clamp_(-1, 1),
    "clamp_min": lambda m, x: x.clamp_(min=0),
    "zero_": lambda m, x: x.zero_(),
    "fill_": lambda m, x: x.fill_(7),
    "fill_float": lambda m, x: x.fill_(2.5),
    "fill_tensor": lambda m, x: x.fill_(m.tensor(4)),
    "copy_": lambda m, x: x.copy_(m.arange(x.shape[-1]) if x.ndim else m.tensor(3)),
    "copy_float_into": lambda m, x: x.copy_(m.full(x.shape, 1.75)),
    "iadd": lambda m, x: _iop(x, "__iadd__", 2),
    "isub": lambda m, x: _iop(x, "__isub__", 1),
    "imul": lambda m, x: _iop(x, "__imul__", 2),
    "itruediv": lambda m, x: _iop(x, "__itruediv__", 2),
    "ifloordiv": lambda m, x: _iop(x, "__ifloordiv__", 2),
    "imod": lambda m, x: _iop(x, "__imod__", 3),
    "ipow": lambda m, x: _iop(x, "__ipow__", 2),
    "iand": lambda m, x: _iop(x, "__iand__", True),
    "neg_": lambda m, x: x.neg_(),
    "abs_": lambda m, x: x.abs_(),
    "exp_": lambda m, x: x.exp_(),
    "sqrt_": lambda m, x: x.abs_().sqrt_(),
    "masked_fill_": lambda m, x: x.masked_fill_(x > 0, 0),
}


def _iop(x: Any, name: str, v: Any) -> Any:
    y = x
    y = getattr(y, name)(v)
    assert y is x
    return y


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_inplace_values_and_dtype(op: str, dtype: str) -> None:
    d, t = pair(sample((3, 4), dtype, np.random.default_rng(0)), dtype)

    def fd() -> Any:
        r = OPS[op](dt, d)
        assert r is d
        return d

    same_outcome(fd, lambda: OPS[op](torch, t))


@pytest.mark.parametrize("op", ["add_", "mul_", "clamp_", "zero_", "fill_", "copy_", "iadd", "imul", "neg_"])
@pytest.mark.parametrize("view", ["row", "col", "step", "transpose", "reshape", "expand_src"])
def test_inplace_on_views_modifies_base(op: str, view: str) -> None:
    d, t = pair(sample((4, 4), "float32", np.random.default_rng(1)), "float32")
    views = {"row": lambda x: x[1], "col": lambda x: x[:, 2], "step": lambda x: x[::2, 1::2],
             "transpose": lambda x: x.T, "reshape": lambda x: x.view(2, 8), "expand_src": lambda x: x[0:2]}
    OPS[op](dt, views[view](d))
    OPS[op](torch, views[view](t))
    assert_close(d, t)


def test_plus_equals_on_view_no_grad() -> None:
    base = dt.zeros(3, 3)
    v = base[1]
    v += 5
    col = base[:, 0]
    col *= 2
    base.T[2] += 1
    t = torch.zeros(3, 3)
    tv = t[1]
    tv += 5
    tc = t[:, 0]
    tc *= 2
    t.T[2] += 1
    assert_close(base, t)
    x = dt.ones(4)
    alias = x
    x += 1
    assert alias is x and x.tolist() == [2.0] * 4


def test_inplace_result_dtype_rules() -> None:
    for mk, op in [(lambda m: m.tensor([1, 2]), lambda x: x.add_(1.5)),
                   (lambda m: m.tensor([1, 2]), lambda x: x.mul_(m_tensor_float(x))),
                   (lambda m: m.tensor([True, False]), lambda x: x.add_(1)),
                   (lambda m: m.tensor([1.0, 2.0]), lambda x: x.add_(1)),
                   (lambda m: m.tensor([1, 2], dtype=m.uint8), lambda x: x.add_(-3)),
                   (lambda m: m.tensor([1.0, 2.0], dtype=m.float16), lambda x: x.add_(m_tensor_float(x, 64)))]:
        same_outcome(lambda: op(mk(dt)), lambda: op(mk(torch)))  # noqa: B023


def m_tensor_float(x: Any, bits: int = 32) -> Any:
    mod = dt if isinstance(x, dt.Tensor) else torch
    return mod.tensor([0.5, 0.5], dtype=getattr(mod, f"float{bits}"))


def test_inplace_shape_rules() -> None:
    for f in [lambda m: m.zeros(3).add_(m.ones(2, 3)), lambda m: m.zeros(2, 3).add_(m.ones(3)),
              lambda m: m.zeros(2, 3).copy_(m.ones(4)), lambda m: m.zeros(2, 3).copy_(m.ones(2, 1)),
              lambda m: m.zeros(2, 3).mul_(m.ones(2, 1))]:
        same_outcome(lambda: f(dt), lambda: f(torch))  # noqa: B023


def test_copy_between_dtypes_and_from_numpy() -> None:
    x = dt.zeros(3, dtype=dt.int32)
    x.copy_(dt.tensor([1.7, -2.2, 3.9]))
    assert x.tolist() == torch.zeros(3, dtype=torch.int32).copy_(torch.tensor([1.7, -2.2, 3.9])).tolist()
    y = dt.zeros(2, 2)
    y.copy_(np.ones((2, 2)))
    assert y.tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_inplace_autograd() -> None:
    for mod in (dt, torch):
        x = mod.tensor([0.5, -1.5, 2.0], requires_grad=True)
        w = mod.tensor([2.0, 3.0, 4.0], requires_grad=True)
        y = x * 1
        y.mul_(w)
        y.add_(x, alpha=2)
        y.clamp_(-2.0, 3.0)
        y.sub_(1)
        y.exp_()
        y.sum().backward()
        if mod is dt:
            res = (y.tolist(), x.grad.tolist(), w.grad.tolist())
        else:
            np.testing.assert_allclose(res, (y.tolist(), x.grad.tolist(), w.grad.tolist()), rtol=1e-6)


def test_inplace_copy_and_fill_autograd() -> None:
    for mod in (dt, torch):
        x = mod.tensor([1.0, 2.0, 3.0], requires_grad=True)
        s = mod.tensor([5.0, 6.0], requires_grad=True)
        y = x * 2
        y[1:].copy_(s * 3)
        y[0:1].fill_(4.0)
        (y * mod.tensor([1.0, 10.0, 100.0])).sum().backward()
        if mod is dt:
            res = (y.tolist(), x.grad.tolist(), s.grad.tolist())
        else:
            assert res == (y.tolist(), x.grad.tolist(), s.grad.tolist())


def test_zero_and_fill_on_non_leaf_give_zero_gradient() -> None:
    for mod in (dt, torch):
        x = mod.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        y.zero_()
        z = (y + x).sum()
        z.backward()
        if mod is dt:
            res = x.grad.tolist()
        else:
            assert res == x.grad.tolist()


def test_random_fills() -> None:
    x = dt.zeros(1000, dtype=dt.float64)
    dt.manual_seed(0)
    x.normal_(2.0, 0.5)
    assert abs(x.mean().item() - 2.0) < 0.1 and abs(x.std().item() - 0.5) < 0.05
    x.uniform_(-1, 1)
    assert -1 <= x.min().item() and x.max().item() < 1
    x.bernoulli_(0.25)
    assert set(x.unique().tolist() if hasattr(x, "unique") else np.unique(x.numpy()).tolist()) <= {0.0, 1.0}
    with pytest.raises(RuntimeError, match="leaf"):
        dt.zeros(2, requires_grad=True).normal_()
