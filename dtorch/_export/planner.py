"""The arena memory plan of a `.dtm` file, made by the runtime's own planner (runtime/hosted/planner.h, through
the binding `dtorch.runtime._C.plan_arena`): the exporter and the runtime share one algorithm, "greedy-by-size",
and a runtime at the example shapes runs on exactly the plan the file carries. This module describes the graph to
it and verifies the result independently (`verify_plan`).

Only intermediate tensors are planned (not inputs, outputs or constants); their sizes come from the example
shapes. Lifetime of a tensor = [index of its producing node, index of its last consuming node] (a tensor that
nobody reads lives at its producer only). In place: a node's first output takes over its first input's buffer
when that input is an intermediate that dies at this node, with the same dtype and size, and the catalogue's rule
allows it (OpDef.inplace "always", or "same_shape" with equal shapes).
Buffers are sorted by size descending (ties: earlier first use first, then lower tensor index) and each is placed
at the lowest offset, a multiple of 64, that overlaps no already placed buffer whose lifetime intersects its own.
Arena size = the largest end, rounded up to 64. Kernel scratch is not in the file's plan: the runtime places it
around the file's tensors at load.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..catalogue import CATALOGUE

__all__ = ["ALIGN", "ALGORITHM", "MemoryPlan", "PlanNode", "plan_memory", "verify_plan"]

ALGORITHM = "greedy-by-size"
ALIGN = 64


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


def plan_memory(nodes: Sequence[PlanNode], sizes: Sequence[int], shapes: Sequence[Sequence[int]],
                dtypes: Sequence[np.dtype | str], intermediate: Sequence[bool]) -> MemoryPlan:
    """The runtime planner's plan for these tensors (sizes in bytes at the example shapes)."""
    from ..runtime import _C

    pnodes = [(CATALOGUE[n.op].inplace, list(n.inputs), list(n.outputs), 0) for n in nodes]
    ptensors = [(bool(intermediate[t]), int(sizes[t]), np.dtype(dtypes[t]).name, [int(d) for d in shapes[t]])
                for t in range(len(intermediate))]
    offsets, _, arena = _C.plan_arena(pnodes, ptensors)
    life = lifetimes(nodes, intermediate)
    return MemoryPlan(ALGORITHM, int(arena), [int(o) for o in offsets], sum(int(sizes[t]) for t in life), life)


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
        if off >= 0 and off % ALIGN:
            raise ValueError(f"tensor {t} has the offset {off}, not a multiple of {ALIGN}")
        if off < 0 or off + int(sizes[t]) > arena_size:
            raise ValueError(f"tensor {t} ({sizes[t]} bytes) at the offset {off} lies outside the arena of "
                             f"{arena_size} bytes")
    need = max((offsets[t] + int(sizes[t]) for t in life), default=0)
    if arena_size != (need + ALIGN - 1) // ALIGN * ALIGN:
        raise ValueError(f"the arena size {arena_size} is not what its offsets need ({need} bytes, rounded up to "
                         f"{ALIGN})")
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
                if not (offsets[a] == offsets[b] and int(sizes[a]) == int(sizes[b]) and ea == sb == produced_at[b]
                        and _is_inplace_pair(nodes[sb], a, b)):
                    raise ValueError(f"memory plan error: tensors {a} (nodes {sa}..{ea}) and {b} (nodes {sb}..{eb}) "
                                     f"are alive at the same time and overlap in the arena")


def _is_inplace_pair(n: PlanNode, src: int, out: int) -> bool:
    return bool(n.inputs) and n.inputs[0] == src and bool(n.outputs) and n.outputs[0] == out and \
        CATALOGUE[n.op].inplace != "none"
