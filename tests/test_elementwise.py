"""Elementwise ops against PyTorch: arithmetic, comparison, unary math, where, clamp, pow, with broadcasting,
size-0 dims, 0-d tensors, non-contiguous views and every dtype; reduced-precision results keep their dtype."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from tensor_oracle import DTYPES, FLOATS, assert_close, pair, same_outcome, sample

import dtorch as dt

SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (3,)), ((2, 3), ()), ((), ()),
          ((0, 3), (1, 3)), ((5,), (1,)), ((2, 0), (2, 1))]
LAYOUTS = ["contiguous", "transposed", "strided"]




BINARY = {
    "add": lambda m, x, y: x + y,
    "sub": lambda m, x, y: x - y,
    "mul": lambda m, x, y: x * y,
    "div": lambda m, x, y: x / y,
    "floordiv": lambda m, x, y: x // y,
    "remainder": lambda m, x, y: x % y,
    "fmod": lambda m, x, y: m.fmod(x, y),
    "pow": lambda m, x, y: x ** y,
    "maximum": lambda m, x, y: m.maximum(x, y),
    "minimum": lambda m, x, y: m.minimum(x, y),
    "add_alpha": lambda m, x, y: m.add(x, y, alpha=2),
    "sub_alpha": lambda m, x, y: m.sub(x, y, alpha=2),
    "div_floor": lambda m, x, y: m.div(x, y, rounding_mode="floor"),
    "div_trunc": lambda m, x, y: m.div(x, y, rounding_mode="trunc"),
    "eq": lambda m, x, y: x == y,
    "ne": lambda m, x, y: x != y,
    "lt": lambda m, x, y: x < y,
    "le": lambda m, x, y: x <= y,
    "gt": lambda m, x, y: x > y,
    "ge": lambda m, x, y: x >= y,
    "logical_and": lambda m, x, y: m.logical_and(x, y),
    "logical_or": lambda m, x, y: m.logical_or(x, y),
    "logical_xor": lambda m, x, y: m.logical_xor(x, y),
}


def _operands(sa: tuple[int, ...], sb: tuple[int, ...], dtype: str, op: str, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    a = sample(sa, dtype, rng)
    b = sample(sb, dtype, rng, positive=op in ("div", "floordiv", "remainder", "fmod", "div_floor", "div_trunc"))
    if op == "pow" and dtype not in ("bool",):
        a = np.abs(a) + (0.5 if a.dtype.kind == "f" else 0) if dtype != "uint8" else a
        b = np.abs(b) % 3 if b.dtype.kind != "f" else np.round(b) % 3
    return a, b


@pytest.mark.parametrize("op", list(BINARY))
@pytest.mark.parametrize(("sa", "sb"), SHAPES, ids=str)
def test_binary_float32_broadcasting(op: str, sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    a, b = _operands(sa, sb, "float32", op, 0)
    da, ta = pair(a, "float32")
    db, tb = pair(b, "float32")
    f = BINARY[op]
    same_outcome(lambda: f(dt, da, db), lambda: f(torch, ta, tb))
    same_outcome(lambda: f(dt, db, da), lambda: f(torch, tb, ta))


@pytest.mark.parametrize("op", list(BINARY))
@pytest.mark.parametrize("dtype", DTYPES)
def test_binary_dtypes(op: str, dtype: str) -> None:
    a, b = _operands((4, 3), (3,), dtype, op, 1)
    da, ta = pair(a, dtype)
    db, tb = pair(b, dtype)
    f = BINARY[op]
    same_outcome(lambda: f(dt, da, db), lambda: f(torch, ta, tb))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "maximum", "pow", "lt", "eq"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_binary_noncontiguous(op: str, layout: str) -> None:
    a, b = _operands((3, 4), (3, 4), "float64", op, 2)
    da, ta = pair(a, "float64", layout)
    db, tb = pair(b, "float64", "transposed" if layout == "strided" else layout)
    assert da.is_contiguous() == (layout == "contiguous")
    f = BINARY[op]
    same_outcome(lambda: f(dt, da, db), lambda: f(torch, ta, tb))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "floordiv", "remainder", "pow", "lt", "eq", "maximum"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scalar", [2, -3, 2.5, True, 0], ids=repr)
def test_binary_with_python_scalar(op: str, dtype: str, scalar: object) -> None:
    a, _ = _operands((2, 3), (1,), dtype, op, 3)
    da, ta = pair(a, dtype)
    f = BINARY[op]
    if op == "maximum":
        scal_d, scal_t = dt.tensor(scalar), torch.tensor(scalar)  # 0-d tensor instead of a Python number
        same_outcome(lambda: f(dt, da, scal_d), lambda: f(torch, ta, scal_t))
        return
    same_outcome(lambda: f(dt, da, scalar), lambda: f(torch, ta, scalar))
    if op != "pow" or dtype != "bool":
        same_outcome(lambda: f(dt, scalar, da), lambda: f(torch, scalar, ta))


def test_broadcast_error_message() -> None:
    with pytest.raises(RuntimeError, match=r"size of tensor a \(3\) must match the size of tensor b \(4\)"):
        dt.ones(2, 3) + dt.ones(4)
    with pytest.raises(RuntimeError):
        torch.ones(2, 3) + torch.ones(4)
    with pytest.raises(TypeError):
        dt.ones(2) + "a"


def test_integer_division_by_zero() -> None:
    for f in (lambda m, x, y: x // y, lambda m, x, y: x % y, lambda m, x, y: m.fmod(x, y),
              lambda m, x, y: m.div(x, y, rounding_mode="trunc")):
        x, y = [1, 2], [1, 0]
        same_outcome(lambda: f(dt, dt.tensor(x), dt.tensor(y)),  # noqa: B023
                      lambda: f(torch, torch.tensor(x), torch.tensor(y)))  # noqa: B023
    # floats give inf/nan silently
    assert_close(dt.tensor([1.0, -1.0, 0.0]) / 0, torch.tensor([1.0, -1.0, 0.0]) / 0)
    assert_close(dt.tensor([1.0, -1.0]) // 0.0, torch.tensor([1.0, -1.0]) // 0.0)
    assert_close(dt.tensor([1.0]) // 0.1, torch.tensor([1.0]) // 0.1)  # 9, not floor(1 / 0.1) = 10


def test_integer_pow_edge_cases() -> None:
    base = [0, 1, -1, 2, -2]
    for e in (torch.tensor(-1), torch.tensor([-1, -2, -3, 0, 2])):
        assert_close(dt.tensor(base) ** dt.tensor(e.numpy()), torch.tensor(base) ** e)
    with pytest.raises(RuntimeError, match="negative integer powers"):
        dt.tensor([2]) ** -1
    assert_close(2 ** dt.tensor([-1, 0, 3]), 2 ** torch.tensor([-1, 0, 3]))
    assert_close(dt.tensor([4.0]) ** -1, torch.tensor([4.0]) ** -1)
    assert_close(dt.tensor([0.0, 0.0, 2.0]) ** dt.tensor([0.0, 0.5, -1.0]),
                 torch.tensor([0.0, 0.0, 2.0]) ** torch.tensor([0.0, 0.5, -1.0]))


UNARY = ["exp", "log", "sqrt", "tanh", "sigmoid", "abs", "neg", "sin", "cos", "rsqrt", "reciprocal", "floor", "ceil",
         "round", "trunc", "sign", "log2", "log10", "log1p", "expm1", "square", "relu", "erf"]
POSITIVE = {"log", "sqrt", "rsqrt", "log2", "log10", "log1p"}


@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("dtype", DTYPES)
def test_unary(op: str, dtype: str) -> None:
    rng = np.random.default_rng(4)
    a = sample((3, 5), dtype, rng, positive=op in POSITIVE)
    da, ta = pair(a, dtype)
    same_outcome(lambda: getattr(dt, op)(da), lambda: getattr(torch, op)(ta))
    same_outcome(lambda: getattr(da, op)(), lambda: getattr(ta, op)())


@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (4, 3)], ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_unary_shapes_layouts(op: str, shape: tuple[int, ...], layout: str) -> None:
    rng = np.random.default_rng(5)
    a = sample(shape, "float64", rng, positive=op in POSITIVE)
    da, ta = pair(a, "float64", layout)
    assert_close(getattr(dt, op)(da), getattr(torch, op)(ta))


def test_unary_special_values() -> None:
    vals = [0.0, -0.0, -1.0, float("inf"), float("-inf"), float("nan"), 1e-40, 88.0, -100.0, 0.5, -0.5, 1.5, 2.5]
    for op in UNARY:
        for dtype in FLOATS:
            d, t = pair(np.array(vals), dtype)
            assert_close(getattr(dt, op)(d), getattr(torch, op)(t))


def test_round_decimals() -> None:
    x = [1.2345, -2.5551, 0.125]
    assert_close(dt.round(dt.tensor(x), decimals=2), torch.round(torch.tensor(x), decimals=2))
    assert_close(dt.tensor([0.5, 1.5, 2.5, -0.5]).round(), torch.tensor([0.5, 1.5, 2.5, -0.5]).round())


@pytest.mark.parametrize("dtype", DTYPES)
def test_clamp(dtype: str) -> None:
    rng = np.random.default_rng(6)
    a = sample((4, 5), dtype, rng)
    da, ta = pair(a, dtype)
    for lo, hi in [(-1, 2), (None, 1), (0, None), (0.5, 1.5), (2, 1), (True, None)]:
        same_outcome(lambda: dt.clamp(da, lo, hi), lambda: torch.clamp(ta, lo, hi))  # noqa: B023
        same_outcome(lambda: da.clamp(min=lo, max=hi), lambda: ta.clamp(min=lo, max=hi))  # noqa: B023
        same_outcome(lambda: da.clip(lo, hi), lambda: ta.clip(lo, hi))  # noqa: B023
    lo_d, lo_t = pair(sample((5,), dtype, rng), dtype)
    hi_d, hi_t = pair(sample((4, 1), dtype, rng), dtype)
    same_outcome(lambda: dt.clamp(da, lo_d, hi_d), lambda: torch.clamp(ta, lo_t, hi_t))
    same_outcome(lambda: dt.clamp(da, min=lo_d), lambda: torch.clamp(ta, min=lo_t))
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        dt.clamp(da)


def test_clamp_nan() -> None:
    x = [float("nan"), 1.0, -5.0]
    assert_close(dt.clamp(dt.tensor(x), -1, 0), torch.clamp(torch.tensor(x), -1, 0))


@pytest.mark.parametrize(("sc", "sa", "sb"), [((3, 4), (3, 4), (3, 4)), ((3, 1), (1, 4), ()), ((4,), (3, 4), (1,)),
                                              ((), (2,), (2,)), ((0, 2), (2,), (1, 2))], ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_where(sc: tuple[int, ...], sa: tuple[int, ...], sb: tuple[int, ...], dtype: str) -> None:
    rng = np.random.default_rng(7)
    c = rng.random(sc) < 0.5
    da, ta = pair(sample(sa, dtype, rng), dtype)
    db, tb = pair(sample(sb, dtype, rng), dtype)
    same_outcome(lambda: dt.where(dt.tensor(c), da, db), lambda: torch.where(torch.tensor(c), ta, tb))
    same_outcome(lambda: dt.where(dt.tensor(c), da, 2), lambda: torch.where(torch.tensor(c), ta, 2))
    same_outcome(lambda: dt.where(dt.tensor(c), 1.5, db), lambda: torch.where(torch.tensor(c), 1.5, tb))
    same_outcome(lambda: da.where(dt.tensor(c), db), lambda: ta.where(torch.tensor(c), tb))


def test_where_errors_and_nonzero_form() -> None:
    with pytest.raises(RuntimeError, match="bool"):
        dt.where(dt.tensor([1, 0]), dt.ones(2), dt.zeros(2))
    with pytest.raises(RuntimeError):
        dt.where(dt.tensor([True, False, True]), dt.ones(2), dt.zeros(2))
    c = [[True, False], [False, True]]
    assert_close(dt.where(dt.tensor(c)), torch.where(torch.tensor(c)))


def test_float16_bfloat16_accuracy() -> None:
    rng = np.random.default_rng(8)
    a = rng.uniform(-4, 4, (64,))
    b = rng.uniform(0.5, 4, (64,))
    for dtype in ("float16", "bfloat16"):
        da, ta = pair(a, dtype)
        db, tb = pair(b, dtype)
        for f in (lambda m, x, y: x + y, lambda m, x, y: x * y - y, lambda m, x, y: x / y,
                  lambda m, x, y: m.exp(x) + m.tanh(y), lambda m, x, y: m.sigmoid(x) * m.sqrt(y),
                  lambda m, x, y: m.log(y) ** 2, lambda m, x, y: x * 0.1 + 3):
            assert_close(f(dt, da, db), f(torch, ta, tb))


def test_comparisons_with_nan_and_mixed() -> None:
    x = [float("nan"), 1.0, 2.0]
    y = [float("nan"), 1.0, 3.0]
    for op in ("eq", "ne", "lt", "le", "gt", "ge"):
        assert_close(BINARY[op](dt, dt.tensor(x), dt.tensor(y)), BINARY[op](torch, torch.tensor(x), torch.tensor(y)))
    assert_close(dt.tensor([1, 2]) == dt.tensor([1.0, 2.5]), torch.tensor([1, 2]) == torch.tensor([1.0, 2.5]))
    assert (dt.ones(2) == "a") is False
    assert dt.equal(dt.tensor([1, 2]), dt.tensor([1, 2])) and not dt.equal(dt.tensor([1]), dt.tensor([1, 2]))


def test_isclose_allclose_isnan() -> None:
    a = [1.0, float("nan"), float("inf"), 2.0]
    b = [1.0 + 1e-7, float("nan"), float("inf"), 2.1]
    assert_close(dt.isclose(dt.tensor(a), dt.tensor(b)), torch.isclose(torch.tensor(a), torch.tensor(b)))
    assert_close(dt.isclose(dt.tensor(a), dt.tensor(b), equal_nan=True),
                 torch.isclose(torch.tensor(a), torch.tensor(b), equal_nan=True))
    assert dt.allclose(dt.tensor([1.0]), dt.tensor([1.0 + 1e-9]))
    for op in ("isnan", "isinf", "isfinite"):
        assert_close(getattr(dt, op)(dt.tensor(a)), getattr(torch, op)(torch.tensor(a)))
        assert_close(getattr(dt, op)(dt.tensor([1, 2])), getattr(torch, op)(torch.tensor([1, 2])))


def test_bitwise_and_logical_not() -> None:
    for dtype in ("bool", "int64", "uint8"):
        rng = np.random.default_rng(9)
        da, ta = pair(sample((5,), dtype, rng), dtype)
        db, tb = pair(sample((5,), dtype, rng), dtype)
        for f in (lambda x, y: x & y, lambda x, y: x | y, lambda x, y: x ^ y, lambda x, y: ~x):
            assert_close(f(da, db), f(ta, tb))
        assert_close(dt.logical_not(da), torch.logical_not(ta))
    with pytest.raises(RuntimeError):
        dt.ones(2) & dt.ones(2)


def test_lerp_and_misc_math() -> None:
    a, b = [0.0, 1.0, 2.0], [4.0, 3.0, -2.0]
    assert_close(dt.lerp(dt.tensor(a), dt.tensor(b), 0.25), torch.lerp(torch.tensor(a), torch.tensor(b), 0.25))
    assert math.isclose(dt.tensor(2.0).exp().item(), math.exp(2.0), rel_tol=1e-6)
    assert_close(dt.tensor([-3, 4]).abs(), torch.tensor([-3, 4]).abs())
    assert_close(-dt.tensor([1, -2], dtype=dt.int8), -torch.tensor([1, -2], dtype=torch.int8))
    with pytest.raises(RuntimeError, match="bool"):
        -dt.tensor([True])
