"""Unary and binary elementwise kernels against PyTorch (broadcasting, attributes, NaN, errors)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from .helpers import assert_close, rand, run

UNARY = {
    "relu": F.relu, "sigmoid": torch.sigmoid, "tanh": torch.tanh, "silu": F.silu, "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid, "gelu": F.gelu, "exp": torch.exp, "neg": torch.neg, "abs": torch.abs,
    "erf": torch.erf, "sin": torch.sin, "cos": torch.cos, "reciprocal": torch.reciprocal,
}
POSITIVE = {"log": torch.log, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt}


@pytest.mark.parametrize("op", list(UNARY) + list(POSITIVE))
def test_unary_matches_torch(op):
    rng = np.random.default_rng(abs(hash(op)) % 2**32)
    x = rand(rng, 3, 5, 7) * 3
    if op in POSITIVE:
        x = np.abs(x) + 0.1
    fn = {**UNARY, **POSITIVE}[op]
    assert_close(run(op, {}, [x]), fn(torch.tensor(x)).numpy())


def test_unary_with_attributes():
    rng = np.random.default_rng(11)
    x = rand(rng, 4, 33) * 4
    t = torch.tensor(x)
    assert_close(run("gelu", dict(approximate="tanh"), [x]), F.gelu(t, approximate="tanh").numpy())
    assert_close(run("hardtanh", dict(min_val=0.0, max_val=6.0), [x]), F.relu6(t).numpy())
    assert_close(run("hardtanh", {}, [x]), F.hardtanh(t).numpy())
    assert_close(run("leaky_relu", dict(alpha=0.1), [x]), F.leaky_relu(t, 0.1).numpy())
    assert_close(run("elu", dict(alpha=0.5), [x]), F.elu(t, 0.5).numpy())
    assert_close(run("softplus", dict(beta=2.0, threshold=3.0), [x]), F.softplus(t, 2.0, 3.0).numpy())
    assert_close(run("clamp", dict(min=-1.0, max=0.5, has_min=1, has_max=1), [x]), torch.clamp(t, -1.0, 0.5).numpy())
    assert_close(run("clamp", dict(min=-1.0, has_min=1, has_max=0), [x]), torch.clamp(t, min=-1.0).numpy())


def test_unary_nan_propagates():
    x = np.array([np.nan, -1.0, 2.0], np.float32)
    for op in ("relu", "hardswish", "sigmoid"):
        assert np.isnan(run(op, {}, [x])[0])
    assert np.isnan(run("hardtanh", dict(min_val=0.0, max_val=6.0), [x])[0])


BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "maximum": torch.maximum,
          "minimum": torch.minimum}


@pytest.mark.parametrize("op", list(BINARY) + ["pow"])
@pytest.mark.parametrize("ashape,bshape", [
    ((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 1, 5), (4, 1)), ((5,), (2, 3, 5)), ((), (3,)),
    ((2, 3, 4, 5), (1, 3, 1, 5)), ((1,), (1,)),
])
def test_binary_broadcasting(op, ashape, bshape):
    rng = np.random.default_rng(12)
    a, b = rand(rng, *ashape), rand(rng, *bshape)
    if op == "pow":
        a = np.asarray(np.abs(a) + 0.5, dtype=np.float32)
    if op == "div":
        b = np.where(np.abs(b) < 0.1, 0.5, b).astype(np.float32)
    fn = BINARY.get(op, torch.pow)
    assert_close(run(op, {}, [a, b]), fn(torch.tensor(a), torch.tensor(b)).numpy())


def test_add_fused_activation_and_threads():
    rng = np.random.default_rng(13)
    a, b = rand(rng, 64, 300), rand(rng, 300)
    got = run("add", dict(activation="relu"), [a, b], threads=2)
    assert_close(got, F.relu(torch.tensor(a) + torch.tensor(b)).numpy())
    np.testing.assert_array_equal(got, run("add", dict(activation="relu"), [a, b], threads=1))
    assert_close(run("add", dict(activation="hardswish"), [a, b]), F.hardswish(torch.tensor(a + b)).numpy())


def test_maximum_minimum_nan():
    a = np.array([np.nan, 1.0, 2.0], np.float32)
    b = np.array([0.0, np.nan, 1.0], np.float32)
    for op in ("maximum", "minimum"):
        got = run(op, {}, [a, b])
        assert np.isnan(got[0]) and np.isnan(got[1])


def test_errors_name_the_op():
    rng = np.random.default_rng(14)
    with pytest.raises(ValueError, match=r"add: shapes \[3, 4\] and \[5\] cannot be broadcast"):
        run("add", {}, [rand(rng, 3, 4), rand(rng, 5)])
    # attributes are held against the catalogue first, as the loader holds a file's
    with pytest.raises(ValueError, match=r"gelu attribute 'approximate' is \"fast\", expected one of"):
        run("gelu", dict(approximate="fast"), [rand(rng, 3)])
    with pytest.raises(ValueError, match=r"add attribute 'activation' is \"nope\", expected one of"):
        run("add", dict(activation="nope"), [rand(rng, 3), rand(rng, 3)])
    with pytest.raises(ValueError, match=r"mul: input b must be float32, got int64"):
        run("mul", {}, [rand(rng, 3), np.arange(3)])
