"""The ``npu-sim`` backend: a simulation of the Rockchip RK3588 NPU (RKNPU2), with a cost model that gives
estimates. It is not the NPU: no RKNN toolchain or board is involved. It says which nodes an RK3588-class NPU would
take, runs them with DTorch's own bit-exact int8 kernels (so a plan's outputs are the CPU run's bits), and estimates
their latency from the board file's accelerator entry.

What it takes (int8 only: float operators, quantize and dequantize stay on the CPU). "RKNN" marks the NPU limits of
Rockchip's RKNN Toolkit2 operator support list (doc/RKNNToolKit2_OP_Support-*.md, "NPU Limit" remarks); "modelled"
marks our own assumptions where that list says nothing we could check:

- qconv2d: convolution and depthwise convolution, relu / relu6 fused. Kernel height and width in [1, 31], stride in
  [1, 7], padding in [0, 15] (RKNN Conv); dilated kernel extent at most 31 (modelled); groups 1 or depthwise
  (modelled: other grouped convolutions fall back); channels in [1, 8192] (modelled on RKNN's channel limit).
- qlinear: fully connected, relu / relu6 fused. A 2-D input (N, K); K and M in [1, 8192] (modelled).
- qadd: elementwise add, relu / relu6 fused. Both inputs of one shape (modelled: broadcasting falls back).
- max_pool2d (int8): stride in [1, 8], padding in [0, 7], ceil_mode 0, dilation 1, channels in [1, 8192] (RKNN
  MaxPool).
- qmean: global average pooling: the two spatial axes of an (N, C, H, W) tensor (modelled: other reductions fall
  back); H and W in [1, 343], channels in [1, 8192] (RKNN GlobalAveragePool).
- concat (int8) and qconcat (int8 inputs of other scales, requantized to the output's): axis 1 of (N, C, H, W)
  tensors, every input's channels a multiple of 16 (modelled: the NPU keeps int8 tensors as NC1HWC2 with C2 = 16; a
  concatenation that splits a C2 block needs a re-layout it does not do).
- qavg_pool2d: kernel height and width in [1, 7], stride in [1, 8], padding in [0, 7], ceil_mode 0, no divisor
  override, channels in [1, 8192] (modelled on RKNN's MaxPool limits and its pooling kernels up to 7x7).
- reshape (int8): no run-time `like` input; output dims after the batch at most 8192 (modelled on RKNN Reshape).

Shapes are the model file's example shapes (RKNN compiles a model for static shapes).

The cost model (every figure an estimate), from the board file's first ``[[accelerators]]`` entry of kind "npu"
(mhz, cores, macs_per_cycle, dma_gbs, launch_us, each sourced there):
- a node's compute time is its MACs, with the input channels padded to a multiple of C2 = 16, over
  macs_per_cycle x mhz x utilization: DENSE_UTILIZATION for convolutions and fully connected layers,
  DEPTHWISE_UTILIZATION for depthwise ones (one input channel per output channel: the MAC array is mostly idle);
  one core runs a model (RKNN's default core mask; multi-core splitting is not modelled);
- its memory time is the bytes it reads (inputs and weights) and writes over dma_gbs (DDR is shared with the CPU;
  the NPU's on-chip SRAM is not modelled); a node costs the larger of the two (a roofline);
- each subgraph costs launch_us more (job submission and completion interrupt), and each transfer between the CPU
  and the NPU its bytes over dma_gbs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._interface import Backend, BackendUnavailable, Constraint, NodeView, OpSupport, SubgraphEstimate, ints_within

if TYPE_CHECKING:
    from ..edge.boards import Board

__all__ = ["C2", "DENSE_UTILIZATION", "DEPTHWISE_UTILIZATION", "NpuSimBackend"]

#: The channel block of the NPU's int8 layout (NC1HWC2): channels are padded to a multiple of it (modelled).
C2 = 16
#: The fraction of the MAC array's peak a dense convolution or fully connected layer keeps busy (modelled).
DENSE_UTILIZATION = 0.5
#: The same for a depthwise convolution (modelled).
DEPTHWISE_UTILIZATION = 0.05
_MAX_CHANNELS = 8192
_RKNN = "RKNN Conv NPU limit"


def _x(n: NodeView) -> Any:
    return n.inputs[0]


def _w(n: NodeView) -> tuple[int, ...]:
    w = n.inputs[1] if len(n.inputs) > 1 else None
    return w.shape if w is not None else ()


def _is_depthwise(n: NodeView) -> bool:
    groups = int(n.attr("groups", 1))
    return groups > 1 and len(_x(n).shape) == 4 and groups == _x(n).shape[1] and _w(n)[:2] == (groups, 1)


def _check(category: str, doc: str):  # type: ignore[no-untyped-def]
    """A Constraint from a function that returns the reason or None (the decorated function's name is dropped)."""
    def wrap(fn):  # type: ignore[no-untyped-def]
        return Constraint(category, doc, fn)
    return wrap


@_check("shape", "x is (N, C, H, W)")
def _nchw(n: NodeView) -> str | None:
    rank = len(_x(n).shape)
    return None if rank == 4 else f"{n.op} on a {rank}-D tensor; the NPU takes (N, C, H, W) here"


@_check("dilation", "dilated kernel extent (k - 1) x dilation + 1 at most 31 (modelled)")
def _dilated_extent(n: NodeView) -> str | None:
    kh, kw = _w(n)[2:4]
    dh, dw = n.attr("dilation", [1, 1])
    eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    if eh <= 31 and ew <= 31:
        return None
    return f"dilation {dh}x{dw} makes the {kh}x{kw} kernel span {eh}x{ew}, more than 31 (modelled)"


@_check("groups", "groups 1 or depthwise (groups = channels, one filter each) (modelled)")
def _groups(n: NodeView) -> str | None:
    groups = int(n.attr("groups", 1))
    if groups == 1 or _is_depthwise(n):
        return None
    return f"grouped convolution (groups={groups}) that is not depthwise; the NPU takes groups 1 or depthwise " \
           f"(modelled)"


def _channels(what: str, get, source: str) -> Constraint:  # type: ignore[no-untyped-def]
    return ints_within("shape", f"{what} channels", get, 1, _MAX_CHANNELS, source)


@_check("shape", "a 2-D input (N, K) (modelled)")
def _two_d(n: NodeView) -> str | None:
    rank = len(_x(n).shape)
    return None if rank == 2 else f"qlinear on a {rank}-D input; the NPU's fully connected layer takes (N, K) " \
                                  f"(modelled)"


@_check("shape", "both inputs of the same shape (modelled: no broadcasting)")
def _same_shape(n: NodeView) -> str | None:
    a, b = n.inputs[0], n.inputs[1]
    if a is None or b is None or a.shape == b.shape:
        return None
    return f"qadd broadcasts {list(a.shape)} with {list(b.shape)}; the NPU adds tensors of one shape (modelled)"


@_check("padding", "ceil_mode 0 (RKNN MaxPool)")
def _no_ceil(n: NodeView) -> str | None:
    return None if int(n.attr("ceil_mode", 0)) == 0 else "ceil_mode 1; the NPU pools with ceil_mode 0 (RKNN MaxPool)"


@_check("shape", "no divisor override (modelled)")
def _no_divisor(n: NodeView) -> str | None:
    d = int(n.attr("divisor_override", 0) or 0)
    return None if d == 0 else f"divisor_override {d}; the NPU divides by the window (modelled)"


@_check("axes", "the two spatial axes of (N, C, H, W): a global average pool (modelled)")
def _global_pool(n: NodeView) -> str | None:
    rank = len(_x(n).shape)
    axes = n.attr("axes")
    got = sorted(a % rank for a in axes) if axes is not None and rank else list(range(rank))
    if rank == 4 and got == [2, 3]:
        return None
    return f"qmean over axes {got} of a {rank}-D tensor; the NPU averages the two spatial axes of (N, C, H, W) " \
           f"only (global average pooling, modelled)"


@_check("axes", "axis 1 (channels) of (N, C, H, W) tensors (modelled)")
def _channel_concat(n: NodeView) -> str | None:
    ranks = {len(t.shape) for t in n.inputs if t is not None}
    axis = int(n.attr("axis", 0))
    if ranks == {4} and axis == 1:
        return None
    return f"concat along axis {axis} of {'/'.join(map(str, sorted(ranks)))}-D tensors; the NPU concatenates " \
           f"channels (axis 1) of (N, C, H, W) tensors (modelled)"


@_check("alignment", f"every input's channels a multiple of {C2} (modelled: int8 NC1HWC2 layout, C2 = {C2})")
def _c2_aligned(n: NodeView) -> str | None:
    bad = [t.shape[1] for t in n.inputs if t is not None and len(t.shape) == 4 and t.shape[1] % C2]
    if not bad:
        return None
    return f"concat of inputs with {', '.join(map(str, bad))} channels, not a multiple of {C2}; the NPU keeps int8 " \
           f"tensors in blocks of {C2} channels (NC1HWC2) and does not re-lay them out (modelled)"


@_check("shape", "no run-time `like` input; output dims after the batch at most 8192 (modelled on RKNN Reshape)")
def _static_reshape(n: NodeView) -> str | None:
    if len(n.inputs) > 1 and n.inputs[1] is not None:
        return "reshape reads its target from another tensor at run time; the NPU needs a static shape"
    big = [d for d in n.outputs[0].shape[1:] if d > _MAX_CHANNELS]
    return None if not big else f"reshape to {list(n.outputs[0].shape)}: a dim above {_MAX_CHANNELS} (modelled on " \
                                f"RKNN Reshape)"


_FUSED = "int8, relu / relu6 fused into the requantization clamp"

SUPPORTS = (
    OpSupport("qconv2d", ("int8",), "rknpu:conv", (
        _nchw,
        ints_within("kernel size", "kernel", lambda n: _w(n)[2:4], 1, 31, _RKNN),
        ints_within("stride", "stride", lambda n: n.attr("stride", [1, 1]), 1, 7, _RKNN),
        ints_within("padding", "padding", lambda n: n.attr("padding", [0, 0, 0, 0]), 0, 15, _RKNN),
        _dilated_extent, _groups,
        _channels("input", lambda n: [_x(n).shape[1]], "modelled on RKNN's channel limit"),
        _channels("output", lambda n: [_w(n)[0]], "modelled on RKNN's channel limit"),
    ), doc=f"convolution and depthwise convolution, {_FUSED}"),
    OpSupport("qlinear", ("int8",), "rknpu:fc", (
        _two_d,
        ints_within("shape", "in and out features", lambda n: [_w(n)[1], _w(n)[0]], 1, _MAX_CHANNELS, "modelled"),
    ), doc=f"fully connected, {_FUSED}"),
    OpSupport("qadd", ("int8",), "rknpu:eltwise_add", (_same_shape,), doc=f"elementwise add, {_FUSED}"),
    OpSupport("max_pool2d", ("int8",), "rknpu:maxpool", (
        ints_within("stride", "stride", lambda n: n.attr("stride") or n.attr("kernel"), 1, 8, "RKNN MaxPool NPU limit"),
        ints_within("padding", "padding", lambda n: n.attr("padding", [0, 0]), 0, 7, "RKNN MaxPool NPU limit"),
        ints_within("dilation", "dilation", lambda n: n.attr("dilation", [1, 1]), 1, 1, "RKNN MaxPool NPU limit"),
        _no_ceil,
        _channels("input", lambda n: [_x(n).shape[1]], "RKNN MaxPool NPU limit"),
    ), doc="max pooling"),
    OpSupport("qmean", ("int8",), "rknpu:global_avgpool", (
        _global_pool,
        ints_within("kernel size", "pooled window (H x W)", lambda n: _x(n).shape[2:4], 1, 343,
                    "RKNN GlobalAveragePool limit"),
        _channels("input", lambda n: [_x(n).shape[1]], "RKNN GlobalAveragePool limit"),
    ), doc="global average pooling"),
    OpSupport("concat", ("int8",), "rknpu:concat", (_channel_concat, _c2_aligned), doc="channel concatenation"),
    OpSupport("qconcat", ("int8",), "rknpu:concat", (_channel_concat, _c2_aligned),
              doc="channel concatenation, inputs requantized to the output's scale"),
    OpSupport("qavg_pool2d", ("int8",), "rknpu:avgpool", (
        ints_within("kernel size", "kernel", lambda n: n.attr("kernel"), 1, 7, "modelled"),
        ints_within("stride", "stride", lambda n: n.attr("stride") or n.attr("kernel"), 1, 8, "modelled on RKNN MaxPool"),
        ints_within("padding", "padding", lambda n: n.attr("padding", [0, 0]), 0, 7, "modelled on RKNN MaxPool"),
        _no_ceil, _no_divisor,
        _channels("input", lambda n: [_x(n).shape[1]], "modelled on RKNN's channel limit"),
    ), doc="average pooling"),
    OpSupport("reshape", ("int8",), "rknpu:reshape", (_static_reshape,), doc="flatten / view"),
)

_ACC_FIELDS = ("mhz", "cores", "macs_per_cycle", "dma_gbs", "launch_us")


def _padded(c: int) -> int:
    return -(-int(c) // C2) * C2


class NpuSimBackend(Backend):
    name = "npu-sim"
    kind = "accelerator"
    simulated = True
    supports = SUPPORTS

    def __init__(self, board: Board) -> None:
        super().__init__(board)
        npus = [a for a in board.accelerators if a.kind == "npu"]
        acc = next((a for a in npus if all(getattr(a, f, None) for f in _ACC_FIELDS)), None)
        if acc is None:
            have = (f"its NPU entry {npus[0].name!r} lacks "
                    f"{', '.join(f for f in _ACC_FIELDS if not getattr(npus[0], f, None))}" if npus
                    else "it lists no [[accelerators]] entry of kind \"npu\"")
            raise BackendUnavailable(f"npu-sim cannot simulate board {board.name!r}: {have}; the simulation needs "
                                     f"{', '.join(_ACC_FIELDS)} in the board file's NPU entry (boards/rk3588.toml "
                                     f"has them)")
        self.accelerator = acc
        self.description = (f"a simulation of {board.name}'s NPU ({acc.name}) with the RK3588 NPU's operator limits: "
                            f"int8 conv, depthwise conv, fully connected, add, relu / relu6 (fused), max pool, global "
                            f"average pool, concat, reshape; its latencies are estimates")

    # --- the cost model ----------------------------------------------------------------------------------------

    @property
    def macs_per_second(self) -> float:
        return float(self.accelerator.macs_per_cycle) * float(self.accelerator.mhz) * 1e6

    @property
    def bytes_per_second(self) -> float:
        return float(self.accelerator.dma_gbs) * 1e9

    def node_macs(self, n: NodeView, batch_scale: float = 1.0) -> tuple[int, bool]:
        """(MACs with the input channels padded to C2, depthwise) of one node; 0 for data movement."""
        if n.op == "qconv2d":
            o = n.outputs[0].shape  # N, O, OH, OW
            w = _w(n)               # O, C/groups, kh, kw
            if _is_depthwise(n):
                return int(o[0] * _padded(o[1]) * o[2] * o[3] * w[2] * w[3] * batch_scale), True
            return int(o[0] * o[1] * o[2] * o[3] * _padded(w[1]) * w[2] * w[3] * batch_scale), False
        if n.op == "qlinear":
            rows = math.prod(n.outputs[0].shape[:-1])
            return int(rows * _padded(_w(n)[1]) * _w(n)[0] * batch_scale), False
        return 0, False

    def estimate(self, nodes: Sequence[NodeView], batch_scale: float = 1.0) -> SubgraphEstimate:
        compute = memory = total = 0.0
        macs_total = 0
        per_node = []
        for n in nodes:
            macs, depthwise = self.node_macs(n, batch_scale)
            util = DEPTHWISE_UTILIZATION if depthwise else DENSE_UTILIZATION
            c = macs / (self.macs_per_second * util)
            nbytes = sum(t.nbytes * (1.0 if t.constant else batch_scale) for t in n.inputs if t is not None)
            nbytes += sum(t.nbytes * batch_scale for t in n.outputs)
            m = nbytes / self.bytes_per_second
            compute, memory, total, macs_total = compute + c, memory + m, total + max(c, m), macs_total + macs
            per_node.append({"node": n.index, "op": n.op, "macs": macs, "bytes": int(nbytes), "compute_ms": c * 1e3,
                             "memory_ms": m * 1e3, "ms": max(c, m) * 1e3})
        launch = float(self.accelerator.launch_us) * 1e-6
        return SubgraphEstimate((total + launch) * 1e3, compute * 1e3, memory * 1e3, launch * 1e3, macs_total,
                                {"nodes": per_node})

    def transfer_ms(self, nbytes: int) -> float:
        return nbytes / self.bytes_per_second * 1e3

    def basis(self) -> str:
        a = self.accelerator
        return (f"simulation of {a.name}: one core of {a.cores}, {a.macs_per_cycle} int8 MACs/cycle @ {a.mhz} MHz x "
                f"{DENSE_UTILIZATION:.0%} utilization (depthwise {DEPTHWISE_UTILIZATION:.0%}), channels padded to "
                f"{C2}; {a.dma_gbs:g} GB/s DMA; {a.launch_us:g} us per subgraph launch")
