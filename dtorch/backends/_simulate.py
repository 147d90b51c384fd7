"""Executing a plan on the host: each subgraph is cut out of the model as a model of its own and run by the host
C++ runtime, and each transfer copies a tensor from one memory to the other. Nothing else moves data: a subgraph
reads only what its backend's memory holds, so a plan that forgot a transfer fails here instead of passing.

An accelerator's subgraphs run with the portable kernels, the specification the int8 kernels of every kernel set
follow bit for bit (or the backend's own `execute`, when it has one), so a simulated plan gives the all-CPU run's
bits (the check `compare_with_cpu` makes). The CPU's subgraphs run with the kernel policy given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._interface import BackendError
from ._plan import Plan, Step

__all__ = ["SimulationError", "SimulationResult", "Simulator", "run_model", "simulation_figures"]


class SimulationError(BackendError):
    """A plan cannot be executed (a subgraph the runtime refuses, or a tensor missing from a backend's memory)."""


@dataclass
class SimulationResult:
    outputs: list[np.ndarray]
    transfer_bytes: int  # the bytes the transfers moved, at the shapes that ran
    subgraphs_run: int


def _subgraph_bytes(graph: Any, values: Mapping[int, Any], step: Step) -> bytes:
    """The .dtm bytes of one subgraph: its inputs become graph inputs (an unnamed dynamic dim gets a name of its
    own), its outputs the tensors later steps read."""
    from .._export.exporter import graph_bytes
    from .._export.graph import Graph, Node, Value

    new_inputs: dict[int, Value] = {}
    for t in step.inputs:
        v = values[t]
        dims = [f"d{t}_{j}" if d == "?" else d for j, d in enumerate(v.dims if v.dims is not None else v.shape)]
        new_inputs[v.uid] = Value(tuple(v.shape), v.dtype, "input", None, "", dims)
    nodes = [Node(n.op, [None if v is None else new_inputs.get(v.uid, v) for v in n.inputs], list(n.outputs),
                  dict(n.attrs), n.name) for n in (graph.nodes[k] for k in step.nodes)]
    sub = Graph(list(new_inputs.values()), [values[t] for t in step.outputs], nodes)
    return graph_bytes(sub, [f"t{t}" for t in step.inputs], [f"t{t}" for t in step.outputs])


class Simulator:
    """Runs a Plan of a read .dtm file (`dtm`) on the host; `kernels`: the policy of the CPU's subgraphs."""

    def __init__(self, plan: Plan, dtm: Any, *, kernels: str = "exact", threads: int = 1) -> None:
        from .. import runtime as rt

        self.plan = plan
        graph, self.input_names, self.output_names = dtm.to_graph()
        values: dict[int, Any] = dict(zip(dtm.inputs, graph.inputs))
        for spec, node in zip(dtm.nodes, graph.nodes):
            values.update((i, v) for i, v in zip(spec.inputs, node.inputs) if i >= 0 and v is not None)
            values.update(zip(spec.outputs, node.outputs))
        self._graph = graph
        self._values = values
        self._sessions: dict[int, Any] = {}
        self._subgraphs: dict[int, Any] = {}
        backends = {b.name: b for b in (plan.cpu, plan.accelerator) if b is not None}
        self._backends = backends
        for k, step in enumerate(plan.steps):
            if step.kind != "subgraph" or not step.outputs:
                continue
            try:
                data = _subgraph_bytes(graph, values, step)
                policy = kernels if backends[step.backend].kind == "cpu" else "portable"
                self._sessions[k] = rt.InferenceSession(data, kernels=policy, threads=threads)
            except (rt.InvalidModelError, rt.UnsupportedError, ValueError) as e:
                raise SimulationError(f"subgraph {k} ({step.backend}, nodes {step.nodes[0]}-{step.nodes[-1]}) cannot "
                                      f"run on the host runtime: {' '.join(str(e).split())}") from None

    def run(self, inputs: Sequence[np.ndarray]) -> SimulationResult:
        """The model's outputs for `inputs` (in the model's input order), computed step by step."""
        home = self.plan.cpu.name
        if len(inputs) != len(self.plan.graph_inputs):
            raise SimulationError(f"the model takes {len(self.plan.graph_inputs)} input(s), got {len(inputs)}")
        memory: dict[str, dict[int, np.ndarray]] = {name: {} for name in self._backends}
        memory[home].update(zip(self.plan.graph_inputs, (np.asarray(x) for x in inputs)))
        moved = runs = 0
        for k, step in enumerate(self.plan.steps):
            if step.kind == "transfer":
                src = memory[step.src]
                if step.tensor not in src:
                    raise SimulationError(f"transfer of {step.name!r}: {step.src} does not hold it")
                memory[step.dst][step.tensor] = src[step.tensor].copy()
                moved += src[step.tensor].nbytes
                continue
            if k not in self._sessions:
                continue
            mem = memory[step.backend]
            missing = [t for t in step.inputs if t not in mem]
            if missing:
                raise SimulationError(f"subgraph {k} on {step.backend} reads tensor {missing[0]}, which its memory "
                                      f"does not hold (a missing transfer)")
            arrays = [mem[t] for t in step.inputs]
            outs = self._backends[step.backend].execute(self._subgraph(k, step), arrays)
            if outs is None:
                outs = self._sessions[k].run(None, {f"t{t}": a for t, a in zip(step.inputs, arrays)})
            mem.update(zip(step.outputs, (np.asarray(o) for o in outs)))
            runs += 1
        missing = [t for t in self.plan.graph_outputs if t not in memory[home]]
        if missing:
            raise SimulationError(f"output tensor {missing[0]} never reached the CPU's memory")
        return SimulationResult([memory[home][t] for t in self.plan.graph_outputs], moved, runs)

    def _subgraph(self, k: int, step: Step) -> Any:
        """The subgraph of step k as a Graph, for a backend's own `execute`."""
        if k not in self._subgraphs:
            from .._export.graph import Graph

            nodes = [self._graph.nodes[i] for i in step.nodes]
            self._subgraphs[k] = Graph([self._values[t] for t in step.inputs], [self._values[t] for t in step.outputs],
                                       nodes)
        return self._subgraphs[k]


def run_model(path: Any, inputs: Sequence[np.ndarray], *, kernels: str = "exact", threads: int = 1) -> list[np.ndarray]:
    """The whole model on the host runtime (the all-CPU reference of a simulation)."""
    from .. import runtime as rt

    sess = rt.InferenceSession(str(path), kernels=kernels, threads=threads)
    names = [i.name for i in sess.get_inputs()]
    return list(sess.run(None, dict(zip(names, inputs))))


def simulation_figures(plan: Plan, dtm: Any, samples: Sequence[Sequence[np.ndarray]], *,
                       kernels: str = "exact") -> dict[str, Any]:
    """What `dtorch-edge emulate --backend NAME` reports of an accelerator plan: the plan run by the Simulator on
    every sample and compared, bit for bit, with the whole model on the host runtime (the all-CPU run), and the
    plan's estimated latency beside the CPU's alone. Labelled a simulation, its times estimates."""
    acc = plan.accelerator
    if acc is None:
        raise SimulationError("the plan has no accelerator backend to simulate")
    sim = Simulator(plan, dtm, kernels=kernels)
    identical, moved = True, 0
    for arrays in samples:
        res = sim.run(arrays)
        want = run_model(dtm.path, arrays, kernels=kernels)
        moved = max(moved, res.transfer_bytes)
        identical &= len(res.outputs) == len(want) and all(
            g.shape == w.shape and g.dtype == w.dtype and g.tobytes() == w.tobytes() for g, w in zip(res.outputs, want))
    t = plan.totals()
    return {"backend": acc.name, "label": "simulation", "latency_label": "estimate", "description": acc.describe(),
            "basis": acc.basis(), "kernels": kernels, "inputs": len(samples),
            "outputs_bit_identical_to_cpu": bool(identical),
            "nodes": t["nodes"], "nodes_on_backend": t["nodes_by_backend"].get(acc.name, 0),
            "subgraphs": [s.to_json() for s in plan.subgraphs(acc.name)],
            "transfers": len(plan.transfers()), "transfer_bytes": t["transfer_bytes"],
            "transfer_bytes_last_run": moved,
            "fallbacks": [{"node": a.node.index, "op": a.node.op, "category": a.fallback.category,
                           "reason": a.fallback.reason} for a in plan.assignments if a.fallback is not None],
            "estimate_ms": t["estimate_ms"], "estimate_total_ms": t["estimate_total_ms"],
            "cpu_only_estimate_ms": t["cpu_only_estimate_ms"]}
