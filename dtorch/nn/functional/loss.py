"""Loss functions of `dtorch.nn.functional` with PyTorch's signatures, argument checks and error types.

Under `dt.autocast` every loss runs in float32 (its float inputs are cast up), so the loss comes out
float32 and gradients flow back into reduced-precision activations.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ... import dtypes as _dt
from ..._prims import loss as L
from ...amp.autocast_mode import autocast_args
from ...tensor import Tensor

__all__ = ["binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy", "huber_loss", "l1_loss",
           "mse_loss", "nll_loss", "smooth_l1_loss"]

_REDUCTIONS = ("mean", "sum", "none")


def _reduction(reduction: str, size_average: bool | None = None, reduce: bool | None = None) -> str:
    if size_average is not None or reduce is not None:
        warnings.warn("size_average and reduce args will be deprecated, please use reduction='mean'/'sum'/'none' "
                      "instead.", UserWarning, stacklevel=3)
        sa = True if size_average is None else size_average
        rd = True if reduce is None else reduce
        return "none" if not rd else ("mean" if sa else "sum")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _tensor(x: Any, what: str, name: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{what}' must be Tensor, not {type(x).__name__}")
    return x


def _float_input(x: Any, name: str) -> Tensor:
    _tensor(x, "input", name)
    if not x.is_floating_point():
        raise NotImplementedError(f"{name}(): expected a floating point input, but got dtype {x.dtype}; convert it "
                                  f"with .float() first")
    return x


def _check_weight(weight: Tensor | None, c: int, name: str) -> None:
    if weight is None:
        return
    _tensor(weight, "weight", name)
    if weight.ndim != 1 or weight.shape[0] != c:
        raise RuntimeError(f"weight tensor should be defined either for all {c} classes or no classes but got "
                           f"weight tensor of shape: {list(weight.shape)}")


def _check_class_target(input: Tensor, target: Tensor) -> None:
    if target._data.dtype not in (np.int64, np.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {target.dtype}; class-index "
                           f"targets must be int64 (use target.long())")
    if input.ndim == 1:
        if target.ndim != 0:
            raise RuntimeError(f"for a 1-D input (one sample of {input.shape[0]} classes) the target must be a 0-D "
                               f"class index, got target of shape {list(target.shape)}")
        return
    if input.ndim == 2 and target.ndim != 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if target.ndim >= 1 and input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}).")
    want = tuple(input.shape[:1]) + tuple(input.shape[2:])
    if tuple(target.shape) != want:
        raise RuntimeError(f"Expected target size {list(want)}, got {list(target.shape)}")


def _same_float(input: Tensor, other: Tensor) -> tuple[Tensor, Tensor]:
    """Promote input and target to a common floating dtype, as PyTorch's pointwise losses do."""
    d = _dt.promote_types(input.dtype, other.dtype)
    if not d.is_floating_point:
        d = _dt.get_default_dtype()
    return (input if input.dtype is d else input.type(d)), (other if other.dtype is d else other.type(d))


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average: bool | None = None, ignore_index: int = -100, reduce: bool | None = None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy of logits `input` (N, C, *) or (C,) against class indices or class probabilities."""
    red = _reduction(reduction, size_average, reduce)
    x = _tensor(input, "input", "cross_entropy")
    t = _tensor(target, "target", "cross_entropy")
    x, weight = autocast_args("fp32", x, weight)
    if not x.is_floating_point():
        raise NotImplementedError(f"cross_entropy(): expected floating point logits, but got dtype {x.dtype}")
    if x.ndim == 0:
        raise RuntimeError("cross_entropy(): expected input of at least 1 dimension ((C,) or (N, C, ...)), got a "
                           "0-D tensor")
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    c = x.shape[0] if x.ndim == 1 else x.shape[1]
    _check_weight(weight, c, "cross_entropy")
    if weight is not None and weight.dtype is not x.dtype:
        raise RuntimeError(f"expected scalar type {x.dtype} for weight but found {weight.dtype}; pass a weight "
                           f"of the input's dtype")
    probs = t.shape == x.shape and t.is_floating_point()
    if probs:
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        if t.dtype is not x.dtype:
            t = t.type(x.dtype)
    else:
        _check_class_target(x, t)
    args = (x, t) if weight is None else (x, t, weight)
    return L.CrossEntropy.apply(*args, ignore_index=int(ignore_index), reduction=red,
                                label_smoothing=float(label_smoothing), probs=probs)


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             size_average: bool | None = None, ignore_index: int = -100, reduce: bool | None = None,
             reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of log-probabilities `input` (N, C, *) or (C,) at class-index targets."""
    red = _reduction(reduction, size_average, reduce)
    x = _float_input(input, "nll_loss")
    t = _tensor(target, "target", "nll_loss")
    x, weight = autocast_args("fp32", x, weight)
    if x.ndim == 0:
        raise ValueError("Expected 1 or more dimensions (got 0)")
    c = x.shape[0] if x.ndim == 1 else x.shape[1]
    _check_weight(weight, c, "nll_loss")
    if weight is not None and weight.dtype is not x.dtype:
        raise RuntimeError(f"expected scalar type {x.dtype} for weight but found {weight.dtype}")
    _check_class_target(x, t)
    args = (x, t) if weight is None else (x, t, weight)
    return L.NllLoss.apply(*args, ignore_index=int(ignore_index), reduction=red)


def _pointwise(cls: Any, input: Any, target: Any, red: str, name: str, **attrs: Any) -> Tensor:
    x, t = _tensor(input, "input", name), _tensor(target, "target", name)
    if t.shape != x.shape:
        warnings.warn(f"Using a target size ({t.shape}) that is different to the input size ({x.shape}). This "
                      f"will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                      f"same size.", UserWarning, stacklevel=3)
        try:
            np.broadcast_shapes(x._data.shape, t._data.shape)
        except ValueError:
            raise RuntimeError(f"{name}: the input of shape {list(x.shape)} and the target of shape "
                               f"{list(t.shape)} do not broadcast; pass a target of the input's shape") from None
    x, t = autocast_args("fp32", *_same_float(x, t))
    return cls.apply(x, t, reduction=red, **attrs)


def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
             reduce: bool | None = None, reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean squared error (input - target)^2, broadcasting with a warning when the shapes differ."""
    red = _reduction(reduction, size_average, reduce)
    if weight is not None:
        loss = _pointwise(L.MseLoss, input, target, "none", "mse_loss")
        return _apply_weight(loss, weight, input, red, by_weight=True)
    return _pointwise(L.MseLoss, input, target, red, "mse_loss")


def l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
            reduce: bool | None = None, reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean absolute error |input - target|; with `weight` (the input's shape) the weighted mean divides by
    the summed weight."""
    red = _reduction(reduction, size_average, reduce)
    if weight is not None:
        loss = _pointwise(L.L1Loss, input, target, "none", "l1_loss")
        return _apply_weight(loss, weight, input, red, by_weight=True)
    return _pointwise(L.L1Loss, input, target, red, "l1_loss")


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                   reduce: bool | None = None, reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target); beta = 0 is l1_loss."""
    red = _reduction(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    return _pointwise(L.SmoothL1Loss, input, target, red, "smooth_l1_loss", beta=float(beta))


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)."""
    red = _reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    if weight is not None:
        return _apply_weight(_pointwise(L.HuberLoss, input, target, "none", "huber_loss", delta=float(delta)),
                             weight, input, red, by_weight=False)
    return _pointwise(L.HuberLoss, input, target, red, "huber_loss", delta=float(delta))


def _apply_weight(loss: Tensor, weight: Tensor, input: Tensor, red: str, by_weight: bool) -> Tensor:
    """Elementwise `weight` (the input's shape) times the unreduced loss, then the reduction. The weighted
    mean divides by sum(weight) for mse/l1 and by the element count for huber, as PyTorch does."""
    from ... import _functions as _F

    _tensor(weight, "weight", "loss")
    if weight.shape != input.shape:
        raise ValueError(f"Weights and input must have the same size. Got weight of shape {list(weight.shape)} "
                         f"and input of shape {list(input.shape)}")
    out = _F.mul(loss, weight)
    if red == "none":
        return out
    if red == "sum":
        return _F.sum(out)
    return _F.div(_F.sum(out), _F.sum(weight)) if by_weight else _F.mean(out)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """-weight (t log(x) + (1 - t) log(1 - x)) for probabilities x in [0, 1]; logs are clamped at -100."""
    red = _reduction(reduction, size_average, reduce)
    x = _float_input(input, "binary_cross_entropy")
    t = _tensor(target, "target", "binary_cross_entropy")
    if t.shape != x.shape:
        raise ValueError(f"Using a target size ({t.shape}) that is different to the input size ({x.shape}) is "
                         f"deprecated. Please ensure they have the same size.")
    x, t, weight = autocast_args("fp32", x, t, weight)
    if t.dtype is not x.dtype:
        raise RuntimeError(f"Found dtype {t.dtype} but expected {x.dtype}: binary_cross_entropy needs the target "
                           f"in the input's dtype (use target.to(input.dtype))")
    xd = x._data
    if xd.size and not ((xd >= 0) & (xd <= 1)).all():
        raise RuntimeError("all elements of input should be between 0 and 1")
    td = t._data
    if td.size and not ((td >= 0) & (td <= 1)).all():
        raise RuntimeError("all elements of target should be between 0 and 1")
    if weight is not None:
        _broadcast_check(weight, x, "weight", "binary_cross_entropy")
        weight = weight if weight.dtype is x.dtype else weight.type(x.dtype)
    args = (x, t) if weight is None else (x, t, weight)
    return L.BinaryCrossEntropy.apply(*args, reduction=red)


def _broadcast_check(w: Tensor, x: Tensor, what: str, name: str) -> None:
    _tensor(w, what, name)
    try:
        if np.broadcast_shapes(w._data.shape, x._data.shape) != x._data.shape:
            raise ValueError
    except ValueError:
        raise RuntimeError(f"{name}: {what} of shape {list(w.shape)} must broadcast to the input's shape "
                           f"{list(x.shape)}") from None


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average: bool | None = None, reduce: bool | None = None,
                                     reduction: str = "mean", pos_weight: Tensor | None = None) -> Tensor:
    """Sigmoid + binary cross entropy in one numerically stable op; `pos_weight` scales the positive term
    (broadcast along the last dim), `weight` each element."""
    red = _reduction(reduction, size_average, reduce)
    x = _float_input(input, "binary_cross_entropy_with_logits")
    t = _tensor(target, "target", "binary_cross_entropy_with_logits")
    if t.shape != x.shape:
        raise ValueError(f"Target size ({t.shape}) must be the same as input size ({x.shape})")
    x, t, weight, pos_weight = autocast_args("fp32", x, t, weight, pos_weight)
    if not t.is_floating_point():
        raise RuntimeError(f"binary_cross_entropy_with_logits(): the target must be floating point (0/1 labels "
                           f"as float), got {t.dtype}; use target.float()")
    x, t = _same_float(x, t)
    extra: list[Tensor | None] = []
    for key, w in (("weight", weight), ("pos_weight", pos_weight)):
        if w is not None:
            _broadcast_check(w, x, key, "binary_cross_entropy_with_logits")
            w = w if w.dtype is x.dtype else w.type(x.dtype)
        extra.append(w)
    return L.BinaryCrossEntropyWithLogits.apply(x, t, *extra, reduction=red)
