"""Dynamic dimensions: compare the graph traced with the example against the one traced with the dynamic
dimensions changed, name every dynamic dimension of every tensor, and make reshape/expand targets symbolic.

Any structural difference (another operator, another module, other connections, another attribute, a
constant that changed) means Python control flow or a created constant depends on tensor shapes or values,
which one graph cannot express: `ExportError` names the module path where the two graphs diverge.
Reshape targets: an entry that differs between the traces becomes 0 (copy the input dim at that position)
when it equals the input's dim at the same position in both traces, else -1 when it is the only such entry,
else (and for expand) it is read at run time from a dimension of an earlier tensor that has those sizes in both
traces (the operator's `like` input and `like_dims`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import ExportError
from .graph import Graph, Node, Value
from .tracer import where

__all__ = ["assign_static_dims", "merge_traces"]


def assign_static_dims(graph: Graph) -> None:
    for n in graph.nodes:
        for v in list(n.inputs) + list(n.outputs):
            if v is not None and v.dims is None:
                v.dims = list(v.shape)
    for v in graph.inputs:
        v.dims = list(v.shape)


def _dims(a: Value, b: Value, names: dict[tuple[int, int], str]) -> list[int | str]:
    return [sa if sa == sb else names.get((sa, sb), "?") for sa, sb in zip(a.shape, b.shape)]


class _Merge:
    def __init__(self, ga: Graph, gb: Graph, desc: str, names: dict[tuple[int, int], str]) -> None:
        self.ga, self.gb, self.desc, self.names = ga, gb, desc, names
        self.map: dict[int, Value] = {}

    def diverge(self, i: int, detail: str = "") -> ExportError:
        na = self.ga.nodes[i] if i < len(self.ga.nodes) else None
        nb = self.gb.nodes[i] if i < len(self.gb.nodes) else None
        node = na or nb
        assert node is not None
        op = node.op.removeprefix("eager:")
        extra = f" ({detail})" if detail else ""
        other = "" if na is None or nb is None or na.op == nb.op else f" (operator '{nb.op}' in the second trace)"
        return ExportError(f"the traced graph changes when the dynamic dimension(s) {self.desc} change: the two traces "
                           f"diverge at operator '{op}' in {where(node.name)}{other}{extra}. Python control flow in "
                           f"forward depends on tensor shapes or values (e.g. `if x.shape[0] > 1:` or a loop over "
                           f"x.size(0)), so one graph cannot serve every size. Make that code independent of the "
                           f"dynamic dimensions, or remove them from dynamic_axes.")

    def same_const(self, a: Value, b: Value) -> bool:
        assert a.data is not None and b.data is not None
        return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a.data, b.data, equal_nan=True)

    def inputs(self, i: int, na: Node, nb: Node) -> None:
        if len(na.inputs) != len(nb.inputs):
            raise self.diverge(i, "a different number of inputs")
        for xa, xb in zip(na.inputs, nb.inputs):
            if xa is None or xb is None:
                if xa is not xb and (xa is None) != (xb is None):
                    raise self.diverge(i, "an optional input is present in one trace only")
                continue
            if xa.is_const or xb.is_const:
                if not (xa.is_const and xb.is_const):
                    raise self.diverge(i, "an input is a constant in one trace only")
                if not self.same_const(xa, xb):
                    raise ExportError(f"a constant used by operator '{na.op}' at {where(na.name)} changes when the "
                                      f"dynamic dimension(s) {self.desc} change (shape {list(xa.shape)} vs "
                                      f"{list(xb.shape)}): it was created from the input's shape or values inside "
                                      f"forward. Create it from the input with tensor operators, or make that "
                                      f"dimension static.")
                continue
            if self.map.get(xa.uid) is not xb:
                raise self.diverge(i, "its inputs come from different operators")

    def attrs(self, i: int, na: Node, nb: Node) -> None:
        if set(na.attrs) != set(nb.attrs):
            raise self.diverge(i, "different attributes")
        for k, va in list(na.attrs.items()):
            vb = nb.attrs[k]
            if _eq(va, vb):
                continue
            if na.op in ("reshape", "expand", "arange") and k == "shape":
                na.attrs[k] = self.symbolic(na, nb)
                self.shape_follows = True
                continue
            raise ExportError(f"attribute '{k}' of operator '{na.op}' at {where(na.name)} changes with the dynamic "
                              f"dimension(s) {self.desc} ({va} vs {vb}), which opset 13 cannot express (e.g. a slice "
                              f"bound or size computed from x.shape). Use a fixed value, or make that dimension static.")

    def symbolic(self, na: Node, nb: Node) -> list[int]:
        sa, sb = list(na.attrs["shape"]), list(nb.attrs["shape"])
        ia, ib = na.inputs[0], nb.inputs[0]
        assert ia is not None and ib is not None
        if len(sa) != len(sb):
            raise ExportError(f"{na.op} at {where(na.name)} targets shapes of different rank when the dynamic "
                              f"dimension(s) {self.desc} change ({sa} vs {sb})")
        lead = len(sa) - len(ia.shape) if na.op == "expand" else 0
        out = list(sa)
        free = []
        for j, (x, y) in enumerate(zip(sa, sb)):
            if x == y:
                continue
            k = j - lead
            if 0 <= k < len(ia.shape) and ia.shape[k] == x and ib.shape[k] == y:
                out[j] = 0
            else:
                free.append(j)
        written = [j for j, (x, y) in enumerate(zip(sa, sb)) if x == y == -1] if na.op == "reshape" else []
        if written and len(free) == 1:
            # The target already infers one entry (e.g. view(bsz, heads, -1, src_len)): when that one has the
            # same size in both traces, write it out, so the entry that follows the dynamic dims can be the -1.
            ka, kb = _inferred(_sizes(sa, ia, 0), ia), _inferred(_sizes(sb, ib, 0), ib)
            if ka is not None and ka == kb:
                out[written[0]] = ka
                written = []
        if na.op == "reshape" and len(free) == 1 and not written:
            out[free[0]] = -1
        elif free and self.like(na, free, _sizes(sa, ia, lead), _sizes(sb, ib, lead)):
            pass
        elif free:
            raise ExportError(f"{na.op} at {where(na.name)} has target entries {[sa[j] for j in free]} (positions "
                              f"{free}) that change with the dynamic dimension(s) {self.desc} in a way that one "
                              f"inferred (-1) entry cannot express. Reshape with at most one -1 / one dimension "
                              f"computed from the dynamic ones.")
        return out

    def like(self, na: Node, free: list[int], sa: list[int], sb: list[int]) -> bool:
        """Target entries that vary with the dynamic dims but are no input dim at their position: read them at run
        time from a tensor computed before the node (a graph input first) that has that size at some dimension in
        both traces (the `like` input and `like_dims` of reshape/expand). False when none has."""
        if len(na.inputs) > 1:
            return False
        for v in self.seen:
            vb = self.map[v.uid]
            dims: list[int] = []
            for j in free:
                k = next((k for k in range(len(v.shape)) if v.shape[k] == sa[j] and vb.shape[k] == sb[j]), -1)
                if k < 0:
                    break
                dims.append(k)
            else:
                like_dims = [-1] * len(sa)
                for j, k in zip(free, dims):
                    like_dims[j] = k
                na.inputs = [na.inputs[0], v]
                na.attrs["like_dims"] = like_dims
                return True
        return False

    def run(self) -> None:
        ga, gb = self.ga, self.gb
        self.seen: list[Value] = []  # the non-constant values of `ga` computed so far (graph inputs first)
        for a, b in zip(ga.inputs, gb.inputs):
            self.map[a.uid] = b
            a.dims = _dims(a, b, self.names)
            self.seen.append(a)
        for i in range(max(len(ga.nodes), len(gb.nodes))):
            if i >= len(ga.nodes) or i >= len(gb.nodes):
                raise self.diverge(i, "one trace has more operators")
            na, nb = ga.nodes[i], gb.nodes[i]
            if na.op != nb.op or na.name != nb.name or len(na.outputs) != len(nb.outputs):
                raise self.diverge(i)
            self.inputs(i, na, nb)
            self.shape_follows = False
            self.attrs(i, na, nb)
            if self.shape_follows or any(v is not None and v.data is None for v in na.inputs):
                # A target that follows the dynamic dims (e.g. a constant expanded to the batch) makes the result,
                # and everything computed from it, a value of the running model, not a constant.
                for o in (*na.outputs, *nb.outputs):
                    o.data = None
            for oa, ob in zip(na.outputs, nb.outputs):
                if (oa.data is None) != (ob.data is None) or len(oa.shape) != len(ob.shape):
                    raise self.diverge(i)
                if oa.data is not None and not self.same_const(oa, ob):
                    raise ExportError(f"a value computed from constants by '{na.op.removeprefix('eager:')}' at "
                                      f"{where(na.name)} changes when the dynamic dimension(s) {self.desc} change: it "
                                      f"was built from the input's shape inside forward. Build it with tensor "
                                      f"operators from the input, or make that dimension static.")
                self.map[oa.uid] = ob
                oa.dims = _dims(oa, ob, self.names)
                if oa.data is None:
                    self.seen.append(oa)
            for v in na.inputs:
                if v is not None and v.dims is None:
                    v.dims = list(v.shape)
        for a, b in zip(ga.outputs, gb.outputs):
            if self.map.get(a.uid) is not b:
                raise ExportError(f"the model's outputs come from different operators when the dynamic dimension(s) "
                                  f"{self.desc} change; Python control flow in forward depends on tensor shapes")


def _sizes(target: list[int], x: Value, lead: int) -> list[int]:
    """The sizes a reshape/expand target means for input `x` (0 entries: x's dim at that position)."""
    return [int(x.shape[j - lead]) if t == 0 and 0 <= j - lead < len(x.shape) else t for j, t in enumerate(target)]


def _inferred(sizes: list[int], x: Value) -> int | None:
    """The size a reshape target's one -1 entry stands for with input `x` (None when it cannot be told)."""
    rest = int(np.prod([t for t in sizes if t != -1], dtype=np.int64))
    numel = int(np.prod(x.shape, dtype=np.int64))
    return numel // rest if rest > 0 and numel % rest == 0 else None


def _eq(a: Any, b: Any) -> bool:
    if isinstance(a, Value) or isinstance(b, Value):
        return True  # an index computed in the graph: compared through the node inputs
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_eq(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    return bool(a == b)


def merge_traces(ga: Graph, gb: Graph, desc: str, names: dict[tuple[int, int], str]) -> None:
    """Check that `gb` (traced with the dynamic dims changed) has the structure of `ga`; name dynamic dims in `ga`
    (in place) and make its reshape/expand targets symbolic. `names` maps (example size, changed size) -> name."""
    _Merge(ga, gb, desc, names).run()
