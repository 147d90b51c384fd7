"""Activation functions of `dtorch.nn.functional`: relu, gelu, silu, softmax, ... (PyTorch's signatures)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import _functions as _F
from ... import dtypes as _dt
from ..._functions.reduce import _softmax_like, log_softmax, softmax
from ..._prims import activation as A
from ...tensor import Tensor

__all__ = [
    "celu",
    "elu",
    "elu_",
    "gelu",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "hardtanh_",
    "leaky_relu",
    "leaky_relu_",
    "log_softmax",
    "logsigmoid",
    "mish",
    "relu",
    "relu6",
    "relu_",
    "selu",
    "sigmoid",
    "silu",
    "softmax",
    "softmin",
    "softplus",
    "softsign",
    "tanh",
    "tanhshrink",
]


def _float_input(x: Any, name: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(x).__name__}")
    if not x.is_floating_point():
        raise NotImplementedError(f"{name}(): not implemented for dtype {x.dtype}: expected a floating point input "
                                  f"tensor; convert it with .float() first")
    return x


def _maybe_inplace(x: Tensor, out: Tensor, inplace: bool) -> Tensor:
    return x._inplace(out) if inplace else out


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"relu(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input._data.dtype == np.bool_:
        raise RuntimeError("Boolean inputs not supported for relu; convert the input with .float() or .int()")
    return input.relu_() if inplace else _F.relu(input)


def relu_(input: Tensor) -> Tensor:
    return relu(input, inplace=True)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"hardtanh(): argument 'input' must be Tensor, not {type(input).__name__}")
    x = input
    if x._data.dtype == np.bool_:
        raise RuntimeError("hardtanh(): Boolean inputs are not supported; convert the input with .float()")
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) cannot be greater than max_val ({max_val})")
    return _maybe_inplace(x, A.Hardtanh.apply(x, min_val=float(min_val), max_val=float(max_val)), inplace)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    x = _float_input(input, "leaky_relu")
    return _maybe_inplace(x, A.LeakyRelu.apply(x, negative_slope=float(negative_slope)), inplace)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return leaky_relu(input, negative_slope, inplace=True)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate!r}")
    return A.Gelu.apply(_float_input(input, "gelu"), approximate=approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    x = _float_input(input, "silu")
    return _maybe_inplace(x, A.Silu.apply(x), inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    x = _float_input(input, "mish")
    return _maybe_inplace(x, A.Mish.apply(x), inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    x = _float_input(input, "hardswish")
    return _maybe_inplace(x, A.Hardswish.apply(x), inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    x = _float_input(input, "hardsigmoid")
    return _maybe_inplace(x, A.Hardsigmoid.apply(x), inplace)


def sigmoid(input: Tensor) -> Tensor:
    return _F.sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    return _F.tanh(input)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    x = _float_input(input, "elu")
    return _maybe_inplace(x, A.Elu.apply(x, alpha=float(alpha)), inplace)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return elu(input, alpha, inplace=True)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    x = _float_input(input, "selu")
    return _maybe_inplace(x, A.Elu.apply(x, alpha=_SELU_ALPHA, scale=_SELU_SCALE), inplace)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    x = _float_input(input, "celu")
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: celu alpha must not be 0")
    return _maybe_inplace(x, A.Elu.apply(x, alpha=float(alpha), input_scale=1.0 / float(alpha)), inplace)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    return A.Softplus.apply(_float_input(input, "softplus"), beta=float(beta), threshold=float(threshold))


def logsigmoid(input: Tensor) -> Tensor:
    # log(sigmoid(x)) = -softplus(-x)
    return _F.neg(softplus(_F.neg(_float_input(input, "logsigmoid"))))


def softsign(input: Tensor) -> Tensor:
    return _F.div(input, _F.add(_F.abs(input), 1))


def tanhshrink(input: Tensor) -> Tensor:
    return _F.sub(input, _F.tanh(input))


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    if dtype is not None:
        input = input.type(_dt.as_dtype(dtype))
    return _softmax_like(A.Softmax, _F.neg(input), dim, None, "softmin")
