"""The simulated RK3588 NPU (npu-sim): what it takes and the exact reason for what it does not, the partition into
subgraphs with explicit transfers, the simulation's bits (identical to the all-CPU run, fallbacks included) and the
cost model read from the board file."""

from __future__ import annotations

import re

import numpy as np
import pytest

from dtorch._export.reader import read_dtm
from dtorch.backends import (
    BackendUnavailable,
    NodeView,
    SimulationError,
    Simulator,
    TensorView,
    check_model,
    run_model,
)
from dtorch.backends.cpu import CpuBackend
from dtorch.backends.npu_sim import NpuSimBackend
from dtorch.edge.boards import load_board, load_board_file


def _t(i: int, shape: tuple[int, ...], dtype: str = "int8", const: bool = False) -> TensorView:
    return TensorView(i, f"t{i}", dtype, shape, shape, const)


def _node(op: str, inputs: list[tuple[tuple[int, ...], str, bool] | None], out: tuple[int, ...], attrs=None,
          out_dtype: str = "int8") -> NodeView:
    ins = tuple(None if x is None else _t(k, *x) for k, x in enumerate(inputs))
    return NodeView(0, op, "m", dict(attrs or {}), ins, (_t(99, out, out_dtype),))


def _conv(c: int = 16, o: int = 16, k: int = 3, hw: int = 16, groups: int = 1, **attrs) -> NodeView:
    a = {"stride": [1, 1], "padding": [1, 1, 1, 1], "dilation": [1, 1], "groups": groups, **attrs}
    return _node("qconv2d", [((1, c, hw, hw), "int8", False), ((o, c // groups, k, k), "int8", True),
                             ((o,), "float32", True), ((o,), "int32", True)], (1, o, hw, hw), a)


@pytest.fixture(scope="module")
def npu(rk3588):  # type: ignore[no-untyped-def]
    return NpuSimBackend(rk3588)


def test_npu_takes_int8_convolutions_pools_and_the_rest(npu):
    taken = [
        _conv(),                                    # 3x3 convolution
        _conv(k=1, padding=[0, 0, 0, 0]),           # pointwise
        _conv(groups=16),                           # depthwise
        _conv(k=31, padding=[15, 15, 15, 15], hw=32),
        _node("qlinear", [((2, 64), "int8", False), ((10, 64), "int8", True), ((10,), "float32", True), None], (2, 10)),
        _node("qadd", [((1, 16, 8, 8), "int8", False), ((1, 16, 8, 8), "int8", False)], (1, 16, 8, 8)),
        _node("max_pool2d", [((1, 16, 8, 8), "int8", False)], (1, 16, 4, 4), {"kernel": [2, 2], "stride": [2, 2]}),
        _node("qmean", [((1, 16, 8, 8), "int8", False)], (1, 16, 1, 1), {"axes": [2, 3], "keepdim": 1}),
        _node("concat", [((1, 16, 8, 8), "int8", False), ((1, 32, 8, 8), "int8", False)], (1, 48, 8, 8), {"axis": 1}),
        _node("reshape", [((1, 16, 1, 1), "int8", False)], (1, 16), {"shape": [0, 16]}),
        _node("qconcat", [((1, 16, 8, 8), "int8", False), ((1, 16, 8, 8), "int8", False)], (1, 32, 8, 8),
              {"axis": 1}),
        _node("qavg_pool2d", [((1, 16, 8, 8), "int8", False)], (1, 16, 4, 4), {"kernel": [3, 3], "stride": [2, 2],
                                                                              "padding": [1, 1]}),
    ]
    for n in taken:
        v = npu.check(n)
        assert v.takes and v.kernel.startswith("rknpu:"), (n.op, v)


@pytest.mark.parametrize(("node", "category", "reason"), [
    (_conv(k=33, padding=[0, 0, 0, 0], hw=40), "kernel size", "kernel 33x33 is outside [1, 31] (RKNN Conv NPU limit)"),
    (_conv(stride=[8, 8]), "stride", "stride 8x8 is outside [1, 7] (RKNN Conv NPU limit)"),
    (_conv(padding=[16, 16, 0, 0]), "padding", "padding 16x16x0x0 is outside [0, 15]"),
    (_conv(k=5, dilation=[8, 8]), "dilation", "dilation 8x8 makes the 5x5 kernel span 33x33, more than 31"),
    (_conv(groups=2), "groups", "grouped convolution (groups=2) that is not depthwise"),
    (_conv(c=9000, o=16), "shape", "input channels 9000 is outside [1, 8192]"),
    (_node("qlinear", [((2, 3, 64), "int8", False), ((10, 64), "int8", True), ((10,), "float32", True)], (2, 3, 10)),
     "shape", "qlinear on a 3-D input"),
    (_node("qadd", [((1, 16, 8, 8), "int8", False), ((1, 16, 1, 1), "int8", False)], (1, 16, 8, 8)),
     "shape", "qadd broadcasts [1, 16, 8, 8] with [1, 16, 1, 1]"),
    (_node("max_pool2d", [((1, 16, 8, 8), "int8", False)], (1, 16, 1, 1), {"kernel": [9, 9], "stride": [9, 9]}),
     "stride", "stride 9x9 is outside [1, 8] (RKNN MaxPool NPU limit)"),
    (_node("max_pool2d", [((1, 16, 9, 9), "int8", False)], (1, 16, 5, 5), {"kernel": [2, 2], "ceil_mode": 1}),
     "padding", "ceil_mode 1"),
    (_node("qmean", [((1, 16, 8, 8), "int8", False)], (1, 8, 8), {"axes": [1]}), "axes", "qmean over axes [1]"),
    (_node("qmean", [((1, 16, 400, 400), "int8", False)], (1, 16, 1, 1), {"axes": [2, 3]}),
     "kernel size", "pooled window (H x W) 400x400 is outside [1, 343]"),
    (_node("concat", [((1, 8, 4, 4), "int8", False), ((1, 16, 4, 4), "int8", False)], (1, 24, 4, 4), {"axis": 1}),
     "alignment", "concat of inputs with 8 channels, not a multiple of 16"),
    (_node("concat", [((1, 16, 4, 4), "int8", False), ((1, 16, 4, 4), "int8", False)], (1, 16, 8, 4), {"axis": 2}),
     "axes", "concat along axis 2"),
    (_node("qconcat", [((1, 8, 4, 4), "int8", False), ((1, 16, 4, 4), "int8", False)], (1, 24, 4, 4), {"axis": 1}),
     "alignment", "concat of inputs with 8 channels, not a multiple of 16"),
    (_node("qavg_pool2d", [((1, 16, 9, 9), "int8", False)], (1, 16, 1, 1), {"kernel": [9, 9]}),
     "kernel size", "kernel 9x9 is outside [1, 7]"),
    (_node("qavg_pool2d", [((1, 16, 8, 8), "int8", False)], (1, 16, 4, 4), {"kernel": [2, 2], "divisor_override": 3}),
     "shape", "divisor_override 3"),
    (_node("reshape", [((1, 16, 1, 1), "int8", False), ((1, 16), "int8", False)], (1, 16),
           {"shape": [0, 16], "like_dims": [0, -1]}), "shape", "reads its target from another tensor at run time"),
    (_node("conv2d", [((1, 3, 8, 8), "float32", False), ((4, 3, 3, 3), "float32", True)], (1, 4, 6, 6),
           out_dtype="float32"), "operator", "npu-sim has no conv2d kernel"),
    (_node("max_pool2d", [((1, 16, 8, 8), "float32", False)], (1, 16, 4, 4), {"kernel": [2, 2]}, "float32"),
     "dtype", "npu-sim takes max_pool2d on int8 only, not float32"),
    (_node("quantize", [((1, 3, 8, 8), "float32", False)], (1, 3, 8, 8)), "operator", "npu-sim has no quantize kernel"),
])
def test_npu_refusals_say_exactly_why(npu, node, category, reason):
    v = npu.check(node)
    assert not v.takes and v.category == category, v
    assert reason in v.reason, v.reason
    assert v.line() == f"{category}: {v.reason}" and "\n" not in v.reason


def test_plan_of_a_model_with_a_float_op_in_the_middle(mixed_int8):
    plan = check_model(mixed_int8, "rk3588", "npu-sim")
    on = {a.node.index: a.backend for a in plan.assignments}
    ops = {a.node.index: a.node.op for a in plan.assignments}
    # quantize / dequantize and the float concat stay on the CPU, with their reasons; the int8 products go to the NPU
    for a in plan.assignments:
        if a.node.dtype == "int8" and a.node.op not in ("dequantize",):
            assert a.backend == "npu-sim", (a.node.op, a.fallback)
        else:
            assert a.backend == "cpu" and a.fallback is not None
    concat = next(a for a in plan.assignments if a.node.op == "concat")
    assert concat.fallback.category == "dtype" and "not float32" in concat.fallback.reason
    quant = next(a for a in plan.assignments if a.node.op == "quantize")
    assert quant.fallback.category == "operator"
    # the partition: consecutive nodes on one backend form a subgraph; transfers sit between them, with their bytes
    kinds = [(s.kind, s.backend or f"{s.src}->{s.dst}") for s in plan.steps]
    assert kinds == [("subgraph", "cpu"), ("transfer", "cpu->npu-sim"), ("subgraph", "npu-sim"),
                     ("transfer", "npu-sim->cpu"), ("transfer", "npu-sim->cpu"), ("subgraph", "cpu"),
                     ("transfer", "cpu->npu-sim"), ("subgraph", "npu-sim"), ("transfer", "npu-sim->cpu"),
                     ("subgraph", "cpu")]
    dtm = read_dtm(mixed_int8)
    for s in plan.transfers():
        t = dtm.tensors[s.tensor]
        assert s.nbytes == int(np.prod(t.example_shape)) * np.dtype(t.dtype).itemsize and s.nbytes > 0
    assert plan.transfers()[0].nbytes == 2 * 3 * 16 * 16  # the quantized int8 input, batch 2
    for s in plan.subgraphs():
        assert all(on[k] == s.backend for k in s.nodes) and s.nodes == list(range(s.nodes[0], s.nodes[-1] + 1))
    assert [ops[k] for k in plan.subgraphs("npu-sim")[1].nodes] == ["qconv2d", "qmean", "reshape", "qlinear"]
    # estimates: every NPU subgraph pays the launch; the plan adds its steps up; it is labelled an estimate
    t = plan.totals()
    for s in plan.subgraphs("npu-sim"):
        assert s.estimate.launch_ms == pytest.approx(0.1) and s.estimate.latency_ms > s.estimate.launch_ms
    assert t["estimate_total_ms"] == pytest.approx(sum(t["estimate_ms"].values()))
    assert t["nodes_by_backend"] == {"cpu": 6, "npu-sim": 10} and t["subgraphs_by_backend"] == {"cpu": 3, "npu-sim": 2}
    assert t["transfers"] == 5 and t["cpu_only_estimate_ms"] > 0
    assert "simulation" in t["label"] and "estimate" in t["label"]


@pytest.mark.parametrize("kernels", ["exact", "fast"])
def test_simulated_plan_gives_the_cpu_runs_bits(mixed_int8, kernels):
    plan = check_model(mixed_int8, "rk3588", "npu-sim")
    sim = Simulator(plan, read_dtm(mixed_int8), kernels=kernels)
    for batch in (1, 3):  # not the export's batch of 2: the batch dimension stays dynamic in every subgraph
        x = np.random.default_rng(batch).standard_normal((batch, 3, 16, 16)).astype(np.float32) * 2
        res = sim.run([x])
        want = run_model(mixed_int8, [x], kernels=kernels)
        assert [o.tobytes() for o in res.outputs] == [w.tobytes() for w in want]
        assert res.outputs[0].dtype == np.float32 and res.outputs[0].shape == (batch, 4)
        assert res.subgraphs_run == 5
        assert res.transfer_bytes == sum(s.nbytes for s in plan.transfers()) * batch // 2


def test_conv_the_npu_cannot_take_falls_back_and_gives_the_same_bits(stride8_int8):
    plan = check_model(stride8_int8, "rk3588", "npu-sim")
    patch = next(a for a in plan.assignments if a.node.name == "patch" and a.node.op == "qconv2d")
    assert patch.backend == "cpu" and patch.kernel.endswith(":qconv2d")
    assert patch.fallback.category == "stride"
    assert patch.fallback.reason == "stride 8x8 is outside [1, 7] (RKNN Conv NPU limit)"
    assert [len(s.nodes) for s in plan.subgraphs("npu-sim")] == [1, 4]  # c1 | patch on the CPU | c2 .. head
    x = np.random.default_rng(7).standard_normal((2, 3, 32, 32)).astype(np.float32)
    got = Simulator(plan, read_dtm(stride8_int8)).run([x]).outputs
    want = run_model(stride8_int8, [x])
    np.testing.assert_array_equal(got[0], want[0])


def test_a_plan_without_its_transfer_fails_instead_of_passing(mixed_int8):
    plan = check_model(mixed_int8, "rk3588", "npu-sim")
    first = next(k for k, s in enumerate(plan.steps) if s.kind == "transfer")
    del plan.steps[first]
    sim = Simulator(plan, read_dtm(mixed_int8))
    with pytest.raises(SimulationError, match="its memory does not hold .*a missing transfer"):
        sim.run([np.zeros((1, 3, 16, 16), np.float32)])
    with pytest.raises(SimulationError, match="takes 1 input"):
        sim.run([])


def test_cost_model_comes_from_the_board_file(rk3588, tmp_path):
    npu = NpuSimBackend(rk3588)
    acc = npu.accelerator
    assert (acc.mhz, acc.cores, acc.macs_per_cycle, acc.dma_gbs, acc.launch_us) == (1000, 3, 1024, 10.0, 100.0)
    assert rk3588.to_json()["accelerators"][0]["macs_per_cycle"] == 1024
    conv = _conv(c=64, o=64, hw=32)
    est = npu.estimate([conv])
    macs = 64 * 32 * 32 * 64 * 9  # N O OH OW x C/groups kh kw; 64 channels need no padding to 16
    assert est.macs == macs
    assert est.compute_ms == pytest.approx(macs / (1024 * 1e9 * 0.5) * 1e3)
    assert est.launch_ms == pytest.approx(0.1)
    assert est.latency_ms == pytest.approx(max(est.compute_ms, est.memory_ms) + 0.1)
    assert npu.estimate([_conv(c=3, o=16)]).macs == 16 * 16 * 16 * 16 * 9  # 3 input channels padded to 16
    assert npu.transfer_ms(10_000_000) == pytest.approx(1.0)  # 10 MB at 10 GB/s
    assert "1024 int8 MACs/cycle @ 1000 MHz" in npu.basis() and "100 us per subgraph launch" in npu.basis()
    # the board file is the source: twice the clock halves the compute time
    text = rk3588.path.read_text().replace("mhz = 1000 ", "mhz = 2000 ")
    (tmp_path / "rk3588.toml").write_text(text)
    fast = NpuSimBackend(load_board_file(tmp_path / "rk3588.toml"))
    assert fast.estimate([conv]).compute_ms == pytest.approx(est.compute_ms / 2)


def test_npu_sim_needs_a_board_with_an_npu_cost_model():
    with pytest.raises(BackendUnavailable, match=r"npu-sim cannot simulate board 'rpi4': it lists no \[\[accelerators\]\] "
                                                 r"entry of kind \"npu\""):
        NpuSimBackend(load_board("rpi4"))
    with pytest.raises(BackendUnavailable, match="its NPU entry 'RKNN NPU' lacks mhz, cores, macs_per_cycle, dma_gbs, "
                                                 "launch_us"):
        NpuSimBackend(load_board("rv1126"))


def test_cpu_backend_follows_the_boards_kernel_build(rk3588):
    cpu = CpuBackend(rk3588)
    cpu.name = "cpu"
    conv = _node("conv2d", [((1, 3, 8, 8), "float32", False), ((4, 3, 3, 3), "float32", True)], (1, 4, 6, 6),
                 out_dtype="float32")
    assert cpu.check(conv).kernel == "neon64:conv2d"  # rk3588 lists neon: its build takes the neon64 set
    assert "neon64" in cpu.kernel_sets and "portable" in cpu.kernel_sets
    assert CpuBackend(load_board("licheepi4a")).check(conv).kernel == "portable:conv2d"
    relu = _node("relu", [((1, 4), "int8", False)], (1, 4))
    v = cpu.check(relu)
    assert not v.takes and v.category == "dtype" and v.reason == "cpu takes relu on float32 only, not int8"
    huge = _node("qmean", [((1, 4, 4096, 4096), "int8", False)], (1, 4, 1, 1), {"axes": [2, 3], "keepdim": 1})
    v = cpu.check(huge)
    assert not v.takes and v.category == "shape" and re.search(r"16777216 values per output, more than .* 8388608", v.reason)


def test_what_emulate_reports_of_the_simulated_npu(mixed_int8):
    from dtorch.backends import simulation_figures
    from dtorch.edge.emulate.report import accelerator_lines

    plan = check_model(mixed_int8, "rk3588", "npu-sim")
    samples = [[np.random.default_rng(k).standard_normal((2, 3, 16, 16)).astype(np.float32)] for k in range(2)]
    f = simulation_figures(plan, read_dtm(mixed_int8), samples)
    assert f["label"] == "simulation" and f["latency_label"] == "estimate" and f["backend"] == "npu-sim"
    assert f["outputs_bit_identical_to_cpu"] is True and f["inputs"] == 2
    assert f["nodes_on_backend"] == 10 and f["nodes"] == 16 and len(f["subgraphs"]) == 2
    assert f["transfer_bytes"] == f["transfer_bytes_last_run"] > 0
    assert {fb["op"] for fb in f["fallbacks"]} == {"quantize", "dequantize", "concat"}
    assert f["estimate_total_ms"] > 0 and f["cpu_only_estimate_ms"] > 0
    text = "\n".join(accelerator_lines(f))
    assert "npu-sim (simulation, latencies are estimates): 10 of 16 nodes in 2 subgraphs, 5 transfers" in text
    assert "outputs bit-identical to the CPU run on 2 input(s)" in text
    assert "latency with npu-sim (estimate, not measured)" in text and "on the CPU alone (estimate)" in text
    assert "basis: simulation of RKNPU2 (3 cores)" in text
    assert "node 9 concat on the CPU: dtype: npu-sim takes concat on int8 only, not float32" in text
