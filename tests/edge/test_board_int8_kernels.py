"""The int8 kernel sets of the boards, bit-exact with the host's portable int8 kernels under QEMU:

- rk3588 (qemu-aarch64 -cpu cortex-a76, which has FEAT_DotProd): the AArch64 dot-product set
  (runtime/kernels/neon64dot/: qconv2d, qadd, quantize, dequantize), chosen by the board's ISA list ("dotprod");
- rv1126 (qemu-arm -cpu cortex-a7: armv7-a NEON, no dot product): the armv7 set (runtime/kernels/neon32int8/:
  qconv2d on widening multiply-accumulates, qadd, dequantize), chosen by the board's ISA list ("neon").

Each board runs the same cases: the same bits as the host for any thread count, and both kernel policies take the
board's int8 set (it is exact).

The cases cover the dense GEMM's tiles (1-3 vectors of 4 positions, partial vectors, 8-channel panels with fewer
channels, channel blocks past the group's channels, column strides 1, 2 and 3 through the phase-split copy, dilation,
groups, 16- and 8-column copy chunks with the overlapping last chunk), the depthwise kernels (the windows path for
kernels up to 4 columns at column stride 1 and 2, with 1, 2 and 4 vectors a step; the generic path for wider, strided
or dilated kernels), qadd (vectors and the broadcasting fallback), quantize's NaN, infinities, ties and saturation;
on rv1126 the same shapes cover its 8-position x 4-channel tiles (partial tiles and panels, odd step counts) and its
8- and 16-position depthwise steps, and the "extreme_weights" cases put weights of -128 and 127 against inputs at both
ends of the int8 range with a far zero point (|x - x_zero_point| up to 255; on rk3588, the depthwise kernels' int16
pairs of products reach 32768)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dtorch as dt
import dtorch.nn as nn
import dtorch.runtime as rt
from dtorch._export.reader import read_dtm
from dtorch.edge.boards import load_board
from dtorch.edge.build import build_bundle
from dtorch.edge.build_plan import make_plan
from dtorch.edge.oplist import OpList

# board -> the int8 kernel set each operator takes there (both policies)
BOARDS = {
    "rk3588": {"qconv2d": "neon64dot", "qadd": "neon64dot", "quantize": "neon64dot", "dequantize": "neon64dot"},
    "rv1126": {"qconv2d": "neon32int8", "qadd": "neon32int8", "dequantize": "neon32int8"},  # quantize: portable
}

# name: (in channels, out channels, kernel, stride, padding, dilation, groups, input (n, h, w), activation, bias)
CONVS = {
    "dense3x3": (8, 16, (3, 3), 1, 1, 1, 1, (2, 13, 13), "relu", True),
    "dense3x3_s2": (5, 12, (3, 3), 2, 1, 1, 1, (1, 17, 16), None, True),
    "stem_c3_s2": (3, 32, (3, 3), 2, 1, 1, 1, (1, 30, 30), "relu", True),
    "stem7x7_s2": (3, 20, (7, 7), 2, 3, 1, 1, (1, 31, 29), "relu", True),
    "k_large": (64, 40, (3, 3), 1, 1, 1, 1, (1, 9, 11), "relu6", True),
    "pointwise": (24, 36, (1, 1), 1, 0, 1, 1, (2, 10, 10), None, True),
    "pointwise_wide": (40, 24, (1, 1), 1, 0, 1, 1, (1, 9, 37), "relu6", True),
    "pointwise_narrow": (7, 3, (1, 1), 1, 0, 1, 1, (1, 7, 7), "relu6", False),
    "pointwise_s2": (16, 24, (1, 1), 2, 0, 1, 1, (1, 15, 15), None, True),
    "grouped": (8, 12, (3, 3), 1, 1, 1, 4, (1, 9, 9), None, True),
    "dilated": (6, 10, (3, 3), 1, 2, 2, 1, (1, 12, 12), "relu", True),
    "stride3_5x5": (4, 9, (5, 5), 3, 2, 1, 1, (1, 19, 19), None, True),
    "rect_kernel": (4, 6, (1, 3), (1, 2), (0, 1), 1, 1, (1, 6, 21), None, True),
    "row_41": (16, 20, (3, 3), 1, 1, 1, 1, (1, 5, 41), None, True),
    "dw3x3": (16, 16, (3, 3), 1, 1, 1, 16, (1, 37, 37), "relu6", True),
    "dw3x3_s2": (16, 16, (3, 3), 2, 1, 1, 16, (2, 40, 40), None, False),
    "dw3x3_7x7": (24, 24, (3, 3), 1, 1, 1, 24, (1, 7, 7), "relu6", True),
    "dw3x3_4x4": (4, 4, (3, 3), 1, 1, 1, 4, (1, 4, 4), None, True),
    "dw3x3_s2_odd": (6, 6, (3, 3), 2, 1, 1, 6, (1, 15, 15), "relu6", True),
    "dw1x3_s2": (5, 5, (1, 3), (1, 2), (0, 1), 1, 5, (1, 9, 33), None, True),
    "dw2x4": (3, 3, (2, 4), 1, (1, 2), 1, 3, (1, 10, 19), "relu", True),
    "dw5x3_row_dilation": (4, 4, (5, 3), 1, (4, 1), (2, 1), 4, (1, 12, 12), None, False),
    "dw5x5": (8, 8, (5, 5), 1, 2, 1, 8, (1, 23, 23), "relu", True),
    "dw3x3_s3": (4, 4, (3, 3), 3, 1, 1, 4, (1, 20, 20), None, True),
    "dw3x3_dilated": (4, 4, (3, 3), 1, 2, 2, 4, (1, 16, 18), None, True),
    "dw3x3_wide": (2, 2, (3, 3), 1, 1, 1, 2, (1, 5, 600), None, True),
}
ACTS = {"relu": nn.ReLU, "relu6": nn.ReLU6}


class Residual(nn.Module):
    """conv -> relu -> conv, plus the input: qadd of two int8 tensors of one shape (the vector path)."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(12, 12, 3, padding=1)
        self.b = nn.Conv2d(12, 12, 1)

    def forward(self, x):  # type: ignore[no-untyped-def]
        y = self.b(nn.functional.relu(self.a(x)))
        return nn.functional.relu(y + x)


class BroadcastAdd(nn.Module):
    """qadd of a (1, C, H, W) and a (1, C, 1, 1) int8 tensor: the broadcasting fallback to portable."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(6, 6, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x):  # type: ignore[no-untyped-def]
        y = self.a(x)
        return y + self.pool(y)


# name: (channels in, channels out, groups, input (n, h, w), kernel): k x k convolutions, padding k // 2, whose int8
# weights are rewritten to the ends of the int8 range (-128, which the quantizer never gives, and 127) and the input calibrated
# on values >= 0 (x_zero_point -128) and run on values far beyond both ends (x - x_zero_point from 0 to 255).
EXTREMES = {
    "extreme_weights": (5, 7, 1, (1, 9, 19), 3),
    "extreme_weights_dw": (6, 6, 6, (1, 11, 21), 3),
    "extreme_weights_dw5": (6, 6, 6, (1, 11, 21), 5),  # neon64dot: past the windows path (int16 pairs of products)
}


def _extreme(ci: int, co: int, groups: int, shape: tuple[int, ...], seed: int, k: int) -> tuple[Any, np.ndarray]:
    dt.manual_seed(seed)
    model = nn.Sequential(nn.Conv2d(ci, co, k, padding=k // 2, groups=groups)).eval()
    rng = np.random.default_rng(seed)
    q = dt.quant.quantize(model, [np.abs(rng.standard_normal(shape)).astype(np.float32) for _ in range(3)])
    node = next(n for n in q.graph.nodes if n.op == "qconv2d")
    assert node.attrs["x_zero_point"] == -128
    w = node.inputs[1].data
    node.inputs[1].data = rng.choice(np.array([-128, 127, -127, -1, 0, 1, 64], np.int8), size=w.shape,
                                     p=[0.35, 0.35, 0.1, 0.05, 0.05, 0.05, 0.05]).astype(np.int8)
    # outputs inside the int8 range mostly: multipliers about 1 / (sqrt(K) * 128), as the sums reach sqrt(K) * 128 * 128
    mult = rng.uniform(0.3, 0.8, size=w.shape[0]) / (np.sqrt(w[0].size) * 128.0)
    node.inputs[2].data = (mult * node.attrs["y_scale"] / node.attrs["x_scale"]).astype(np.float32)
    x = (rng.standard_normal(shape) * 4.0).astype(np.float32)  # about half below 0 (-> -128), many above the max
    return q, x


def _calibration(shape: tuple[int, ...], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(3)]


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("int8_board_cases")
    models: dict[str, tuple[nn.Module, tuple[int, ...]]] = {}
    for name, (ci, co, k, s, p, d, g, (n, h, w), act, bias) in CONVS.items():
        dt.manual_seed(0)
        layers = [nn.Conv2d(ci, co, k, stride=s, padding=p, dilation=d, groups=g, bias=bias)]
        if act:
            layers.append(ACTS[act]())
        models[name] = (nn.Sequential(*layers).eval(), (n, ci, h, w))
    dt.manual_seed(0)
    models["residual"] = (Residual().eval(), (1, 12, 11, 23))
    models["broadcast_add"] = (BroadcastAdd().eval(), (1, 6, 9, 9))
    for i, (name, (model, shape)) in enumerate(models.items()):
        q = dt.quant.quantize(model, _calibration(shape, i))
        x = np.random.default_rng(100 + i).standard_normal(shape).astype(np.float32)
        dt.export(q, dt.from_numpy(x), str(root / f"{name}.dtm"))
        np.save(root / f"{name}.npy", x)
    for i, (name, (ci, co, g, (n, h, w), k)) in enumerate(EXTREMES.items()):
        q, x = _extreme(ci, co, g, (n, ci, h, w), 50 + i, k)
        dt.export(q, dt.from_numpy(x), str(root / f"{name}.dtm"))
        np.save(root / f"{name}.npy", x)
    # quantize's edge values: NaN (-> the zero point), +-inf and huge values (saturation), halves of the scale (ties)
    graph = read_dtm(root / "pointwise.dtm").to_graph()[0]
    scale = float(next(n for n in graph.nodes if n.op == "quantize").attrs["scale"])
    x = np.load(root / "pointwise.npy")
    flat = x.reshape(-1)
    flat[:8] = [np.nan, np.inf, -np.inf, 1e30, -1e30, 0.0, -0.0, 3.0]
    flat[8:40] = (np.arange(32, dtype=np.float32) - 16.0 + 0.5) * np.float32(scale)
    np.save(root / "pointwise_edges.npy", x)
    return root


@dataclass(frozen=True)
class Bundle:
    board: str
    dist: Path


# rk3588 in the fast tier; rv1126's bundle (about 2 minutes to build on 2 cores) in the full tier (.ci/run-full): the
# fast tier still runs the neon32int8 set under QEMU in tests/edge/test_emulate_int8_ops.py (its convolutions, qadd,
# dequantize against the host's bits).
@pytest.fixture(scope="module", params=[b if b == "rk3588" else pytest.param(b, marks=pytest.mark.full)
                                        for b in sorted(BOARDS)])
def dist(request: pytest.FixtureRequest, cases: Path) -> Bundle:
    board = request.param
    res = build_bundle(board, sorted(cases.glob("*.dtm")), out=cases / f"dist-{board}", compare_full=False,
                       agent=False, log=lambda _m: None, progress=False)
    return Bundle(board, res.dist)


def _run(dist: Bundle, model: Path, npy: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = load_board(dist.board).emulator.command(dist.dist / "dtorch-run", str(model), "--input", str(npy), *args)
    r = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return r


def _output(dist: Bundle, model: Path, npy: Path, tag: str, *args: str) -> np.ndarray:
    out = dist.dist / f"{model.stem}.{npy.stem}.{tag}.npy"
    _run(dist, model, npy, "--output", str(out), *args)
    return np.load(out)


def _host(model: Path, npy: Path) -> np.ndarray:
    host = rt.InferenceSession(str(model), kernels="portable")
    return host.run(None, {host.get_inputs()[0].name: np.load(npy)})[0]


@pytest.mark.parametrize("name", [*sorted(CONVS), *sorted(EXTREMES), "residual", "broadcast_add"])
def test_int8_board_kernels_give_the_portable_bits(cases, dist, name):
    model, npy = cases / f"{name}.dtm", cases / f"{name}.npy"
    want = _host(model, npy)
    for tag, args in (("fast1", ("--threads", "1")), ("fast2", ("--threads", "2")),
                      ("exact", ("--threads", "2", "--kernels", "exact"))):
        got = _output(dist, model, npy, tag, *args)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes(), f"{name} {tag}: {np.count_nonzero(got != want)} values differ"


def test_quantize_edge_values_give_the_portable_bits(cases, dist):
    model, npy = cases / "pointwise.dtm", cases / "pointwise_edges.npy"
    want = _host(model, npy)
    got = _output(dist, model, npy, "fast1", "--threads", "1")
    assert got.tobytes() == want.tobytes()


def _sets(dist: Bundle, model: Path, npy: Path, kernels: str) -> dict[str, str]:
    r = _run(dist, model, npy, "--bench", "1", "--profile", "--json", "--threads", "1", "--kernels", kernels)
    rep = [json.loads(line) for line in r.stdout.splitlines() if '"profile"' in line][-1]
    return {n["op"]: n["kernel_set"] for n in rep["profile"]}


@pytest.mark.parametrize("kernels", ["fast", "exact"])
def test_both_policies_run_the_boards_int8_set(cases, dist, kernels):
    sets = _sets(dist, cases / "residual.dtm", cases / "residual.npy", kernels)
    want = BOARDS[dist.board]
    assert {op: sets[op] for op in want} == want
    manifest = json.loads((dist.dist / "manifest.json").read_text())
    assert manifest["sizes"]["kernel_set_bytes"][want["qconv2d"]] > 0
    assert {m["precision"] for m in manifest["models"]} == {"int8"}


def test_the_board_isa_list_chooses_the_dot_product_set():
    int8 = OpList.from_entries(["qconv2d:int8", "quantize:float32"])
    plan = make_plan("rk3588", ops=int8)  # isa lists dotprod (Cortex-A76/A55)
    assert "neon64dot" in plan.kernel_sets
    (src,) = [s for s in plan.sources if s.rel == "kernels/neon64dot/qconv2d.cc"]
    assert "-DDTORCH_KERNEL_ISA=isa_neon64dot" in src.extra_flags and "-DDTORCH_KERNEL_RANK=25" in src.extra_flags
    assert "neon64dot" not in make_plan("rpi4", ops=int8).kernel_sets  # Cortex-A72: no dot product
    assert "neon64dot" in make_plan("rk3588", ops=int8, kernels="exact").kernel_sets  # exact: the same bits
    assert "neon64dot" not in make_plan("rv1126", ops=int8).kernel_sets
    assert "neon32int8" in make_plan("rv1126", ops=int8).kernel_sets  # armv7 NEON: widening multiplies
    assert "neon32int8" in make_plan("rv1126", ops=int8, kernels="exact").kernel_sets  # the same bits
    assert "neon32int8" not in make_plan("rk3588", ops=int8).kernel_sets


def test_a_runtime_without_an_int8_kernel_refuses_the_model_naming_it(cases, dist, tmp_path):
    """The bundle's runtime was pruned to its models' operators: an int8 model with a linear layer (qlinear) is
    refused at load time with the operator named, not run wrong."""
    dt.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 5)).eval()  # quantize, qlinear, dequantize: only qlinear is missing
    q = dt.quant.quantize(model, _calibration((2, 12), 7))
    path = tmp_path / "linear_int8.dtm"
    dt.export(q, dt.randn(1, 12), str(path))
    npy = tmp_path / "x.npy"
    np.save(npy, np.zeros((1, 12), np.float32))
    argv = load_board(dist.board).emulator.command(dist.dist / "dtorch-run", str(path), "--input", str(npy))
    r = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert r.returncode != 0
    assert "model needs operator 'qlinear' (int8), which this runtime was built without" in r.stderr


def test_the_manifest_names_each_models_precision_and_float_fallback(tmp_path):
    """A bundle can carry a float model beside its int8 one: the manifest says which is which, and the int8 model's
    float_fallback names the float model with the same inputs and outputs (a deployment switches back to it)."""
    from dtorch.edge.build import model_entries

    dt.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU()).eval()
    x = dt.randn(1, 3, 8, 8)
    dt.export(model, x, str(tmp_path / "f.dtm"))
    dt.export(dt.quant.quantize(model, _calibration((1, 3, 8, 8), 3)), x, str(tmp_path / "q.dtm"))
    other = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1)).eval()
    dt.export(dt.quant.quantize(other, _calibration((1, 3, 9, 9), 4)), dt.randn(1, 3, 9, 9), str(tmp_path / "o.dtm"))
    entries = {e["file"]: e for e in model_entries({n: tmp_path / n for n in ("f.dtm", "q.dtm", "o.dtm")})}
    assert entries["f.dtm"]["precision"] == "float32" and "float_fallback" not in entries["f.dtm"]
    assert entries["q.dtm"]["precision"] == "int8" and entries["q.dtm"]["float_fallback"] == "f.dtm"
    assert entries["o.dtm"]["precision"] == "int8" and "float_fallback" not in entries["o.dtm"]  # other shapes
