"""The Tensor object against PyTorch: metadata (shape, strides, contiguity, dtype), conversions, repr, the
legacy `Tensor(...)` constructor, `Size`, `to`/`type` and the scalar protocols."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensor_oracle import DTYPES, assert_close, ddtype, pair, sample, tdtype

import dtorch as dt

REPRS = [
    lambda m: m.tensor([1.5, 2.25, -3.0]), lambda m: m.tensor([1.0, 2.0, -3.0]), lambda m: m.tensor([1e-5, 1.0]),
    lambda m: m.tensor([1e9, 1.0]), lambda m: m.tensor([float("nan"), float("inf"), 1.5]),
    lambda m: m.tensor([float("nan"), float("-inf"), 1.0]), lambda m: m.tensor(2.5), lambda m: m.tensor(3),
    lambda m: m.tensor([0.1, 100.0]), lambda m: m.tensor([0.1, 1001.0]), lambda m: m.arange(12.0).reshape(3, 4) / 7,
    lambda m: m.tensor([[1.5, 20.25], [3.0, 4.0]], requires_grad=True), lambda m: m.tensor([1, 2], dtype=m.int32),
    lambda m: m.tensor([], dtype=m.float64), lambda m: m.zeros(2, 0), lambda m: m.zeros(0, dtype=m.int64),
    lambda m: m.tensor([True, False]), lambda m: m.tensor([1.5], dtype=m.bfloat16),
    lambda m: m.tensor([1.5, -2.0], dtype=m.float16), lambda m: m.tensor([1e-10, 0.0]), lambda m: m.tensor([0.0, 0.0]),
    lambda m: m.tensor([123456.7]), lambda m: m.arange(30.0) / 3, lambda m: m.tensor([-0.0]),
    lambda m: m.arange(2000.0) / 7, lambda m: m.arange(3000).reshape(30, 100), lambda m: m.arange(24.0).reshape(2, 3, 4),
    lambda m: m.tensor([[True], [False]]), lambda m: m.tensor(float("nan")), lambda m: m.tensor([-5, 100, 7]),
    lambda m: m.arange(60.0).reshape(3, 20) * 1.5, lambda m: (m.arange(1e4).reshape(100, 100) - 5000) / 3,
]


@pytest.mark.parametrize("i", range(len(REPRS)))
def test_repr_matches_torch(i: int) -> None:
    assert repr(REPRS[i](dt)) == repr(REPRS[i](torch)).replace("torch.", "dtorch.")


def test_repr_grad_fn() -> None:
    x = dt.ones(2, requires_grad=True)
    assert repr(x * 2) == "tensor([2., 2.], grad_fn=<MulBackward>)"


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_metadata(layout: str, dtype: str) -> None:
    d, t = pair(sample((3, 4), dtype, np.random.default_rng(0)), dtype, layout)
    assert d.shape == t.shape and d.size() == t.size() and d.size(-1) == t.size(-1) and d.size(0) == t.size(0)
    assert d.dim() == t.dim() == d.ndim and d.numel() == t.numel() == dt.numel(d)
    assert d.element_size() == t.element_size()
    assert d.is_contiguous() == t.is_contiguous()
    assert d.is_floating_point() == t.is_floating_point() == dt.is_floating_point(d)
    assert d.stride() == t.stride() and d.stride(1) == t.stride(1)
    assert d.dtype is ddtype(dtype) and d.device.type == "cpu" and not d.is_cuda
    assert len(d) == len(t) and [x.shape for x in d] == [x.shape for x in t]
    assert dt.is_tensor(d) and not dt.is_tensor(np.zeros(2))


def test_size_object() -> None:
    s = dt.zeros(2, 3, 4).shape
    assert isinstance(s, tuple) and s == (2, 3, 4) and s.numel() == 24
    assert isinstance(s[1:], dt.Size) and s[1:] == (3, 4) and s[-1] == 4
    assert repr(s[:1]) == "dtorch.Size([2])" and isinstance(s + (5,), dt.Size)


def test_legacy_constructor() -> None:
    for args in [([1, 2],), ([[1.5]],), (), (np.array([1, 2], dtype=np.int64),)]:
        assert_close(dt.Tensor(*args), torch.Tensor(*args))
    for size in [(2, 3), (0,)]:  # sized: uninitialized in torch, zeros here
        assert_close(dt.Tensor(*size), torch.zeros(*size))
    assert dt.Tensor(dt.Size([2, 2])).shape == (2, 2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_type_names_and_conversions(dtype: str) -> None:
    d, t = pair(np.array([0.0, 1.0, 2.0]), dtype)
    assert d.type() == t.type().replace("torch.", "dtorch.")
    for name in ("float", "double", "half", "bfloat16", "long", "int", "short", "char", "byte", "bool"):
        assert_close(getattr(d, name)(), getattr(t, name)())
    assert_close(d.type(dt.float64), t.type(torch.float64))
    assert_close(d.to(dt.int32), t.to(torch.int32))
    assert d.to(d.dtype) is d and d.to(d.dtype, copy=True) is not d
    assert_close(d.to("cpu", dt.float16), t.to("cpu", torch.float16))
    assert_close(d.to(dtype=dt.float64), t.to(dtype=torch.float64))
    assert_close(d.type_as(dt.zeros(1, dtype=dt.int8)), t.type_as(torch.zeros(1, dtype=torch.int8)))
    assert_close(d.to(dt.zeros(1, dtype=dt.float16)), t.to(torch.zeros(1, dtype=torch.float16)))


def test_scalar_protocols() -> None:
    assert dt.tensor(2.5).item() == 2.5 and isinstance(dt.tensor(True).item(), bool)
    assert float(dt.tensor([3.5])) == 3.5 and int(dt.tensor([[7]])) == 7
    assert list(range(10))[dt.tensor(3)] == 3
    with pytest.raises(TypeError):
        list(range(10))[dt.tensor(3.0)]
    assert bool(dt.tensor([1])) and not bool(dt.tensor(0.0))
    assert dt.tensor([1.5], dtype=dt.bfloat16).item() == 1.5
    assert np.asarray(dt.tensor([1, 2])).tolist() == [1, 2]
    assert np.asarray(dt.tensor([1, 2]), dtype=np.float32).dtype == np.float32
    assert hash(dt.ones(1)) != hash(dt.ones(1))


@pytest.mark.parametrize("dtype", DTYPES)
def test_new_methods(dtype: str) -> None:
    d, t = dt.zeros(2, dtype=ddtype(dtype)), torch.zeros(2, dtype=tdtype(dtype))
    assert_close(d.new_zeros(3, 2), t.new_zeros(3, 2))
    assert_close(d.new_ones((2,)), t.new_ones((2,)))
    assert_close(d.new_full((2,), 1), t.new_full((2,), 1))
    assert_close(d.new_tensor([1, 0]), t.new_tensor([1, 0]))
    assert d.new_empty(4).shape == (4,) and d.new_empty(4).dtype is d.dtype
    assert d.new_zeros(2, dtype=dt.float64).dtype is dt.float64
