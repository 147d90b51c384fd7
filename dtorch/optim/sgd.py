"""`SGD`: stochastic gradient descent with optional momentum, dampening, Nesterov and weight decay."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..tensor import Tensor
from .optimizer import Optimizer, _check_nonneg, _check_tensor_scalar, _check_unsupported, _grad_of, _scalar

__all__ = ["SGD"]


class SGD(Optimizer):
    """p -= lr * d, where d is the gradient (plus weight_decay * p), passed through the momentum buffer
    `buf = momentum * buf + (1 - dampening) * d` when momentum != 0 (Nesterov: d + momentum * buf)."""

    def __init__(self, params: Any, lr: float | Tensor = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float | Tensor = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False, fused: bool | None = None) -> None:
        _check_tensor_scalar("lr", lr)
        _check_nonneg("learning rate", lr)
        _check_nonneg("momentum value", momentum)
        _check_nonneg("weight_decay value", weight_decay)
        _check_unsupported(differentiable=differentiable, fused=fused, foreach=foreach)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": weight_decay,
                    "nesterov": nesterov, "maximize": maximize, "foreach": foreach,
                    "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr = _scalar(group["lr"])
            momentum = _scalar(group["momentum"])
            dampening = _scalar(group["dampening"])
            wd = _scalar(group["weight_decay"])
            nesterov = bool(group["nesterov"])
            for p in group["params"]:
                g = _grad_of(p, bool(group["maximize"]))
                if g is None:
                    continue
                t = p._data.dtype.type  # scalars in the parameter's dtype keep results in that dtype
                if wd != 0:
                    g = g + p._data * t(wd)
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = Tensor._wrap(np.array(g, dtype=p._data.dtype, copy=True))
                        state["momentum_buffer"] = buf
                    else:
                        b = buf._data
                        np.multiply(b, momentum, out=b, casting="unsafe")
                        if dampening != 0:
                            b += g * t(1.0 - dampening)
                        else:
                            b += g
                    g = g + buf._data * t(momentum) if nesterov else buf._data
                p._data += g * t(-lr)
        return loss
