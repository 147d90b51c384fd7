"""The ``cpu`` backend: what the C++ kernels of a board's runtime build take.

Its table is read from the runtime's sources, so it follows them with no edit here: every operator the portable
kernel set registers (runtime/kernels/portable/<op>.cc, each with its dtypes; the operator catalogue,
dtorch/catalogue/, says what each operator is), preceded by the ISA kernel sets the board's build takes for its ISA
list (kernel_set.json `requires`, e.g. neon64 on a board that lists neon: dtorch.edge.kernel_sets; the host board
takes every set of its architecture, each registering on CPUs that have its ISA), which run where they register a
kernel under the build's default "fast" policy. A node's kernel is named by the set of highest rank (kernel_set.json
`rank`, as the runtime picks) that registers its (operator, dtype), else portable; on the host, where a set registers
only on CPUs with its ISA, that is the kernel a CPU with every set runs. A node is refused when no kernel of the build
registers its (operator, dtype), or when it breaks a limit a kernel checks at run time (qmean's count of averaged
values). Every plan falls back to this backend; its latency estimate is the emulator's board estimate
(dtorch.edge.emulate.estimate).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._interface import Backend, BackendUnavailable, Constraint, NodeView, OpSupport, SubgraphEstimate

if TYPE_CHECKING:
    from ..edge.boards import Board

__all__ = ["CpuBackend"]


def _qmean_count(n: NodeView) -> str | None:
    from ..catalogue.quant import QMEAN_MAX_COUNT

    x = n.inputs[0]
    if x is None:
        return None
    rank = len(x.shape)
    axes = n.attr("axes")
    axes = list(range(rank)) if axes is None else [a % rank for a in axes] if rank else []
    count = math.prod(x.shape[a] for a in axes) if axes else 1
    if count <= QMEAN_MAX_COUNT:
        return None
    return f"qmean averages {count} values per output, more than its kernel's {QMEAN_MAX_COUNT} (2^23)"


_RUNTIME_LIMITS = {"qmean": (Constraint("shape", "at most 2^23 values per output (its int32 sum stays exact)",
                                        _qmean_count),)}


class CpuBackend(Backend):
    kind = "cpu"

    def __init__(self, board: Board) -> None:
        super().__init__(board)
        from ..edge.kernel_sets import KernelSetError, kernel_sets
        from ..edge.oplist import OpListError, kernel_catalog
        from ..edge.resources import ResourceError, resource_root

        try:
            runtime = resource_root() / "runtime"
            portable = kernel_catalog(runtime, "portable")
            sets = sorted((ks for ks in kernel_sets(runtime, board.arch)
                           if board.native or ks.for_board(board.arch, board.isa)),
                          key=lambda ks: (-(ks.rank or 0), ks.name))  # the runtime's order: highest rank first
            fast = [kernel_catalog(runtime, ks.name) for ks in sets]
        except (ResourceError, OpListError, KernelSetError) as e:
            raise BackendUnavailable(f"cannot read the runtime's kernels: {e}") from None
        table: list[OpSupport] = []
        for cat in (*fast, portable):  # the first entry with the node's dtype is the kernel that runs it
            for op in sorted(cat.files):
                table.append(OpSupport(op, tuple(cat.dtypes(op)), f"{cat.kernel_set}:{op}",
                                       _RUNTIME_LIMITS.get(op, ())))
        self.supports = tuple(table)
        self.kernel_sets = ("portable", *(c.kernel_set for c in fast))
        self.description = (f"the CPU build for {board.name} ({board.cpu_summary()}): "
                            f"{' + '.join(self.kernel_sets)} kernels")

    def estimate(self, nodes: Sequence[NodeView], batch_scale: float = 1.0) -> SubgraphEstimate | None:
        from ..edge.emulate.estimate import estimate_latency, node_work

        work = [node_work(n.op, n.attrs, [None if t is None else (t.shape, t.dtype, t.constant) for t in n.inputs],
                          [(t.shape, t.dtype) for t in n.outputs], batch_scale) for n in nodes]
        est = estimate_latency(self.board, work)
        if est is None:
            return None
        return SubgraphEstimate(est["latency_ms"], est["compute_ms"], est["memory_ms"], 0.0, int(est["macs"]),
                                {"basis": est["basis"]})
