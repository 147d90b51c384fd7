"""Reductions against PyTorch: sum, mean, max/min (values and indices), argmax/argmin, var/std, and friends,
over dims/keepdim/correction, size-0 dims, 0-d tensors, non-contiguous inputs and every dtype."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensor_oracle import DTYPES, FLOATS, assert_close, pair, same_outcome, sample, torch_outcome

import dtorch as dt

SHAPES = [(), (5,), (3, 4), (2, 3, 4), (0,), (3, 0), (2, 0, 3), (1, 1)]
DIMS = [None, 0, -1, 1, (0, 1), (-1, 0), (0, 2), 5]


def _args(shape: tuple[int, ...], dim: object, keepdim: bool) -> tuple[tuple, dict] | None:  # type: ignore[type-arg]
    return ((), {}) if dim is None and not keepdim else ((dim,), {"keepdim": keepdim})


@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin", "prod", "logsumexp", "var", "std"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dim", DIMS, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_reduce_dims(op: str, shape: tuple[int, ...], dim: object, keepdim: bool) -> None:
    if op == "logsumexp" and dim is None:
        return  # torch requires dim
    if op == "prod" and isinstance(dim, tuple):
        return  # prod takes a single dim
    if op in ("amax", "amin") and dim == (-1, 0) and 0 in shape:
        return  # torch reports the empty dim before the repeated one; both are errors
    rng = np.random.default_rng(0)
    d, t = pair(sample(shape, "float64", rng), "float64")
    args, kw = ((), {}) if dim is None and not keepdim else ((dim,), {"keepdim": keepdim})
    if dim is None and keepdim and op in ("sum", "mean", "var", "std", "amax", "amin"):
        args = (None,) if op not in ("amax", "amin") else ((),)
    same_outcome(lambda: getattr(dt, op)(d, *args, **kw), lambda: getattr(torch, op)(t, *args, **kw))
    same_outcome(lambda: getattr(d, op)(*args, **kw), lambda: getattr(t, op)(*args, **kw))


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "amax", "amin", "argmax", "argmin", "prod", "var",
                                "std", "all", "any", "count_nonzero"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_reduce_dtypes_full(op: str, dtype: str) -> None:
    rng = np.random.default_rng(1)
    d, t = pair(sample((3, 4), dtype, rng), dtype)
    same_outcome(lambda: getattr(dt, op)(d), lambda: getattr(torch, op)(t))
    same_outcome(lambda: getattr(dt, op)(d, 1), lambda: getattr(torch, op)(t, 1))


@pytest.mark.parametrize("op", ["sum", "mean"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("out", ["float64", "float32", "int64", "float16"])
def test_reduce_with_dtype_arg(op: str, dtype: str, out: str) -> None:
    rng = np.random.default_rng(2)
    d, t = pair(sample((3, 4), dtype, rng), dtype)
    same_outcome(lambda: getattr(dt, op)(d, dtype=getattr(dt, out)), lambda: getattr(torch, op)(t, dtype=getattr(torch, out)))
    same_outcome(lambda: getattr(dt, op)(d, 0, dtype=getattr(dt, out)),
                  lambda: getattr(torch, op)(t, 0, dtype=getattr(torch, out)))


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4), (3, 0), (1,), ()], ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "int64", "float16", "bool"])
def test_max_min_with_dim_values_and_indices(op: str, shape: tuple[int, ...], keepdim: bool, dtype: str) -> None:
    rng = np.random.default_rng(3)
    arr = sample(shape, dtype, rng)
    if dtype != "bool" and arr.size:
        arr = np.round(arr)  # ties: the first index wins, as in torch
    d, t = pair(arr, dtype)
    for dim in range(-max(len(shape), 1), max(len(shape), 1)):
        def fd(dim: int = dim) -> object:
            return getattr(dt, op)(d, dim, keepdim)

        def ft(dim: int = dim) -> object:
            return getattr(torch, op)(t, dim, keepdim)

        same_outcome(fd, ft)
        res_t, err = torch_outcome(ft)
        if err is not None:
            continue
        res_d = fd()
        vals, idx = res_d
        assert_close(res_d.values, res_t.values)
        assert_close(res_d.indices, res_t.indices)
        assert vals is res_d.values and idx is res_d.indices
        same_outcome(lambda dim=dim: getattr(dt, "arg" + op)(d, dim, keepdim),
                      lambda dim=dim: getattr(torch, "arg" + op)(t, dim, keepdim))


def test_max_min_nan_and_ties() -> None:
    x = [[1.0, float("nan"), 3.0], [2.0, 2.0, 0.0]]
    for op in ("max", "min", "argmax", "argmin", "amax", "amin"):
        assert_close(getattr(dt, op)(dt.tensor(x)), getattr(torch, op)(torch.tensor(x)))
        assert_close(getattr(dt, op)(dt.tensor(x), 1), getattr(torch, op)(torch.tensor(x), 1))
    assert_close(dt.tensor([3, 1, 3]).argmax(), torch.tensor([3, 1, 3]).argmax())
    assert_close(dt.tensor([[1, 5], [5, 1]]).argmax(keepdim=True), torch.tensor([[1, 5], [5, 1]]).argmax(keepdim=True))


def test_max_of_two_tensors_and_errors() -> None:
    a, b = [1.0, 5.0, -2.0], [3.0, 0.0, -2.0]
    assert_close(dt.max(dt.tensor(a), dt.tensor(b)), torch.max(torch.tensor(a), torch.tensor(b)))
    assert_close(dt.min(dt.tensor(a), dt.tensor(b)), torch.min(torch.tensor(a), torch.tensor(b)))
    for op in ("max", "min", "argmax", "amax"):
        same_outcome(lambda: getattr(dt, op)(dt.zeros(0)), lambda: getattr(torch, op)(torch.zeros(0)))  # noqa: B023
        same_outcome(lambda: getattr(dt, op)(dt.zeros(2, 0), 1),  # noqa: B023
                      lambda: getattr(torch, op)(torch.zeros(2, 0), 1))  # noqa: B023
    with pytest.raises(IndexError, match="Dimension out of range"):
        dt.zeros(2, 3).sum(2)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        dt.zeros(2, 3).sum((0, 0))
    with pytest.raises(RuntimeError, match="floating point"):
        dt.tensor([1, 2]).mean()


@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4), (1,), (1, 3), ()], ids=str)
@pytest.mark.parametrize("correction", [None, 0, 1, 2, 0.5])
@pytest.mark.parametrize("keepdim", [False, True])
def test_var_std_correction(op: str, shape: tuple[int, ...], correction: float | None, keepdim: bool) -> None:
    rng = np.random.default_rng(4)
    d, t = pair(sample(shape, "float64", rng), "float64")
    kw = {} if correction is None else {"correction": correction}
    for dim in [None, 0, -1, (0, -1)] if shape else [None, 0]:
        same_outcome(lambda: getattr(dt, op)(d, dim, keepdim=keepdim, **kw),  # noqa: B023
                      lambda: getattr(torch, op)(t, dim, keepdim=keepdim, **kw))  # noqa: B023
    same_outcome(lambda: getattr(dt, op)(d, unbiased=False), lambda: getattr(torch, op)(t, unbiased=False))
    same_outcome(lambda: getattr(d, op)(0 if shape else None, True),
                  lambda: getattr(t, op)(0 if shape else None, True))


def test_var_mean_std_mean() -> None:
    rng = np.random.default_rng(5)
    d, t = pair(sample((3, 4), "float64", rng), "float64")
    assert_close(dt.var_mean(d, 1), torch.var_mean(t, 1))
    assert_close(dt.std_mean(d, 0, correction=0, keepdim=True), torch.std_mean(t, 0, correction=0, keepdim=True))


@pytest.mark.parametrize("layout", ["transposed", "strided"])
@pytest.mark.parametrize("op", ["sum", "mean", "max", "argmin", "var", "std", "prod", "cumsum"])
def test_reduce_noncontiguous(layout: str, op: str) -> None:
    rng = np.random.default_rng(6)
    d, t = pair(sample((3, 4, 5), "float32", rng), "float32", layout)
    assert_close(getattr(dt, op)(d, 1), getattr(torch, op)(t, 1))
    if op != "cumsum":
        assert_close(getattr(dt, op)(d), getattr(torch, op)(t))


@pytest.mark.parametrize("dtype", FLOATS)
def test_reduce_low_precision(dtype: str) -> None:
    rng = np.random.default_rng(7)
    d, t = pair(sample((64, 33), dtype, rng), dtype)
    for op in ("sum", "mean", "var", "std", "amax", "logsumexp"):
        assert_close(getattr(dt, op)(d, 1), getattr(torch, op)(t, 1))
    assert_close(d.sum(), t.sum())
    assert_close(d.mean(), t.mean())


def test_cumsum_sort_topk_norm() -> None:
    rng = np.random.default_rng(8)
    for dtype in ("float32", "int64", "bool", "int8"):
        d, t = pair(sample((3, 4), dtype, rng), dtype)
        assert_close(dt.cumsum(d, 1), torch.cumsum(t, 1))
        assert_close(dt.cumsum(d, 0, dtype=dt.float64), torch.cumsum(t, 0, dtype=torch.float64))
    d, t = pair(rng.permutation(12).reshape(3, 4).astype(np.float64), "float64")
    assert_close(dt.sort(d, 1), torch.sort(t, 1))
    assert_close(dt.sort(d, 0, descending=True), torch.sort(t, 0, descending=True))
    assert_close(dt.argsort(d, 1), torch.argsort(t, 1))
    assert_close(dt.topk(d, 2, 1), torch.topk(t, 2, 1))
    assert_close(dt.topk(d, 2, 0, largest=False), torch.topk(t, 2, 0, largest=False))
    for p in ("fro", 1, 2, float("inf"), 3):
        assert_close(dt.norm(d, p), torch.norm(t, p))
        assert_close(dt.norm(d, p, dim=1), torch.norm(t, p, dim=1))


def test_sum_bool_and_int_promote_to_int64() -> None:
    for dtype in ("bool", "uint8", "int8", "int32"):
        d, t = pair(sample((4,), dtype, np.random.default_rng(9)), dtype)
        assert_close(d.sum(), t.sum())
        assert_close(d.sum(0, keepdim=True), t.sum(0, keepdim=True))
        assert_close(d.prod(), t.prod())


def test_all_any_dims() -> None:
    x = [[True, False], [True, True]]
    for op in ("all", "any"):
        assert_close(getattr(dt, op)(dt.tensor(x)), getattr(torch, op)(torch.tensor(x)))
        assert_close(getattr(dt, op)(dt.tensor(x), 1), getattr(torch, op)(torch.tensor(x), 1))
        assert_close(getattr(dt, op)(dt.tensor(x), 0, True), getattr(torch, op)(torch.tensor(x), 0, True))
        assert_close(getattr(dt, op)(dt.tensor([1.0, 0.0])), getattr(torch, op)(torch.tensor([1.0, 0.0])))
        assert_close(getattr(dt, op)(dt.tensor([2, 3], dtype=dt.uint8)),
                     getattr(torch, op)(torch.tensor([2, 3], dtype=torch.uint8)))
