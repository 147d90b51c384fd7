"""Activation functions and layers against PyTorch: forward, gradients, dtypes, layouts, errors, reprs."""

from __future__ import annotations

import warnings
import zlib
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

# name -> (kwargs); the same call on dtorch.nn.functional and torch.nn.functional
ACTS: dict[str, dict[str, Any]] = {
    "relu": {}, "relu6": {}, "leaky_relu": {"negative_slope": 0.2}, "gelu": {}, "gelu_tanh": {"approximate": "tanh"},
    "silu": {}, "hardswish": {}, "hardsigmoid": {}, "sigmoid": {}, "tanh": {}, "elu": {"alpha": 0.7}, "selu": {},
    "celu": {"alpha": 1.3}, "softplus": {"beta": 2.0, "threshold": 5.0}, "mish": {},
    "hardtanh": {"min_val": -0.5, "max_val": 0.8}, "logsigmoid": {}, "softsign": {}, "tanhshrink": {},
}


def _fn(mod: Any, name: str) -> Any:
    return getattr(mod, "gelu" if name == "gelu_tanh" else name)


# values on the kinks of the piecewise activations, so the chosen one-sided derivatives are compared too
KINKS = np.array([-3.0, 3.0, 0.0, 6.0, -0.5, 0.8, 2.5, -20.0, 20.0, 1e-3])


@pytest.mark.parametrize("name", sorted(ACTS))
@pytest.mark.parametrize("shape,layout", [((4, 7), "contiguous"), ((3, 5, 6), "transposed"), ((0, 3), "contiguous"),
                                          ((), "contiguous"), ((2, 8), "strided")])
def test_forward_backward_float32(name: str, shape: tuple[int, ...], layout: str) -> None:
    rng = np.random.default_rng(zlib.crc32(f"{name}{shape}".encode()))
    arr = rng.uniform(-4, 4, shape)
    if arr.size >= KINKS.size:
        arr.reshape(-1)[: KINKS.size] = KINKS
    d, t = pair(arr, "float32", layout, requires_grad=True)
    kw = ACTS[name]
    yd, yt = _fn(F, name)(d, **kw), _fn(TF, name)(t, **kw)
    assert_close(yd, yt, rtol=1e-5, atol=1e-5)
    g = rng.standard_normal(shape)
    yd.backward(dt.tensor(g, dtype=dt.float32))
    yt.backward(torch.tensor(g, dtype=torch.float32))
    assert_close(d.grad, t.grad, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(ACTS))
def test_gradcheck_float64(name: str) -> None:
    rng = np.random.default_rng(7)
    # away from the kinks, where the function is smooth
    arr = rng.uniform(0.1, 2.5, (3, 4)) * rng.choice([-1.0, 1.0], (3, 4))
    x = dt.tensor(arr, dtype=dt.float64, requires_grad=True)
    assert gradcheck(lambda v: _fn(F, name)(v, **ACTS[name]), (x,))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
@pytest.mark.parametrize("name", ["gelu", "silu", "hardswish", "elu", "softplus", "leaky_relu", "mish"])
def test_reduced_and_double_precision(name: str, dtype: str) -> None:
    rng = np.random.default_rng(3)
    d, t = pair(rng.uniform(-4, 4, (5, 6)), dtype, requires_grad=True)
    yd, yt = _fn(F, name)(d, **ACTS[name]), _fn(TF, name)(t, **ACTS[name])
    assert yd.dtype.name == dtype
    assert_close(yd, yt)
    yd.sum().backward()
    yt.sum().backward()
    assert_close(d.grad, t.grad)


def test_inplace_variants_and_int_relu() -> None:
    x = dt.tensor([[-1.0, 2.0], [3.0, -4.0]])
    out = F.relu(x, inplace=True)
    assert out is x and x.tolist() == [[0.0, 2.0], [3.0, 0.0]]
    y = dt.tensor([-2.0, 0.5, 9.0])
    nn.ReLU6(inplace=True)(y)
    assert y.tolist() == [0.0, 0.5, 6.0]
    z = dt.tensor([-2.0, 1.0])
    F.leaky_relu_(z, 0.5)
    assert z.tolist() == [-1.0, 1.0]
    i = dt.tensor([-2, 3, 9])
    assert F.relu(i).tolist() == [0, 3, 9] and F.relu(i).dtype is dt.int64
    assert F.relu6(i).tolist() == [0, 3, 6] and F.relu6(i).dtype is dt.int64


def test_inplace_under_autograd_keeps_graph() -> None:
    w = dt.tensor([1.0, -2.0, 3.0], requires_grad=True)
    h = w * 2
    F.silu(h, inplace=True)
    h.sum().backward()
    wt = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    TF.silu(wt * 2).sum().backward()
    assert_close(w.grad, wt.grad)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize("shape,dim", [((4, 6), 1), ((4, 6), 0), ((2, 3, 5), -1), ((2, 3, 5), 1), ((7,), 0),
                                       ((0, 4), 1), ((3, 0), 1)])
def test_softmax_family(fn: str, shape: tuple[int, ...], dim: int) -> None:
    rng = np.random.default_rng(11)
    arr = rng.standard_normal(shape) * 5
    d, t = pair(arr, "float32", "transposed" if len(shape) == 3 else "contiguous", requires_grad=True)
    yd, yt = getattr(F, fn)(d, dim), getattr(TF, fn)(t, dim)
    assert_close(yd, yt, rtol=1e-5, atol=1e-6)
    g = rng.standard_normal(shape)
    yd.backward(dt.tensor(g, dtype=dt.float32))
    yt.backward(torch.tensor(g, dtype=torch.float32))
    assert_close(d.grad, t.grad, rtol=1e-5, atol=1e-6)


def test_softmax_stability_and_special_values() -> None:
    arr = np.array([[1000.0, 1001.0, 999.0], [-np.inf, 0.0, 1.0], [-1e4, -1e4, -1e4]])
    d, t = pair(arr, "float32")
    assert_close(F.softmax(d, 1), TF.softmax(t, 1))
    assert_close(F.log_softmax(d, 1), TF.log_softmax(t, 1))
    allinf = np.full((1, 3), -np.inf)
    d2, t2 = pair(allinf, "float32")
    assert_close(F.softmax(d2, 1), TF.softmax(t2, 1))  # nan, as torch
    assert_close(F.softmax(dt.tensor(2.0), 0), TF.softmax(torch.tensor(2.0), 0))


def test_softmax_gradcheck_and_dtype_arg() -> None:
    x = dt.tensor(np.random.default_rng(0).standard_normal((3, 4)), dtype=dt.float64, requires_grad=True)
    assert gradcheck(lambda v: F.softmax(v, 1), (x,))
    assert gradcheck(lambda v: F.log_softmax(v, 0), (x,))
    h = dt.tensor([[1.0, 2.0, 3.0]], dtype=dt.float16)
    out = F.softmax(h, -1, dtype=dt.float32)
    assert out.dtype is dt.float32
    assert_close(out, TF.softmax(torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float16), -1, dtype=torch.float32))
    assert h.softmax(-1).dtype is dt.float16


def test_softmax_implicit_dim_warns() -> None:
    x = dt.randn(2, 3)
    with pytest.warns(UserWarning, match="Implicit dimension"):
        out = F.softmax(x)
    np.testing.assert_allclose(out.sum(1).numpy(), np.ones(2), rtol=1e-6)


def test_softmax_under_autocast_is_float32_and_grads_flow() -> None:
    x = dt.randn(4, 5, dtype=dt.float16).requires_grad_()
    with dt.autocast(dtype=dt.float16):
        y = F.log_softmax(x, 1)
    assert y.dtype is dt.float32
    y.sum().backward()
    assert x.grad is not None and x.grad.dtype is dt.float16


@pytest.mark.parametrize("name", ["gelu", "silu", "leaky_relu", "elu", "softplus", "hardswish", "mish"])
def test_integer_input_raises_not_implemented(name: str) -> None:
    with pytest.raises(NotImplementedError, match="floating point"):
        getattr(F, name)(dt.tensor([1, 2, 3]))


def test_error_paths() -> None:
    with pytest.raises(NotImplementedError, match="floating point"):
        F.softmax(dt.tensor([1, 2]), 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.softmax(dt.randn(2, 3), 2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.softmax(dt.tensor(1.0), 1)
    with pytest.raises(RuntimeError, match="approximate"):
        F.gelu(dt.randn(3), approximate="fast")
    with pytest.raises(RuntimeError, match="approximate"):
        nn.GELU("fast")(dt.randn(3))
    with pytest.raises(ValueError, match="min_val"):
        F.hardtanh(dt.randn(3), 2.0, 1.0)
    with pytest.raises(ValueError, match="min_val"):
        nn.Hardtanh(2.0, 1.0)
    with pytest.raises(TypeError, match="must be Tensor"):
        F.relu([1.0, 2.0])  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="Boolean"):
        F.relu(dt.tensor([True, False]))


MODULES = [
    ("ReLU", (), {}), ("ReLU", (), {"inplace": True}), ("ReLU6", (), {}), ("LeakyReLU", (0.2,), {}),
    ("LeakyReLU", (), {"inplace": True}), ("GELU", (), {}), ("GELU", (), {"approximate": "tanh"}), ("SiLU", (), {}),
    ("SiLU", (), {"inplace": True}), ("Hardswish", (), {}), ("Hardsigmoid", (), {}), ("Sigmoid", (), {}),
    ("Tanh", (), {}), ("Softmax", (1,), {}), ("LogSoftmax", (), {"dim": -1}), ("Softmin", (1,), {}),
    ("ELU", (0.5,), {}), ("ELU", (), {"inplace": True}), ("CELU", (), {}), ("SELU", (), {}), ("Softplus", (2.0, 10.0), {}),
    ("Mish", (), {}), ("Hardtanh", (-2.0, 2.0), {}), ("LogSigmoid", (), {}), ("Softsign", (), {}),
    ("Tanhshrink", (), {}),
]


@pytest.mark.parametrize("cls,args,kwargs", MODULES)
def test_modules_match_torch(cls: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    md, mt = getattr(nn, cls)(*args, **kwargs), getattr(torch.nn, cls)(*args, **kwargs)
    assert repr(md) == repr(mt)
    arr = np.random.default_rng(5).uniform(-4, 4, (3, 4))
    d, t = pair(arr, "float32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(to_numpy(md(d)), to_numpy(mt(t)), rtol=1e-5, atol=1e-6)
    assert list(md.parameters()) == []
