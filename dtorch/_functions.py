"""The functional tensor API (`dt.add`, `dt.matmul`, `dt.cat`, ...) and the Tensor methods built on it.

Everything here composes primitives from `dtorch.ops`: dtype promotion, argument checking and
PyTorch's argument conventions live here; gradients live in the primitives.
"""

from __future__ import annotations

import builtins
import math
from typing import Any, Sequence

import numpy as np

from . import dtypes as _dt
from .autograd.grad_mode import is_grad_enabled
from .ops import elementwise as E
from .ops import linalg as L
from .ops import reduce as R
from .ops import shape as S
from .tensor import Size, Tensor, _norm_dim

# --------------------------------------------------------------------------- helpers


def _scalar_ok(x: Any) -> bool:
    return isinstance(x, (int, float, bool, np.number, np.bool_))


def as_tensor_like(x: Any, ref: Tensor | None = None) -> Tensor:
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.ndarray):
        return Tensor._wrap(x)
    if _scalar_ok(x):
        d = ref.dtype if ref is not None and _dt.result_type(ref, x) is ref.dtype else _dt.scalar_dtype(x)
        return Tensor._wrap(np.asarray(x, dtype=d.np))
    from .creation import tensor

    return tensor(x)


def _operand(x: Any, opname: str) -> Any:
    if isinstance(x, Tensor) or _scalar_ok(x):
        return x
    if isinstance(x, np.ndarray):
        return Tensor._wrap(x)
    raise TypeError(f"{opname}(): unsupported operand type {type(x).__name__}; expected a Tensor or a number")


def _check_broadcast(a: Any, b: Any, opname: str) -> None:
    sa, sb = np.shape(a._data if isinstance(a, Tensor) else a), np.shape(b._data if isinstance(b, Tensor) else b)
    try:
        np.broadcast_shapes(sa, sb)
    except ValueError:
        nd = builtins.max(len(sa), len(sb))
        pa, pb = (1,) * (nd - len(sa)) + sa, (1,) * (nd - len(sb)) + sb
        for i in range(nd - 1, -1, -1):
            if pa[i] != pb[i] and 1 not in (pa[i], pb[i]):
                raise RuntimeError(f"{opname}: the size of tensor a ({pa[i]}) must match the size of tensor b "
                                   f"({pb[i]}) at non-singleton dimension {i}; shapes {list(sa)} and {list(sb)} "
                                   f"do not broadcast") from None
        raise


def _binary(cls: Any, a: Any, b: Any, floating: bool = False) -> Tensor:
    a, b = _operand(a, cls.name), _operand(b, cls.name)
    if isinstance(a, Tensor) and isinstance(b, Tensor) and a._data.dtype == b._data.dtype and (
            not floating or a.is_floating_point()):
        if a._data.shape != b._data.shape:
            _check_broadcast(a, b, cls.name)
        return cls.apply(a, b)
    d = _dt.result_type(a, b)
    if floating and not d.is_floating_point:
        d = _dt.get_default_dtype()
    _check_broadcast(a, b, cls.name)
    return cls.apply(a, b, dtype=d.np)


def _compare(op: str, a: Any, b: Any) -> Tensor:
    a, b = _operand(a, op), _operand(b, op)
    _check_broadcast(a, b, op)
    d = _dt.result_type(a, b)
    if op.startswith("bitwise") and d.is_floating_point:
        raise RuntimeError(f"{op} is only supported for integer and boolean tensors, got {d}")
    return E.Compare.apply(a, b, op=op, dtype=d.np)


# --------------------------------------------------------------------------- arithmetic


def add(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:  # noqa: A002
    if alpha != 1:
        other = mul(other, alpha)
    return _binary(E.Add, input, other)


def sub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:  # noqa: A002
    if alpha != 1:
        other = mul(other, alpha)
    return _binary(E.Sub, input, other)


subtract = sub


def mul(input: Any, other: Any) -> Tensor:  # noqa: A002
    return _binary(E.Mul, input, other)


multiply = mul


def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:  # noqa: A002
    if rounding_mode is None:
        return _binary(E.Div, input, other, floating=True)
    if rounding_mode == "floor":
        return _compare("floor_divide", input, other) if not _is_float(input, other) else floor(
            _binary(E.Div, input, other, floating=True))
    if rounding_mode == "trunc":
        q = _binary(E.Div, input, other, floating=True)
        q = where(q < 0, ceil(q), floor(q))
        return q if _is_float(input, other) else q.type(_dt.result_type(input, other))
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found {rounding_mode!r}")


divide = true_divide = div


def _is_float(a: Any, b: Any) -> bool:
    return _dt.result_type(_operand(a, "div"), _operand(b, "div")).is_floating_point


def floor_divide(input: Any, other: Any) -> Tensor:  # noqa: A002
    return _compare("floor_divide", input, other)


def remainder(input: Any, other: Any) -> Tensor:  # noqa: A002
    return _compare("remainder", input, other)


fmod = remainder


def pow(input: Any, exponent: Any) -> Tensor:  # noqa: A001,A002
    return _binary(E.Pow, input, exponent)


def maximum(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    return _binary(E.Maximum, input, other)


def minimum(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    return _binary(E.Minimum, input, other)


def matmul(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    from .amp.autocast_mode import autocast_args

    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(f"matmul(): arguments must be Tensors, got {type(input).__name__} and {type(other).__name__}")
    input, other = autocast_args("lower", input, other)
    if input._data.dtype != other._data.dtype:
        raise RuntimeError(f"expected both matmul operands to have the same dtype, but got {input.dtype} and "
                           f"{other.dtype}; convert one with .to(dtype)")
    return L.MatMul.apply(input, other)


mm = bmm = matmul


def dot(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    return matmul(input, other)


def outer(input: Tensor, vec2: Tensor) -> Tensor:  # noqa: A002
    return mul(input.reshape(-1, 1), vec2.reshape(1, -1))


def _unary(cls: Any, x: Any, floating: bool = True) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{cls.name}(): argument 'input' must be Tensor, not {type(x).__name__}")
    if floating and not x.is_floating_point():
        x = x.type(_dt.get_default_dtype())
    return cls.apply(x)


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
    return div(log(x), math.log(2.0))


def log10(x: Tensor) -> Tensor:
    return div(log(x), math.log(10.0))


def log1p(x: Tensor) -> Tensor:
    return log(add(x, 1))


def expm1(x: Tensor) -> Tensor:
    return sub(exp(x), 1)


def sqrt(x: Tensor) -> Tensor:
    return _unary(E.Sqrt, x)


def rsqrt(x: Tensor) -> Tensor:
    return _unary(E.Rsqrt, x)


def square(x: Tensor) -> Tensor:
    return mul(x, x)


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


def abs(x: Tensor) -> Tensor:  # noqa: A001
    return _unary(E.Abs, x, floating=False)


absolute = abs


def relu(x: Tensor) -> Tensor:
    return _unary(E.Relu, x, floating=False)


def sign(x: Tensor) -> Tensor:
    return _unary(E.Sign, x, floating=False)


def floor(x: Tensor) -> Tensor:
    return x if not x.is_floating_point() else E.Floor.apply(x)


def ceil(x: Tensor) -> Tensor:
    return x if not x.is_floating_point() else E.Ceil.apply(x)


def round(x: Tensor, *, decimals: int = 0) -> Tensor:  # noqa: A001
    if not x.is_floating_point():
        return x
    if decimals:
        s = 10.0 ** decimals
        return div(E.Round.apply(mul(x, s)), s)
    return E.Round.apply(x)


def trunc(x: Tensor) -> Tensor:
    return where(x < 0, ceil(x), floor(x))


def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A001,A002
    if min is None and max is None:
        raise RuntimeError("clamp: at least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = input
        if min is not None:
            out = maximum(out, min)
        if max is not None:
            out = minimum(out, max)
        return out
    d = _dt.result_type(input, *(v for v in (min, max) if v is not None))
    x = input if d.np == input._data.dtype else input.type(d)
    lo = None if min is None else d.np.type(min)
    hi = None if max is None else d.np.type(max)
    return E.Clamp.apply(x, min=lo, max=hi)


clip = clamp


def where(condition: Tensor, input: Any = None, other: Any = None) -> Any:  # noqa: A002
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    cond = condition if isinstance(condition, Tensor) else as_tensor_like(condition)
    if cond._data.dtype != np.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype {cond.dtype}")
    a, b = _operand(input, "where"), _operand(other, "where")
    d = _dt.result_type(a, b)
    np.broadcast_shapes(cond._data.shape, np.shape(getattr(a, "_data", a)), np.shape(getattr(b, "_data", b)))
    return E.Where.apply(cond, a, b, dtype=d.np)


def nonzero(input: Tensor, *, as_tuple: bool = False) -> Any:  # noqa: A002
    idx = np.nonzero(input._data)
    if as_tuple:
        return tuple(Tensor._wrap(i.astype(np.int64)) for i in idx)
    return Tensor._wrap(np.stack(idx, axis=1).astype(np.int64) if idx else np.zeros((0, 0), np.int64))


def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:  # noqa: A002
    v = value if isinstance(value, Tensor) else Tensor._wrap(np.asarray(value, dtype=input._data.dtype))
    return where(mask, v.type(input.dtype) if isinstance(value, Tensor) else v, input)


def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:  # noqa: A002
    return add(input, mul(sub(end, input), weight))


def logical_not(x: Tensor) -> Tensor:
    return E.LogicalNot.apply(x.bool() if x._data.dtype != np.bool_ else x)


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


# --------------------------------------------------------------------------- reductions


def _reduce_input(x: Tensor, name: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(x).__name__}")
    return x


def sum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:  # noqa: A001,A002
    from .amp.autocast_mode import autocast_args

    (x,) = autocast_args("fp32", _reduce_input(input, "sum"))
    if dtype is not None:
        x = x.type(dtype)
    return R.Sum.apply(x, dim=dim, keepdim=keepdim)


def mean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:  # noqa: A002
    from .amp.autocast_mode import autocast_args

    (x,) = autocast_args("fp32", _reduce_input(input, "mean"))
    if dtype is not None:
        x = x.type(dtype)
    if not x.is_floating_point():
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {x.dtype}; call .float() first or pass dtype=")
    return R.Mean.apply(x, dim=dim, keepdim=keepdim)


class _ValuesIndices(tuple):
    """`(values, indices)` as returned by max/min/sort with a dim; also has `.values` and `.indices`."""

    @property
    def values(self) -> Tensor:
        return self[0]

    @property
    def indices(self) -> Tensor:
        return self[1]


def _maxmin(x: Tensor, dim: Any, keepdim: bool, largest: bool, name: str) -> Any:
    _reduce_input(x, name)
    if isinstance(dim, Tensor):
        return maximum(x, dim) if largest else minimum(x, dim)
    if dim is None:
        return R.Amax.apply(x, dim=None, keepdim=False, largest=largest)
    vals = R.MaxDim.apply(x, dim=dim, keepdim=keepdim, largest=largest)
    idx = argmax(x, dim=dim, keepdim=keepdim) if largest else argmin(x, dim=dim, keepdim=keepdim)
    return _ValuesIndices((vals, idx))


def max(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001,A002
    return _maxmin(input, dim, keepdim, True, "max")


def min(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001,A002
    return _maxmin(input, dim, keepdim, False, "min")


def amax(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:  # noqa: A002
    return R.Amax.apply(input, dim=None if dim == () else dim, keepdim=keepdim, largest=True)


def amin(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:  # noqa: A002
    return R.Amax.apply(input, dim=None if dim == () else dim, keepdim=keepdim, largest=False)


def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:  # noqa: A002
    return R.ArgMax.apply(input, dim=dim, keepdim=keepdim, largest=True)


def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:  # noqa: A002
    return R.ArgMax.apply(input, dim=dim, keepdim=keepdim, largest=False)


def var(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,  # noqa: A002
        correction: float | None = None) -> Tensor:
    from .amp.autocast_mode import autocast_args

    (x,) = autocast_args("fp32", _reduce_input(input, "var"))
    if not x.is_floating_point():
        raise RuntimeError(f"var(): input dtype should be floating point, got {x.dtype}")
    if isinstance(dim, bool):  # var(x, False) is the old unbiased= positional form
        unbiased, dim = dim, None
    corr = correction if correction is not None else (0 if unbiased is False else 1)
    return R.Var.apply(x, dim=dim, correction=corr, keepdim=keepdim)


def std(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,  # noqa: A002
        correction: float | None = None) -> Tensor:
    return sqrt(var(input, dim, unbiased, keepdim, correction=correction))


def var_mean(input: Tensor, dim: Any = None, *, correction: float = 1, keepdim: bool = False) -> tuple:  # noqa: A002
    return var(input, dim, keepdim=keepdim, correction=correction), mean(input, dim, keepdim)


def std_mean(input: Tensor, dim: Any = None, *, correction: float = 1, keepdim: bool = False) -> tuple:  # noqa: A002
    return std(input, dim, keepdim=keepdim, correction=correction), mean(input, dim, keepdim)


def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:  # noqa: A002
    x = input.type(dtype) if dtype is not None else input
    return R.Prod.apply(x, dim=dim, keepdim=keepdim)


def cumsum(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:  # noqa: A002
    x = input.type(dtype) if dtype is not None else input
    return R.CumSum.apply(x, dim=dim)


def logsumexp(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:  # noqa: A002
    x = input if input.is_floating_point() else input.float()
    return R.LogSumExp.apply(x, dim=dim, keepdim=keepdim)


def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A002
    if p in ("fro", 2, 2.0):
        return sqrt(sum(mul(input, input), dim=dim, keepdim=keepdim))
    if p in (1, 1.0):
        return sum(abs(input), dim=dim, keepdim=keepdim)
    if p in (float("inf"), "inf"):
        return amax(abs(input), dim=() if dim is None else dim, keepdim=keepdim)
    return pow(sum(pow(abs(input), p), dim=dim, keepdim=keepdim), 1.0 / p)


def all(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:  # noqa: A001,A002
    return Tensor._wrap(np.asarray(np.all(input._data, axis=dim, keepdims=keepdim)))


def any(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:  # noqa: A001,A002
    return Tensor._wrap(np.asarray(np.any(input._data, axis=dim, keepdims=keepdim)))


def count_nonzero(input: Tensor, dim: Any = None) -> Tensor:  # noqa: A002
    return Tensor._wrap(np.asarray(np.count_nonzero(input._data, axis=dim), dtype=np.int64))


def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:  # noqa: A002
    d = _norm_dim(dim, input.ndim)
    key = -input._data if descending and input._data.dtype != np.bool_ else input._data
    idx = np.argsort(key, axis=d, kind="stable") if input.ndim else np.zeros((), np.int64)
    if descending and input._data.dtype == np.bool_:
        idx = np.flip(np.argsort(input._data, axis=d, kind="stable"), axis=d)
    it = Tensor._wrap(idx.astype(np.int64))
    return _ValuesIndices((gather(input, d, it) if input.ndim else input.clone(), it))


def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:  # noqa: A002
    return sort(input, dim, descending, stable)[1]


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:  # noqa: A002
    d = _norm_dim(dim, input.ndim)
    if not 0 <= k <= input.shape[d]:
        raise RuntimeError(f"topk: k ({k}) is out of range for dimension {dim} of size {input.shape[d]}")
    vals, idx = sort(input, d, descending=largest, stable=True)
    sl = (slice(None),) * d + (slice(0, k),)
    it = idx[sl]
    return _ValuesIndices((gather(input, d, it), it))


# --------------------------------------------------------------------------- shapes


def _shape_arg(shape: Sequence[Any]) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = tuple(shape[0])
    out = []
    for s in shape:
        if isinstance(s, Tensor):
            s = s.item()
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"shape entries must be ints, got {type(s).__name__} in {tuple(shape)}")
        out.append(int(s))
    return tuple(out)


def _infer_shape(shape: tuple[int, ...], numel: int, old: tuple[int, ...]) -> tuple[int, ...]:
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred (only one -1 is allowed in a shape)")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s} in {list(shape)}")
            known *= s
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel} (input shape {list(old)})")
    return shape


def reshape(input: Tensor, *shape: Any) -> Tensor:  # noqa: A002
    shp = _infer_shape(_shape_arg(shape), input._data.size, input._data.shape)
    if shp == input._data.shape:
        return S.Reshape.apply(input, shape=shp) if input._rg else Tensor._wrap(input._data)
    return S.Reshape.apply(input, shape=shp)


def view(input: Tensor, *shape: Any) -> Tensor:  # noqa: A002
    if len(shape) == 1 and isinstance(shape[0], _dt.dtype):
        raise NotImplementedError("view(dtype) is not supported; use .to(dtype)")
    shp = _infer_shape(_shape_arg(shape), input._data.size, input._data.shape)
    probe = input._data.view()
    try:
        probe.shape = shp
    except AttributeError:
        raise RuntimeError(f"view size {list(shp)} is not compatible with input tensor's size {list(input.shape)} and "
                           f"stride (at least one dimension spans across two contiguous subspaces); use .reshape(...) "
                           f"instead") from None
    return S.Reshape.apply(input, shape=shp)


def permute(input: Tensor, *dims: Any) -> Tensor:  # noqa: A002
    d = _shape_arg(dims)
    nd = input.ndim
    if len(d) != nd:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the length "
                           f"of the desired ordering of dimensions i.e. input.dim() = {nd} is not equal to "
                           f"len(dims) = {len(d)}")
    nd_ = tuple(_norm_dim(x, nd) for x in d)
    if len(set(nd_)) != nd:
        raise RuntimeError(f"permute(): duplicate dims are not allowed, got {list(d)}")
    return S.Permute.apply(input, dims=nd_)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:  # noqa: A002
    nd = input.ndim
    if nd == 0:
        return input
    perm = list(range(nd))
    a, b = _norm_dim(dim0, nd), _norm_dim(dim1, nd)
    perm[a], perm[b] = perm[b], perm[a]
    return S.Permute.apply(input, dims=tuple(perm))


swapaxes = swapdims = transpose


def t(input: Tensor) -> Tensor:  # noqa: A002
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return input if input.ndim < 2 else transpose(input, 0, 1)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:  # noqa: A002
    if input.ndim == 0:
        return reshape(input, 1)
    s, e = _norm_dim(start_dim, input.ndim), _norm_dim(end_dim, input.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shp = input._data.shape
    new = shp[:s] + (int(np.prod(shp[s:e + 1])),) + shp[e + 1:]
    return reshape(input, new)


def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:  # noqa: A002
    d = _norm_dim(dim, input.ndim)
    shp = input._data.shape
    inner = _infer_shape(tuple(sizes), shp[d], (shp[d],))
    return reshape(input, shp[:d] + inner + shp[d + 1:])


def squeeze(input: Tensor, dim: Any = None) -> Tensor:  # noqa: A002
    shp = input._data.shape
    if dim is None:
        new = tuple(s for s in shp if s != 1)
    else:
        dims = {_norm_dim(d, input.ndim) for d in ((dim,) if isinstance(dim, int) else dim)}
        new = tuple(s for i, s in enumerate(shp) if not (i in dims and s == 1))
    return reshape(input, new) if new != shp else input


def unsqueeze(input: Tensor, dim: int) -> Tensor:  # noqa: A002
    nd = input.ndim + 1
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})")
    d = dim % nd
    shp = input._data.shape
    return reshape(input, shp[:d] + (1,) + shp[d:])


def expand(input: Tensor, *sizes: Any) -> Tensor:  # noqa: A002
    shp = _shape_arg(sizes)
    cur = input._data.shape
    if len(shp) < len(cur):
        raise RuntimeError(f"expand: the number of sizes provided ({len(shp)}) must be greater or equal to the "
                           f"number of dimensions in the tensor ({len(cur)})")
    lead = len(shp) - len(cur)
    out = []
    for i, s in enumerate(shp):
        c = cur[i - lead] if i >= lead else None
        if s == -1:
            if c is None:
                raise RuntimeError("expand: -1 is not allowed in a leading, non-existing dimension")
            s = c
        if c is not None and c != s and c != 1:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({c}) at "
                               f"non-singleton dimension {i}.  Target sizes: {list(shp)}.  Tensor sizes: {list(cur)}")
        out.append(s)
    return S.Expand.apply(input, shape=tuple(out))


def broadcast_to(input: Tensor, shape: Sequence[int]) -> Tensor:  # noqa: A002
    return expand(input, tuple(shape))


def repeat(input: Tensor, *sizes: Any) -> Tensor:  # noqa: A002
    reps = _shape_arg(sizes)
    if len(reps) < input.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    x = reshape(input, (1,) * (len(reps) - input.ndim) + input._data.shape)
    shp = x._data.shape
    inter = []
    for r, s in zip(reps, shp):
        inter += [r, s]
    y = expand(reshape(x, tuple(v for s in shp for v in (1, s))), tuple(inter))
    return reshape(y, tuple(r * s for r, s in zip(reps, shp)))


def tile(input: Tensor, dims: Sequence[int]) -> Tensor:  # noqa: A002
    dims = tuple(dims)
    if len(dims) < input.ndim:
        dims = (1,) * (input.ndim - len(dims)) + dims
    return repeat(input, dims)


def contiguous(input: Tensor) -> Tensor:  # noqa: A002
    return input if input._data.flags.c_contiguous else S.Copy.apply(input)


def clone(input: Tensor) -> Tensor:  # noqa: A002
    return S.Copy.apply(input)


def flip(input: Tensor, dims: Sequence[int]) -> Tensor:  # noqa: A002
    dims = (dims,) if isinstance(dims, int) else dims
    key = [slice(None)] * input.ndim
    for d in dims:
        key[_norm_dim(d, input.ndim)] = slice(None, None, -1)
    return S.Index.apply(input, key=tuple(key))


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:  # noqa: A002
    d = _norm_dim(dim, input.ndim)
    key = (slice(None),) * d + (slice(start, start + length),)
    return S.Index.apply(input, key=key)


def _seq_of_tensors(tensors: Any, name: str) -> list[Tensor]:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' must be a tuple or list of Tensors, not "
                        f"{type(tensors).__name__}")
    if not tensors:
        raise RuntimeError(f"{name}(): expected a non-empty list of Tensors")
    for i, x in enumerate(tensors):
        if not isinstance(x, Tensor):
            raise TypeError(f"{name}(): expected Tensor as element {i} in argument 0, but got {type(x).__name__}")
    return list(tensors)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    ts = _seq_of_tensors(tensors, "cat")
    ts = [x for x in ts if not (x.ndim == 1 and x.shape[0] == 0)] or ts[:1]  # legacy: empty 1-D tensors skipped
    ref = ts[0]
    d = _norm_dim(dim, ref.ndim)
    for i, x in enumerate(ts):
        if x.ndim != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} and {x.ndim}")
        for k in range(ref.ndim):
            if k != d and x._data.shape[k] != ref._data.shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                   f"{ref._data.shape[k]} but got size {x._data.shape[k]} for tensor number {i} in "
                                   f"the list.")
    out_dt = ref.dtype
    for x in ts[1:]:
        out_dt = _dt.promote_types(out_dt, x.dtype)
    ts = [x if x.dtype is out_dt else x.type(out_dt) for x in ts]
    return S.Cat.apply(*ts, dim=d)


concat = concatenate = cat


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    ts = _seq_of_tensors(tensors, "stack")
    ref = ts[0]
    for i, x in enumerate(ts):
        if x._data.shape != ref._data.shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(ref.shape)} at entry 0 and "
                               f"{list(x.shape)} at entry {i}")
    nd = ref.ndim + 1
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})")
    out_dt = ref.dtype
    for x in ts[1:]:
        out_dt = _dt.promote_types(out_dt, x.dtype)
    ts = [x if x.dtype is out_dt else x.type(out_dt) for x in ts]
    return S.Stack.apply(*ts, dim=dim % nd)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    return cat([x if x.ndim > 1 else unsqueeze(x, 0) for x in tensors], 0)


def split(tensor: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    d = _norm_dim(dim, tensor.ndim)
    n = tensor._data.shape[d]
    if isinstance(split_size_or_sections, (int, np.integer)):
        step = int(split_size_or_sections)
        if step <= 0 and n > 0:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
        sizes = [builtins.min(step, n - i) for i in range(0, n, step)] if n else [0]
    else:
        sizes = list(split_size_or_sections)
        if builtins.sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                               f"dimension {dim}), but got split_sizes={sizes}")
    out, start = [], 0
    for s in sizes:
        out.append(narrow(tensor, d, start, s))
        start += s
    return tuple(out)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:  # noqa: A002
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    n = input.shape[_norm_dim(dim, input.ndim)]
    return split(input, builtins.max(-(-n // chunks), 1) if n else 1, dim)


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:  # noqa: A002
    d = _norm_dim(dim, input.ndim)
    return tuple(select(input, d, i) for i in range(input.shape[d]))


def select(input: Tensor, dim: int, index: int) -> Tensor:  # noqa: A002
    d = _norm_dim(dim, input.ndim)
    return S.Index.apply(input, key=(slice(None),) * d + (int(index),))


def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:  # noqa: A002
    if index._data.dtype != np.int64:
        raise RuntimeError(f"gather(): Expected dtype int64 for index, got {index.dtype}")
    d = _norm_dim(dim, input.ndim)
    return S.Gather.apply(input, index._data, d)


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:  # noqa: A002
    d = _norm_dim(dim, input.ndim)
    return S.Index.apply(input, key=(slice(None),) * d + (index._data.astype(np.int64),))


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:  # noqa: A002
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise RuntimeError(f"Padding length must be divisible by 2 and at most twice the number of dimensions "
                           f"({input.ndim}), got {len(pad)}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"pad mode {mode!r} is not supported; use constant, reflect, replicate or circular")
    return S.Pad.apply(input, pad=tuple(int(p) for p in pad), mode=mode, value=0.0 if value is None else value)


def tril(input: Tensor, diagonal: int = 0) -> Tensor:  # noqa: A002
    mask = np.tril(np.ones(input._data.shape[-2:], dtype=bool), diagonal)
    return where(Tensor._wrap(mask), input, Tensor._wrap(np.zeros((), input._data.dtype)))


def triu(input: Tensor, diagonal: int = 0) -> Tensor:  # noqa: A002
    mask = np.triu(np.ones(input._data.shape[-2:], dtype=bool), diagonal)
    return where(Tensor._wrap(mask), input, Tensor._wrap(np.zeros((), input._data.dtype)))


def einsum(equation: str, *operands: Any) -> Tensor:
    raise NotImplementedError("einsum is not implemented in dtorch yet; use matmul/permute/reshape")


# --------------------------------------------------------------------------- indexing


def _index_key(key: Any, shape: tuple[int, ...]) -> tuple[Any, ...]:
    if not isinstance(key, tuple):
        key = (key,)
    out = []
    for k in key:
        if isinstance(k, Tensor):
            k = k._data
            if k.dtype != np.bool_ and k.dtype.kind not in "iu":
                raise IndexError(f"tensors used as indices must be long, int, byte or bool tensors, got {k.dtype}")
            if k.dtype.kind in "iu" and k.dtype != np.bool_:
                k = k.astype(np.intp, copy=False)
        elif isinstance(k, (list,)) and k and not isinstance(k[0], slice):
            k = np.asarray(k)
            if k.dtype.kind == "f":
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        elif isinstance(k, np.ndarray):
            pass
        elif isinstance(k, (bool, np.bool_)):
            k = np.asarray(k)
        elif isinstance(k, np.integer):
            k = int(k)
        elif not (k is None or k is Ellipsis or isinstance(k, (int, slice))):
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or bool tensors are valid "
                             f"indices, got {type(k).__name__}")
        if isinstance(k, slice) and k.step is not None and k.step <= 0:
            raise ValueError("step must be greater than zero")
        out.append(k)
    return tuple(out)


def getitem(x: Tensor, key: Any) -> Tensor:
    k = _index_key(key, x._data.shape)
    try:
        return S.Index.apply(x, key=k)
    except IndexError as e:
        raise IndexError(f"index {key!r} is out of bounds for a tensor of shape {list(x.shape)}: {e}") from None


def setitem(x: Tensor, key: Any, value: Any) -> None:
    k = _index_key(key, x._data.shape)
    v = value if isinstance(value, Tensor) else as_tensor_like(value, x)
    if v._data.dtype != x._data.dtype:
        v = v.type(x.dtype)
    if is_grad_enabled() and (x._rg or v._rg):
        x._inplace(S.IndexPut.apply(x, v, key=k))
        return
    if not x._data.flags.writeable:
        raise RuntimeError("cannot assign into an expanded (broadcast) view; call .clone() first")
    try:
        x._data[k] = v._data
    except (ValueError, IndexError) as e:
        raise RuntimeError(f"cannot assign a value of shape {list(v.shape)} to index {key!r} of a tensor of shape "
                           f"{list(x.shape)}: {e}") from None


__all__ = [_n for _n in dir() if not _n.startswith("_") and _n not in {
    "annotations", "builtins", "math", "np", "Any", "Sequence", "Size", "Tensor", "E", "L", "R", "S",
    "is_grad_enabled", "as_tensor_like", "getitem", "setitem"}]
