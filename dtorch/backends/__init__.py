"""Backends: which part of a model runs where on a board, and why.

A backend declares what it takes, (operator, dtypes, constraints on shapes, strides, kernel sizes, channel
alignment, ...) -> kernel, and answers for one node "taken" or the exact reason it is not (`_interface.py`). Backends
are found through the package entry point group ``dtorch.backends`` (`_discovery.py`), so a package adds one with
``pip install`` and no change to DTorch; DTorch's own are registered the same way in its pyproject.toml:

- ``cpu`` (cpu.py): what the C++ kernels of the board's runtime build take; every plan falls back to it;
- ``npu-sim`` (npu_sim.py): a simulation of the RK3588 NPU, with a cost model whose latencies are estimates.

`check_model` gives a model's support matrix and plan (`_plan.py`: every node's backend or fallback reason, the
subgraphs and the transfers between them); `Simulator` (`_simulate.py`) executes a plan on the host.

    dtorch-edge ops check --board rk3588 --model model_int8.dtm --backend npu-sim [--json]
    dtorch-edge emulate --board rk3588 --model model_int8.dtm --backend npu-sim
"""

from __future__ import annotations

import os
from typing import Any

from ._discovery import GROUP, LoadError, Registry, discover, load_backend
from ._interface import (
    CATEGORIES,
    Backend,
    BackendError,
    BackendUnavailable,
    Constraint,
    NodeView,
    OpSupport,
    SubgraphEstimate,
    TensorView,
    Verdict,
    ints_within,
)
from ._plan import Assignment, Plan, Step, make_plan, node_views
from ._simulate import SimulationError, SimulationResult, Simulator, run_model, simulation_figures

__all__ = ["CATEGORIES", "GROUP", "Assignment", "Backend", "BackendError", "BackendUnavailable", "Constraint",
           "LoadError", "NodeView", "OpSupport", "Plan", "Registry", "SimulationError", "SimulationResult", "Simulator",
           "Step", "SubgraphEstimate", "TensorView", "Verdict", "check_model", "discover", "ints_within",
           "load_backend", "make_plan", "node_views", "run_model", "simulation_figures"]

#: The backend every plan falls back to: the board's CPU build.
CPU_BACKEND = "cpu"


def check_model(model: str | os.PathLike[str] | Any, board: str | Any, backend: str | None = None, *,
                registry: Registry | None = None, batch_scale: float = 1.0) -> Plan:
    """The support matrix and plan of `model` (a .dtm path or a read DtmFile) on `board` (a name or a Board): the
    board's CPU build, and the accelerator `backend` first when one is named. Raises BoardError (unknown board),
    DtmFormatError (a missing or corrupt model), BackendError (an unknown backend, one that failed to load, or one
    that cannot serve the board)."""
    from .._export.reader import read_dtm
    from ..edge.boards import load_board

    b = load_board(board) if isinstance(board, str) else board
    reg = registry if registry is not None else discover()
    cpu = reg.get(CPU_BACKEND, b)
    acc = None if backend is None or backend == CPU_BACKEND else reg.get(backend, b)
    dtm = read_dtm(model) if isinstance(model, (str, os.PathLike)) else model
    return make_plan(dtm, b, cpu, acc, batch_scale=batch_scale)
