"""The support matrix and the execution plan of a model on a board: which backend takes each node, why the rest fall
back, and the partition into subgraphs with explicit transfers between them.

Each node is offered to the chosen accelerator backend first (when there is one), then to the board's CPU build
(the `cpu` backend), which every plan falls back to. The partitioner walks the nodes in their (topological) file
order and groups consecutive nodes on the same backend into one subgraph; a tensor a subgraph reads that lives in
the other memory (a graph input, or another backend's output) is moved by a transfer step placed before it, once per
tensor and memory; the graph's outputs come back to the CPU's memory at the end. Every step has its bytes (at the
model's example shapes) and, where the backend has a cost model, its estimated time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._interface import Backend, NodeView, SubgraphEstimate, TensorView, Verdict

__all__ = ["Assignment", "Plan", "Step", "make_plan", "node_views"]


def node_views(dtm: Any) -> list[NodeView]:
    """The nodes of a read .dtm file (dtorch._export.reader.DtmFile) as backends see them."""
    views = [TensorView(i, t.name, t.dtype, tuple(int(s) for s in t.example_shape), tuple(t.dims), t.kind == "constant")
             for i, t in enumerate(dtm.tensors)]
    return [NodeView(k, n.op, n.name, dict(n.attrs), tuple(None if i < 0 else views[i] for i in n.inputs),
                     tuple(views[i] for i in n.outputs)) for k, n in enumerate(dtm.nodes)]


@dataclass
class Assignment:
    """Where one node runs: `backend` and its `kernel` (None: no backend takes it), the accelerator's refusal when it
    fell back (`fallback`), and the CPU build's refusal when nothing takes it (`refusal`)."""

    node: NodeView
    backend: str | None
    kernel: str | None
    fallback: Verdict | None = None
    refusal: Verdict | None = None

    def to_json(self) -> dict[str, Any]:
        n = self.node
        d: dict[str, Any] = {"index": n.index, "op": n.op, "dtype": n.dtype, "module": n.name, "backend": self.backend,
                             "kernel": self.kernel, "fallback": None, "unsupported": None}
        if self.fallback is not None:
            d["fallback"] = {"category": self.fallback.category, "reason": self.fallback.reason}
        if self.refusal is not None:
            d["unsupported"] = {"category": self.refusal.category, "reason": self.refusal.reason}
        return d


@dataclass
class Step:
    """One step of a plan: a subgraph (consecutive nodes on one backend) or a transfer of one tensor between
    memories."""

    kind: str  # "subgraph" or "transfer"
    backend: str = ""  # subgraph: its backend
    nodes: list[int] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)   # subgraph: tensors it reads (not constants)
    outputs: list[int] = field(default_factory=list)  # subgraph: tensors later steps or the graph's outputs read
    tensor: int = -1  # transfer: the tensor
    name: str = ""    # transfer: the tensor's name
    src: str = ""
    dst: str = ""
    nbytes: int = 0   # transfer: its bytes; subgraph: the bytes of its weights
    estimate: SubgraphEstimate | None = None
    transfer_ms: float | None = None

    def to_json(self) -> dict[str, Any]:
        if self.kind == "transfer":
            return {"kind": "transfer", "tensor": self.tensor, "name": self.name, "from": self.src, "to": self.dst,
                    "bytes": self.nbytes, "estimate_ms": self.transfer_ms}
        est = self.estimate
        return {"kind": "subgraph", "backend": self.backend, "nodes": self.nodes, "inputs": self.inputs,
                "outputs": self.outputs, "weight_bytes": self.nbytes,
                "estimate": None if est is None else {"latency_ms": est.latency_ms, "compute_ms": est.compute_ms,
                                                      "memory_ms": est.memory_ms, "launch_ms": est.launch_ms,
                                                      "macs": est.macs}}


@dataclass
class Plan:
    """The support matrix and the partitioned plan of one model on one board."""

    model: str
    board: str
    cpu: Backend
    accelerator: Backend | None
    assignments: list[Assignment]
    steps: list[Step]
    graph_inputs: list[int]
    graph_outputs: list[int]
    batch_scale: float = 1.0

    @property
    def unsupported(self) -> list[Assignment]:
        """The nodes no backend takes (a model the board's build cannot run)."""
        return [a for a in self.assignments if a.backend is None]

    def subgraphs(self, backend: str | None = None) -> list[Step]:
        return [s for s in self.steps if s.kind == "subgraph" and (backend is None or s.backend == backend)]

    def transfers(self) -> list[Step]:
        return [s for s in self.steps if s.kind == "transfer"]

    def totals(self) -> dict[str, Any]:
        """Counts, bytes and the estimated latency of the plan: each step's estimate added up (steps run one after
        another); None where a backend gives no estimate."""
        acc = self.accelerator
        out: dict[str, Any] = {"nodes": len(self.assignments),
                               "nodes_by_backend": {}, "subgraphs_by_backend": {},
                               "transfers": len(self.transfers()),
                               "transfer_bytes": sum(s.nbytes for s in self.transfers()),
                               "unsupported": len(self.unsupported)}
        for a in self.assignments:
            key = a.backend or "none"
            out["nodes_by_backend"][key] = out["nodes_by_backend"].get(key, 0) + 1
        for s in self.subgraphs():
            out["subgraphs_by_backend"][s.backend] = out["subgraphs_by_backend"].get(s.backend, 0) + 1
        parts: dict[str, float | None] = {}
        for s in self.steps:
            key = "transfers" if s.kind == "transfer" else s.backend
            ms = s.transfer_ms if s.kind == "transfer" else (None if s.estimate is None else s.estimate.latency_ms)
            parts[key] = None if ms is None or (key in parts and parts[key] is None) else (parts.get(key) or 0.0) + ms
        out["estimate_ms"] = parts
        out["estimate_total_ms"] = None if any(v is None for v in parts.values()) else sum(parts.values())
        out["cpu_only_estimate_ms"] = None
        if acc is not None:
            try:
                whole = self.cpu.estimate([a.node for a in self.assignments], self.batch_scale)
            except Exception:  # a cost model that fails gives no comparison
                whole = None
            out["cpu_only_estimate_ms"] = None if whole is None else whole.latency_ms
        out["label"] = "estimate" + (f"; {acc.name} is a simulation" if acc is not None and acc.simulated else "")
        return out

    def lines(self) -> list[str]:
        """The support matrix, the plan and the summary as text (dtorch-edge ops check)."""
        acc = self.accelerator
        sim = f"; {acc.name} is a simulation and its latencies are estimates" if acc is not None and acc.simulated else ""
        out = [f"{self.model} on {self.board}: {len(self.assignments)} nodes{sim}"]
        for b in (self.cpu, acc):
            if b is not None:
                out.append(f"  {b.name}: {b.describe()}")
        rows = [["NODE", "OP", "DTYPE", "MODULE", "BACKEND", "KERNEL", "WHY NOT " + (acc.name if acc else "")]]
        for a in self.assignments:
            n = a.node
            why = a.fallback.line() if a.fallback is not None else ""
            if a.backend is None and a.refusal is not None:
                why = "; ".join(x for x in (why, f"{self.cpu.name}: {a.refusal.line()}") if x)
            rows.append([str(n.index), n.op, n.dtype, n.where, a.backend or "NONE", a.kernel or "-", why or "-"])
        if acc is None:
            rows = [r[:-1] for r in rows]
        out += _table(rows)
        out.append("plan (steps in order" + (", estimated times" if any(s.estimate or s.transfer_ms for s in self.steps)
                                             else "") + "):")
        for s in self.steps:
            if s.kind == "transfer":
                ms = "" if s.transfer_ms is None else f", {s.transfer_ms:.4f} ms (estimate)"
                out.append(f"  transfer {s.name} {s.src} -> {s.dst}: {s.nbytes} bytes{ms}")
            else:
                span = f"node {s.nodes[0]}" if len(s.nodes) == 1 else f"nodes {s.nodes[0]}-{s.nodes[-1]}"
                est = s.estimate
                ms = "" if est is None else f", {est.latency_ms:.4f} ms (estimate)"
                macs = "" if est is None or not est.macs else f", {est.macs / 1e6:.2f} M MACs"
                out.append(f"  {s.backend} subgraph: {span} ({len(s.nodes)} node{'s' if len(s.nodes) != 1 else ''}"
                           f"{macs}){ms}")
        t = self.totals()
        by = t["nodes_by_backend"]
        summary = ", ".join(f"{by[b]} on {b} in {t['subgraphs_by_backend'].get(b, 0)} subgraph"
                            f"{'s' if t['subgraphs_by_backend'].get(b, 0) != 1 else ''}" for b in by if b != "none")
        summary += f"; {t['transfers']} transfers, {t['transfer_bytes']} bytes"
        if t["estimate_total_ms"] is not None:
            parts = ", ".join(f"{k} {v:.4f}" for k, v in t["estimate_ms"].items())
            summary += f"; latency {t['estimate_total_ms']:.4f} ms (estimate: {parts})"
            if t.get("cpu_only_estimate_ms") is not None:
                summary += f" vs {t['cpu_only_estimate_ms']:.4f} ms on the CPU alone (estimate)"
        out.append(f"summary: {summary}")
        return out

    def to_json(self) -> dict[str, Any]:
        acc = self.accelerator
        return {"model": self.model, "board": self.board,
                "backends": [{"name": b.name, "kind": b.kind, "simulated": b.simulated, "description": b.describe()}
                             for b in (self.cpu, acc) if b is not None],
                "nodes": [a.to_json() for a in self.assignments],
                "plan": [s.to_json() for s in self.steps],
                "summary": self.totals()}


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def _assign(node: NodeView, cpu: Backend, acc: Backend | None) -> Assignment:
    fallback = None
    if acc is not None:
        v = _safe_check(acc, node)
        if v.takes:
            return Assignment(node, acc.name, v.kernel)
        fallback = v
    v = _safe_check(cpu, node)
    if v.takes:
        return Assignment(node, cpu.name, v.kernel, fallback)
    return Assignment(node, None, None, fallback, v)


def _safe_check(backend: Backend, node: NodeView) -> Verdict:
    """The backend's verdict; a check that raises (a backend's bug) refuses the node with the error as its reason."""
    try:
        v = backend.check(node)
    except Exception as e:
        return Verdict.refused("backend", f"{backend.name}'s check failed: {type(e).__name__}: "
                                          f"{' '.join(str(e).split())[:200]}")
    if not isinstance(v, Verdict):
        return Verdict.refused("backend", f"{backend.name}'s check returned {type(v).__name__}, not a Verdict")
    return v


def make_plan(dtm: Any, board: Any, cpu: Backend, accelerator: Backend | None = None, *,
              batch_scale: float = 1.0) -> Plan:
    """The support matrix and plan of a read .dtm file on `board`: `cpu` (the board's CPU build) and optionally an
    `accelerator` backend that is offered every node first. `batch_scale`: the batch that runs over the file's
    example batch (estimates scale with it)."""
    views = node_views(dtm)
    assignments = [_assign(n, cpu, accelerator) for n in views]
    inputs = list(dtm.inputs)
    outputs = list(dtm.outputs)
    # runs of consecutive nodes on one backend (a node nothing takes stays with the CPU, where it fails to load)
    runs: list[tuple[str, list[int]]] = []
    for a in assignments:
        b = a.backend or cpu.name
        if runs and runs[-1][0] == b:
            runs[-1][1].append(a.node.index)
        else:
            runs.append((b, [a.node.index]))
    backends = {cpu.name: cpu, **({accelerator.name: accelerator} if accelerator is not None else {})}
    last_use: dict[int, int] = {}
    for r, (_, idx) in enumerate(runs):
        for k in idx:
            for t in views[k].inputs:
                if t is not None and not t.constant:
                    last_use[t.index] = r
    home = cpu.name  # the graph's inputs and outputs live in the CPU's memory
    where: dict[int, set[str]] = {t: {home} for t in inputs}  # the memories holding a copy of each tensor
    tensors = {t.index: t for v in views for t in (*v.inputs, *v.outputs) if t is not None}
    steps: list[Step] = []

    def transfer(t: int, src: str, dst: str) -> None:
        tv = tensors.get(t)
        nbytes = int(tv.nbytes * batch_scale) if tv is not None else 0
        name = tv.name if tv is not None else dtm.tensors[t].name
        ms = None
        for b in (backends.get(src), backends.get(dst)):
            if b is not None and b.kind != "cpu":
                ms = b.transfer_ms(nbytes)
        steps.append(Step("transfer", tensor=t, name=name, src=src, dst=dst, nbytes=nbytes, transfer_ms=ms))
        where.setdefault(t, set()).add(dst)

    for r, (bname, idx) in enumerate(runs):
        produced = {t.index for k in idx for t in views[k].outputs}
        reads: list[int] = []
        for k in idx:
            for t in views[k].inputs:
                if t is not None and not t.constant and t.index not in produced and t.index not in reads:
                    reads.append(t.index)
        for t in reads:
            if bname not in where.get(t, set()):
                src = sorted(where.get(t, {home}))[0]
                transfer(t, src, bname)
        later = {t for t, last in last_use.items() if last > r}
        outs = [t for t in sorted(produced) if t in later or t in outputs]
        for t in produced:
            where[t] = {bname}
        nodes = [views[k] for k in idx]
        weights = sum(t.nbytes for n in nodes for t in n.inputs if t is not None and t.constant)
        try:
            est = backends[bname].estimate(nodes, batch_scale)
        except Exception:  # a backend's cost model that fails leaves the step without an estimate
            est = None
        steps.append(Step("subgraph", backend=bname, nodes=list(idx), inputs=reads, outputs=outs, nbytes=weights,
                          estimate=est))
    for t in dict.fromkeys(outputs):
        if home not in where.get(t, {home}):
            transfer(t, sorted(where[t])[0], home)
    return Plan(dtm.path, board.name, cpu, accelerator, assignments, steps, inputs, outputs, batch_scale)
