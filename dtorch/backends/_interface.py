"""The backend interface: what a backend declares it takes, and its answer for one node.

A backend is a `Backend` subclass, constructed with the board it serves. It declares what it takes as a table of
`OpSupport` entries, (operator, dtypes, constraints) -> kernel, where each `Constraint` is one rule on the node's
shapes, strides, kernel sizes, channel alignment, ... with the category a refusal is filed under. `Backend.check`
answers one node (a `NodeView`: operator, attributes, input and output tensors at the model's example shapes) with
a `Verdict`: taken, by which kernel, or the exact reason it is not. A backend that needs more than a table overrides
`check`.

Accelerator backends also give a cost model (`estimate`, `transfer_ms`) and may execute their subgraphs their own
way (`Backend.execute`); by default a subgraph runs through the host C++ runtime's portable kernels, the
specification every kernel set follows bit for bit for int8.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:
    from ..edge.boards import Board

__all__ = ["CATEGORIES", "Backend", "BackendError", "BackendUnavailable", "Constraint", "NodeView", "OpSupport",
           "SubgraphEstimate", "TensorView", "Verdict", "ints_within"]

#: The categories a refusal is filed under (a backend may use others; these are the ones DTorch's own use).
CATEGORIES = ("operator", "dtype", "shape", "kernel size", "stride", "padding", "dilation", "groups", "alignment",
              "axes", "activation", "backend")


class BackendError(ValueError):
    """A backend cannot be used: an unknown name, a package that failed to load, or a board it cannot serve."""


class BackendUnavailable(BackendError):
    """Raised by a backend's constructor when it cannot serve this board (e.g. the board has no NPU entry)."""


@dataclass(frozen=True)
class TensorView:
    """One tensor of a node: dtype, its shape at the model's example inputs, the declared dims (names for
    dynamic sizes) and whether it is a constant (weights)."""

    index: int
    name: str
    dtype: str
    shape: tuple[int, ...]
    dims: tuple[int | str, ...]
    constant: bool = False

    @property
    def nbytes(self) -> int:
        return int(np.dtype(self.dtype).itemsize) * math.prod(int(s) for s in self.shape)


@dataclass(frozen=True)
class NodeView:
    """One node of a model as a backend sees it."""

    index: int
    op: str
    name: str  # the module path where the operator ran ("" at the top)
    attrs: Mapping[str, Any]
    inputs: tuple[TensorView | None, ...]  # None: an absent optional input
    outputs: tuple[TensorView, ...]

    @property
    def dtype(self) -> str:
        """The dtype its kernel is chosen by: its first present input's (its first output's without inputs)."""
        first = next((t for t in self.inputs if t is not None), None)
        return (first or self.outputs[0]).dtype

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    @property
    def where(self) -> str:
        return self.name or "<top>"


@dataclass(frozen=True)
class Verdict:
    """A backend's answer for one node: `takes` with `kernel`, or not, with the `category` of the refusal (see
    CATEGORIES) and the `reason`, one line that says exactly what is out of bounds."""

    takes: bool
    kernel: str | None = None
    category: str = ""
    reason: str = ""

    @classmethod
    def taken(cls, kernel: str) -> Verdict:
        return cls(True, kernel)

    @classmethod
    def refused(cls, category: str, reason: str) -> Verdict:
        return cls(False, None, category, reason)

    def line(self) -> str:
        return f"{self.category}: {self.reason}" if not self.takes else f"kernel {self.kernel}"


@dataclass(frozen=True)
class Constraint:
    """One rule an operator's nodes must follow on a backend. `check(node)` returns None when the node follows it,
    else the reason (one line); `doc` states the rule (and its source) for listings."""

    category: str
    doc: str
    check: Callable[[NodeView], str | None]


def ints_within(category: str, what: str, get: Callable[[NodeView], Sequence[int]], lo: int, hi: int,
                source: str = "") -> Constraint:
    """A constraint: every value `get(node)` returns lies in [lo, hi] (e.g. the kernel height and width)."""
    note = f" ({source})" if source else ""

    def check(n: NodeView) -> str | None:
        values = [int(v) for v in get(n)]
        if all(lo <= v <= hi for v in values):
            return None
        return f"{what} {'x'.join(map(str, values))} is outside [{lo}, {hi}]{note}"

    return Constraint(category, f"{what} in [{lo}, {hi}]{note}", check)


@dataclass(frozen=True)
class OpSupport:
    """What a backend takes of one operator: the dtypes (of the node's first input, as kernels are keyed) and the
    constraints every node must follow, and the kernel that runs it."""

    op: str
    dtypes: tuple[str, ...]
    kernel: str
    constraints: tuple[Constraint, ...] = ()
    doc: str = ""


@dataclass(frozen=True)
class SubgraphEstimate:
    """A backend's estimate of one subgraph's latency (milliseconds), and what it is made of."""

    latency_ms: float
    compute_ms: float = 0.0
    memory_ms: float = 0.0
    launch_ms: float = 0.0
    macs: int = 0
    details: Mapping[str, Any] = field(default_factory=dict)


class Backend:
    """The base of every backend. Subclasses set `description`, `kind` and `supports` (or override `check`), and are
    constructed with the `Board` they serve (raise `BackendUnavailable`, one line, for a board they cannot serve).
    Their name is the name of their entry point in the group ``dtorch.backends``.

    kind "cpu": the board's CPU build, which every plan falls back to; "accelerator": a backend that takes what it
    can and leaves the rest to the CPU. `simulated`: its execution is a simulation and its latencies are estimates
    (every report says so)."""

    name: str = ""
    description: ClassVar[str] = ""
    kind: ClassVar[str] = "accelerator"
    simulated: ClassVar[bool] = False
    supports: tuple[OpSupport, ...] = ()

    def __init__(self, board: Board) -> None:
        self.board = board

    def check(self, node: NodeView) -> Verdict:
        """Taken (with its kernel) or the first rule it breaks: no entry for the operator, none for its dtype, or
        the first constraint that fails."""
        entries = [s for s in self.supports if s.op == node.op]
        if not entries:
            return Verdict.refused("operator", f"{self.name} has no {node.op} kernel")
        entry = next((s for s in entries if node.dtype in s.dtypes), None)
        if entry is None:
            have = sorted({d for s in entries for d in s.dtypes})
            return Verdict.refused("dtype", f"{self.name} takes {node.op} on {', '.join(have)} only, not "
                                            f"{node.dtype}")
        for c in entry.constraints:
            why = c.check(node)
            if why is not None:
                return Verdict.refused(c.category, why)
        return Verdict.taken(entry.kernel)

    def estimate(self, nodes: Sequence[NodeView], batch_scale: float = 1.0) -> SubgraphEstimate | None:
        """The estimated latency of running `nodes` (one subgraph) on this backend, or None without a cost model."""
        return None

    def transfer_ms(self, nbytes: int) -> float | None:
        """The estimated time to move `nbytes` between the CPU's memory and this backend's, or None."""
        return None

    def execute(self, subgraph: Any, inputs: Sequence[np.ndarray]) -> list[np.ndarray] | None:
        """Run one subgraph (a dtorch._export.graph.Graph with its inputs and outputs) on `inputs`; None (the
        default) leaves it to the host C++ runtime's portable kernels, the bit-exact specification."""
        return None

    def describe(self) -> str:
        return self.description or self.name

    def basis(self) -> str:
        """One line on what the cost model assumes ("" without one)."""
        return ""
