"""Data types: the `dt.float32`-style objects, their NumPy twins and PyTorch's promotion rules."""

from __future__ import annotations

import builtins
from typing import Any

import ml_dtypes
import numpy as np

__all__ = [
    "bfloat16",
    "bool_",
    "double",
    "dtype",
    "float",
    "float16",
    "float32",
    "float64",
    "from_numpy_dtype",
    "get_default_dtype",
    "half",
    "int",
    "int8",
    "int16",
    "int32",
    "int64",
    "long",
    "promote_types",
    "result_type",
    "set_default_dtype",
    "short",
    "to_numpy_dtype",
    "uint8",
]


class dtype:
    """A tensor element type. Compare with `is` or `==`; `.np` is the NumPy dtype that stores it."""

    __slots__ = ("_category", "_rank", "is_floating_point", "is_signed", "itemsize", "name", "np")

    def __init__(self, name: str, np_dtype: Any, category: int, rank: int) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)
        self.is_floating_point = category == 2
        self.is_signed = name not in ("uint8", "bool")
        self.itemsize = self.np.itemsize
        self._category = category  # 0 bool, 1 integer, 2 floating
        self._rank = rank

    def __repr__(self) -> str:
        return f"dtorch.{self.name}"

    def __reduce__(self) -> str:
        return self.name if self.name != "bool" else "bool_"

    @property
    def is_complex(self) -> bool:
        return False


bool_ = dtype("bool", np.bool_, 0, 0)
uint8 = dtype("uint8", np.uint8, 1, 1)
int8 = dtype("int8", np.int8, 1, 1)
int16 = dtype("int16", np.int16, 1, 2)
int32 = dtype("int32", np.int32, 1, 3)
int64 = dtype("int64", np.int64, 1, 4)
float16 = dtype("float16", np.float16, 2, 1)
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, 2, 1)
float32 = dtype("float32", np.float32, 2, 2)
float64 = dtype("float64", np.float64, 2, 3)

double, float, half, long, int, short = float64, float32, float16, int64, int32, int16

# NumPy dtypes of the reduced-precision floats, for fast identity checks on hot paths
# (`arr.dtype.name` costs microseconds; a set lookup costs nanoseconds).
BF16_NP = bfloat16.np
LOW_FLOAT_NP = frozenset({float16.np, bfloat16.np})

ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
_BY_NP = {d.np: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update({"float": float32, "double": float64, "half": float16, "long": int64, "int": int32,
                 "short": int16, "bool_": bool_})

_default_float = float32
builtins_float, builtins_int, builtins_bool = builtins.float, builtins.int, builtins.bool


def get_default_dtype() -> dtype:
    return _default_float


def set_default_dtype(d: dtype) -> None:
    global _default_float
    d = as_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"set_default_dtype only supports floating point dtypes, got {d}")
    _default_float = d


def as_dtype(d: Any) -> dtype:
    """Accept a dt.dtype, its name ("float16"), a NumPy dtype or a Python type; anything else is an error."""
    if isinstance(d, dtype):
        return d
    if isinstance(d, str):
        key = d.removeprefix("dtorch.")
        if key in _BY_NAME:
            return _BY_NAME[key]
        raise TypeError(f"unknown dtype {d!r}; known dtypes: {', '.join(x.name for x in ALL)}")
    if d is builtins_float:
        return _default_float
    if d is builtins_int:
        return int64
    if d is builtins_bool:
        return bool_
    try:
        return from_numpy_dtype(np.dtype(d))
    except TypeError:
        raise TypeError(f"unknown dtype {d!r}; known dtypes: {', '.join(x.name for x in ALL)}") from None


def from_numpy_dtype(np_dtype: Any) -> dtype:
    nd = np.dtype(np_dtype)
    found = _BY_NP.get(nd)
    if found is None:
        raise TypeError(f"NumPy dtype {nd} has no dtorch equivalent; supported: {', '.join(x.np.name for x in ALL)}")
    return found


def to_numpy_dtype(d: Any) -> np.dtype:
    return as_dtype(d).np


def promote_types(a: dtype, b: dtype) -> dtype:
    """PyTorch's promotion of two tensor dtypes (both dimensioned)."""
    if a is b:
        return a
    if a._category != b._category:
        return a if a._category > b._category else b
    if a._category == 2:
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if a._rank > b._rank else b
    if a._category == 1:
        if uint8 in (a, b):
            other = b if a is uint8 else a
            if other is int8:
                return int16
            return other
        return a if a._rank > b._rank else b
    return a


def scalar_dtype(x: Any) -> dtype:
    if isinstance(x, (bool, np.bool_)):
        return bool_
    if isinstance(x, (builtins_int, np.integer)):
        return int64
    return _default_float


def result_type(*operands: Any) -> dtype:
    """Result dtype of an elementwise op over tensors and Python scalars, as PyTorch computes it.

    Dimensioned tensors decide first; zero-dim tensors count only when they are of a higher category;
    Python scalars count only when of a higher category, and then give the default dtype of that category.
    """
    from .tensor import Tensor

    dims: dtype | None = None
    zero: dtype | None = None
    scal: dtype | None = None
    for x in operands:
        if isinstance(x, Tensor):
            d = x.dtype
            if x.data.ndim > 0:
                dims = d if dims is None else promote_types(dims, d)
            else:
                zero = d if zero is None else promote_types(zero, d)
        elif isinstance(x, np.ndarray):
            d = from_numpy_dtype(x.dtype)
            dims = d if dims is None else promote_types(dims, d)
        else:
            d = scalar_dtype(x)
            scal = d if scal is None else promote_types(scal, d)
    out = dims
    for cand in (zero, scal):
        if cand is not None and (out is None or cand._category > out._category):
            out = cand
    assert out is not None
    return out
