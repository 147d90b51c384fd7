"""Indexing and slicing against PyTorch: ints, slices with steps, None, Ellipsis, negative indices, boolean
masks, integer arrays (repeated indices accumulate gradients), combinations, `__setitem__`, gather/index_select."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from tensor_oracle import assert_close, pair, same_outcome, sample

import dtorch as dt


def _same_outcome(fd: Callable[[], Any], ft: Callable[[], Any], **tol: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation warnings for uint8 masks and list indices
        same_outcome(fd, ft, **tol)


def _key(k: object, mod: object) -> object:
    """Translate an index spec into the module's own tensors (`("T", data, dtype)` marks a tensor index)."""
    if isinstance(k, tuple) and k and k[0] == "T":
        return mod.tensor(k[1], dtype=getattr(mod, k[2]))  # type: ignore[attr-defined]
    if isinstance(k, tuple):
        return tuple(_key(x, mod) for x in k)
    return k


KEYS = [
    1, -1, 3, -4, 0, (1, 2), (-1, -2), (slice(None), 1), slice(1, None), slice(None, None, 2), slice(-2, None),
    (slice(None, None, 2), slice(1, None, 3)), slice(5, 10), slice(2, 1), None, (None, 1), Ellipsis, (Ellipsis, 1),
    (1, Ellipsis), (None, Ellipsis, None), (Ellipsis, None, slice(None, 2)), (0, 0, 0), 1.5, True, False,
    ("T", [0, 2], "int64"), ("T", [2, 0, 2, 2], "int64"), ("T", [-1, 0], "int32"), ("T", [[0, 1], [2, 2]], "int64"),
    ("T", [True, False, True], "bool"), ("T", [True, False], "bool"), ("T", [0.0], "float32"), ("T", 1, "int64"),
    ("T", True, "bool"), ("T", [3], "int64"), [0, 2], [0, 0, 1], [True, False, True],
    (slice(None), ("T", [3, 0, 3], "int64")), (("T", [0, 2], "int64"), ("T", [1, 3], "int64")),
    (("T", [0, 2], "int64"), slice(1, 3)), (slice(1, None), None, ("T", [1, 0, 1], "int64")),
    (("T", [0, 1], "int64"), None, ("T", [1, 2], "int64")), (Ellipsis, ("T", [0, 0], "int64")),
    (("T", [[True, False, True, False], [False] * 4, [True] * 4], "bool"),),
    (1, ("T", [True, False, True, True], "bool")), (("T", [2, 1], "int64"), 3),
    (slice(None, None, 2), ("T", [[0], [1]], "int64")),
]


@pytest.mark.parametrize("key", KEYS, ids=repr)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
def test_getitem(key: object, layout: str) -> None:
    d, t = pair(sample((3, 4), "float32", np.random.default_rng(0)), "float32", layout)
    _same_outcome(lambda: d[_key(key, dt)], lambda: t[_key(key, torch)])


@pytest.mark.parametrize("key", [0, (Ellipsis,), (None,), ("T", True, "bool"), slice(None), ("T", 0, "int64")],
                         ids=repr)
def test_getitem_zero_dim_and_empty(key: object) -> None:
    for shape in [(), (0,), (2, 0)]:
        d, t = pair(sample(shape, "float32", np.random.default_rng(1)), "float32")
        _same_outcome(lambda: d[_key(key, dt)], lambda: t[_key(key, torch)])  # noqa: B023


def test_getitem_3d_combinations() -> None:
    d, t = pair(sample((2, 3, 4), "int64", np.random.default_rng(2)), "int64")
    for key in [(0, slice(None), ("T", [1, 1], "int64")), (("T", [1, 0], "int64"), Ellipsis, ("T", [0, 3], "int64")),
                (slice(None), ("T", [[0, 2]], "int64"), slice(None, None, 2)), (Ellipsis, None, 1, None),
                (("T", [[True, False, True], [False, True, True]], "bool"), slice(1, 3)),
                (-1, -1, -1), (None, None, 0, slice(None, None, 3))]:
        _same_outcome(lambda: d[_key(key, dt)], lambda: t[_key(key, torch)])  # noqa: B023


def test_basic_indexing_returns_views() -> None:
    x = dt.zeros(3, 4)
    x[1][2] = 5.0
    assert x[1, 2].item() == 5.0
    v = x[:, 1::2]
    v.fill_(1.0)
    assert x.sum().item() == 5.0 + 6.0
    a = x[dt.tensor([0, 1])]  # advanced indexing copies
    a.fill_(-1.0)
    assert x.min().item() == 0.0


def test_index_errors() -> None:
    x = dt.zeros(3, 4)
    with pytest.raises(IndexError, match="out of bounds"):
        x[3]
    with pytest.raises(IndexError, match="long, int, byte or bool"):
        x[dt.tensor([1.0])]
    with pytest.raises(IndexError):
        x[1.5]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(IndexError):
        x[dt.tensor([True, False])]


def test_uint8_index_is_a_mask() -> None:
    d = dt.arange(4.0)
    t = torch.arange(4.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(d[dt.tensor([1, 0, 1, 1], dtype=dt.uint8)], t[torch.tensor([1, 0, 1, 1], dtype=torch.uint8)])


def test_repeated_indices_accumulate_gradients() -> None:
    for key in ([0, 2, 0, 0], (("T", [0, 0, 1], "int64"), ("T", [1, 1, 1], "int64")), (slice(None), [3, 3])):
        d, t = pair(sample((3, 4), "float64", np.random.default_rng(3)), "float64", requires_grad=True)
        yd, yt = d[_key(key, dt)], t[_key(key, torch)]
        w = np.random.default_rng(4).uniform(size=tuple(yt.shape))
        (yd * dt.tensor(w)).sum().backward()
        (yt * torch.tensor(w)).sum().backward()
        assert_close(d.grad, t.grad)


@pytest.mark.parametrize("key", [k for k in KEYS if k not in (1.5, 3, -4, ("T", [True, False], "bool"),
                                                             ("T", [0.0], "float32"), ("T", [3], "int64"), (0, 0, 0),
                                                             slice(5, 10), slice(2, 1), False)], ids=repr)
def test_getitem_gradients(key: object) -> None:
    d, t = pair(sample((3, 4), "float64", np.random.default_rng(5)), "float64", "transposed", requires_grad=True)
    yd, yt = d[_key(key, dt)], t[_key(key, torch)]
    if yt.numel() == 0:
        return
    w = np.random.default_rng(6).uniform(size=tuple(yt.shape))
    (yd * dt.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    assert_close(d.grad, t.grad)


SET_KEYS = [1, (slice(None), 1), (1, 2), slice(None, None, 2), (Ellipsis, -1), ("T", [0, 2], "int64"),
            ("T", [True, False, True], "bool"), (("T", [0, 2], "int64"), ("T", [1, 3], "int64")), (None, 0),
            (slice(1, None), ("T", [0, 3], "int64")), ("T", [[True, False, True, False]] * 3, "bool")]
VALUES = [7.0, 2, True, ("T", 3.0, "float32"), ("T", [1.0, 2.0, 3.0, 4.0], "float32"), ("T", [5, 6, 7, 8], "int64"),
          ("T", [[9.0]], "float64")]


@pytest.mark.parametrize("key", SET_KEYS, ids=repr)
@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_setitem(key: object, value: object) -> None:
    d, t = pair(sample((3, 4), "float32", np.random.default_rng(7)), "float32")

    def fd() -> dt.Tensor:
        d[_key(key, dt)] = _key(value, dt)
        return d

    def ft() -> torch.Tensor:
        t[_key(key, torch)] = _key(value, torch)
        return t

    _same_outcome(fd, ft)


def test_setitem_dtypes_and_broadcast() -> None:
    for dtype in ("int64", "uint8", "bool", "float16", "bfloat16"):
        d, t = pair(sample((3, 4), dtype, np.random.default_rng(8)), dtype)
        d[1] = 1
        t[1] = 1
        d[:, 0] = dt.tensor([0, 1, 0])
        t[:, 0] = torch.tensor([0, 1, 0])
        assert_close(d, t)
    d, t = pair(np.zeros((2, 3)), "float32")
    with pytest.raises(RuntimeError):
        d[0] = dt.ones(4)
    with pytest.raises(RuntimeError):
        t[0] = torch.ones(4)


def test_setitem_modifies_views_and_base() -> None:
    x = dt.zeros(4, 4)
    v = x[1:3]
    v[:, 0] = 2.0
    assert x[:, 0].tolist() == [0.0, 2.0, 2.0, 0.0]
    x.T[0, 3] = 9.0
    assert x[3, 0].item() == 9.0


def test_setitem_gradients() -> None:
    for key in [(slice(None), 1), ("T", [2, 0], "int64"), ("T", [True, False, True], "bool")]:
        xd, xt = pair(sample((3, 4), "float64", np.random.default_rng(9)), "float64", requires_grad=True)
        shape = tuple(torch.zeros(3, 4)[_key(key, torch)].shape)
        vd, vt = pair(sample(shape[-1:], "float64", np.random.default_rng(10)), "float64", requires_grad=True)
        yd, yt = xd * 2, xt * 2
        yd[_key(key, dt)] = vd
        yt[_key(key, torch)] = vt
        w = np.arange(12.0).reshape(3, 4)
        (yd * dt.tensor(w)).sum().backward()
        (yt * torch.tensor(w)).sum().backward()
        assert_close(xd.grad, xt.grad)
        assert_close(vd.grad, vt.grad)


def test_setitem_on_leaf_requiring_grad_raises() -> None:
    x = dt.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x[0] = 1.0
    with dt.no_grad():
        x[0] = 1.0
    assert x.tolist() == [1.0, 0.0, 0.0] and x.is_leaf and x.requires_grad


def test_value_requiring_grad_makes_target_require_grad() -> None:
    x = dt.zeros(3)
    v = dt.tensor(2.0, requires_grad=True)
    x[1] = v
    assert x.requires_grad and not x.is_leaf
    (x * dt.tensor([1.0, 3.0, 5.0])).sum().backward()
    assert v.grad.item() == 3.0


def test_gather_index_select_take() -> None:
    d, t = pair(sample((3, 4), "float64", np.random.default_rng(11)), "float64", requires_grad=True)
    idx = [[0, 3], [1, 1], [2, 0]]
    assert_close(d.gather(1, dt.tensor(idx)), t.gather(1, torch.tensor(idx)))
    assert_close(dt.index_select(d, 0, dt.tensor([2, 2, 0])), torch.index_select(t, 0, torch.tensor([2, 2, 0])))
    assert_close(d.index_select(1, dt.tensor([3, 1], dtype=dt.int32)), t.index_select(1, torch.tensor([3, 1],
                                                                                                       dtype=torch.int32)))
    with pytest.raises(RuntimeError):
        d.gather(1, dt.tensor([[0.0]]))
    with pytest.raises(RuntimeError):
        t.gather(1, torch.tensor([[0.0]]))
    (d.gather(0, dt.tensor([[0, 0, 0, 0], [0, 1, 2, 0]])) * 2).sum().backward()
    (t.gather(0, torch.tensor([[0, 0, 0, 0], [0, 1, 2, 0]])) * 2).sum().backward()
    assert_close(d.grad, t.grad)


def test_nonzero_masked_fill() -> None:
    x = [[0, 1, 0], [2, 0, 3]]
    assert_close(dt.nonzero(dt.tensor(x)), torch.nonzero(torch.tensor(x)))
    assert_close(dt.tensor(x).nonzero(as_tuple=True), torch.tensor(x).nonzero(as_tuple=True))
    assert_close(dt.nonzero(dt.tensor(5)), torch.nonzero(torch.tensor(5)))
    m = [[True, False, True], [False, False, True]]
    assert_close(dt.tensor(x).masked_fill(dt.tensor(m), -1), torch.tensor(x).masked_fill(torch.tensor(m), -1))
    assert_close(dt.tensor(x).float().masked_fill(dt.tensor(m[0]), 2.5),
                 torch.tensor(x).float().masked_fill(torch.tensor(m[0]), 2.5))
    with pytest.raises(RuntimeError):
        dt.tensor(x).masked_fill(dt.tensor([[1, 0, 1]]), 0)
