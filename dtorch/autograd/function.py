"""The differentiable primitive: one `Function` subclass per operator, with `forward` and `backward`.

`forward` receives NumPy arrays (tensor inputs unwrapped) plus attributes and returns one NumPy array;
`backward` receives the output gradient as a NumPy array and returns one gradient (or None) per tensor
input, in order. `Tensor`, `nn` and `optim` only compose these primitives and never write a gradient
of their own. `Function.name` is the operator's one name, shared with export and the runtime.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from ..dtypes import BF16_NP
from .grad_mode import _state

_Tensor: Any = None


def _tensor_class() -> Any:
    """`dtorch.Tensor`, imported on first use (tensor.py imports this module) and then cached."""
    global _Tensor
    from ..tensor import Tensor

    _Tensor = Tensor
    return Tensor

# Export installs a hook here to record every primitive call (op class, inputs, attrs, output).
_trace_hooks: list[Callable[..., None]] = []
# The modules being called, outermost first (pushed by Module.__call__), so a trace can name where an op ran.
_module_stack: list[Any] = []


class Function:
    name: ClassVar[str] = ""
    differentiable: ClassVar[bool] = True

    __slots__ = ("__dict__", "_freed", "attrs", "needs_input_grad", "out_meta", "parent_nodes", "parents", "saved")

    def forward(self, *args: Any, **attrs: Any) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def backward(self, grad: np.ndarray) -> tuple[np.ndarray | None, ...] | np.ndarray | None:
        raise RuntimeError(f"operator {self.name or type(self).__name__} is not differentiable")

    def save(self, *arrays: Any) -> None:
        self.saved = arrays

    @classmethod
    def apply(cls, *inputs: Any, **attrs: Any) -> Any:
        tensor_cls = _Tensor or _tensor_class()
        node = cls()
        out = node.forward(*[x._data if isinstance(x, tensor_cls) else x for x in inputs], **attrs)
        if out.__class__ is not np.ndarray:
            out = np.asarray(out)
        result = tensor_cls._wrap(out)
        if cls.differentiable and getattr(_state, "enabled", True):
            parents = tuple([x for x in inputs if isinstance(x, tensor_cls)])
            needs = tuple([p._rg for p in parents])
            # integer/bool outputs (casts, rounding divisions) are not differentiable, as in PyTorch
            if True in needs and (out.dtype.kind == "f" or out.dtype is BF16_NP):
                node.parents = parents
                node.parent_nodes = tuple([p._ctx for p in parents])
                node.needs_input_grad = needs
                node._freed = False
                node.attrs = attrs
                result._rg = True
                result._ctx = node
        if _trace_hooks:
            for hook in _trace_hooks:
                hook(cls, inputs, attrs, result)
        return result

    def __repr__(self) -> str:
        return f"<{type(self).__name__}Backward>"


def unbroadcast(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum a broadcast gradient back down to `shape`."""
    if grad.shape == shape:
        return grad
    nlead = grad.ndim - len(shape)
    axes = tuple(range(nlead)) + tuple(i + nlead for i, s in enumerate(shape) if s == 1 and grad.shape[i + nlead] != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    if nlead:
        grad = grad.reshape(grad.shape[nlead:])
    return grad.reshape(shape)
