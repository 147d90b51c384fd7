"""`RMSprop`: divide the gradient by a running root-mean-square of recent gradients (Hinton)."""

from __future__ import annotations

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

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """v = alpha * v + (1 - alpha) * g * g; p -= lr * g / (sqrt(v - centered_mean^2) + eps), through an
    optional momentum buffer."""

    def __init__(self, params: Any, lr: float | Tensor = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        _check_tensor_scalar("lr", lr)
        _check_nonneg("learning rate", lr)
        _check_nonneg("epsilon value", eps)
        _check_nonneg("momentum value", momentum)
        _check_nonneg("weight_decay value", weight_decay)
        _check_nonneg("alpha value", alpha)
        _check_unsupported(differentiable=differentiable, capturable=capturable, foreach=foreach)
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
                    "weight_decay": weight_decay, "capturable": capturable, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable}
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr, alpha, eps = _scalar(group["lr"]), _scalar(group["alpha"]), _scalar(group["eps"])
            wd, momentum = _scalar(group["weight_decay"]), _scalar(group["momentum"])
            centered = bool(group["centered"])
            for p in group["params"]:
                g = _grad_of(p, bool(group["maximize"]))
                if g is None:
                    continue
                x = p._data
                state = self.state[p]
                if not state:
                    state["step"] = _step_state()
                    state["square_avg"] = _zeros_state(p)
                    if momentum > 0:
                        state["momentum_buffer"] = _zeros_state(p)
                    if centered:
                        state["grad_avg"] = _zeros_state(p)
                state["step"]._data += 1
                if wd != 0:
                    g = g + x * x.dtype.type(wd)
                v = state["square_avg"]._data
                np.multiply(v, alpha, out=v, casting="unsafe")
                tmp = g * x.dtype.type(1.0 - alpha)
                tmp *= g
                v += tmp
                if centered:
                    ga = state["grad_avg"]._data
                    np.subtract(g, ga, out=tmp, casting="unsafe")
                    tmp *= 1.0 - alpha
                    ga += tmp
                    np.multiply(ga, ga, out=tmp)
                    np.subtract(v, tmp, out=tmp)
                    np.sqrt(tmp, out=tmp)
                else:
                    np.sqrt(v, out=tmp)
                tmp += eps
                np.divide(g, tmp, out=tmp, casting="unsafe")
                if momentum > 0:
                    buf = state.setdefault("momentum_buffer", _zeros_state(p))._data
                    np.multiply(buf, momentum, out=buf, casting="unsafe")
                    buf += tmp
                    np.multiply(buf, -lr, out=tmp, casting="unsafe")
                else:
                    tmp *= -lr
                x += tmp
        return loss
