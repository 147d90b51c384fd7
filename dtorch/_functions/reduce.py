"""Reductions: sum, mean, max/min (with indices), var/std, prod, cumsum, sort and friends; softmax along a dim.

`softmax` and `log_softmax` are `dtorch.nn.functional`'s and the Tensor methods' (they stay out of `dt.*`).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .. import dtypes as _dt
from .._prims import activation as A
from .._prims import reduce as R
from .._tensor import Tensor, _norm_dim
from ._common import _reduce_input, _ValuesIndices
from .index import gather
from .pointwise import abs, maximum, minimum, pow

# --------------------------------------------------------------------------- reductions

def sum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    from ..amp.autocast_mode import autocast_args

    (x,) = autocast_args("fp32", _reduce_input(input, "sum"))
    if dtype is not None:
        x = x.type(dtype)
    return R.Sum.apply(x, dim=dim, keepdim=keepdim)


def mean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    from ..amp.autocast_mode import autocast_args

    (x,) = autocast_args("fp32", _reduce_input(input, "mean"))
    if dtype is not None:
        x = x.type(dtype)
    if not x.is_floating_point():
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {x.dtype}; call .float() first or pass dtype=")
    return R.Mean.apply(x, dim=dim, keepdim=keepdim)



def _maxmin(x: Tensor, dim: Any, keepdim: bool, largest: bool, name: str) -> Any:
    _reduce_input(x, name)
    if isinstance(dim, Tensor):
        return maximum(x, dim) if largest else minimum(x, dim)
    if dim is None:
        return R.Amax.apply(x, dim=None, keepdim=False, largest=largest)
    vals = R.MaxDim.apply(x, dim=dim, keepdim=keepdim, largest=largest)
    idx = R.ArgMax.apply(x, dim=dim, keepdim=keepdim, largest=largest)
    return _ValuesIndices((vals, idx))


def max(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    return _maxmin(input, dim, keepdim, True, "max")


def min(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    return _maxmin(input, dim, keepdim, False, "min")


def amax(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    return R.Amax.apply(input, dim=None if dim == () else dim, keepdim=keepdim, largest=True)


def amin(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    return R.Amax.apply(input, dim=None if dim == () else dim, keepdim=keepdim, largest=False)


def _arg_input(x: Any, name: str) -> Tensor:
    _reduce_input(x, name)
    if x._data.dtype == np.bool_:
        raise RuntimeError(f"{name}(): does not support bool input")
    return x


def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    return R.ArgMax.apply(_arg_input(input, "argmax"), dim=dim, keepdim=keepdim, largest=True)


def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    return R.ArgMax.apply(_arg_input(input, "argmin"), dim=dim, keepdim=keepdim, largest=False)


def _var_args(input: Tensor, dim: Any, unbiased: bool | None, correction: float | None,
              name: str) -> tuple[Tensor, Any, float]:
    from ..amp.autocast_mode import autocast_args

    (x,) = autocast_args("fp32", _reduce_input(input, name))
    if not x.is_floating_point():
        raise RuntimeError(f"{name}(): input dtype should be floating point, got {x.dtype}")
    if isinstance(dim, bool):  # var(x, False) is the old unbiased= positional form
        unbiased, dim = dim, None
    if unbiased is not None and correction is not None:
        raise RuntimeError(f"{name}(): cannot specify both unbiased and correction")
    corr = correction if correction is not None else (0 if unbiased is False else 1)
    return x, dim, corr


def var(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None) -> Tensor:
    x, dim, corr = _var_args(input, dim, unbiased, correction, "var")
    return R.Var.apply(x, dim=dim, correction=corr, keepdim=keepdim)


def std(input: Tensor, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None) -> Tensor:
    x, dim, corr = _var_args(input, dim, unbiased, correction, "std")
    return R.Std.apply(x, dim=dim, correction=corr, keepdim=keepdim)


def var_mean(input: Tensor, dim: Any = None, *, correction: float = 1, keepdim: bool = False) -> tuple:
    return var(input, dim, keepdim=keepdim, correction=correction), mean(input, dim, keepdim)


def std_mean(input: Tensor, dim: Any = None, *, correction: float = 1, keepdim: bool = False) -> tuple:
    return std(input, dim, keepdim=keepdim, correction=correction), mean(input, dim, keepdim)


def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    if dim is None and keepdim:
        raise TypeError("prod(): argument 'dim' (position 2) must be int, not NoneType")
    x = input.type(dtype) if dtype is not None else input
    return R.Prod.apply(x, dim=dim, keepdim=keepdim)


def cumsum(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    x = input.type(dtype) if dtype is not None else input
    return R.CumSum.apply(x, dim=dim)


def logsumexp(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    x = input if input.is_floating_point() else input.float()
    return R.LogSumExp.apply(x, dim=dim, keepdim=keepdim)


def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False) -> Tensor:
    if p in ("fro", 2, 2.0):
        x = input if input.is_floating_point() else input.type(_dt.get_default_dtype())
        return R.Norm.apply(x, dim=dim, keepdim=keepdim)
    if p in (1, 1.0):
        return sum(abs(input), dim=dim, keepdim=keepdim)
    if p in (float("inf"), "inf"):
        return amax(abs(input), dim=() if dim is None else dim, keepdim=keepdim)
    return pow(sum(pow(abs(input), p), dim=dim, keepdim=keepdim), 1.0 / p)


def _logical_reduce(f: Any, x: Tensor, dim: Any, keepdim: bool, name: str) -> Tensor:
    _reduce_input(x, name)
    axes = R._axes(dim, x.ndim)
    out = np.asarray(f(x._data, axis=axes, keepdims=keepdim))
    return Tensor._wrap(out.astype(np.uint8) if x._data.dtype == np.uint8 else out)  # uint8 in, uint8 out (torch)


def all(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    return _logical_reduce(np.all, input, dim, keepdim, "all")


def any(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    return _logical_reduce(np.any, input, dim, keepdim, "any")


def count_nonzero(input: Tensor, dim: Any = None) -> Tensor:
    return Tensor._wrap(np.asarray(np.count_nonzero(input._data, axis=dim), dtype=np.int64))


def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:
    from .. import _tensor as _tensor_mod

    if _tensor_mod._trace_check is not None:  # dt.export: the order is computed here in NumPy, it cannot be traced
        _tensor_mod._trace_check(input, "sort() (also argsort() and topk())")
    d = _norm_dim(dim, input.ndim)
    key = -input._data if descending and input._data.dtype != np.bool_ else input._data
    idx = np.argsort(key, axis=d, kind="stable") if input.ndim else np.zeros((), np.int64)
    if descending and input._data.dtype == np.bool_:
        idx = np.flip(np.argsort(input._data, axis=d, kind="stable"), axis=d)
    it = Tensor._wrap(idx.astype(np.int64))
    return _ValuesIndices((gather(input, d, it) if input.ndim else input.clone(), it))


def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    return sort(input, dim, descending, stable)[1]


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:
    d = _norm_dim(dim, input.ndim)
    if not 0 <= k <= input.shape[d]:
        raise RuntimeError(f"topk: k ({k}) is out of range for dimension {dim} of size {input.shape[d]}")
    _, idx = sort(input, d, descending=largest, stable=True)
    sl = (slice(None),) * d + (slice(0, k),)
    it = idx[sl]
    return _ValuesIndices((gather(input, d, it), it))


def _softmax_dim(name: str, ndim: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  f"as an argument.", UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def _softmax_like(cls: Any, x: Any, dim: int | None, dtype: Any, name: str) -> Tensor:
    from ..amp.autocast_mode import autocast_args
    from .shape import reshape

    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(x).__name__}")
    if dim is None:
        dim = _softmax_dim(name, x.ndim)
    if dtype is not None:
        x = x.type(_dt.as_dtype(dtype))
    (x,) = autocast_args("fp32", x)
    if not x.is_floating_point():
        raise NotImplementedError(f"{name}(): not implemented for dtype {x.dtype}: expected a floating point input; "
                                  f"pass dtype=dtorch.float32 or convert the input with .float()")
    if x.ndim == 0:
        _norm_dim(dim, 0)
        return reshape(cls.apply(reshape(x, 1), dim=0), ())
    return cls.apply(x, dim=_norm_dim(dim, x.ndim))


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    return _softmax_like(A.Softmax, input, dim, dtype, "softmax")


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype: Any = None) -> Tensor:
    return _softmax_like(A.LogSoftmax, input, dim, dtype, "log_softmax")


__all__ = ["all", "amax", "amin", "any", "argmax", "argmin", "argsort", "count_nonzero", "cumsum", "logsumexp", "max",
           "mean", "min", "norm", "prod", "sort", "std", "std_mean", "sum", "topk", "var", "var_mean"]
