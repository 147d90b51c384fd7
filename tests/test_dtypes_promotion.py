"""dtypes and PyTorch's type promotion: promote_types, result_type and the dtype ops actually produce."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from tensor_oracle import DTYPES, assert_close, ddtype, pair, same_outcome, tdtype

import dtorch as dt

PAIRS = list(itertools.product(DTYPES, DTYPES))
SCALARS = [True, 2, -3, 2.5]


def _vals(dtype: str, n: int = 3) -> np.ndarray:
    if dtype == "bool":
        return np.array([True, False, True][:n])
    return np.array([1, 2, 3][:n])


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_promote_types(a: str, b: str) -> None:
    assert dt.promote_types(ddtype(a), ddtype(b)).name == str(torch.promote_types(tdtype(a), tdtype(b)))[6:]


@pytest.mark.parametrize(("a", "b"), PAIRS)
@pytest.mark.parametrize("dims", ["nd-nd", "nd-0d", "0d-nd", "0d-0d"])
def test_result_type_tensors(a: str, b: str, dims: str) -> None:
    da, ta = pair(_vals(a) if dims[:2] == "nd" else _vals(a)[0], a)
    db, tb = pair(_vals(b) if dims[3:5] == "nd" else _vals(b)[0], b)
    assert dt.result_type(da, db).name == str(torch.result_type(ta, tb))[6:]


@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("s", SCALARS, ids=repr)
@pytest.mark.parametrize("zero_dim", [False, True])
def test_result_type_scalar(a: str, s: object, zero_dim: bool) -> None:
    da, ta = pair(_vals(a)[0] if zero_dim else _vals(a), a)
    assert dt.result_type(da, s).name == str(torch.result_type(ta, s))[6:]
    assert dt.result_type(s, da).name == str(torch.result_type(s, ta))[6:]




OPS = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y,
    "div": lambda x, y: x / y,
    "floordiv": lambda x, y: x // y,
    "pow": lambda x, y: x ** y,
    "lt": lambda x, y: x < y,
    "eq": lambda x, y: x == y,
    "maximum": lambda x, y: (dt if isinstance(x, dt.Tensor) else torch).maximum(x, y),
}


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_binary_op_dtype_tensor_tensor(op: str, a: str, b: str) -> None:
    da, ta = pair(np.array([1, 2, 3]) if a != "bool" else _vals(a), a)
    db, tb = pair(np.array([2, 1, 1]) if b != "bool" else _vals(b), b)
    f = OPS[op]
    same_outcome(lambda: f(da, db), lambda: f(ta, tb))
    # zero-dim second operand: participates only when of a higher category
    same_outcome(lambda: f(da, db[0]), lambda: f(ta, tb[0]))


@pytest.mark.parametrize("op", [o for o in OPS if o != "maximum"])
@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("s", SCALARS, ids=repr)
def test_binary_op_dtype_tensor_scalar(op: str, a: str, s: object) -> None:
    da, ta = pair(np.array([1, 2, 3]) if a != "bool" else _vals(a), a)
    f = OPS[op]
    same_outcome(lambda: f(da, s), lambda: f(ta, s))
    same_outcome(lambda: f(s, da), lambda: f(s, ta))


@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("b", DTYPES)
def test_where_promotes(a: str, b: str) -> None:
    cond = np.array([True, False, True])
    da, ta = pair(_vals(a), a)
    db, tb = pair(_vals(b), b)
    same_outcome(lambda: dt.where(dt.tensor(cond), da, db), lambda: torch.where(torch.tensor(cond), ta, tb))


@pytest.mark.parametrize("a", DTYPES)
def test_cat_promotes(a: str) -> None:
    for b in DTYPES:
        da, ta = pair(_vals(a), a)
        db, tb = pair(_vals(b), b)
        same_outcome(lambda: dt.cat([da, db]), lambda: torch.cat([ta, tb]))  # noqa: B023


def test_default_dtype_roundtrip() -> None:
    assert dt.get_default_dtype() is dt.float32
    try:
        dt.set_default_dtype(dt.float64)
        assert dt.tensor([1.5]).dtype is dt.float64
        assert dt.zeros(2).dtype is dt.float64
        assert dt.result_type(dt.tensor([1, 2]), 1.5) is dt.float64
    finally:
        dt.set_default_dtype(dt.float32)
    assert dt.tensor([1.5]).dtype is dt.float32


def test_dtype_attributes() -> None:
    for name in DTYPES:
        d, t = ddtype(name), tdtype(name)
        assert d.is_floating_point == t.is_floating_point
        assert d.itemsize == t.itemsize
        assert d.is_signed == t.is_signed
        assert repr(d) == f"dtorch.{name}"
    assert dt.float is dt.float32 and dt.double is dt.float64 and dt.half is dt.float16
    assert dt.long is dt.int64 and dt.int is dt.int32 and dt.bool is dt.bool_


@pytest.mark.parametrize("name", DTYPES)
def test_to_each_dtype(name: str) -> None:
    d, t = pair(np.array([[0.0, -1.5, 2.5], [3.25, 0.5, -0.0]]), "float64")
    if name == "uint8":
        d, t = d.abs(), t.abs()
    assert_close(d.to(ddtype(name)), t.to(tdtype(name)))
    assert_close(d.to(name), t.to(tdtype(name)))
    assert d.to(ddtype(name)).dtype is ddtype(name)


def test_unknown_dtype_string() -> None:
    with pytest.raises(TypeError, match="unknown dtype 'float33'"):
        dt.zeros(2, dtype="float33")
    with pytest.raises(TypeError, match="float33"):
        dt.tensor([1.0]).type("float33")
    with pytest.raises(RuntimeError, match="float33"):  # .to() reads an unknown string as a device, as torch does
        dt.tensor([1.0]).to("float33")
