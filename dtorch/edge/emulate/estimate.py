"""An estimate of a model's latency on the real board, from the board file's CPU figures and the model's
per-operator work. It is labelled "estimate" everywhere, so that nobody mistakes QEMU's time for the board's.

Per node: the multiply-accumulates (conv2d, linear, matmul, ...) or elementwise operations it does, and the bytes it
moves (its inputs, weights and outputs, once). Its time is the larger of compute time and memory time (a roofline):
    compute = 2 * MACs / (fp32 FLOPs per cycle x clock x efficiency)     (one core of the board's first cluster)
    memory  = bytes / (memory bandwidth x efficiency)
`efficiency` is how much of the SIMD peak the portable kernels reach. Calibrated on the host, where the same portable
kernels are 4-wide SIMD too (SSE2 there, NEON/RVV on boards): dense convolutions and GEMMs reached 31% of the SSE2
peak (SimpleNet@224: 27%), depthwise convolutions 6% (MobileNet-style@128, dtorch-run --kernels portable --profile);
the estimate uses 30% and 6%, and 50% of the memory bandwidth. A calibration, not a property of any board: expect
the real board within about 2x of it. Shapes are the ones recorded at export, scaled by the batch that runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["COMPUTE_EFFICIENCY", "DEPTHWISE_EFFICIENCY", "MEMORY_EFFICIENCY", "NodeWork", "estimate_latency",
           "model_work", "node_work"]

COMPUTE_EFFICIENCY = 0.30    # dense convolutions, linear, matmul
DEPTHWISE_EFFICIENCY = 0.06  # one input channel per output channel: little reuse
MEMORY_EFFICIENCY = 0.5


@dataclass(frozen=True)
class NodeWork:
    op: str
    macs: int   # multiply-accumulates (0 for data movement)
    depthwise: bool
    flops: int  # other arithmetic (elementwise, reductions)
    bytes: int  # read + written


def _numel(shape: list[int]) -> int:
    return int(math.prod(shape)) if shape else 1


def node_work(op: str, attrs: Mapping[str, Any], inputs: Sequence[tuple[Sequence[int], str, bool] | None],
              outputs: Sequence[tuple[Sequence[int], str]], batch_scale: float = 1.0) -> NodeWork:
    """The work of one node: `inputs` as (example shape, dtype, is a constant) or None for an absent one, `outputs`
    as (example shape, dtype). Bytes count each tensor's own element size; the int8 products (qconv2d, qlinear,
    qmatmul) count their MACs as the float ones do (the fp32 rate: an upper bound where the board has int8 dot
    products)."""
    import numpy as np

    def scaled(n: float, const: bool) -> float:  # constants (weights) do not grow with the batch
        return n if const else n * batch_scale

    isz = [(_numel(list(s)), np.dtype(d).itemsize, c) for s, d, c in (t for t in inputs if t is not None)]
    osz = [_numel(list(s)) for s, _ in outputs]
    nbytes = sum(scaled(n * size, c) for n, size, c in isz) + sum(
        n * batch_scale * np.dtype(d).itemsize for n, (_, d) in zip(osz, outputs))
    macs = 0
    depthwise = False
    w = list(inputs[1][0]) if len(inputs) >= 2 and inputs[1] is not None else None
    if op in ("conv2d", "qconv2d", "conv_transpose2d") and w is not None:
        per_out = w[1] * w[2] * w[3] if len(w) == 4 else 0  # O, Cg, kh, kw (conv_transpose: C, Og, kh, kw)
        if op == "conv_transpose2d":
            macs = int(_numel(list(inputs[0][0])) * per_out * batch_scale) if inputs[0] is not None else 0
        else:
            macs = int(osz[0] * per_out * batch_scale)
            depthwise = len(w) == 4 and w[1] == 1 and int(attrs.get("groups", 1)) > 1
    elif op in ("linear", "qlinear") and w is not None:
        macs = int(osz[0] * w[-1] * batch_scale)
    elif op in ("matmul", "qmatmul") and len(inputs) >= 2 and inputs[0] is not None:
        macs = int(osz[0] * list(inputs[0][0])[-1] * batch_scale)
    flops = 0 if macs else int(sum(osz) * batch_scale)
    return NodeWork(op=op, macs=macs, depthwise=depthwise, flops=flops, bytes=int(nbytes))


def model_work(dtm: Any, batch_scale: float = 1.0) -> list[NodeWork]:
    """The work of every node of a read .dtm file (dtorch._export.reader.DtmFile)."""
    out = []
    for node in dtm.nodes:
        ins = [None if i < 0 else (dtm.tensors[i].example_shape, dtm.tensors[i].dtype,
                                   dtm.tensors[i].kind == "constant") for i in node.inputs]
        outs = [(dtm.tensors[i].example_shape, dtm.tensors[i].dtype) for i in node.outputs]
        out.append(node_work(node.op, node.attrs, ins, outs, batch_scale))
    return out


def estimate_latency(board: Any, work: list[NodeWork], *, compute_efficiency: float = COMPUTE_EFFICIENCY,
                     depthwise_efficiency: float = DEPTHWISE_EFFICIENCY,
                     memory_efficiency: float = MEMORY_EFFICIENCY) -> dict[str, Any] | None:
    """{"latency_ms", "compute_ms", "memory_ms", "basis"} for one core of the board's first CPU cluster, or None
    when its file gives no FLOPs per cycle (the host)."""
    if not board.cpu or board.cpu[0].fp32_flops_per_cycle is None or not board.cpu[0].mhz:
        return None
    core = board.cpu[0]
    peak = core.fp32_flops_per_cycle * core.mhz * 1e6
    bw = (board.mem_bandwidth_gbs or 0.0) * 1e9 * memory_efficiency
    total = compute = memory = 0.0
    for w in work:
        c = (2 * w.macs + w.flops) / (peak * (depthwise_efficiency if w.depthwise else compute_efficiency))
        m = w.bytes / bw if bw > 0 else 0.0
        compute += c
        memory += m
        total += max(c, m)
    macs = sum(w.macs for w in work)
    basis = (f"roofline per node on one {core.core} @ {core.mhz} MHz ({core.fp32_flops_per_cycle:g} fp32 FLOPs/cycle "
             f"x {compute_efficiency:.0%}, depthwise {depthwise_efficiency:.0%})"
             + (f", {board.mem_bandwidth_gbs:g} GB/s memory x {memory_efficiency:.0%}" if bw > 0 else "")
             + f"; {macs / 1e6:.1f} M MACs")
    return {"latency_ms": total * 1e3, "compute_ms": compute * 1e3, "memory_ms": memory * 1e3, "macs": macs,
            "basis": basis, "label": "estimate"}
