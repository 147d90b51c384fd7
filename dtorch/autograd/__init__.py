"""Autograd: grad-mode switches, the `Function` primitive base, the backward engine and `gradcheck`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .function import Function, unbroadcast
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import GradcheckError, gradcheck

if TYPE_CHECKING:
    from ..tensor import Tensor

__all__ = ["Function", "GradcheckError", "backward", "enable_grad", "grad", "gradcheck", "inference_mode",
           "is_grad_enabled", "no_grad", "set_grad_enabled", "unbroadcast"]


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False) -> None:
    """Accumulate the gradients of `tensors` (a Tensor or a sequence) into the leaves' `.grad`."""
    from .engine import backward as _backward

    if create_graph:
        raise NotImplementedError("create_graph=True (higher-order gradients) is not supported by dtorch")
    _backward(tensors, grad_tensors, retain_graph=bool(retain_graph))


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, allow_unused: bool | None = None,
         materialize_grads: bool = False) -> tuple[Tensor | None, ...]:
    """Gradients of `outputs` w.r.t. `inputs`, returned without touching any tensor's `.grad`."""
    from ..tensor import Tensor
    from .engine import run_backward

    if create_graph:
        raise NotImplementedError("create_graph=True (higher-order gradients) is not supported by dtorch")
    outs: Sequence[Tensor] = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    ins: Sequence[Tensor] = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    for i, t in enumerate(ins):
        if not isinstance(t, Tensor):
            raise TypeError(f"grad(): inputs must be Tensors, but input {i} is {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError(f"One of the differentiated Tensors (input {i}) does not require grad")
    if grad_outputs is None:
        gos: list[Any] = [None] * len(outs)
    elif isinstance(grad_outputs, (list, tuple)) and not isinstance(outputs, Tensor):
        gos = list(grad_outputs)
    else:
        gos = [grad_outputs]
    if len(gos) != len(outs):
        raise RuntimeError(f"grad_outputs has {len(gos)} entries but there are {len(outs)} outputs")
    res = run_backward(outs, gos, retain_graph=bool(retain_graph), inputs=ins)
    assert res is not None
    out: list[Tensor | None] = []
    for i, (t, g) in enumerate(zip(ins, res)):
        if g is None:
            if materialize_grads:
                import numpy as np

                out.append(Tensor._wrap(np.zeros_like(t._data)))
                continue
            if not (allow_unused or materialize_grads):
                raise RuntimeError(f"One of the differentiated Tensors (input {i}) appears to not have been used in "
                                   f"the graph. Set allow_unused=True if this is the desired behavior.")
            out.append(None)
        else:
            out.append(Tensor._wrap(g if g.dtype == t._data.dtype else g.astype(t._data.dtype)))
    return tuple(out)
