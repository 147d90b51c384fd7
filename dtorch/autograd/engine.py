"""Reverse-mode traversal: topological order over `Function` nodes, gradient accumulation into leaves.

Each node records its parents' nodes when it is created (`Function.parent_nodes`), so a parent
that is later rebound by an in-place op still routes its gradient through the node that produced
the value this node actually used. Gradients reaching a leaf from several paths are summed first
and then passed once through its hooks and into `.grad`, as PyTorch's AccumulateGrad does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .grad_mode import no_grad

if TYPE_CHECKING:
    from ..tensor import Tensor

_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after they have "
          "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
          "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
          "if you need to access saved tensors after calling backward.")


def _toposort(roots: Sequence[Any]) -> list[Any]:
    order: list[Any] = []
    seen: set[int] = set()
    stack: list[tuple[Any, bool]] = [(r, False) for r in reversed(roots)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for p in node.parent_nodes:
            if p is not None and id(p) not in seen:
                stack.append((p, False))
    order.reverse()
    return order


def _root_grad(tensor: Tensor, gradient: Any, index: int) -> np.ndarray:
    from ..tensor import Tensor

    if not tensor.requires_grad:
        raise RuntimeError(f"element {index} of tensors does not require grad and does not have a grad_fn: "
                           f"call backward() on a tensor computed from tensors with requires_grad=True")
    if gradient is None:
        if tensor._data.size != 1:
            raise RuntimeError(f"grad can be implicitly created only for scalar outputs; this tensor has shape "
                               f"{tuple(tensor.shape)}: pass gradient= with that shape")
        return np.ones_like(tensor._data)
    g = gradient._data if isinstance(gradient, Tensor) else np.asarray(gradient)
    if g.shape != tensor._data.shape:
        raise RuntimeError(f"Mismatch in shape: grad_output[{index}] has a shape of {tuple(g.shape)} and "
                           f"output[{index}] has a shape of {tuple(tensor._data.shape)}; they must match")
    return g.astype(tensor._data.dtype, copy=False)


def run_backward(tensors: Sequence[Tensor], gradients: Sequence[Any], retain_graph: bool = False,
                 inputs: Sequence[Tensor] | None = None) -> list[np.ndarray | None] | None:
    """Backpropagate from `tensors`. Without `inputs`, accumulate into leaves' `.grad`; with `inputs`,
    return their gradients (None where unreached) and leave every `.grad` untouched."""
    node_grads: dict[int, np.ndarray] = {}
    leaf_grads: dict[int, list[Any]] = {}
    roots = []
    for i, (t, gr) in enumerate(zip(tensors, gradients)):
        g = _root_grad(t, gr, i)
        if t._ctx is None:
            _add_leaf(leaf_grads, t, g)
        else:
            key = id(t._ctx)
            node_grads[key] = g if key not in node_grads else node_grads[key] + g
            roots.append(t._ctx)
    capture: dict[int, np.ndarray] | None = None
    capture_nodes: dict[int, Any] = {}
    if inputs is not None:
        capture = {}
        for t in inputs:
            if t._ctx is not None:
                capture_nodes[id(t._ctx)] = t
    with no_grad():
        for node in _toposort(roots):
            gout = node_grads.pop(id(node), None)
            if gout is None:
                continue
            for t in node.__dict__.get("retain_for", ()):
                if t._ctx is node:
                    if t._hooks:
                        gout = _apply_hooks(t, gout)
                    if t.__dict__.get("_retains") and inputs is None:
                        _store_retained(t, gout)
            if capture is not None and id(node) in capture_nodes:
                _add(capture, id(capture_nodes[id(node)]), gout)
            if node._freed:
                raise RuntimeError(_FREED)
            res = node.backward(gout)
            if not isinstance(res, tuple):
                res = (res,)
            if not retain_graph and getattr(node, "saved", None) is not None:
                node._freed = True
                node.saved = None
            for parent, pnode, need, pg in zip(node.parents, node.parent_nodes, node.needs_input_grad, res):
                if not need or pg is None:
                    continue
                if pg.shape != parent._data.shape:
                    raise RuntimeError(f"internal error: {node.name} returned a gradient of shape {pg.shape} "
                                       f"for an input of shape {parent._data.shape}")
                if pg.dtype != parent._data.dtype:
                    pg = pg.astype(parent._data.dtype)
                if pnode is None:
                    _add_leaf(leaf_grads, parent, pg)
                else:
                    key = id(pnode)
                    prev = node_grads.get(key)
                    node_grads[key] = pg if prev is None else prev + pg
        if capture is not None:
            wanted = {id(t) for t in inputs or ()}
            for key, (leaf, g) in leaf_grads.items():
                if key in wanted:
                    _add(capture, key, _apply_hooks(leaf, g) if leaf._hooks else g)
            return [capture.get(id(t)) for t in inputs or ()]
        for leaf, g in leaf_grads.values():
            _accumulate_leaf(leaf, g)
    return None


def backward(tensor: Any, gradient: Any = None, retain_graph: bool = False) -> None:
    """Accumulate d(tensor)/d(leaf) into every reachable leaf's `.grad` (also takes sequences)."""
    from ..tensor import Tensor

    tensors = [tensor] if isinstance(tensor, Tensor) else list(tensor)
    if gradient is None:
        grads: list[Any] = [None] * len(tensors)
    elif isinstance(gradient, (list, tuple)) and not isinstance(tensor, Tensor):
        grads = list(gradient)
    else:
        grads = [gradient]
    if len(grads) != len(tensors):
        raise RuntimeError(f"got {len(grads)} gradients for {len(tensors)} tensors; pass one per tensor")
    run_backward(tensors, grads, retain_graph=retain_graph)


def _add(d: dict[int, np.ndarray], key: int, g: np.ndarray) -> None:
    prev = d.get(key)
    d[key] = g if prev is None else prev + g


def _add_leaf(d: dict[int, list[Any]], t: Tensor, g: np.ndarray) -> None:
    entry = d.get(id(t))
    if entry is None:
        d[id(t)] = [t, g]
    else:
        entry[1] = entry[1] + g


def _apply_hooks(t: Tensor, g: np.ndarray) -> np.ndarray:
    from ..tensor import Tensor

    for hook in list(t._hooks or ()):
        r = hook(Tensor._wrap(g))
        if r is not None:
            rd = r._data if isinstance(r, Tensor) else np.asarray(r)
            if rd.shape != g.shape:
                raise RuntimeError(f"hook {getattr(hook, '__name__', hook)!r} has changed the size of value: "
                                   f"expected {tuple(g.shape)}, got {tuple(rd.shape)}")
            g = rd.astype(g.dtype, copy=False)
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

    if t.grad is None:
        t.grad = Tensor._wrap(np.array(g, copy=True))
    else:
        t.grad._data = t.grad._data + g
