"""Reverse-mode traversal: topological order over `Function` nodes, gradient accumulation into leaves."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .grad_mode import no_grad

if TYPE_CHECKING:
    from ..tensor import Tensor


def _toposort(root: Any) -> list[Any]:
    order: list[Any] = []
    seen: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for p in node.parents:
            if p._ctx is not None and id(p._ctx) not in seen:
                stack.append((p._ctx, False))
    order.reverse()
    return order


def backward(tensor: Tensor, gradient: Any = None, retain_graph: bool = False) -> None:
    from ..tensor import Tensor

    if not tensor.requires_grad:
        raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn: "
                           "call backward() on a tensor computed from tensors with requires_grad=True")
    if gradient is None:
        if tensor._data.size != 1:
            raise RuntimeError(f"grad can be implicitly created only for scalar outputs; this tensor has shape "
                               f"{tuple(tensor.shape)}: pass gradient= with that shape")
        g = np.ones_like(tensor._data)
    else:
        g = gradient._data if isinstance(gradient, Tensor) else np.asarray(gradient)
        if g.shape != tensor._data.shape:
            raise RuntimeError(f"gradient has shape {tuple(g.shape)} but the tensor has shape "
                               f"{tuple(tensor._data.shape)}; they must match")
        g = g.astype(tensor._data.dtype, copy=False)
    if tensor._ctx is None:
        _accumulate_leaf(tensor, g)
        return
    grads: dict[int, np.ndarray] = {id(tensor._ctx): g}
    with no_grad():
        for node in _toposort(tensor._ctx):
            gout = grads.pop(id(node), None)
            if gout is None:
                continue
            if node._freed:
                raise RuntimeError(
                    "Trying to backward through the graph a second time (or directly access saved tensors "
                    "after they have already been freed). Specify retain_graph=True on the first backward "
                    "call if you need to backward through the graph a second time.")
            for hook_t in getattr(node, "retain_for", ()):
                _store_retained(hook_t, gout)
            res = node.backward(gout)
            if not isinstance(res, tuple):
                res = (res,)
            if not retain_graph:
                node._freed = True
                node.saved = None
            for parent, need, pg in zip(node.parents, node.needs_input_grad, res):
                if not need or pg is None:
                    continue
                if pg.shape != parent._data.shape:
                    raise RuntimeError(f"internal error: {node.name} returned a gradient of shape {pg.shape} "
                                       f"for an input of shape {parent._data.shape}")
                if pg.dtype != parent._data.dtype:
                    pg = pg.astype(parent._data.dtype)
                if parent._ctx is None:
                    _accumulate_leaf(parent, pg)
                else:
                    key = id(parent._ctx)
                    prev = grads.get(key)
                    grads[key] = pg if prev is None else prev + pg


def _apply_hooks(t: Tensor, g: np.ndarray) -> np.ndarray:
    from ..tensor import Tensor

    for hook in t._hooks or ():
        r = hook(Tensor._wrap(g))
        if r is not None:
            g = r._data
    return g


def _accumulate_leaf(t: Tensor, g: np.ndarray) -> None:
    from ..tensor import Tensor

    if t._hooks:
        g = _apply_hooks(t, g)
    if t.grad is None:
        t.grad = Tensor._wrap(np.array(g, dtype=t._data.dtype, copy=True))
    elif t.grad._data.shape == g.shape and t.grad._data.flags.writeable:
        np.add(t.grad._data, g, out=t.grad._data, casting="unsafe")
    else:
        t.grad._data = t.grad._data + g


def _store_retained(t: Tensor, g: np.ndarray) -> None:
    from ..tensor import Tensor

    if t._hooks:
        g = _apply_hooks(t, g)
    if t.grad is None:
        t.grad = Tensor._wrap(np.array(g, copy=True))
    else:
        t.grad._data = t.grad._data + g
