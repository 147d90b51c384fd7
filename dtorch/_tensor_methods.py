"""Attach the functional API to `Tensor` as methods, operators and in-place variants."""

from __future__ import annotations

from typing import Any

from . import _functions as F
from ._functions.reduce import log_softmax, softmax
from ._tensor import Tensor


def _method(fn: Any) -> Any:
    def m(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)

    m.__name__ = fn.__name__
    m.__doc__ = fn.__doc__
    return m


_PLAIN = [
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide", "remainder", "fmod",
    "pow", "maximum", "minimum", "matmul", "mm", "bmm", "dot", "outer", "neg", "negative", "exp", "log", "log2",
    "log10", "log1p", "expm1", "sqrt", "rsqrt", "square", "tanh", "sigmoid", "sin", "cos", "erf", "reciprocal",
    "abs", "absolute", "relu", "sign", "floor", "ceil", "round", "trunc", "clamp", "clip", "masked_fill", "lerp",
    "logical_not", "logical_and", "logical_or", "logical_xor", "eq", "ne", "lt", "le", "gt", "ge", "greater",
    "greater_equal", "less", "less_equal", "not_equal", "equal", "allclose", "isclose", "isnan", "isinf",
    "isfinite", "sum", "mean", "max", "min", "amax", "amin", "argmax", "argmin", "var", "std", "prod", "cumsum",
    "logsumexp", "norm", "all", "any", "count_nonzero", "sort", "argsort", "topk", "reshape", "view", "permute",
    "transpose", "swapaxes", "swapdims", "t", "flatten", "unflatten", "squeeze", "unsqueeze", "expand",
    "broadcast_to", "repeat", "tile", "contiguous", "clone", "flip", "narrow", "split", "chunk", "unbind", "select",
    "gather", "index_select", "tril", "triu", "nonzero", "bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor",
    "fix",
]
for _name in _PLAIN:
    setattr(Tensor, _name, _method(getattr(F, _name)))


def _where(self: Tensor, condition: Tensor, other: Any) -> Tensor:
    return F.where(condition, self, other)


def _view_as(self: Tensor, other: Tensor) -> Tensor:
    return F.view(self, other.shape)


def _reshape_as(self: Tensor, other: Tensor) -> Tensor:
    return F.reshape(self, other.shape)


def _expand_as(self: Tensor, other: Tensor) -> Tensor:
    return F.expand(self, other.shape)


def _softmax(self: Tensor, dim: int, dtype: Any = None) -> Tensor:
    return softmax(self, dim, dtype=dtype)


def _log_softmax(self: Tensor, dim: int, dtype: Any = None) -> Tensor:
    return log_softmax(self, dim, dtype=dtype)


Tensor.where = _where
Tensor.view_as = _view_as
Tensor.reshape_as = _reshape_as
Tensor.expand_as = _expand_as
Tensor.softmax = _softmax
Tensor.log_softmax = _log_softmax
Tensor.T = property(lambda self: F.permute(self, tuple(range(self.ndim - 1, -1, -1))))
Tensor.mT = property(lambda self: F.transpose(self, -2, -1))

# operators ---------------------------------------------------------------------------------------------
Tensor.__add__ = lambda a, b: F.add(a, b)
Tensor.__radd__ = lambda a, b: F.add(b, a)
Tensor.__sub__ = lambda a, b: F.sub(a, b)
Tensor.__rsub__ = lambda a, b: F.sub(b, a)
Tensor.__mul__ = lambda a, b: F.mul(a, b)
Tensor.__rmul__ = lambda a, b: F.mul(b, a)
Tensor.__truediv__ = lambda a, b: F.div(a, b)
Tensor.__rtruediv__ = lambda a, b: F.div(b, a)
Tensor.__floordiv__ = lambda a, b: F.floor_divide(a, b)
Tensor.__rfloordiv__ = lambda a, b: F.floor_divide(b, a)
Tensor.__mod__ = lambda a, b: F.remainder(a, b)
Tensor.__rmod__ = lambda a, b: F.remainder(b, a)
Tensor.__pow__ = lambda a, b: F.pow(a, b)
Tensor.__rpow__ = lambda a, b: F.pow(F.as_tensor_like(b, a), a)
Tensor.__matmul__ = lambda a, b: F.matmul(a, b)
Tensor.__rmatmul__ = lambda a, b: F.matmul(F.as_tensor_like(b), a)
Tensor.__neg__ = lambda a: F.neg(a)
Tensor.__pos__ = lambda a: a
Tensor.__abs__ = lambda a: F.abs(a)
Tensor.__invert__ = lambda a: F.bitwise_not(a)
Tensor.__and__ = lambda a, b: F.bitwise_and(a, b)
Tensor.__or__ = lambda a, b: F.bitwise_or(a, b)
Tensor.__xor__ = lambda a, b: F.bitwise_xor(a, b)
Tensor.__rand__ = lambda a, b: F.bitwise_and(b, a)
Tensor.__ror__ = lambda a, b: F.bitwise_or(b, a)
Tensor.__rxor__ = lambda a, b: F.bitwise_xor(b, a)
Tensor.__eq__ = lambda a, b: F.eq(a, b) if isinstance(b, Tensor) or F._scalar_ok(b) else NotImplemented
Tensor.__ne__ = lambda a, b: F.ne(a, b) if isinstance(b, Tensor) or F._scalar_ok(b) else NotImplemented
Tensor.__lt__ = lambda a, b: F.lt(a, b)
Tensor.__le__ = lambda a, b: F.le(a, b)
Tensor.__gt__ = lambda a, b: F.gt(a, b)
Tensor.__ge__ = lambda a, b: F.ge(a, b)
Tensor.__getitem__ = F.getitem
Tensor.__setitem__ = F.setitem


# in-place variants: out-of-place op, then written into self's buffer (or rebound under autograd) ------------
def _inplace(fn: Any) -> Any:
    def m(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return self._inplace(fn(self, *args, **kwargs))

    m.__name__ = fn.__name__ + "_"
    return m


for _name in ["add", "sub", "mul", "div", "pow", "clamp", "clip", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid",
              "abs", "neg", "relu", "floor", "ceil", "round", "trunc", "masked_fill", "reciprocal", "sign", "square",
              "lerp", "sin", "cos", "maximum", "minimum", "erf", "log1p", "expm1", "remainder", "floor_divide", "fmod",
              "log2", "log10", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "logical_not", "fix",
              "subtract", "multiply", "divide", "true_divide"]:
    setattr(Tensor, _name + "_", _inplace(getattr(F, _name)))

Tensor.__iadd__ = Tensor.add_
Tensor.__isub__ = Tensor.sub_
Tensor.__imul__ = Tensor.mul_
Tensor.__itruediv__ = Tensor.div_
Tensor.__ipow__ = Tensor.pow_
Tensor.__imod__ = Tensor.remainder_
Tensor.__ifloordiv__ = Tensor.floor_divide_
Tensor.__iand__ = Tensor.bitwise_and_
Tensor.__ior__ = Tensor.bitwise_or_
Tensor.__ixor__ = Tensor.bitwise_xor_
