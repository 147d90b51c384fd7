"""linear and matmul kernels against PyTorch; thread-count bit-identity; errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from .helpers import assert_close, rand, run


@pytest.mark.parametrize("xshape,m", [((1, 7), 3), ((4, 64), 10), ((2, 3, 37), 21), ((5,), 4), ((33, 130), 67)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_torch(xshape, m, bias):
    rng = np.random.default_rng(len(xshape) * 100 + m)
    x, w = rand(rng, *xshape), rand(rng, m, xshape[-1])
    b = rand(rng, m) if bias else None
    got = run("linear", {}, [x, w, b])
    ref = F.linear(torch.tensor(x), torch.tensor(w), None if b is None else torch.tensor(b))
    assert_close(got, ref.numpy())


@pytest.mark.parametrize("act", ["relu", "gelu", "gelu_tanh", "tanh", "hardsigmoid"])
def test_linear_fused_activation(act):
    rng = np.random.default_rng(7)
    x, w, b = rand(rng, 3, 19), rand(rng, 9, 19), rand(rng, 9)
    ref = F.linear(torch.tensor(x), torch.tensor(w), torch.tensor(b))
    fn = {"relu": F.relu, "gelu": F.gelu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"), "tanh": torch.tanh,
          "hardsigmoid": F.hardsigmoid}[act]
    assert_close(run("linear", dict(activation=act), [x, w, b]), fn(ref).numpy())


@pytest.mark.parametrize("ashape,bshape", [
    ((5, 7), (7, 3)), ((7,), (7, 3)), ((5, 7), (7,)), ((7,), (7,)), ((2, 5, 7), (7, 4)), ((3, 1, 5, 37), (4, 37, 19)),
    ((1, 4, 8), (2, 1, 8, 6)), ((2, 17, 33), (2, 33, 130)),
])
def test_matmul_matches_torch(ashape, bshape):
    rng = np.random.default_rng(8)
    a, b = rand(rng, *ashape), rand(rng, *bshape)
    got = run("matmul", {}, [a, b])
    assert_close(got, torch.matmul(torch.tensor(a), torch.tensor(b)).numpy())


def test_linear_and_matmul_threads_bit_identical():
    rng = np.random.default_rng(9)
    x, w, b = rand(rng, 37, 130), rand(rng, 67, 130), rand(rng, 67)
    one = run("linear", {}, [x, w, b], threads=1)
    np.testing.assert_array_equal(one, run("linear", {}, [x, w, b], threads=2))
    np.testing.assert_array_equal(one, run("linear", {}, [x, w, b], threads=3))
    a, c = rand(rng, 3, 45, 70), rand(rng, 3, 70, 150)
    one = run("matmul", {}, [a, c], threads=1)
    np.testing.assert_array_equal(one, run("matmul", {}, [a, c], threads=2))


def test_errors_name_the_op():
    rng = np.random.default_rng(10)
    with pytest.raises(ValueError, match=r"linear: input has 5 features .* expects 4"):
        run("linear", {}, [rand(rng, 2, 5), rand(rng, 3, 4), None])
    with pytest.raises(ValueError, match=r"linear: bias must have shape \[3\]"):
        run("linear", {}, [rand(rng, 2, 4), rand(rng, 3, 4), rand(rng, 2)])
    with pytest.raises(ValueError, match=r"matmul: shapes \[2, 5\] and \[4, 3\] cannot be multiplied"):
        run("matmul", {}, [rand(rng, 2, 5), rand(rng, 4, 3)])
    with pytest.raises(ValueError, match=r"matmul: batch dimensions"):
        run("matmul", {}, [rand(rng, 2, 2, 5), rand(rng, 3, 5, 3)])
