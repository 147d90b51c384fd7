"""Elementwise primitives: arithmetic with broadcasting, unary math, comparison, where, clamp, cast."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd.function import Function, unbroadcast

_LOW = (np.dtype(np.float16),)


def _wide(x: np.ndarray) -> np.ndarray:
    """Reduced-precision floats are computed in float32 and rounded once, as PyTorch's CPU kernels do."""
    return x.astype(np.float32) if x.dtype in _LOW or x.dtype.name == "bfloat16" else x


class _Binary(Function):
    def forward(self, a: Any, b: Any, dtype: np.dtype | None = None) -> np.ndarray:
        if dtype is not None:
            a = a.astype(dtype, copy=False) if isinstance(a, np.ndarray) else dtype.type(a)
            b = b.astype(dtype, copy=False) if isinstance(b, np.ndarray) else dtype.type(b)
        self.shapes = (np.shape(a), np.shape(b))
        return self.compute(a, b)

    def compute(self, a: Any, b: Any) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def grads(self, ga: Any, gb: Any) -> tuple[np.ndarray | None, ...]:
        """Unbroadcast per-input gradients to the tensor inputs' shapes (parents keep input order)."""
        out = []
        it = iter(self.needs_input_grad)
        for shape, g, is_tensor in zip(self.shapes, (ga, gb), self.tensor_mask):
            if not is_tensor:
                continue
            out.append(unbroadcast(g, shape) if next(it) and g is not None else None)
        return tuple(out)

    @classmethod
    def apply(cls, a: Any, b: Any, dtype: np.dtype | None = None) -> Any:  # type: ignore[override]
        from ..tensor import Tensor

        res = super().apply(a, b, dtype=dtype)
        if res._ctx is not None:
            res._ctx.tensor_mask = (isinstance(a, Tensor), isinstance(b, Tensor))
        return res


class Add(_Binary):
    name = "add"

    def compute(self, a: Any, b: Any) -> np.ndarray:
        return np.add(a, b)

    def backward(self, g: np.ndarray) -> tuple[np.ndarray | None, ...]:
        return self.grads(g, g)


class Sub(_Binary):
    name = "sub"

    def compute(self, a: Any, b: Any) -> np.ndarray:
        return np.subtract(a, b)

    def backward(self, g: np.ndarray) -> tuple[np.ndarray | None, ...]:
        return self.grads(g, -g)


class Mul(_Binary):
    name = "mul"

    def compute(self, a: Any, b: Any) -> np.ndarray:
        self.save(a, b)
        return np.multiply(a, b)

    def backward(self, g: np.ndarray) -> tuple[np.ndarray | None, ...]:
        a, b = self.saved
        return self.grads(g * b, g * a)


class Div(_Binary):
    name = "div"

    def compute(self, a: Any, b: Any) -> np.ndarray:
        self.save(a, b)
        return np.true_divide(a, b)

    def backward(self, g: np.ndarray) -> tuple[np.ndarray | None, ...]:
        a, b = self.saved
        ga = g / b
        return self.grads(ga, -ga * a / b)


class Pow(_Binary):
    name = "pow"

    def compute(self, a: Any, b: Any) -> np.ndarray:
        out = np.power(a, b)
        self.save(a, b, out)
        return out

    def backward(self, g: np.ndarray) -> tuple[np.ndarray | None, ...]:
        a, b, out = self.saved
        with np.errstate(divide="ignore", invalid="ignore"):
            ga = np.where(np.equal(b, 0), 0, g * b * np.power(a, np.subtract(b, 1)))
            gb = g * np.where(np.equal(a, 0) & np.greater_equal(b, 0), 0, out * np.log(a))
        return self.grads(ga.astype(g.dtype, copy=False), gb.astype(g.dtype, copy=False))


class Maximum(_Binary):
    name = "maximum"

    def compute(self, a: Any, b: Any) -> np.ndarray:
        self.save(a, b)
        return np.maximum(a, b)

    def backward(self, g: np.ndarray) -> tuple[np.ndarray | None, ...]:
        a, b = self.saved
        # ties split the gradient evenly, as PyTorch does
        wa = (a > b) + 0.5 * (a == b)
        return self.grads(g * wa, g * (1 - wa))


class Minimum(_Binary):
    name = "minimum"

    def compute(self, a: Any, b: Any) -> np.ndarray:
        self.save(a, b)
        return np.minimum(a, b)

    def backward(self, g: np.ndarray) -> tuple[np.ndarray | None, ...]:
        a, b = self.saved
        wa = (a < b) + 0.5 * (a == b)
        return self.grads(g * wa, g * (1 - wa))


class Compare(Function):
    """Comparisons and logical ops: no gradient, boolean result."""

    name = "compare"
    differentiable = False
    _UFUNCS = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
               "ge": np.greater_equal, "logical_and": np.logical_and, "logical_or": np.logical_or,
               "logical_xor": np.logical_xor, "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
               "bitwise_xor": np.bitwise_xor, "floor_divide": np.floor_divide, "remainder": np.remainder}

    def forward(self, a: Any, b: Any, op: str, dtype: np.dtype | None = None) -> np.ndarray:
        if dtype is not None:
            a = a.astype(dtype, copy=False) if isinstance(a, np.ndarray) else dtype.type(a)
            b = b.astype(dtype, copy=False) if isinstance(b, np.ndarray) else dtype.type(b)
        return np.asarray(self._UFUNCS[op](a, b))


class _Unary(Function):
    def forward(self, x: np.ndarray) -> np.ndarray:
        out = self.f(x)
        self.save(x, out)
        return out

    def backward(self, g: np.ndarray) -> np.ndarray:
        x, out = self.saved
        return self.df(g, x, out)


def _unary(op_name: str, f: Any, df: Any) -> type[Function]:
    cls = type(op_name.capitalize(), (_Unary,), {"name": op_name, "f": staticmethod(f), "df": staticmethod(df)})
    return cls


def _sigmoid(x: np.ndarray) -> np.ndarray:
    w = _wide(x)
    with np.errstate(over="ignore"):
        return (1.0 / (1.0 + np.exp(-w))).astype(x.dtype, copy=False)


def _keep(f: Any) -> Any:
    return lambda x: f(_wide(x)).astype(x.dtype, copy=False)


Neg = _unary("neg", np.negative, lambda g, x, o: -g)
Exp = _unary("exp", _keep(np.exp), lambda g, x, o: g * o)
Log = _unary("log", _keep(np.log), lambda g, x, o: g / x)
Sqrt = _unary("sqrt", _keep(np.sqrt), lambda g, x, o: g / (2 * o))
Rsqrt = _unary("rsqrt", _keep(lambda x: 1 / np.sqrt(x)), lambda g, x, o: -0.5 * g * o * o * o)
Tanh = _unary("tanh", _keep(np.tanh), lambda g, x, o: g * (1 - o * o))
Sigmoid = _unary("sigmoid", _sigmoid, lambda g, x, o: g * o * (1 - o))
Abs = _unary("abs", np.abs, lambda g, x, o: g * np.sign(x))
Sin = _unary("sin", _keep(np.sin), lambda g, x, o: g * np.cos(x))
Cos = _unary("cos", _keep(np.cos), lambda g, x, o: -g * np.sin(x))
Reciprocal = _unary("reciprocal", _keep(np.reciprocal), lambda g, x, o: -g * o * o)
Relu = _unary("relu", lambda x: np.maximum(x, 0), lambda g, x, o: g * (o > 0))
Sign = _unary("sign", np.sign, lambda g, x, o: np.zeros_like(g))
Floor = _unary("floor", np.floor, lambda g, x, o: np.zeros_like(g))
Ceil = _unary("ceil", np.ceil, lambda g, x, o: np.zeros_like(g))
Round = _unary("round", np.round, lambda g, x, o: np.zeros_like(g))
for _cls in (Neg, Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Abs, Sin, Cos, Reciprocal, Relu, Sign, Floor, Ceil, Round):
    globals()[_cls.__name__] = _cls


class LogicalNot(Function):
    name = "logical_not"
    differentiable = False

    def forward(self, x: np.ndarray) -> np.ndarray:
        return np.logical_not(x) if x.dtype == np.bool_ else np.asarray(np.invert(x))


class Clamp(Function):
    name = "clamp"

    def forward(self, x: np.ndarray, min: Any = None, max: Any = None) -> np.ndarray:  # noqa: A002
        self.save(x, min, max)
        out = x
        if min is not None:
            out = np.maximum(out, min)
        if max is not None:
            out = np.minimum(out, max)
        return np.asarray(out, dtype=x.dtype) if out is not x else x.copy()

    def backward(self, g: np.ndarray) -> np.ndarray:
        x, lo, hi = self.saved
        mask = np.ones(x.shape, dtype=bool)
        if lo is not None:
            mask &= x >= lo
        if hi is not None:
            mask &= x <= hi
        return g * mask


class Where(Function):
    name = "where"

    def forward(self, cond: np.ndarray, a: Any, b: Any, dtype: np.dtype | None = None) -> np.ndarray:
        if dtype is not None:
            a = a.astype(dtype, copy=False) if isinstance(a, np.ndarray) else dtype.type(a)
            b = b.astype(dtype, copy=False) if isinstance(b, np.ndarray) else dtype.type(b)
        self.save(cond, np.shape(a), np.shape(b))
        return np.where(cond, a, b)

    @classmethod
    def apply(cls, cond: Any, a: Any, b: Any, dtype: np.dtype | None = None) -> Any:  # type: ignore[override]
        from ..tensor import Tensor

        res = super().apply(cond, a, b, dtype=dtype)
        if res._ctx is not None:
            res._ctx.tensor_mask = tuple(isinstance(x, Tensor) for x in (cond, a, b))
        return res

    def backward(self, g: np.ndarray) -> tuple[np.ndarray | None, ...]:
        cond, sa, sb = self.saved
        zero = np.zeros((), dtype=g.dtype)
        out: list[np.ndarray | None] = []
        need = iter(self.needs_input_grad)
        for i, is_t in enumerate(self.tensor_mask):
            if not is_t:
                continue
            n = next(need)
            if i == 0 or not n:
                out.append(None)
            elif i == 1:
                out.append(unbroadcast(np.where(cond, g, zero), sa))
            else:
                out.append(unbroadcast(np.where(cond, zero, g), sb))
        return tuple(out)


class Cast(Function):
    name = "cast"

    def forward(self, x: np.ndarray, dtype: np.dtype) -> np.ndarray:
        self.src = x.dtype
        return x.astype(dtype)

    def backward(self, g: np.ndarray) -> np.ndarray:
        return g.astype(self.src)


class Erf(Function):
    name = "erf"

    def forward(self, x: np.ndarray) -> np.ndarray:
        from scipy.special import erf

        self.save(x)
        return erf(_wide(x)).astype(x.dtype, copy=False)

    def backward(self, g: np.ndarray) -> np.ndarray:
        (x,) = self.saved
        return g * (2.0 / np.sqrt(np.pi)) * np.exp(-x * x)
