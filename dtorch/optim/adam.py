"""`Adam`: adaptive moment estimation (Kingma & Ba), with AMSGrad, maximize and either L2 or
decoupled (AdamW-style) weight decay."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..tensor import Tensor
from .optimizer import (
    Optimizer,
    _check_nonneg,
    _check_tensor_scalar,
    _check_unsupported,
    _grad_of,
    _scalar,
    _step_state,
    _zeros_state,
)

__all__ = ["Adam"]


def _check_adam_args(lr: Any, betas: Any, eps: Any, weight_decay: Any) -> None:
    _check_tensor_scalar("lr", lr)
    _check_nonneg("learning rate", lr)
    _check_nonneg("epsilon value", eps)
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise ValueError(f"betas must be a pair (beta1, beta2), got {betas!r}")
    for i, b in enumerate(betas):
        _check_tensor_scalar(f"betas[{i}]", b)
        if not 0.0 <= _scalar(b) < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {b}")
    _check_nonneg("weight_decay value", weight_decay)


class Adam(Optimizer):
    """m = lerp(m, g, 1 - beta1); v = beta2 * v + (1 - beta2) * g * g;
    p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)."""

    def __init__(self, params: Any, lr: float | Tensor = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        _check_adam_args(lr, betas, eps, weight_decay)
        _check_unsupported(differentiable=differentiable, capturable=capturable, fused=fused, foreach=foreach)
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("decoupled_weight_decay", False)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr = _scalar(group["lr"])
            beta1, beta2 = (_scalar(b) for b in group["betas"])
            eps = _scalar(group["eps"])
            wd = _scalar(group["weight_decay"])
            decoupled = bool(group.get("decoupled_weight_decay", False))
            amsgrad = bool(group["amsgrad"])
            for p in group["params"]:
                g = _grad_of(p, bool(group["maximize"]))
                if g is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = _step_state()
                    state["exp_avg"] = _zeros_state(p)
                    state["exp_avg_sq"] = _zeros_state(p)
                    if amsgrad:
                        state["max_exp_avg_sq"] = _zeros_state(p)
                elif amsgrad and "max_exp_avg_sq" not in state:
                    state["max_exp_avg_sq"] = _zeros_state(p)
                _adam_update(p._data, g, state, lr=lr, beta1=beta1, beta2=beta2, eps=eps, weight_decay=wd,
                             decoupled=decoupled, amsgrad=amsgrad)
        return loss


def _adam_update(x: np.ndarray, g: np.ndarray, state: dict[str, Any], *, lr: float, beta1: float, beta2: float,
                 eps: float, weight_decay: float, decoupled: bool, amsgrad: bool) -> None:
    """One Adam step for one parameter array `x`, in place, using one scratch array."""
    step_t = state["step"]._data
    step_t += 1
    step = float(step_t)
    if weight_decay != 0:
        if decoupled:
            np.multiply(x, 1.0 - lr * weight_decay, out=x, casting="unsafe")
        else:
            g = g + x * x.dtype.type(weight_decay)
    m, v = state["exp_avg"]._data, state["exp_avg_sq"]._data
    tmp = g - m
    w = 1.0 - beta1  # m <- lerp(m, g, w), in the form PyTorch uses for each range of w
    if w < 0.5:
        tmp *= w
        m += tmp
    else:
        tmp *= 1.0 - w
        np.subtract(g, tmp, out=m, casting="unsafe")
    np.multiply(v, beta2, out=v, casting="unsafe")
    np.multiply(g, 1.0 - beta2, out=tmp, casting="unsafe")
    tmp *= g
    v += tmp
    bias_correction1 = 1.0 - beta1 ** step
    bias_correction2_sqrt = math.sqrt(1.0 - beta2 ** step)
    step_size = lr / bias_correction1
    if amsgrad:
        vmax = state["max_exp_avg_sq"]._data
        np.maximum(vmax, v, out=vmax)
        np.sqrt(vmax, out=tmp)
    else:
        np.sqrt(v, out=tmp)
    tmp /= bias_correction2_sqrt
    tmp += eps
    np.divide(m, tmp, out=tmp)
    tmp *= -step_size
    x += tmp
