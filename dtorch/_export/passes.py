"""Graph passes run by `dt.export`, in this order, each recording the node count before and after:

1. fold_constants: a node whose inputs are all constants (and whose result the trace computed with the eager
   primitive) is replaced by its result, a new constant.
2. remove_identities: `identity` nodes (copy, contiguous, dropout in eval, same-dtype casts) are dropped.
3. fold_linear_bias: add(linear(x, w), b) with a constant b of the output's last size (ONNX's MatMul + Add, the
   form torch.onnx writes for a Linear on 3-D input) becomes linear(x, w, b).
4. fuse_patterns: decomposed activations that importers meet (ONNX has no SiLU, and Gelu only from opset 20)
   become their operator, so they fuse: mul(x, sigmoid(x)) -> silu(x); 0.5 * x * (1 + erf(x / sqrt(2))) in the
   operand orders torch.onnx emits -> gelu(x). The nodes left unused go in dead-code elimination.
5. fold_batch_norm: an inference batch_norm whose input comes from a conv2d/linear that has no other consumer
   is folded into that node's weight and bias (new constants).
6. fuse_activations: conv2d/conv_transpose2d/linear/add followed by its only consumer, an activation
   (relu, relu6/hardtanh, leaky_relu, sigmoid, tanh, silu, hardswish, hardsigmoid, gelu), becomes one node
   with the `activation` attribute.
7. dead_code_elimination: nodes none of whose outputs reach a graph output are removed.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..catalogue import CATALOGUE
from .errors import ExportError
from .graph import Graph, Node, Value, c_array, constant
from .lower import EXPORTABLE_OPS
from .tracer import where

__all__ = ["PASSES", "run_passes"]


def fold_constants(g: Graph) -> None:
    kept: list[Node] = []
    for n in g.nodes:
        if all(v is None or v.is_const for v in n.inputs) and all(o.data is not None for o in n.outputs):
            for o in n.outputs:
                o.kind = "constant"
                o.data = c_array(o.data)
            continue
        kept.append(n)
    g.nodes = kept
    for n in g.nodes:
        if n.op.startswith("eager:"):  # pragma: no cover - lowering only emits these for constant inputs
            raise ExportError(f"operator '{n.op[6:]}' at {where(n.name)} cannot be exported. Exportable operators: "
                              f"{', '.join(EXPORTABLE_OPS)}")


def remove_identities(g: Graph) -> None:
    producers = g.producers()
    outputs = {v.uid for v in g.outputs}
    kept: list[Node] = []
    for n in g.nodes:
        if n.op != "identity":
            kept.append(n)
            continue
        x, y = n.inputs[0], n.outputs[0]
        assert x is not None
        if y.uid not in outputs:
            g.replace_uses(y, x)
            continue
        p = producers.get(x.uid)
        if p is not None and x.uid not in outputs:
            p.outputs = [y if o is x else o for o in p.outputs]
            g.replace_uses(x, y)
            producers[y.uid] = p
            continue
        n.op, n.attrs = "reshape", {"shape": [0] * len(x.shape)}  # a graph output that is an input/constant copy
        kept.append(n)
    g.nodes = kept


def fold_batch_norm(g: Graph) -> None:
    producers = g.producers()
    consumers = g.consumers()
    outputs = {v.uid for v in g.outputs}
    removed: set[int] = set()
    for bn in g.nodes:
        if bn.op != "batch_norm":
            continue
        x = bn.inputs[0]
        assert x is not None
        p = producers.get(x.uid)
        if p is None or p.op not in ("conv2d", "linear") or "activation" in p.attrs or x.uid in outputs:
            continue
        if [id(c) for c in consumers.get(x.uid, [])] != [id(bn)]:
            continue
        if p.op == "linear" and len(x.shape) != 2:
            continue
        w, b = p.inputs[1], p.inputs[2] if len(p.inputs) > 2 else None
        params = [bn.inputs[1], bn.inputs[2], bn.inputs[3], bn.inputs[4]]
        if w is None or not w.is_const or (b is not None and not b.is_const) or \
                any(v is not None and not v.is_const for v in params):
            continue
        mean, var, gamma, beta = (None if v is None else v.data.astype(np.float64) for v in params)  # type: ignore[union-attr]
        assert mean is not None and var is not None and w.data is not None
        scale = 1.0 / np.sqrt(var + float(bn.attrs["eps"]))
        if gamma is not None:
            scale = scale * gamma
        shift = -mean * scale
        if beta is not None:
            shift = shift + beta
        bias = np.zeros_like(scale) if b is None or b.data is None else b.data.astype(np.float64)
        wd = w.data.astype(np.float64) * scale.reshape((-1,) + (1,) * (w.data.ndim - 1))
        tag = f"+{bn.name}" if bn.name else "+batch_norm"
        new_w = constant(wd.astype(w.dtype), name=f"{w.name or 'weight'}{tag}")
        bname = b.name if b is not None and b.name else f"{w.name or 'weight'}.bias"
        new_b = constant((bias * scale + shift).astype(w.dtype), name=f"{bname}{tag}")
        new_w.dims, new_b.dims = list(new_w.shape), list(new_b.shape)
        p.inputs = [p.inputs[0], new_w, new_b]
        p.outputs = [bn.outputs[0] if o is x else o for o in p.outputs]
        producers[bn.outputs[0].uid] = p
        removed.add(id(bn))
    g.nodes = [n for n in g.nodes if id(n) not in removed]


def _const_value(v: Value | None) -> float | None:
    if v is None or not v.is_const or v.data is None or v.data.size != 1:
        return None
    return float(np.asarray(v.data).reshape(-1)[0])


def _other(n: Node, v: Value) -> Value | None:
    """The other operand of binary node `n` when one of its two inputs is `v`."""
    a, b = (n.inputs + [None, None])[:2]
    return b if a is v else a if b is v else None


def fold_linear_bias(g: Graph) -> None:
    producers = g.producers()
    consumers = g.consumers()
    outputs = {v.uid for v in g.outputs}
    removed: set[int] = set()
    for n in g.nodes:
        if n.op != "add" or "activation" in n.attrs or len(n.inputs) != 2:
            continue
        for y, b in (n.inputs, n.inputs[::-1]):
            p = producers.get(y.uid) if y is not None else None
            if p is None or p.op != "linear" or "activation" in p.attrs or y.uid in outputs or b is None or \
                    not b.is_const or b.data is None or (len(p.inputs) > 2 and p.inputs[2] is not None):
                continue
            m = int(y.shape[-1]) if y.shape else -1
            if b.data.size != m or b.data.ndim > len(y.shape) or (b.data.ndim and b.data.shape[-1] != m) or \
                    [id(c) for c in consumers.get(y.uid, [])] != [id(n)] or n.outputs[0].shape != y.shape:
                continue
            bias = constant(b.data.reshape(m).astype(np.float32), name=b.name or "bias")
            bias.dims = [m]
            p.inputs = [p.inputs[0], p.inputs[1], bias]
            p.outputs = [n.outputs[0]]
            producers[n.outputs[0].uid] = p
            removed.add(id(n))
            break
    g.nodes = [n for n in g.nodes if id(n) not in removed]


def fuse_patterns(g: Graph) -> None:
    producers = g.producers()
    consumers = g.consumers()

    def only_use(v: Value) -> Node | None:
        users = consumers.get(v.uid, [])
        return users[0] if len(users) == 1 else None

    def near(x: float | None, want: float) -> bool:
        return x is not None and abs(x - want) <= 1e-4 * abs(want)

    replace: dict[int, Node] = {}
    for n in g.nodes:
        if n.op == "mul" and len(n.inputs) == 2:  # x * sigmoid(x)
            for s in n.inputs:
                p = producers.get(s.uid) if s is not None else None
                if p is not None and p.op == "sigmoid" and p.inputs[0] is _other(n, s) and s is not _other(n, s):
                    replace[id(n)] = Node("silu", [p.inputs[0]], list(n.outputs), {}, n.name)
                    break
        if n.op != "erf":
            continue
        d = producers.get(n.inputs[0].uid) if n.inputs[0] is not None else None
        if d is None or len(d.inputs) != 2 or d.inputs[0] is None:
            continue
        x = d.inputs[0]
        if not ((d.op == "div" and near(_const_value(d.inputs[1]), 2 ** 0.5)) or
                (d.op == "mul" and near(_const_value(d.inputs[1]), 0.5 ** 0.5))):
            continue
        add = only_use(n.outputs[0])
        if add is None or add.op != "add" or not near(_const_value(_other(add, n.outputs[0])), 1.0):
            continue
        m1 = only_use(add.outputs[0])
        if m1 is None or m1.op != "mul":
            continue
        o = _other(m1, add.outputs[0])
        final = None
        if o is x:  # (x * (1 + erf)) * 0.5
            m2 = only_use(m1.outputs[0])
            if m2 is not None and m2.op == "mul" and near(_const_value(_other(m2, m1.outputs[0])), 0.5):
                final = m2
        elif near(_const_value(o), 0.5):  # x * ((1 + erf) * 0.5)
            m2 = only_use(m1.outputs[0])
            if m2 is not None and m2.op == "mul" and _other(m2, m1.outputs[0]) is x:
                final = m2
        elif o is not None and (h := producers.get(o.uid)) is not None and h.op == "mul" and \
                _other(h, x) is not None and near(_const_value(_other(h, x)), 0.5):  # (x * 0.5) * (1 + erf)
            final = m1
        if final is not None:
            replace[id(final)] = Node("gelu", [x], list(final.outputs), {}, final.name)
    if replace:
        g.nodes = [replace.get(id(n), n) for n in g.nodes]
        dead_code_elimination(g)


# From the catalogue: the operators that take a fused activation, and how each activation operator reads as one.
_FUSABLE = tuple(op.name for op in CATALOGUE.values() if op.fuses)


def _activation(n: Node) -> dict[str, object] | None:
    op = CATALOGUE.get(n.op)
    if op is None or op.fused_as is None:
        return None
    attrs: dict[str, object] = {"activation": op.fused_as}
    for mine, fused in op.fused_attrs:
        attrs[fused] = float(n.attrs[mine])
    # Canonical forms with their own activation value (runtime/OPS.md: relu6, gelu_tanh).
    if op.fused_as == "hardtanh" and (attrs["min_val"], attrs["max_val"]) == (0.0, 6.0):
        return {"activation": "relu6"}
    if op.fused_as == "gelu" and n.attrs.get("approximate") == "tanh":
        return {"activation": "gelu_tanh"}
    return attrs


def fuse_activations(g: Graph) -> None:
    producers = g.producers()
    consumers = g.consumers()
    outputs = {v.uid for v in g.outputs}
    removed: set[int] = set()
    for act in g.nodes:
        attrs = _activation(act)
        x = act.inputs[0] if act.inputs else None
        if attrs is None or x is None or x.uid in outputs:
            continue
        p = producers.get(x.uid)
        if p is None or p.op not in _FUSABLE or "activation" in p.attrs or id(p) in removed or \
                attrs["activation"] not in CATALOGUE[p.op].fuses:
            continue
        if [id(c) for c in consumers.get(x.uid, [])] != [id(act)] or act.inputs.count(x) != 1:
            continue
        p.attrs.update(attrs)
        p.outputs = [act.outputs[0] if o is x else o for o in p.outputs]
        producers[act.outputs[0].uid] = p
        removed.add(id(act))
    g.nodes = [n for n in g.nodes if id(n) not in removed]


def dead_code_elimination(g: Graph) -> None:
    live = {v.uid for v in g.outputs}
    kept: list[Node] = []
    for n in reversed(g.nodes):
        if any(o.uid in live for o in n.outputs):
            kept.append(n)
            live.update(v.uid for v in n.inputs if v is not None)
    g.nodes = kept[::-1]


PASSES: list[tuple[str, Callable[[Graph], None]]] = [
    ("fold_constants", fold_constants),
    ("remove_identities", remove_identities),
    ("fold_linear_bias", fold_linear_bias),
    ("fuse_patterns", fuse_patterns),
    ("fold_batch_norm", fold_batch_norm),
    ("fuse_activations", fuse_activations),
    ("dead_code_elimination", dead_code_elimination),
]


def run_passes(g: Graph) -> list[tuple[str, int, int]]:
    """Run every pass in order; return (name, nodes before, nodes after) per pass."""
    stats = []
    for name, fn in PASSES:
        before = len(g.nodes)
        fn(g)
        stats.append((name, before, len(g.nodes)))
    return stats

