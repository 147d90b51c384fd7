"""Autograd: grad-mode switches, the `Function` primitive base and the backward engine."""

from .engine import backward
from .function import Function, unbroadcast
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled

__all__ = ["Function", "backward", "enable_grad", "inference_mode", "is_grad_enabled", "no_grad",
           "set_grad_enabled", "unbroadcast", "grad"]


def grad(outputs, inputs, grad_outputs=None, retain_graph=None):  # type: ignore[no-untyped-def]
    """Gradients of `outputs` w.r.t. `inputs`, returned without touching `.grad` of the inputs."""
    from ..tensor import Tensor

    single = isinstance(inputs, Tensor)
    ins = [inputs] if single else list(inputs)
    saved = [(t.grad, t._hooks) for t in ins]
    for t in ins:
        t.grad = None
    try:
        backward(outputs, grad_outputs, retain_graph=bool(retain_graph))
        res = tuple(t.grad for t in ins)
    finally:
        for t, (g, h) in zip(ins, saved):
            t.grad, t._hooks = g, h
    return res
