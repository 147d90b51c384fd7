"""The integer paths of the arithmetic kernels (add, sub, mul, div, maximum, minimum, pow on int64 / int32, and pow's
integer base with a float32 exponent) and of pad (int64 / int32 / bool), exactly against PyTorch and NumPy:
broadcasting, wrap-around, truncating division, the results C++ leaves undefined (division by zero, 0 to a negative
power: 0, as NumPy's division), every thread count, and the errors (mixed dtypes, a fused activation on integers, a
pad value the dtype cannot hold)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from .helpers import _C, run

INTS = (np.int64, np.int32)


def _ints(rng: np.random.Generator, shape: tuple[int, ...], dtype: type, lo: int = -50, hi: int = 50) -> np.ndarray:
    return rng.integers(lo, hi, size=shape).astype(dtype)


TORCH_OPS = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "maximum": torch.maximum, "minimum": torch.minimum,
    "div": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
}


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", list(TORCH_OPS))
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((2, 3, 5), (5,)), ((4, 1), (1, 6)), ((), (7,))])
def test_integer_binary_matches_torch(op, dtype, shapes):
    rng = np.random.default_rng(abs(hash((op, dtype.__name__, shapes))) % 2**32)
    a, b = _ints(rng, shapes[0], dtype), _ints(rng, shapes[1], dtype)
    if op == "div":
        b[b == 0] = 3
    want = TORCH_OPS[op](torch.tensor(a), torch.tensor(b)).numpy()
    for threads in (1, 3):
        got = run(op, {}, [a, b], threads=threads)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", INTS)
def test_integer_arithmetic_wraps_around(dtype):
    info = np.iinfo(dtype)
    a = np.array([info.max, info.min, info.min, info.max], dtype)
    b = np.array([1, -1, -1, 2], dtype)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(run("add", {}, [a, b]), a + b)
        np.testing.assert_array_equal(run("sub", {}, [a, b]), a - b)
        np.testing.assert_array_equal(run("mul", {}, [a, b]), a * b)
    # INT_MIN / -1 overflows: it wraps to INT_MIN, as two's complement negation does
    np.testing.assert_array_equal(run("div", {}, [a[1:3], b[1:3]]), np.array([info.min, info.min], dtype))


def test_integer_division_truncates_toward_zero():
    a = np.array([7, -7, 7, -7, 0], np.int64)
    b = np.array([2, 2, -2, -2, 5], np.int64)
    np.testing.assert_array_equal(run("div", {}, [a, b]), np.array([3, -3, -3, 3, 0], np.int64))


@pytest.mark.parametrize("dtype", INTS)
def test_integer_pow_is_exact(dtype):
    a = np.array([1, 2, 3, -3, 0, 7, -1, -1, 5, 2], dtype)
    b = np.array([4, 5, 6, 3, 0, 0, 3, 4, -1, 30], dtype)
    want = np.array([1, 32, 729, -27, 1, 1, -1, 1, 0, 2**30], dtype)
    np.testing.assert_array_equal(run("pow", {}, [a, b]), want)
    big = np.array([3], dtype)
    e = np.array([39 if dtype is np.int64 else 19], dtype)
    np.testing.assert_array_equal(run("pow", {}, [big, e]), big ** e)  # past 2^53: exact, not through double


@pytest.mark.parametrize("dtype", INTS)
def test_integer_base_float_exponent_truncates(dtype):
    a = np.array([1, 2, 3, 10, 4], dtype)
    b = np.array([4.0, 0.5, 2.5, -1.0, 1.5], np.float32)
    got = run("pow", {}, [a, b])
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, np.trunc(np.power(a.astype(np.float64), b.astype(np.float64))).astype(dtype))
    huge = run("pow", {}, [np.array([10], dtype), np.array([40.0], np.float32)])
    assert huge[0] == np.iinfo(dtype).max  # saturates at the dtype's range


@pytest.mark.parametrize("dtype", INTS)
def test_undefined_integer_results_are_zero(dtype):
    """Every result is defined, so a run never fails (or traps) on its data: x / 0 = 0 as in NumPy, 0 ** -n = 0, and a
    NaN power (a negative base to a fractional exponent) = 0."""
    a = np.array([5, -5, 0], dtype)
    np.testing.assert_array_equal(run("div", {}, [a, np.zeros(3, dtype)]), np.zeros(3, dtype))
    np.testing.assert_array_equal(run("pow", {}, [np.array([0, 0], dtype), np.array([-1, -4], dtype)]),
                                  np.zeros(2, dtype))
    np.testing.assert_array_equal(run("pow", {}, [np.array([-8], dtype), np.array([0.5], np.float32)]),
                                  np.zeros(1, dtype))


def test_integer_errors_are_clear():
    a = np.array([1, 2, 3], np.int64)
    with pytest.raises(ValueError, match=r"add: input b must be int64, got int32"):
        run("add", {}, [a, np.array([1, 2, 3], np.int32)])
    with pytest.raises(ValueError, match=r"mul: input b must be int64, got float32"):
        run("mul", {}, [a, np.array([1.0, 2.0, 3.0], np.float32)])  # only pow mixes an integer base and a float
    with pytest.raises(ValueError, match=r"add: a fused activation needs float32 inputs, got int64"):
        run("add", dict(activation="relu"), [a, a])
    with pytest.raises(Exception, match=r"no kernel for operator 'sub' \(bool\)"):
        run("sub", {}, [np.array([True]), np.array([True])])


@pytest.mark.parametrize("dtype", (np.int64, np.int32, np.bool_))
@pytest.mark.parametrize("mode", ("constant", "reflect", "replicate", "circular"))
def test_pad_integer_and_bool_match_float(dtype, mode):
    """The same elements move as in the float32 kernel (tested against torch in test_shape_reduce, which pads
    integers in constant mode only); constant mode also against torch."""
    rng = np.random.default_rng(5)
    x = rng.integers(-9, 9, size=(2, 3, 4, 5)).astype(dtype)
    for pads in ([1, 2], [2, 1, 0, 3], [-1, 2, 1, -1]):
        attrs = dict(pads=pads, mode=mode, value=1.0)
        got = run("pad", attrs, [x], threads=2)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, run("pad", attrs, [x.astype(np.float32)]).astype(dtype))
        if mode == "constant" and dtype is not np.bool_:
            np.testing.assert_array_equal(got, F.pad(torch.tensor(x), pads, value=1).numpy())


def test_pad_value_must_fit_the_dtype():
    x = np.zeros((2, 3), np.int32)
    with pytest.raises(ValueError, match=r"pad: value 1e\+10 does not fit the int32 input"):
        _C.run_kernel("pad", dict(pads=[1, 1], value=1e10), [x])
    with pytest.raises(ValueError, match=r"pad: value -inf does not fit"):
        _C.run_kernel("pad", dict(pads=[1, 1], value=float("-inf")), [x])
    got = run("pad", dict(pads=[1, 0], value=-2.7), [x])
    assert got.dtype == np.int32 and got[0, 0] == -2  # truncated toward zero
