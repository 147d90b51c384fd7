"""`nn.init`: gains, the statistics of each initializer against its formula, determinism and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import dtorch as dt
from dtorch import nn
from dtorch.nn import init


@pytest.mark.parametrize("name,param", [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None),
                                        ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None),
                                        ("conv_transpose3d", None)])
def test_calculate_gain_matches_torch(name: str, param: float | None) -> None:
    assert init.calculate_gain(name, param) == pytest.approx(torch.nn.init.calculate_gain(name, param))


def test_calculate_gain_errors() -> None:
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("swish")
    with pytest.raises(ValueError, match="not a valid number"):
        init.calculate_gain("leaky_relu", "big")  # type: ignore[arg-type]


def _p(*shape: int) -> nn.Parameter:
    return nn.Parameter(dt.zeros(*shape))


@pytest.mark.parametrize("shape", [(256, 384), (64, 32, 3, 3)])
@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
@pytest.mark.parametrize("nonlinearity,a", [("relu", 0.0), ("leaky_relu", math.sqrt(5)), ("tanh", 0.0)])
def test_kaiming_statistics(shape: tuple[int, ...], mode: str, nonlinearity: str, a: float) -> None:
    rf = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    fan = shape[1] * rf if mode == "fan_in" else shape[0] * rf
    gain = torch.nn.init.calculate_gain(nonlinearity, a)
    bound = gain * math.sqrt(3.0 / fan)
    w = init.kaiming_uniform_(_p(*shape), a=a, mode=mode, nonlinearity=nonlinearity).detach().numpy()
    assert np.abs(w).max() <= bound * (1 + 1e-6) and np.abs(w).max() > 0.99 * bound
    assert w.std() == pytest.approx(bound / math.sqrt(3), rel=0.03)
    assert abs(w.mean()) < 0.02 * bound
    std = gain / math.sqrt(fan)
    v = init.kaiming_normal_(_p(*shape), a=a, mode=mode, nonlinearity=nonlinearity).detach().numpy()
    assert v.std() == pytest.approx(std, rel=0.03) and abs(v.mean()) < 0.02 * std * 3


@pytest.mark.parametrize("shape", [(300, 200), (16, 8, 5, 5)])
def test_xavier_statistics(shape: tuple[int, ...]) -> None:
    rf = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    fan_in, fan_out = shape[1] * rf, shape[0] * rf
    bound = 1.5 * math.sqrt(6.0 / (fan_in + fan_out))
    w = init.xavier_uniform_(_p(*shape), gain=1.5).detach().numpy()
    assert np.abs(w).max() <= bound * (1 + 1e-6) and np.abs(w).max() > 0.99 * bound
    assert w.std() == pytest.approx(bound / math.sqrt(3), rel=0.03)
    std = 1.5 * math.sqrt(2.0 / (fan_in + fan_out))
    assert init.xavier_normal_(_p(*shape), gain=1.5).detach().numpy().std() == pytest.approx(std, rel=0.03)


def test_uniform_normal_trunc_normal() -> None:
    u = init.uniform_(_p(200, 200), -2.0, 3.0).detach().numpy()
    assert u.min() >= -2.0 and u.max() <= 3.0 and u.mean() == pytest.approx(0.5, abs=0.03)
    n = init.normal_(_p(200, 200), 1.0, 0.5).detach().numpy()
    assert n.mean() == pytest.approx(1.0, abs=0.01) and n.std() == pytest.approx(0.5, rel=0.02)
    t = init.trunc_normal_(_p(300, 300), mean=0.0, std=1.0, a=-2.0, b=2.0).detach().numpy()
    assert t.min() >= -2.0 and t.max() <= 2.0
    # the std of a standard normal truncated to [-2, 2]
    phi = math.exp(-2.0) / math.sqrt(2 * math.pi)
    z = math.erf(2 / math.sqrt(2))
    assert t.std() == pytest.approx(math.sqrt(1 - 4 * phi / z), rel=0.02)
    s = init.trunc_normal_(_p(100, 100), mean=0.0, std=0.02, a=-0.04, b=0.04).detach().numpy()
    assert np.abs(s).max() <= 0.04 and s.std() == pytest.approx(0.02 * math.sqrt(1 - 4 * phi / z), rel=0.03)
    with pytest.warns(UserWarning, match="mean is more than 2 std"):
        init.trunc_normal_(_p(3), mean=10.0, std=1.0)


def test_deterministic_fills_match_torch() -> None:
    for fn, shape, args in [(init.constant_, (3, 4), (0.25,)), (init.zeros_, (2, 3), ()), (init.ones_, (5,), ()),
                            (init.eye_, (3, 5), ()), (init.dirac_, (4, 2, 3, 3), ()), (init.dirac_, (4, 4, 3), (2,))]:
        d = fn(_p(*shape), *args)
        t = getattr(torch.nn.init, fn.__name__)(torch.zeros(shape), *args)
        np.testing.assert_array_equal(d.detach().numpy(), t.numpy())


@pytest.mark.parametrize("shape", [(6, 4), (3, 8), (4, 2, 3)])
def test_orthogonal(shape: tuple[int, ...]) -> None:
    w = init.orthogonal_(_p(*shape), gain=2.0).detach().numpy().reshape(shape[0], -1)
    rows, cols = w.shape
    gram = w.T @ w if rows >= cols else w @ w.T
    np.testing.assert_allclose(gram, 4.0 * np.eye(min(rows, cols)), atol=1e-5)


def test_generators_and_no_grad() -> None:
    g1, g2 = dt.Generator().manual_seed(3), dt.Generator().manual_seed(3)
    a = init.kaiming_uniform_(_p(5, 5), generator=g1).detach().numpy()
    b = init.kaiming_uniform_(_p(5, 5), generator=g2).detach().numpy()
    np.testing.assert_array_equal(a, b)
    dt.manual_seed(11)
    c = init.normal_(_p(4)).detach().numpy()
    dt.manual_seed(11)
    np.testing.assert_array_equal(c, init.normal_(_p(4)).detach().numpy())
    p = _p(3, 3)
    out = init.xavier_uniform_(p)
    assert out is p and p.requires_grad and p.grad_fn is None and p.is_leaf
    h = nn.Parameter(dt.zeros(4, 4, dtype=dt.bfloat16))
    init.kaiming_normal_(h)
    assert h.dtype is dt.bfloat16 and np.abs(h.detach().numpy().astype(np.float32)).max() > 0


def test_init_errors() -> None:
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(_p(5))
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.kaiming_normal_(_p(5))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(_p(3, 3), mode="fan_avg")
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.kaiming_uniform_(_p(3, 3), nonlinearity="gelu")
    with pytest.raises(ValueError, match="2 dimensions"):
        init.eye_(_p(2, 2, 2))
    with pytest.raises(ValueError, match="3, 4, or 5 dimensions"):
        init.dirac_(_p(2, 2))
    with pytest.raises(TypeError, match="expected a Tensor"):
        init.zeros_(np.zeros(3))  # type: ignore[arg-type]
    with pytest.warns(UserWarning, match="zero-element"):
        init.kaiming_uniform_(_p(0, 3))
    with pytest.raises(TypeError, match="Generator"):
        init.uniform_(_p(2), generator=np.random.default_rng(0))  # type: ignore[arg-type]
