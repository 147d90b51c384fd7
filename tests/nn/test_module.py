"""`nn.Module` behaviour against PyTorch: registration, iteration order, state_dict round trips, modes,
dtype moves, hooks, apply, repr and the error paths."""

from __future__ import annotations

import copy
from collections import OrderedDict
from typing import Any

import numpy as np
import pytest
import torch

import dtorch as dt
import dtorch.nn.functional as F
from dtorch import nn


def _build(lib: Any) -> Any:
    """The same architecture in dtorch (lib=dt) or torch (lib=torch), with a shared module and a buffer."""
    tnn = lib.nn

    class Block(tnn.Module):
        def __init__(self, cin: int, cout: int) -> None:
            super().__init__()
            self.fc = tnn.Linear(cin, cout)
            self.bn = tnn.BatchNorm1d(cout)
            self.act = tnn.ReLU()

        def forward(self, x: Any) -> Any:
            return self.act(self.bn(self.fc(x)))

    class Net(tnn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = tnn.Sequential(Block(4, 8), Block(8, 8))
            self.heads = tnn.ModuleList([tnn.Linear(8, 3), tnn.Linear(8, 2)])
            self.shared = self.heads[0]
            self.register_buffer("scale", lib.ones(3))
            self.register_buffer("tmp", lib.zeros(2), persistent=False)
            self.extra = tnn.Parameter(lib.zeros(3))

        def forward(self, x: Any) -> Any:
            h = self.body(x)
            return self.heads[0](h) * self.scale + self.extra, self.heads[1](h)

    return Net()


def _sync(md: nn.Module, mt: torch.nn.Module) -> None:
    mt.load_state_dict({k: torch.from_numpy(np.array(v.numpy())) for k, v in md.state_dict().items()})


def test_iteration_order_matches_torch() -> None:
    md, mt = _build(dt), _build(torch)
    assert [n for n, _ in md.named_parameters()] == [n for n, _ in mt.named_parameters()]
    assert [tuple(p.shape) for p in md.parameters()] == [tuple(p.shape) for p in mt.parameters()]
    assert [n for n, _ in md.named_buffers()] == [n for n, _ in mt.named_buffers()]
    assert [n for n, _ in md.named_children()] == [n for n, _ in mt.named_children()]
    assert [n for n, _ in md.named_modules()] == [n for n, _ in mt.named_modules()]
    assert [type(m).__name__ for m in md.modules()] == [type(m).__name__ for m in mt.modules()]
    assert [type(m).__name__ for m in md.children()] == [type(m).__name__ for m in mt.children()]
    assert list(md.state_dict()) == list(mt.state_dict())
    assert [n for n, _ in md.named_parameters(recurse=False)] == ["extra"]
    assert len(list(md.named_parameters(remove_duplicate=False))) == len(list(mt.named_parameters(
        remove_duplicate=False)))


def test_repr_matches_torch() -> None:
    assert repr(_build(dt)) == repr(_build(torch))
    md = nn.Sequential(nn.Linear(2, 4), nn.Sequential(nn.ReLU(), nn.Dropout(0.5)), nn.LayerNorm(4), nn.Softmax(-1))
    mt = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Dropout(0.5)),
                             torch.nn.LayerNorm(4), torch.nn.Softmax(-1))
    assert repr(md) == repr(mt)


def test_state_dict_round_trip_gives_torch_outputs() -> None:
    md, mt = _build(dt), _build(torch)
    _sync(md, mt)
    md.eval()
    mt.eval()
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    for a, b in zip(md(dt.tensor(x)), mt(torch.tensor(x))):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    sd = md.state_dict()
    assert all(not v.requires_grad for v in sd.values())
    assert np.shares_memory(sd["extra"].numpy(), md.extra.detach().numpy())
    assert md.state_dict(keep_vars=True)["extra"] is md.extra
    other = _build(dt)
    res = other.load_state_dict({k: v.numpy().copy() for k, v in sd.items()})
    assert repr(res) == "<All keys matched successfully>" and res.missing_keys == [] and res.unexpected_keys == []
    for k, v in other.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), sd[k].numpy())


def test_load_state_dict_strict_and_non_strict() -> None:
    m = _build(dt)
    sd = m.state_dict()
    bad = OrderedDict(sd)
    del bad["scale"]
    bad["bogus"] = dt.zeros(1)
    before = {k: v.numpy().copy() for k, v in m.state_dict().items()}
    bad["extra"] = dt.full((3,), 7.0)
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "scale"') as ei:
        m.load_state_dict(bad)
    assert 'Unexpected key(s) in state_dict: "bogus"' in str(ei.value)
    for k, v in m.state_dict().items():  # a failed load leaves the model untouched
        np.testing.assert_array_equal(v.numpy(), before[k])
    res = m.load_state_dict(bad, strict=False)
    assert res.missing_keys == ["scale"] and res.unexpected_keys == ["bogus"]
    assert m.extra.tolist() == [7.0, 7.0, 7.0]
    wrong = OrderedDict(sd)
    wrong["extra"] = dt.zeros(4)
    with pytest.raises(RuntimeError, match=r"size mismatch for extra: copying a param with shape \[4\]"):
        m.load_state_dict(wrong, strict=False)
    assert m.extra.tolist() == [7.0, 7.0, 7.0]
    with pytest.raises(TypeError, match="dict-like"):
        m.load_state_dict([1, 2])  # type: ignore[arg-type]


def test_train_eval_recurse_and_call_overrides() -> None:
    calls: list[bool] = []

    class Tracked(nn.Module):
        def train(self, mode: bool = True) -> nn.Module:
            calls.append(mode)
            return super().train(mode)

    m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(Tracked(), nn.Dropout()))
    assert all(x.training for x in m.modules())
    assert m.eval() is m and not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules()) and calls == [False, True]
    with pytest.raises(ValueError, match="boolean"):
        m.train("yes")  # type: ignore[arg-type]


def test_to_dtype_and_devices() -> None:
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    m(dt.randn(4, 3)).sum().backward()
    assert m.to(dt.float64) is m
    assert m[0].weight.dtype is dt.float64 and m[0].weight.grad.dtype is dt.float64
    assert m[1].running_mean.dtype is dt.float64 and m[1].num_batches_tracked.dtype is dt.int64
    assert isinstance(m[0].weight, nn.Parameter) and m[0].weight.requires_grad
    m.half()
    assert m[0].bias.dtype is dt.float16
    m.to("float32")
    assert m[0].bias.dtype is dt.float32
    m.to("cpu")
    m.to(dt.device("cpu"), dtype=dt.float32)
    with pytest.raises(dt.DeviceError, match=r"'cuda'.*\['cpu'\]"):
        m.to("cuda")
    with pytest.raises(dt.DeviceError, match="cuda:1"):
        m.cuda(1)
    with pytest.raises(TypeError, match="floating point"):
        m.to(dt.int64)
    assert m.float() is m and m.cpu() is m


def test_apply_order_matches_torch_and_init() -> None:
    seen_d: list[str] = []
    seen_t: list[str] = []
    _build(dt).apply(lambda mod: seen_d.append(type(mod).__name__))
    _build(torch).apply(lambda mod: seen_t.append(type(mod).__name__))
    assert seen_d == seen_t

    def init(mod: nn.Module) -> None:
        if isinstance(mod, nn.Linear):
            nn.init.constant_(mod.weight, 0.5)

    m = _build(dt).apply(init)
    assert float(m.heads[1].weight.sum().item()) == pytest.approx(0.5 * 16)


def test_register_buffer_and_parameter_rules() -> None:
    m = nn.Module()
    m.register_buffer("a", dt.ones(2))
    m.register_buffer("b", dt.ones(2), persistent=False)
    m.register_buffer("c", None)
    assert list(m.state_dict()) == ["a"] and [n for n, _ in m.named_buffers()] == ["a", "b"]
    m.a = dt.zeros(2)  # re-assigning a tensor to a buffer name keeps it a buffer
    assert m.state_dict()["a"].tolist() == [0.0, 0.0]
    with pytest.raises(TypeError, match="buffer"):
        m.register_buffer("d", [1, 2])  # type: ignore[arg-type]
    with pytest.raises(KeyError, match=r'contain "\."'):
        m.register_buffer("x.y", dt.ones(1))
    m.register_parameter("p", nn.Parameter(dt.ones(1)))
    with pytest.raises(KeyError, match="already exists"):
        m.register_buffer("p", dt.ones(1))
    m.plain = 3
    with pytest.raises(KeyError, match="already exists"):
        m.register_parameter("plain", nn.Parameter(dt.ones(1)))
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'p'"):
        m.p = dt.ones(1)
    with pytest.raises(TypeError, match="Parameter"):
        m.register_parameter("q", dt.ones(1))  # type: ignore[arg-type]

    class Early(nn.Module):
        def __init__(self) -> None:
            self.w = nn.Parameter(dt.ones(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def test_reassignment_keeps_registration_order() -> None:
    m = nn.Sequential(nn.ReLU(), nn.Tanh(), nn.Sigmoid())
    m[1] = nn.GELU()
    assert [type(x).__name__ for x in m] == ["ReLU", "GELU", "Sigmoid"]
    lin = nn.Linear(2, 2)
    lin.weight = nn.Parameter(dt.zeros(2, 2))
    assert [n for n, _ in lin.named_parameters()] == ["weight", "bias"]
    del lin.bias
    assert [n for n, _ in lin.named_parameters()] == ["weight"]


def test_zero_grad_and_requires_grad() -> None:
    m = nn.Linear(3, 2)
    m(dt.randn(4, 3)).sum().backward()
    m.zero_grad(set_to_none=False)
    assert m.weight.grad is not None and not m.weight.grad.numpy().any()
    m.zero_grad()
    assert m.weight.grad is None and m.bias.grad is None
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    assert not m(dt.randn(1, 3)).requires_grad


def test_hooks_and_accessors() -> None:
    m = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("bn", nn.BatchNorm1d(2))]))
    log: list[str] = []
    h1 = m.fc.register_forward_pre_hook(lambda mod, args: log.append("pre") or None)
    h2 = m.fc.register_forward_hook(lambda mod, args, out: out * 0)
    out = m.fc(dt.ones(3, 2))
    assert log == ["pre"] and not out.detach().numpy().any()
    h1.remove()
    h2.remove()
    assert m.fc(dt.ones(1, 2)).detach().numpy().any() and log == ["pre"]
    assert m.get_submodule("fc") is m.fc and m.get_parameter("fc.bias") is m.fc.bias
    assert m.get_buffer("bn.running_var") is m.bn.running_var
    with pytest.raises(AttributeError, match="no submodule"):
        m.get_submodule("nope")
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        m.nope  # noqa: B018
    assert "fc" in dir(m)


def test_missing_forward_and_deepcopy() -> None:
    class NoForward(nn.Module):
        pass

    with pytest.raises(NotImplementedError, match="forward"):
        NoForward()(dt.ones(1))
    m = _build(dt)
    c = copy.deepcopy(m)
    assert c.shared is c.heads[0] and c.shared is not m.shared
    with dt.no_grad():
        c.extra.fill_(5.0)
    assert m.extra.tolist() == [0.0, 0.0, 0.0]
    assert [n for n, _ in c.named_parameters()] == [n for n, _ in m.named_parameters()]


def test_training_step_end_to_end() -> None:
    md, mt = _build(dt), _build(torch)
    _sync(md, mt)
    x = np.random.default_rng(1).standard_normal((6, 4)).astype(np.float32)
    y = np.array([0, 1, 2, 0, 1, 2])
    (a, b), (c, d) = md(dt.tensor(x)), mt(torch.tensor(x))
    ld = F.cross_entropy(a, dt.tensor(y)) + b.pow(2).mean()
    lt = torch.nn.functional.cross_entropy(c, torch.tensor(y)) + d.pow(2).mean()
    np.testing.assert_allclose(ld.item(), lt.item(), rtol=1e-5)
    ld.backward()
    lt.backward()
    for (n, p), (_, q) in zip(md.named_parameters(), mt.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=n)
    for (n, p), (_, q) in zip(md.named_buffers(), mt.named_buffers()):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-6, err_msg=n)
