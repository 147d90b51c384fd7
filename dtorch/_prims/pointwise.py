"""Elementwise primitives: arithmetic with broadcasting, unary math, comparison, where, clamp, cast."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ..autograd import function as _function
from ..autograd.function import Function, unbroadcast
from ..dtypes import BF16_NP, LOW_FLOAT_NP


def wide(x: np.ndarray) -> np.ndarray:
    """Reduced-precision floats are computed in float32 and rounded once, as PyTorch's CPU kernels do."""
    return x.astype(np.float32) if x.dtype in LOW_FLOAT_NP else x


def cast(x: Any, dtype: np.dtype) -> Any:
    """`x` (an array or a Python/NumPy scalar) as `dtype`; out-of-range integers wrap as in a C cast."""
    if isinstance(x, np.ndarray):
        return x.astype(dtype, copy=False)
    try:
        return dtype.type(x)
    except OverflowError:
        return np.asarray(x).astype(dtype)[()]


def _int_zero_check(b: Any) -> None:
    if np.any(np.equal(b, 0)):
        raise RuntimeError("ZeroDivisionError")


class _Binary(Function):
    def forward(self, a: Any, b: Any, dtype: np.dtype | None = None) -> np.ndarray:
        if dtype is not None:
            a = a.astype(dtype, copy=False) if a.__class__ is np.ndarray else cast(a, dtype)
            b = b.astype(dtype, copy=False) if b.__class__ is np.ndarray else cast(b, dtype)
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
        res = super().apply(a, b, dtype=dtype)
        if res._ctx is not None:
            tensor_cls = _function._Tensor
            res._ctx.tensor_mask = (isinstance(a, tensor_cls), isinstance(b, tensor_cls))
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
        kind = np.result_type(a, b).kind
        if kind == "b":
            raise NotImplementedError('"pow" not implemented for \'Bool\'')
        if kind in "iu" and np.any(np.less(b, 0)):
            if not isinstance(b, np.ndarray) and isinstance(a, np.ndarray):
                raise RuntimeError("Integers to negative integer powers are not allowed.")
            # integer powers with negative exponents: 1 for base 1, +-1 for base -1, else 0 (as PyTorch)
            out = np.power(a, np.maximum(b, 0))
            neg_one = np.where(np.equal(np.remainder(b, 2), 0), 1, -1)
            low = np.where(np.equal(a, 1), 1, np.where(np.equal(a, -1), neg_one, 0))
            out = np.where(np.less(b, 0), low, out).astype(out.dtype, copy=False)
        else:
            out = np.power(a, b)
        self.save(a, b, out)
        return np.asarray(out)

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


def _trunc_divide(a: Any, b: Any) -> Any:
    """Division rounded toward zero; exact for integers (no detour through floats)."""
    if np.result_type(a, b).kind == "f":
        return np.trunc(np.true_divide(a, b))
    q = np.floor_divide(a, b)
    fix = np.not_equal(np.remainder(a, b), 0) & np.not_equal(np.less(a, 0), np.less(b, 0))
    return q + fix.astype(q.dtype)


class Remainder(_Binary):
    """Python-style modulus (the result has the sign of the divisor)."""

    name = "remainder"

    def compute(self, a: Any, b: Any) -> np.ndarray:
        kind = np.result_type(a, b).kind
        if kind == "b":
            raise NotImplementedError('"remainder_cpu" not implemented for \'Bool\'')
        if kind in "iu":
            _int_zero_check(b)
        self.save(a, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(np.remainder(a, b))

    def backward(self, g: np.ndarray) -> tuple[np.ndarray | None, ...]:
        a, b = self.saved
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.grads(g, -g * np.floor_divide(a, b))


class Fmod(_Binary):
    """C-style modulus (the result has the sign of the dividend)."""

    name = "fmod"

    def compute(self, a: Any, b: Any) -> np.ndarray:
        kind = np.result_type(a, b).kind
        if kind == "b":
            raise NotImplementedError('"fmod_cpu" not implemented for \'Bool\'')
        if kind in "iu":
            _int_zero_check(b)
        self.save(a, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(np.fmod(a, b))

    def backward(self, g: np.ndarray) -> tuple[np.ndarray | None, ...]:
        a, b = self.saved
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.grads(g, -g * np.trunc(np.true_divide(a, b)))


class Compare(Function):
    """Comparisons and logical ops: no gradient, boolean result."""

    name = "compare"
    differentiable = False
    _UFUNCS: ClassVar[dict[str, Any]] = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
               "ge": np.greater_equal, "logical_and": np.logical_and, "logical_or": np.logical_or,
               "logical_xor": np.logical_xor, "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
               "bitwise_xor": np.bitwise_xor, "floor_divide": np.floor_divide, "trunc_divide": _trunc_divide}

    def forward(self, a: Any, b: Any, op: str, dtype: np.dtype | None = None) -> np.ndarray:
        if dtype is not None:
            a = cast(a, dtype)
            b = cast(b, dtype)
        if op in ("floor_divide", "trunc_divide"):
            kind = np.result_type(a, b).kind
            if kind == "b":
                raise NotImplementedError('"div_floor_cpu" not implemented for \'Bool\'')
            if kind in "iu":
                _int_zero_check(b)
            else:
                with np.errstate(divide="ignore", invalid="ignore"):
                    return np.asarray(self._UFUNCS[op](a, b))
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
    w = wide(x)
    with np.errstate(over="ignore"):
        return (1.0 / (1.0 + np.exp(-w))).astype(x.dtype, copy=False)


def _keep(f: Any) -> Any:
    return lambda x: f(wide(x)).astype(x.dtype, copy=False)


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
def _sign(x: np.ndarray) -> np.ndarray:
    if x.dtype == np.bool_:
        return x.copy()
    out = np.sign(x)
    if x.dtype.kind == "f" or x.dtype is BF16_NP:
        out = np.where(np.isnan(x), np.zeros((), x.dtype), out)  # PyTorch: sign(nan) = 0
    return out


def _trunc(x: np.ndarray) -> np.ndarray:
    return np.trunc(x) if x.dtype is not BF16_NP else np.trunc(x.astype(np.float32)).astype(x.dtype)


_LN2, _LN10 = float(np.log(2.0)), float(np.log(10.0))

Sign = _unary("sign", _sign, lambda g, x, o: np.zeros_like(g))
Trunc = _unary("trunc", _trunc, lambda g, x, o: np.zeros_like(g))
Log2 = _unary("log2", _keep(np.log2), lambda g, x, o: g / (x * _LN2))
Log10 = _unary("log10", _keep(np.log10), lambda g, x, o: g / (x * _LN10))
Log1p = _unary("log1p", _keep(np.log1p), lambda g, x, o: g / (x + 1))
Expm1 = _unary("expm1", _keep(np.expm1), lambda g, x, o: g * (o + 1))
Floor = _unary("floor", np.floor, lambda g, x, o: np.zeros_like(g))
Ceil = _unary("ceil", np.ceil, lambda g, x, o: np.zeros_like(g))
Round = _unary("round", np.round, lambda g, x, o: np.zeros_like(g))
for _cls in (Neg, Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Abs, Sin, Cos, Reciprocal, Relu, Sign, Floor, Ceil, Round,
             Trunc, Log2, Log10, Log1p, Expm1):
    globals()[_cls.__name__] = _cls


class LogicalNot(Function):
    name = "logical_not"
    differentiable = False

    def forward(self, x: np.ndarray) -> np.ndarray:
        return np.logical_not(x) if x.dtype == np.bool_ else np.asarray(np.invert(x))


class BitwiseNot(Function):
    name = "bitwise_not"
    differentiable = False

    def forward(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.invert(x))


class Clamp(Function):
    name = "clamp"

    def forward(self, x: np.ndarray, min: Any = None, max: Any = None) -> np.ndarray:
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
            a = cast(a, dtype)
            b = cast(b, dtype)
        self.save(cond, np.shape(a), np.shape(b))
        return np.where(cond, a, b)

    @classmethod
    def apply(cls, cond: Any, a: Any, b: Any, dtype: np.dtype | None = None) -> Any:  # type: ignore[override]
        res = super().apply(cond, a, b, dtype=dtype)
        if res._ctx is not None:
            tensor_cls = _function._Tensor
            res._ctx.tensor_mask = tuple(isinstance(x, tensor_cls) for x in (cond, a, b))
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
        return erf(wide(x)).astype(x.dtype, copy=False)

    def backward(self, g: np.ndarray) -> np.ndarray:
        (x,) = self.saved
        return g * (2.0 / np.sqrt(np.pi)) * np.exp(-x * x)
