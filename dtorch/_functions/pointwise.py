"""Elementwise math, comparisons, `where`, `clamp` and `matmul`."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .. import dtypes as _dt
from .._prims import linalg as L
from .._prims import pointwise as E
from .._tensor import Tensor
from ._common import _binary, _compare, _operand, _scalar_ok, _unary, as_tensor_like
from .index import nonzero

# --------------------------------------------------------------------------- arithmetic


def _check_alpha(input: Any, other: Any, alpha: Any, name: str) -> Any:
    """Validate `alpha` as PyTorch does and return it converted for the result dtype."""
    if not _scalar_ok(alpha):
        raise TypeError(f"{name}(): argument 'alpha' must be Number, not {type(alpha).__name__}")
    d = _dt.result_type(_operand(input, name), _operand(other, name))
    if isinstance(alpha, (bool, np.bool_)):
        if d is not _dt.bool_:
            raise RuntimeError("Boolean alpha only supported for Boolean results.")
        return alpha
    if isinstance(alpha, (float, np.floating)) and not d.is_floating_point:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    return builtins.bool(alpha) if d is _dt.bool_ else alpha


def add(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    if alpha.__class__ is not int or alpha != 1:
        alpha = _check_alpha(input, other, alpha, "add")
        if alpha is not True:
            other = mul(other, alpha)
    return _binary(E.Add, input, other)


def _is_bool(x: Any) -> bool:
    return (x._data.dtype == np.bool_) if isinstance(x, Tensor) else isinstance(x, (bool, np.bool_))


def sub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    if _is_bool(input) or _is_bool(other):
        if _is_bool(input) and _is_bool(other):
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
                               "or `logical_xor()` operator instead.")
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
                           "to invert a mask, use the `~` or `logical_not()` operator instead.")
    if alpha.__class__ is not int or alpha != 1:
        other = mul(other, _check_alpha(input, other, alpha, "sub"))
    return _binary(E.Sub, input, other)


subtract = sub


def mul(input: Any, other: Any) -> Tensor:
    return _binary(E.Mul, input, other)


multiply = mul


def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    if rounding_mode is None:
        return _binary(E.Div, input, other, floating=True)
    if rounding_mode == "floor":
        return _compare("floor_divide", input, other)
    if rounding_mode == "trunc":
        return _compare("trunc_divide", input, other)
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found {rounding_mode!r}")


divide = true_divide = div


def _is_float(a: Any, b: Any) -> bool:
    return _dt.result_type(_operand(a, "div"), _operand(b, "div")).is_floating_point


def floor_divide(input: Any, other: Any) -> Tensor:
    """Division rounded down (Python's `//`); not differentiable."""
    return _compare("floor_divide", input, other)


def remainder(input: Any, other: Any) -> Tensor:
    """Python-style modulus: the result takes the sign of `other`."""
    return _binary(E.Remainder, input, other)


def fmod(input: Any, other: Any) -> Tensor:
    """C-style modulus: the result takes the sign of `input`."""
    return _binary(E.Fmod, input, other)


def pow(input: Any, exponent: Any) -> Tensor:
    if isinstance(input, Tensor) and isinstance(exponent, (int, np.integer)) and input._data.dtype.kind in "biu":
        if exponent < 0 and not isinstance(exponent, bool):
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        if exponent == 1 and input._data.dtype == np.bool_ and isinstance(exponent, (bool, np.bool_)):
            return Tensor._wrap(input._data.copy())
    return _binary(E.Pow, input, exponent)


def maximum(input: Tensor, other: Tensor) -> Tensor:
    return _binary(E.Maximum, input, other)


def minimum(input: Tensor, other: Tensor) -> Tensor:
    return _binary(E.Minimum, input, other)


def matmul(input: Tensor, other: Tensor) -> Tensor:
    from ..amp.autocast_mode import autocast_args

    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(f"matmul(): arguments must be Tensors, got {type(input).__name__} and {type(other).__name__}")
    input, other = autocast_args("lower", input, other)
    if input._data.dtype != other._data.dtype:
        raise RuntimeError(f"expected both matmul operands to have the same dtype, but got {input.dtype} and "
                           f"{other.dtype}; convert one with .to(dtype)")
    if input._data.dtype == np.bool_:
        raise NotImplementedError("\"addmm_impl_cpu_\" not implemented for 'Bool'")
    sa, sb = input._data.shape, other._data.shape
    if len(sa) > 2 or len(sb) > 2:
        try:
            np.broadcast_shapes(sa[:-2], sb[:-2] if len(sb) > 1 else ())
        except ValueError:
            raise RuntimeError(f"matmul: the batch dimensions {list(sa[:-2])} and {list(sb[:-2])} of shapes "
                               f"{list(sa)} and {list(sb)} do not broadcast") from None
    return L.MatMul.apply(input, other)


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """Matrix product of two 2-D tensors (no broadcasting)."""
    if input.ndim != 2:
        raise RuntimeError(f"self must be a matrix, got a {input.ndim}-D tensor")
    if mat2.ndim != 2:
        raise RuntimeError(f"mat2 must be a matrix, got a {mat2.ndim}-D tensor")
    return matmul(input, mat2)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched matrix product of two 3-D tensors with the same batch size (no broadcasting)."""
    if input.ndim != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor, got a {input.ndim}-D tensor")
    if mat2.ndim != 3:
        raise RuntimeError(f"batch2 must be a 3D tensor, got a {mat2.ndim}-D tensor")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {input.shape[0]} and "
                           f"{mat2.shape[0]}")
    return matmul(input, mat2)


def dot(input: Tensor, other: Tensor) -> Tensor:
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input.shape[0] != other.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src [{other.shape[0]}] "
                           f"to have the same number of elements, but got {input.shape[0]} and {other.shape[0]} "
                           f"elements respectively")
    if input._data.dtype != other._data.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {input.dtype} and "
                           f"{other.dtype}")
    return matmul(input, other)


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    return mul(input.reshape(-1, 1), vec2.reshape(1, -1))



def neg(x: Tensor) -> Tensor:
    if x._data.dtype == np.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported; use ~ or logical_not()")
    return E.Neg.apply(x)


negative = neg


def exp(x: Tensor) -> Tensor:
    return _unary(E.Exp, x)


def log(x: Tensor) -> Tensor:
    return _unary(E.Log, x)


def log2(x: Tensor) -> Tensor:
    return _unary(E.Log2, x)


def log10(x: Tensor) -> Tensor:
    return _unary(E.Log10, x)


def log1p(x: Tensor) -> Tensor:
    return _unary(E.Log1p, x)


def expm1(x: Tensor) -> Tensor:
    return _unary(E.Expm1, x)


def sqrt(x: Tensor) -> Tensor:
    return _unary(E.Sqrt, x)


def rsqrt(x: Tensor) -> Tensor:
    return _unary(E.Rsqrt, x)


def square(x: Tensor) -> Tensor:
    return pow(x, 2) if x._data.dtype == np.bool_ else mul(x, x)


def tanh(x: Tensor) -> Tensor:
    return _unary(E.Tanh, x)


def sigmoid(x: Tensor) -> Tensor:
    return _unary(E.Sigmoid, x)


def sin(x: Tensor) -> Tensor:
    return _unary(E.Sin, x)


def cos(x: Tensor) -> Tensor:
    return _unary(E.Cos, x)


def erf(x: Tensor) -> Tensor:
    return _unary(E.Erf, x)


def reciprocal(x: Tensor) -> Tensor:
    return _unary(E.Reciprocal, x)


def _no_bool(x: Any, kernel: str) -> None:
    if isinstance(x, Tensor) and x._data.dtype == np.bool_:
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def abs(x: Tensor) -> Tensor:
    _no_bool(x, "abs_cpu")
    return _unary(E.Abs, x, floating=False)


absolute = abs


def relu(x: Tensor) -> Tensor:
    if isinstance(x, Tensor) and x._data.dtype == np.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    return _unary(E.Relu, x, floating=False)


def sign(x: Tensor) -> Tensor:
    return _unary(E.Sign, x, floating=False)


def _rounding(cls: Any, x: Any, kernel: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{cls.name}(): argument 'input' must be Tensor, not {type(x).__name__}")
    _no_bool(x, kernel)
    if not x.is_floating_point():
        return Tensor._wrap(x._data.copy())  # integers are already whole: a copy, as torch returns
    return cls.apply(x)


def floor(x: Tensor) -> Tensor:
    return _rounding(E.Floor, x, "floor_vml_cpu")


def ceil(x: Tensor) -> Tensor:
    return _rounding(E.Ceil, x, "ceil_vml_cpu")


def round(x: Tensor, *, decimals: int = 0) -> Tensor:
    if decimals and isinstance(x, Tensor) and x.is_floating_point():
        s = 10.0 ** decimals
        return div(E.Round.apply(mul(x, s)), s)
    return _rounding(E.Round, x, "round_vml_cpu")


def trunc(x: Tensor) -> Tensor:
    return _rounding(E.Trunc, x, "trunc_vml_cpu")


fix = trunc


def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """Limit `input` to [min, max]; gradient flows to `input` where min <= input <= max (and to tensor bounds
    where they are the result), as in PyTorch."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if not isinstance(input, Tensor):
        raise TypeError(f"clamp(): argument 'input' must be Tensor, not {type(input).__name__}")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = input
        d = _dt.result_type(input, *(v for v in (min, max) if v is not None))
        if d is _dt.bool_ and min is not None and max is not None:
            raise NotImplementedError("\"clamp_cpu\" not implemented for 'Bool'")
        if min is not None:
            out = where(lt(out, min), min, out)
        if max is not None:
            out = where(gt(out, max), max, out)
        return out if out.dtype is d else out.type(d)
    d = _dt.result_type(input, *(v for v in (min, max) if v is not None))
    if d is _dt.bool_:
        kernel = "clamp" if min is not None and max is not None else "clamp_min" if min is not None else "clamp_max"
        raise NotImplementedError(f"\"{kernel}_scalar_cpu\" not implemented for 'Bool'")
    x = input if d.np == input._data.dtype else input.type(d)
    lo = None if min is None else _clamp_bound(min, d)
    hi = None if max is None else _clamp_bound(max, d)
    return E.Clamp.apply(x, min=lo, max=hi)


def _clamp_bound(v: Any, d: _dt.dtype) -> Any:
    if not _scalar_ok(v):
        raise TypeError(f"clamp(): min and max must be numbers or Tensors, got {type(v).__name__}")
    if not d.is_floating_point:
        info = np.iinfo(d.np)
        lowest = -info.max if info.min == 0 else info.min  # unsigned: negatives wrap, as in PyTorch
        if not lowest <= v <= info.max:
            raise RuntimeError(f"value cannot be converted to type {d.name} without overflow")
    return E.cast(v, d.np)


clip = clamp


def where(condition: Tensor, input: Any = None, other: Any = None) -> Any:
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    cond = condition if isinstance(condition, Tensor) else as_tensor_like(condition)
    if cond._data.dtype != np.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype {cond.dtype}")
    a, b = _operand(input, "where"), _operand(other, "where")
    d = _dt.result_type(a, b)
    shapes = (cond._data.shape, np.shape(getattr(a, "_data", a)), np.shape(getattr(b, "_data", b)))
    try:
        if not shapes[0] == shapes[1] == shapes[2]:
            np.broadcast_shapes(*shapes)
    except ValueError:
        raise RuntimeError(f"where(): the shapes of condition {list(shapes[0])}, input {list(shapes[1])} and other "
                           f"{list(shapes[2])} do not broadcast to one shape") from None
    return E.Where.apply(cond, a, b, dtype=d.np)


def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    if not isinstance(mask, Tensor) or mask._data.dtype != np.bool_:
        got = mask.dtype if isinstance(mask, Tensor) else type(mask).__name__
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {got}")
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.ndim} dimension(s).")
        v = value if value._data.dtype == input._data.dtype else value.type(input.dtype)
    else:
        v = Tensor._wrap(np.asarray(E.cast(value, input._data.dtype)))
    out = where(mask, v, input)
    if out._data.shape != input._data.shape:
        raise RuntimeError(f"masked_fill: the mask of shape {list(mask.shape)} does not broadcast to the input's "
                           f"shape {list(input.shape)}")
    return out


def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    return add(input, mul(sub(end, input), weight))


def logical_not(x: Tensor) -> Tensor:
    return E.LogicalNot.apply(x.bool() if x._data.dtype != np.bool_ else x)


def bitwise_not(x: Tensor) -> Tensor:
    """`~x`: logical not for bool tensors, two's-complement not for integers."""
    if not isinstance(x, Tensor):
        raise TypeError(f"bitwise_not(): argument 'input' must be Tensor, not {type(x).__name__}")
    if x._data.dtype == np.bool_:
        return E.LogicalNot.apply(x)
    if x.is_floating_point():
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return E.BitwiseNot.apply(x)


def bitwise_and(a: Any, b: Any) -> Tensor:
    return _compare("bitwise_and", a, b)


def bitwise_or(a: Any, b: Any) -> Tensor:
    return _compare("bitwise_or", a, b)


def bitwise_xor(a: Any, b: Any) -> Tensor:
    return _compare("bitwise_xor", a, b)


def logical_and(a: Tensor, b: Any) -> Tensor:
    return _compare("logical_and", a, b)


def logical_or(a: Tensor, b: Any) -> Tensor:
    return _compare("logical_or", a, b)


def logical_xor(a: Tensor, b: Any) -> Tensor:
    return _compare("logical_xor", a, b)


def eq(a: Any, b: Any) -> Tensor:
    return _compare("eq", a, b)


def ne(a: Any, b: Any) -> Tensor:
    return _compare("ne", a, b)


def lt(a: Any, b: Any) -> Tensor:
    return _compare("lt", a, b)


def le(a: Any, b: Any) -> Tensor:
    return _compare("le", a, b)


def gt(a: Any, b: Any) -> Tensor:
    return _compare("gt", a, b)


def ge(a: Any, b: Any) -> Tensor:
    return _compare("ge", a, b)


greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


def equal(a: Tensor, b: Tensor) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a._data, b._data))


def allclose(a: Tensor, b: Tensor, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> bool:
    return bool(np.allclose(a._data.astype(np.float64), b._data.astype(np.float64), rtol, atol, equal_nan))


def isclose(a: Tensor, b: Tensor, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> Tensor:
    return Tensor._wrap(np.isclose(a._data, b._data, rtol, atol, equal_nan))


def isnan(x: Tensor) -> Tensor:
    return Tensor._wrap(np.isnan(x._data) if x.is_floating_point() else np.zeros(x._data.shape, bool))


def isinf(x: Tensor) -> Tensor:
    return Tensor._wrap(np.isinf(x._data) if x.is_floating_point() else np.zeros(x._data.shape, bool))


def isfinite(x: Tensor) -> Tensor:
    return Tensor._wrap(np.isfinite(x._data) if x.is_floating_point() else np.ones(x._data.shape, bool))


__all__ = ["abs", "absolute", "add", "allclose", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "bmm",
           "ceil", "clamp", "clip", "cos", "div", "divide", "dot", "eq", "equal", "erf", "exp", "expm1", "fix",
           "floor", "floor_divide", "fmod", "ge", "greater", "greater_equal", "gt", "isclose", "isfinite", "isinf",
           "isnan", "le", "lerp", "less", "less_equal", "log", "log1p", "log2", "log10", "logical_and", "logical_not",
           "logical_or", "logical_xor", "lt", "masked_fill", "matmul", "maximum", "minimum", "mm", "mul", "multiply",
           "ne", "neg", "negative", "not_equal", "outer", "pow", "reciprocal", "relu", "remainder", "round", "rsqrt",
           "sigmoid", "sign", "sin", "sqrt", "square", "sub", "subtract", "tanh", "true_divide", "trunc", "where"]
