"""The arena memory plan, "greedy-by-size" (the C++ runtime implements exactly the same algorithm):

Only intermediate tensors are planned (not inputs, outputs or constants); their sizes come from the example
shapes. Lifetime of a tensor = [index of its producing node, index of its last consuming node] (a tensor that
nobody reads lives at its producer only). In-place: when node i is a unary elementwise op (INPLACE_UNARY), or
add/sub/mul/div whose output shape equals its first input's shape (INPLACE_BINARY; both from the catalogue),
and its first input is an intermediate whose last use is node i, the output shares the input's buffer (the
buffer's lifetime is the union).
Buffers are sorted by size descending (ties: earlier first use first, then lower smallest tensor index) and
each is placed at the lowest offset, a multiple of 64, that overlaps no already placed buffer whose lifetime
intersects its own. Arena size = the largest end, rounded up to 64.

`verify_plan` independently checks that no two tensors alive at the same time overlap in memory (tensors of
one in-place buffer may share it only where one ends at the node that produces the next).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..catalogue import CATALOGUE

__all__ = ["ALIGN", "ALGORITHM", "INPLACE_BINARY", "INPLACE_UNARY", "MemoryPlan", "PlanNode", "plan_memory",
           "verify_plan"]

ALGORITHM = "greedy-by-size"
ALIGN = 64
# From the catalogue (OpDef.inplace): "always" and "same_shape".
INPLACE_UNARY = frozenset(op.name for op in CATALOGUE.values() if op.inplace == "always")
INPLACE_BINARY = frozenset(op.name for op in CATALOGUE.values() if op.inplace == "same_shape")


@dataclass(frozen=True)
class PlanNode:
    op: str
    inputs: Sequence[int]  # tensor indices, -1 for an absent input
    outputs: Sequence[int]


@dataclass
class MemoryPlan:
    algorithm: str
    arena_size: int
    offsets: list[int]  # per tensor; -1 for tensors outside the arena
    sum_of_intermediates: int
    lifetimes: dict[int, tuple[int, int]] = field(default_factory=dict)
    groups: list[list[int]] = field(default_factory=list)  # tensors sharing one buffer (in-place chains)


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def lifetimes(nodes: Sequence[PlanNode], intermediate: Sequence[bool]) -> dict[int, tuple[int, int]]:
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for i, n in enumerate(nodes):
        for t in n.inputs:
            if t >= 0 and intermediate[t]:
                last[t] = i
        for t in n.outputs:
            if intermediate[t]:
                first[t] = i
                last.setdefault(t, i)
    return {t: (first[t], max(last[t], first[t])) for t in first}


def _inplace_source(i: int, n: PlanNode, shapes: Sequence[Sequence[int]], intermediate: Sequence[bool],
                    life: dict[int, tuple[int, int]]) -> int:
    """The tensor whose buffer node i's output reuses, or -1."""
    if not n.inputs or not n.outputs:
        return -1
    src, out = n.inputs[0], n.outputs[0]
    if src < 0 or not intermediate[src] or not intermediate[out] or life[src][1] != i:
        return -1
    if n.op in INPLACE_UNARY or (n.op in INPLACE_BINARY and list(shapes[out]) == list(shapes[src])):
        return src
    return -1


def plan_memory(nodes: Sequence[PlanNode], sizes: Sequence[int], shapes: Sequence[Sequence[int]],
                intermediate: Sequence[bool]) -> MemoryPlan:
    life = lifetimes(nodes, intermediate)
    buf_of: dict[int, int] = {}
    bufs: list[dict[str, int | list[int]]] = []
    for i, n in enumerate(nodes):
        for k, t in enumerate(n.outputs):
            if not intermediate[t]:
                continue
            src = _inplace_source(i, n, shapes, intermediate, life) if k == 0 else -1
            if src >= 0:
                b = bufs[buf_of[src]]
                b["tensors"].append(t)  # type: ignore[union-attr]
                b["end"] = max(int(b["end"]), life[t][1])  # type: ignore[call-overload]
                b["size"] = max(int(b["size"]), int(sizes[t]))  # type: ignore[call-overload]
                buf_of[t] = buf_of[src]
            else:
                buf_of[t] = len(bufs)
                bufs.append({"tensors": [t], "start": life[t][0], "end": life[t][1], "size": int(sizes[t])})
    order = sorted(range(len(bufs)), key=lambda j: (-int(bufs[j]["size"]), int(bufs[j]["start"]),  # type: ignore[call-overload]
                                                    min(bufs[j]["tensors"])))  # type: ignore[type-var]
    placed: list[tuple[int, int, int, int]] = []  # (offset, size, start, end)
    offsets_b = [0] * len(bufs)
    for j in order:
        size, start, end = int(bufs[j]["size"]), int(bufs[j]["start"]), int(bufs[j]["end"])  # type: ignore[call-overload]
        cand = 0
        for off, sz, _, _ in sorted(p for p in placed if p[2] <= end and start <= p[3]):
            if sz == 0:  # an empty buffer occupies nothing
                continue
            if cand + size <= off:
                break
            cand = max(cand, _align(off + sz))
        offsets_b[j] = cand
        placed.append((cand, size, start, end))
    offsets = [-1] * len(intermediate)
    for t, j in buf_of.items():
        offsets[t] = offsets_b[j]
    arena = _align(max((o + s for o, s, _, _ in placed), default=0))
    total = sum(int(sizes[t]) for t in life)
    groups = [list(b["tensors"]) for b in bufs]  # type: ignore[call-overload]
    return MemoryPlan(ALGORITHM, arena, offsets, total, life, groups)


def verify_plan(nodes: Sequence[PlanNode], sizes: Sequence[int], intermediate: Sequence[bool], offsets: Sequence[int],
                arena_size: int) -> None:
    """Raise AssertionError-like ValueError when two tensors alive at the same time overlap in the arena."""
    life = lifetimes(nodes, intermediate)
    produced_at = {t: s for t, (s, _) in life.items()}
    for t in range(len(intermediate)):
        off = offsets[t]
        if not intermediate[t]:
            if off != -1:
                raise ValueError(f"tensor {t} is not an intermediate but has an arena offset {off}")
            continue
        if t not in life:
            continue
        if off < 0 or off % ALIGN or off + int(sizes[t]) > arena_size:
            raise ValueError(f"tensor {t}: offset {off} (size {sizes[t]}) is unaligned or outside the arena of "
                             f"{arena_size} bytes")
    ts = sorted(life, key=lambda t: life[t][0])
    for a_i, a in enumerate(ts):
        sa, ea = life[a]
        for b in ts[a_i + 1:]:
            sb, eb = life[b]
            if sb > ea:
                break
            if int(sizes[a]) == 0 or int(sizes[b]) == 0:
                continue
            if offsets[a] < offsets[b] + int(sizes[b]) and offsets[b] < offsets[a] + int(sizes[a]):
                # allowed only for an in-place hand-over: a ends exactly where b is produced, same buffer start
                if not (offsets[a] == offsets[b] and ea == sb == produced_at[b] and
                        _is_inplace_pair(nodes[sb], a, b)):
                    raise ValueError(f"memory plan error: tensors {a} (nodes {sa}..{ea}) and {b} (nodes {sb}..{eb}) "
                                     f"are alive at the same time and overlap in the arena")


def _is_inplace_pair(n: PlanNode, src: int, out: int) -> bool:
    return bool(n.inputs) and n.inputs[0] == src and bool(n.outputs) and n.outputs[0] == out and \
        (n.op in INPLACE_UNARY or n.op in INPLACE_BINARY)
