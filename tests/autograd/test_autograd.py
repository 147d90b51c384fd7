"""Autograd semantics against PyTorch: requires_grad, backward (scalar and gradient=), accumulation, grad modes,
detach, retain_graph, retain_grad, hooks, diamond graphs, autograd.grad and gradients at edge points."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from tensor_oracle import assert_close, pair

import dtorch as dt


def test_requires_grad_flags() -> None:
    x = dt.ones(2)
    assert not x.requires_grad and x.is_leaf and x.grad_fn is None
    w = dt.ones(2, requires_grad=True)
    y = x * w
    assert y.requires_grad and not y.is_leaf and y.grad_fn is not None
    assert not (x * 2).requires_grad
    with pytest.raises(RuntimeError, match="floating point"):
        dt.ones(2, dtype=dt.int64).requires_grad_()
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad_(False)
    assert w.requires_grad_(False) is w and not w.requires_grad
    assert (dt.ones(2, requires_grad=True) > 0).requires_grad is False
    assert dt.ones(2, requires_grad=True).argmax().requires_grad is False
    for conv in ("long", "int", "bool", "byte"):  # casts to non-float types leave the graph, as in torch
        assert getattr(w.detach().requires_grad_() * 2, conv)().requires_grad is False


def test_backward_scalar_and_gradient_argument() -> None:
    xd, xt = pair(np.array([[1.0, -2.0], [3.0, 0.5]]), "float64", requires_grad=True)
    (xd * xd).sum().backward()
    (xt * xt).sum().backward()
    assert_close(xd.grad, xt.grad)
    xd.grad = None
    xt.grad = None
    g = np.array([[1.0, 2.0], [3.0, 4.0]])
    (xd ** 3).backward(gradient=dt.tensor(g))
    (xt ** 3).backward(gradient=torch.tensor(g))
    assert_close(xd.grad, xt.grad)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (xd * 2).backward()
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (xd * 2).backward(gradient=dt.ones(3))
    with pytest.raises(RuntimeError, match="does not require grad"):
        dt.ones(2).sum().backward()


def test_backward_on_leaf_and_grad_dtype() -> None:
    x = dt.tensor([1.0, 2.0], requires_grad=True)
    x.backward(dt.tensor([3.0, 4.0]))
    assert x.grad.tolist() == [3.0, 4.0]
    h = dt.tensor([1.0, 2.0], dtype=dt.float16, requires_grad=True)
    (h.float() * 2).sum().backward()
    assert h.grad.dtype is dt.float16 and h.grad.tolist() == [2.0, 2.0]
    b = dt.tensor([1.0, 2.0], dtype=dt.bfloat16, requires_grad=True)
    (b * b).sum().backward()
    assert b.grad.dtype is dt.bfloat16


def test_grad_accumulates_over_two_backward_calls() -> None:
    xd, xt = pair(np.array([1.0, 2.0, 3.0]), "float32", requires_grad=True)
    for _ in range(2):
        (xd * xd).sum().backward()
        (xt * xt).sum().backward()
    assert_close(xd.grad, xt.grad)
    assert xd.grad.tolist() == [4.0, 8.0, 12.0]
    xd.grad.zero_()
    (xd * 1).sum().backward()
    assert xd.grad.tolist() == [1.0, 1.0, 1.0]


def test_no_grad_enable_grad_set_grad_enabled() -> None:
    x = dt.ones(2, requires_grad=True)
    with dt.no_grad():
        assert not dt.is_grad_enabled()
        y = x * 2
        with dt.enable_grad():
            assert dt.is_grad_enabled()
            z = x * 2
        assert not dt.is_grad_enabled()
    assert dt.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None and z.requires_grad
    with dt.set_grad_enabled(False):
        assert not (x * 2).requires_grad
        with dt.set_grad_enabled(True):
            assert (x * 2).requires_grad
    assert dt.is_grad_enabled()
    dt.set_grad_enabled(False)
    try:
        assert not dt.is_grad_enabled()
    finally:
        dt.set_grad_enabled(True)
    with dt.inference_mode():
        assert not (x * 2).requires_grad
    with dt.inference_mode(False):
        assert (x * 2).requires_grad


def test_grad_mode_decorators() -> None:
    x = dt.ones(2, requires_grad=True)

    @dt.no_grad()
    def f(a: dt.Tensor) -> dt.Tensor:
        return a * 2

    @dt.enable_grad()
    def g(a: dt.Tensor) -> dt.Tensor:
        return a * 2

    @dt.set_grad_enabled(False)
    def h(a: dt.Tensor) -> dt.Tensor:
        return a * 2

    assert dt.is_grad_enabled()  # decorating does not change the mode
    assert not f(x).requires_grad and not h(x).requires_grad
    with dt.no_grad():
        assert g(x).requires_grad
    assert f.__name__ == "f"
    assert dt.is_grad_enabled()

    @dt.no_grad
    def bare(a: dt.Tensor) -> dt.Tensor:
        return a * 2

    assert not bare(x).requires_grad


def test_grad_mode_restored_after_exception() -> None:
    with pytest.raises(ValueError), dt.no_grad():
        raise ValueError
    assert dt.is_grad_enabled()


def test_detach() -> None:
    x = dt.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.is_leaf
    d[0] = 10.0  # shares memory with y
    assert y[0].item() == 10.0
    (y * d).sum().backward()
    assert x.grad.tolist() == [20.0, 8.0]
    z = x.detach().requires_grad_()
    assert z.is_leaf and z.requires_grad
    y2 = x * 3
    y2.detach_()
    assert not y2.requires_grad and y2.is_leaf
    assert not x.data.requires_grad and x.data.data_ptr() == x.data_ptr()


def test_retain_graph() -> None:
    x = dt.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    x.grad = None
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    first = x.grad.tolist()
    y.backward()
    assert np.allclose(x.grad.tolist(), [2 * v for v in first])
    # graphs that save no tensors can be walked again, as in torch
    x.grad = None
    s = (x + 1).sum()
    s.backward()
    s.backward()
    assert x.grad.tolist() == [2.0, 2.0]


def _torch_like_second_backward(build: Callable[[Any, Any], Any]) -> None:
    for mod in (dt, torch):
        x = mod.tensor([1.0, 2.0], requires_grad=True)
        y = build(mod, x)
        y.backward()
        try:
            y.backward()
            ok = True
        except RuntimeError:
            ok = False
        if mod is dt:
            dt_ok = ok
        else:
            assert dt_ok == ok


@pytest.mark.parametrize("name", ["mul_self", "mul_scalar", "div_scalar", "add", "sum", "mean", "reshape", "index",
                                  "exp"])
def test_second_backward_matches_torch(name: str) -> None:
    builds = {"mul_self": lambda m, x: (x * x).sum(), "mul_scalar": lambda m, x: (x * 2).sum(),
              "div_scalar": lambda m, x: (x / 2).sum(), "add": lambda m, x: (x + x).sum(), "sum": lambda m, x: x.sum(),
              "mean": lambda m, x: x.mean(), "reshape": lambda m, x: (x + 3).reshape(2, 1).sum(),
              "index": lambda m, x: x[0], "exp": lambda m, x: x.exp().sum()}
    _torch_like_second_backward(builds[name])


def test_retain_grad_on_non_leaf() -> None:
    x = dt.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    z = y * y
    y.retain_grad()
    assert y.retains_grad and not z.retains_grad
    z.sum().backward()
    assert y.grad.tolist() == [6.0, 12.0]
    assert z.grad is None
    x.retain_grad()  # no-op on a leaf
    assert x.grad.tolist() == [18.0, 36.0]


def test_register_hook_leaf_and_non_leaf() -> None:
    x = dt.tensor([1.0, 2.0], requires_grad=True)
    seen: list[list[float]] = []
    x.register_hook(lambda g: seen.append(g.tolist()))
    y = x * 2
    h = y.register_hook(lambda g: g * 10)  # replaces the gradient flowing on
    (y + y).sum().backward()  # two paths into y: the hook sees their sum once
    assert x.grad.tolist() == [40.0, 40.0]
    assert seen == [[40.0, 40.0]]
    assert y.grad is None  # a hook does not retain the gradient
    h.remove()
    x.grad = None
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        dt.ones(2).register_hook(lambda g: g)


def test_hook_on_leaf_used_twice_runs_once_per_backward() -> None:
    calls = []
    x = dt.tensor([1.0], requires_grad=True)
    x.register_hook(lambda g: calls.append(g.item()))
    (x * 2 + x * 3).sum().backward()
    assert calls == [5.0]
    t = torch.tensor([1.0], requires_grad=True)
    tcalls = []
    t.register_hook(lambda g: tcalls.append(g.item()))
    (t * 2 + t * 3).sum().backward()
    assert calls == tcalls


def test_retain_grad_sees_hooked_gradient() -> None:
    for mod in (dt, torch):
        x = mod.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.retain_grad()
        y.register_hook(lambda g: g * 3)
        (y * y).sum().backward()
        if mod is dt:
            dres = (y.grad.tolist(), x.grad.tolist())
        else:
            assert dres == (y.grad.tolist(), x.grad.tolist())


def test_diamond_graph_accumulates() -> None:
    def f(m: Any, x: Any) -> Any:
        a = x * 2
        b = a.exp()
        c = a.sin()
        d = b * c + a
        return (d * a).sum() + b.mean()

    xd, xt = pair(np.array([0.1, -0.4, 0.7]), "float64", requires_grad=True)
    f(dt, xd).backward()
    f(torch, xt).backward()
    assert_close(xd.grad, xt.grad)


def test_shared_input_in_both_operands() -> None:
    for f in (lambda x: x * x, lambda x: x / x, lambda x: x - x, lambda x: x ** x, lambda x: x @ x,
              lambda x: dt.cat([x, x]) if isinstance(x, dt.Tensor) else torch.cat([x, x])):
        xd, xt = pair(np.array([0.5, 1.5, 2.0]), "float64", requires_grad=True)
        f(xd).sum().backward()
        f(xt).sum().backward()
        assert_close(xd.grad, xt.grad)


def test_autograd_grad_leaves_dot_grad_alone() -> None:
    x = dt.tensor([1.0, 2.0], requires_grad=True)
    w = dt.tensor([3.0, 4.0], requires_grad=True)
    y = (x * w).sum()
    (gx,) = dt.autograd.grad(y, x, retain_graph=True)
    assert gx.tolist() == [3.0, 4.0]
    assert x.grad is None and w.grad is None
    gx, gw = dt.autograd.grad(y, [x, w], retain_graph=True)
    assert gw.tolist() == [1.0, 2.0]
    u = dt.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="not have been used in the graph"):
        dt.autograd.grad(y, [u], retain_graph=True)
    assert dt.autograd.grad(y, [u], retain_graph=True, allow_unused=True) == (None,)
    mid = x * 2
    out = (mid * mid).sum()
    (gm,) = dt.autograd.grad(out, mid)
    assert gm.tolist() == [4.0, 8.0]


def test_data_is_untracked() -> None:
    x = dt.tensor([1.0, 2.0], requires_grad=True)
    x.data.mul_(2)
    assert x.tolist() == [2.0, 4.0] and x.is_leaf
    x.data = dt.tensor([5.0, 6.0])
    (x * 1).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0] and x.tolist() == [5.0, 6.0]


EDGE = {
    "abs_at_0": (lambda m, x: m.abs(x), [0.0, 1.0, -1.0]),
    "relu_at_0": (lambda m, x: m.relu(x), [0.0, 1.0, -1.0]),
    "sqrt_at_0": (lambda m, x: m.sqrt(x), [0.0, 1.0]),
    "pow_half_at_0": (lambda m, x: x ** 0.5, [0.0, 1.0]),
    "max_all_ties": (lambda m, x: x.max(), [1.0, 2.0, 2.0]),
    "min_all_ties": (lambda m, x: x.min(), [1.0, 1.0, 2.0]),
    "max_dim_ties": (lambda m, x: x.max(0)[0], [1.0, 2.0, 2.0]),
    "amax_ties": (lambda m, x: x.reshape(2, 2).amax(1), [1.0, 3.0, 3.0, 3.0]),
    "clamp_at_bounds": (lambda m, x: m.clamp(x, 1.0, 2.0), [1.0, 2.0, 1.5, 0.0, 3.0]),
    "clamp_tensor_bounds": (lambda m, x: m.clamp(x, m.tensor([1.0, 1.0, 1.0]), m.tensor([2.0, 2.0, 2.0])),
                            [1.0, 2.0, 3.0]),
    "maximum_ties": (lambda m, x: m.maximum(x, m.tensor([0.0, 0.5])), [0.0, 1.0]),
    "norm_at_0": (lambda m, x: x.norm(), [0.0, 0.0]),
    "sort_ties": (lambda m, x: x.sort().values * m.tensor([1.0, 2.0, 3.0]), [3.0, 3.0, 1.0]),
    "where_nan_other": (lambda m, x: m.where(x > 0, x, m.log(x)), [1.0, -1.0]),
    "sign": (lambda m, x: m.sign(x), [0.0, 2.0]),
    "std_single": (lambda m, x: x.std(correction=0), [1.0, 1.0]),
    "prod_with_zero": (lambda m, x: x.prod(), [0.0, 2.0, 3.0]),
    "prod_two_zeros": (lambda m, x: x.prod(), [0.0, 2.0, 0.0]),
    "cast_through_float32": (lambda m, x: x.float().sum() * 2, [1.0, 2.0]),
    "div_by_zero": (lambda m, x: 1.0 / x, [0.0, 2.0]),
    "log_at_0": (lambda m, x: m.log(x), [0.0, 1.0]),
}


@pytest.mark.parametrize("name", list(EDGE))
def test_edge_point_gradients_match_torch(name: str) -> None:
    f, vals = EDGE[name]
    xd, xt = pair(np.array(vals), "float64", requires_grad=True)
    f(dt, xd).sum().backward()
    f(torch, xt).sum().backward()
    assert_close(xd.grad, xt.grad)


def test_inplace_on_non_leaf_records_gradient() -> None:
    for mod in (dt, torch):
        x = mod.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.add_(1)
        y.mul_(x)
        y.clamp_(max=5.0)
        y.sum().backward()
        if mod is dt:
            res = (y.tolist(), x.grad.tolist())
        else:
            assert res == (y.tolist(), x.grad.tolist())


def test_inplace_on_leaf_requiring_grad_raises() -> None:
    for op in (lambda t: t.add_(1), lambda t: t.mul_(2), lambda t: t.clamp_(0, 1), lambda t: t.zero_(),
               lambda t: t.fill_(1.0), lambda t: t.copy_(dt.ones(2)), lambda t: t.__iadd__(1)):
        x = dt.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            op(x)
        with dt.no_grad():
            op(x)
        assert x.is_leaf and x.requires_grad
    with pytest.raises(RuntimeError):
        torch.ones(2, requires_grad=True).add_(1)


def test_inplace_on_view_of_leaf_requiring_grad_raises() -> None:
    x = dt.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        x[1:].add_(1)
    with pytest.raises(RuntimeError):
        torch.ones(3, requires_grad=True)[1:].add_(1)


def test_inplace_on_view_of_non_leaf_updates_base_and_gradient() -> None:
    for mod in (dt, torch):
        x = mod.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 2
        v = y[1:]
        v.mul_(x[:2])
        z = (y * y).sum()
        z.backward()
        if mod is dt:
            res = (y.tolist(), x.grad.tolist())
        else:
            assert res == (y.tolist(), x.grad.tolist())


def test_retain_grad_follows_inplace() -> None:
    for mod in (dt, torch):
        x = mod.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.retain_grad()
        y.mul_(3)
        (y * y).sum().backward()
        if mod is dt:
            res = y.grad.tolist()
        else:
            assert res == y.grad.tolist()
