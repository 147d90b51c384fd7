"""embedding / one_hot and the Embedding layer against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import dtorch as dt
import dtorch.nn.functional as F
from dtorch import nn
from dtorch.autograd import gradcheck


@pytest.mark.parametrize("kw", [{}, {"padding_idx": 2}, {"padding_idx": -1, "scale_grad_by_freq": True},
                                {"scale_grad_by_freq": True}])
@pytest.mark.parametrize("idx_shape", [(6,), (2, 3), (2, 0), (3, 1, 4)])
@pytest.mark.parametrize("idx_dtype", [np.int64, np.int32])
def test_embedding_matches_torch(kw: dict, idx_shape: tuple, idx_dtype: type) -> None:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((10, 4)).astype(np.float32)
    idx = rng.integers(0, 10, idx_shape).astype(idx_dtype)
    idx.reshape(-1)[:2] = 2  # repeated rows, including the padding row
    wd, wt = dt.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    yd = F.embedding(dt.tensor(idx), wd, **kw)
    yt = TF.embedding(torch.tensor(idx), wt, **kw)
    assert yd.shape == tuple(yt.shape)
    np.testing.assert_array_equal(yd.detach().numpy(), yt.detach().numpy())
    go = rng.standard_normal(tuple(yt.shape)).astype(np.float32)
    yd.backward(dt.tensor(go))
    yt.backward(torch.tensor(go))
    np.testing.assert_allclose(wd.grad.numpy(), wt.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_embedding_non_contiguous_indices_and_weight() -> None:
    rng = np.random.default_rng(1)
    w = rng.standard_normal((4, 9)).astype(np.float32)
    idx = rng.integers(0, 9, (5, 6))
    wd, wt = dt.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    yd = F.embedding(dt.tensor(idx)[:, ::2], wd.t())
    yt = TF.embedding(torch.tensor(idx)[:, ::2], wt.t())
    np.testing.assert_array_equal(yd.detach().numpy(), yt.detach().numpy())
    yd.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(wd.grad.numpy(), wt.grad.numpy())


@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_embedding_max_norm_renormalizes_in_place(norm_type: float) -> None:
    rng = np.random.default_rng(2)
    w = (rng.standard_normal((8, 5)) * 2).astype(np.float32)
    idx = np.array([[1, 3, 3], [7, 0, 1]])
    wd, wt = dt.tensor(w.copy(), requires_grad=True), torch.tensor(w.copy(), requires_grad=True)
    yd = F.embedding(dt.tensor(idx), wd, max_norm=1.5, norm_type=norm_type)
    yt = TF.embedding(torch.tensor(idx), wt, max_norm=1.5, norm_type=norm_type)
    np.testing.assert_allclose(yd.detach().numpy(), yt.detach().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(wd.detach().numpy(), wt.detach().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(wd.detach().numpy()[[2, 4, 5, 6]], w[[2, 4, 5, 6]])  # untouched rows


def test_embedding_half_and_gradcheck() -> None:
    rng = np.random.default_rng(3)
    w = rng.standard_normal((6, 3)).astype(np.float16)
    idx = np.array([1, 1, 5, 0])
    wd = dt.tensor(w, requires_grad=True)
    y = F.embedding(dt.tensor(idx), wd, padding_idx=0)
    assert y.dtype is dt.float16
    y.float().sum().backward()
    assert wd.grad.dtype is dt.float16
    np.testing.assert_array_equal(wd.grad.float().numpy()[:, 0], [0, 2, 0, 0, 0, 1])
    w64 = dt.tensor(rng.standard_normal((5, 2)), dtype=dt.float64, requires_grad=True)
    assert gradcheck(lambda a: F.embedding(dt.tensor(np.array([[0, 4], [4, 2]])), a), (w64,))


def test_embedding_module() -> None:
    dt.manual_seed(0)
    m = nn.Embedding(10, 3, padding_idx=1)
    assert m.weight.shape == (10, 3) and m.weight.requires_grad
    np.testing.assert_array_equal(m.weight.detach().numpy()[1], 0)
    assert abs(float(m.weight.detach().numpy().std()) - 1) < 0.5  # N(0, 1) init
    y = m(dt.tensor([[1, 2], [3, 1]]))
    y.sum().backward()
    np.testing.assert_array_equal(m.weight.grad.numpy()[1], 0)
    np.testing.assert_array_equal(m.weight.grad.numpy()[2], 1)
    for a, b in ((nn.Embedding(5, 3), torch.nn.Embedding(5, 3)),
                 (nn.Embedding(5, 3, padding_idx=-1, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True),
                  torch.nn.Embedding(5, 3, padding_idx=-1, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True))):
        assert repr(a) == repr(b)
        assert a.padding_idx == b.padding_idx
    assert nn.Embedding(4, 2, dtype=dt.float64).weight.dtype is dt.float64


def test_embedding_from_pretrained() -> None:
    w = dt.tensor(np.arange(12.0).reshape(4, 3), dtype=dt.float32)
    e = nn.Embedding.from_pretrained(w, padding_idx=1)
    assert not e.weight.requires_grad
    np.testing.assert_array_equal(e.weight.detach().numpy()[1], [3, 4, 5])  # like torch: not zeroed
    np.testing.assert_array_equal(e(dt.tensor([3])).numpy(), [[9, 10, 11]])
    e2 = nn.Embedding.from_pretrained(w, freeze=False)
    assert e2.weight.requires_grad
    e2(dt.tensor([0, 0])).sum().backward()
    np.testing.assert_array_equal(e2.weight.grad.numpy()[0], [2, 2, 2])


@pytest.mark.parametrize("num_classes", [-1, 6])
def test_one_hot_matches_torch(num_classes: int) -> None:
    idx = np.array([[1, 2], [0, 4]])
    yd, yt = F.one_hot(dt.tensor(idx), num_classes), TF.one_hot(torch.tensor(idx), num_classes)
    assert yd.dtype is dt.int64
    np.testing.assert_array_equal(yd.numpy(), yt.numpy())
    assert F.one_hot(dt.tensor(np.zeros(0, np.int64)), 3).shape == (0, 3)


def test_embedding_errors_like_torch() -> None:
    w, wt = dt.randn(5, 3), torch.randn(5, 3)
    cases = [
        (RuntimeError, lambda: F.embedding(dt.tensor([1.0, 2.0]), w),
         lambda: TF.embedding(torch.tensor([1.0, 2.0]), wt), "'indices' to have one of the following scalar types"),
        (RuntimeError, lambda: F.embedding(dt.tensor([1, 2], dtype=dt.uint8), w),
         lambda: TF.embedding(torch.tensor([1, 2], dtype=torch.uint8), wt), "Long, Int"),
        (IndexError, lambda: F.embedding(dt.tensor([1, 5]), w), lambda: TF.embedding(torch.tensor([1, 5]), wt),
         "index out of range in self"),
        (IndexError, lambda: F.embedding(dt.tensor([1, -1]), w), lambda: TF.embedding(torch.tensor([1, -1]), wt),
         "index out of range"),
        (AssertionError, lambda: F.embedding(dt.tensor([1]), w, padding_idx=5),
         lambda: TF.embedding(torch.tensor([1]), wt, padding_idx=5), "Padding_idx must be within num_embeddings"),
        (RuntimeError, lambda: F.embedding(dt.tensor([1]), dt.randn(5)),
         lambda: TF.embedding(torch.tensor([1]), torch.randn(5)), "'weight' must be 2-D"),
        (RuntimeError, lambda: F.one_hot(dt.tensor([1, 2], dtype=dt.int32)),
         lambda: TF.one_hot(torch.tensor([1, 2], dtype=torch.int32)), "LongTensor"),
        (RuntimeError, lambda: F.one_hot(dt.tensor([1, -2])), lambda: TF.one_hot(torch.tensor([1, -2])),
         "non-negative"),
        (RuntimeError, lambda: F.one_hot(dt.tensor([1, 2]), 2), lambda: TF.one_hot(torch.tensor([1, 2]), 2),
         "smaller than num_classes"),
        (RuntimeError, lambda: F.one_hot(dt.tensor(np.zeros(0, np.int64))),
         lambda: TF.one_hot(torch.tensor([], dtype=torch.long)), "empty tensor"),
        (AssertionError, lambda: nn.Embedding(5, 3, padding_idx=5), lambda: torch.nn.Embedding(5, 3, padding_idx=5),
         "Padding_idx"),
        (AssertionError, lambda: nn.Embedding(5, 3, _weight=dt.randn(4, 3)),
         lambda: torch.nn.Embedding(5, 3, _weight=torch.randn(4, 3)), "Shape of weight"),
        (AssertionError, lambda: nn.Embedding.from_pretrained(dt.randn(4)),
         lambda: torch.nn.Embedding.from_pretrained(torch.randn(4)), "2-dimensional"),
    ]
    for exc, fd, ft, match in cases:
        with pytest.raises(exc, match=match):
            fd()
        with pytest.raises(exc):
            ft()
    with pytest.raises(NotImplementedError, match="sparse"):
        nn.Embedding(5, 3, sparse=True)
    with pytest.raises(TypeError, match="must be Tensor"):
        F.embedding([1, 2], w)
