"""The boards' SIMD kernel sets on emulated boards: neon64 (runtime/kernels/neon64/, AArch64) on rk3588, neon32
(runtime/kernels/neon32/, armv7-a NEON + VFPv4) on rv1126 and rvv (runtime/kernels/rvv/, RISC-V Vector 1.0) on
k230. Each is chosen by the board's ISA list at build time, is
within the documented tolerance (1e-5 x output scale) of the portable kernels on every convolution shape its code
paths split on, gives the same bits for any thread count, and is never taken by the "exact" policy, which keeps the
portable bits the host shares.

One bundle per board holds every case (a pruned build with the set's conv2d); the binaries run under the board's
QEMU (qemu-aarch64 -cpu cortex-a76, qemu-arm -cpu cortex-a7, qemu-riscv64 with RVV 1.0 at VLEN 128; QEMU and the
cross toolchains come from scripts/setup.sh)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

import dtorch as dt
import dtorch.nn as nn
import dtorch.runtime as rt
from dtorch.edge.boards import load_board
from dtorch.edge.build import build_bundle
from dtorch.edge.build_plan import PlanError, make_plan
from dtorch.edge.oplist import OpList

TOLERANCE = 1e-5  # x the output scale, as the x86 FMA sets (kernels/neon64/neon64.h, neon32/neon32.h, rvv/rvv.h)
SETS = {"rk3588": "neon64", "rv1126": "neon32", "k230": "rvv"}

# name: (in channels, out channels, kernel (h, w), stride, padding, dilation, groups, input (n, h, w), activation, bias)
# Each case exercises a path of the sets' conv2d: the GEMMs' full and partial row tiles and column panels, K blocks
# (K > 256), the im2col fill's whole-panel and run-by-run copies for column strides 1, 2 and others
# (kernels/common/neon_im2col.h, rvv/conv2d.cc), the 1x1 in-place B, groups, and the depthwise kernels (NEON's ring
# of padded rows: 3x3 row pairs and single rows, other kernel sizes, strides and dilations, chunked wide rows:
# kernels/common/neon_depthwise.h; RVV's masked loads at the borders).
CASES = {
    "dense3x3": (8, 16, (3, 3), 1, 1, 1, 1, (2, 13, 13), "relu", True),
    "dense3x3_s2": (5, 12, (3, 3), 2, 1, 1, 1, (1, 17, 16), None, True),
    "stem7x7_s2": (3, 20, (7, 7), 2, 3, 1, 1, (1, 31, 29), "relu", True),
    "k_blocks": (64, 40, (3, 3), 1, 1, 1, 1, (1, 9, 11), "relu6", True),   # K = 576: 3 blocks of 192
    "pointwise": (24, 36, (1, 1), 1, 0, 1, 1, (2, 10, 10), None, True),   # 100 positions: a partial panel
    "pointwise_4rows": (7, 3, (1, 1), 1, 0, 1, 1, (1, 7, 7), "relu6", False),
    "pointwise_s2": (16, 24, (1, 1), 2, 0, 1, 1, (1, 15, 15), None, True),
    "grouped": (8, 12, (3, 3), 1, 1, 1, 4, (1, 9, 9), None, True),
    "dilated": (6, 10, (3, 3), 1, 2, 2, 1, (1, 12, 12), "hardtanh", True),
    "stride3_5x5": (4, 9, (5, 5), 3, 2, 1, 1, (1, 19, 19), None, True),
    "rect_kernel": (4, 6, (1, 3), (1, 2), (0, 1), 1, 1, (1, 6, 21), "leaky_relu", True),
    "dw3x3": (16, 16, (3, 3), 1, 1, 1, 16, (1, 37, 37), "relu6", True),     # odd rows: pairs + a single row
    "dw3x3_s2": (16, 16, (3, 3), 2, 1, 1, 16, (2, 40, 40), None, False),
    "dw3x3_small": (24, 24, (3, 3), 1, 1, 1, 24, (1, 7, 7), "relu6", True),
    "dw5x5": (8, 8, (5, 5), 1, 2, 1, 8, (1, 23, 23), "relu", True),
    "dw3x3_s3": (4, 4, (3, 3), 3, 1, 1, 4, (1, 20, 20), None, True),
    "dw3x3_dilated": (4, 4, (3, 3), 1, 2, 2, 4, (1, 16, 18), None, True),
    "dw3x3_wide": (2, 2, (3, 3), 1, 1, 1, 2, (1, 5, 1500), None, True),  # rows chunked to fit the ring
    "dw_no_pad": (8, 8, (3, 3), 1, 0, 1, 8, (1, 10, 10), "relu", True),
}
ACTS = {"relu": nn.ReLU, "relu6": nn.ReLU6, "hardtanh": lambda: nn.Hardtanh(-0.5, 0.25),
        "leaky_relu": lambda: nn.LeakyReLU(0.1)}


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("neon_cases")
    for name, (ci, co, k, s, p, d, g, (n, h, w), act, bias) in CASES.items():
        dt.manual_seed(0)
        layers = [nn.Conv2d(ci, co, k, stride=s, padding=p, dilation=d, groups=g, bias=bias)]
        if act:
            layers.append(ACTS[act]())
        x = dt.randn(n, ci, h, w)
        dt.export(nn.Sequential(*layers).eval(), x, str(root / f"{name}.dtm"))
        np.save(root / f"{name}.npy", x.numpy())
    return root


_BUNDLES: dict[str, Path] = {}


# rk3588 and k230 in the fast tier; rv1126's bundle (about 100 s to build on 2 cores) in the full tier (.ci/run-full):
# the fast tier still runs the neon32 set under QEMU in tests/edge/test_emulate.py (SimpleNet and MobileNetV2 on
# rv1126, fast kernels within 1e-5 of portable and not its bits). k230 stays: no other fast test runs the rvv set.
@pytest.fixture(params=[b if b != "rv1126" else pytest.param(b, marks=pytest.mark.full) for b in sorted(SETS)])
def bundle(request: pytest.FixtureRequest, cases: Path) -> tuple[str, Path, Path]:
    """(board, its bundle of every case, the cases folder): built once per board."""
    board = request.param
    if board not in _BUNDLES:
        res = build_bundle(board, sorted(cases.glob("*.dtm")), out=cases / "dist", compare_full=False, agent=False,
                           log=lambda _m: None, progress=False)
        _BUNDLES[board] = res.dist
    return board, _BUNDLES[board], cases


def _run(bundle: tuple[str, Path, Path], name: str, *args: str) -> subprocess.CompletedProcess[str]:
    board, dist, root = bundle
    argv = load_board(board).emulator.command(dist / "dtorch-run", str(dist / f"{name}.dtm"), "--input",
                                              str(root / f"{name}.npy"), *args)
    r = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return r


def _output(bundle: tuple[str, Path, Path], name: str, tag: str, *args: str) -> np.ndarray:
    out = bundle[2] / f"{bundle[0]}.{name}.{tag}.npy"
    _run(bundle, name, "--output", str(out), *args)
    return np.load(out)


def _kernel_sets(bundle: tuple[str, Path, Path], name: str, kernels: str) -> list[str]:
    r = _run(bundle, name, "--bench", "1", "--profile", "--json", "--threads", "1", "--kernels", kernels)
    rep = [json.loads(line) for line in r.stdout.splitlines() if '"profile"' in line][-1]
    return [n["kernel_set"] for n in rep["profile"]]


@pytest.mark.parametrize("name", sorted(CASES))
def test_neon_conv2d_within_tolerance_of_portable(bundle, name):
    board, dist, root = bundle
    x = np.load(root / f"{name}.npy")
    host = rt.InferenceSession(str(dist / f"{name}.dtm"), kernels="portable")
    want = host.run(None, {host.get_inputs()[0].name: x})[0]
    fast = _output(bundle, name, "fast1", "--kernels", "fast", "--threads", "1")
    assert fast.shape == want.shape and fast.dtype == np.float32
    scale = max(1.0, float(np.max(np.abs(want))))
    err = float(np.max(np.abs(fast.astype(np.float64) - want))) / scale
    assert err <= TOLERANCE, f"{board} {name}: {err:.3g} x scale"
    # threads split work units only: the same bits
    fast2 = _output(bundle, name, "fast2", "--kernels", "fast", "--threads", "2")
    assert fast2.tobytes() == fast.tobytes()
    # exact keeps the portable bits (the host's)
    exact = _output(bundle, name, "exact", "--kernels", "exact", "--threads", "2")
    assert exact.tobytes() == want.tobytes()


@pytest.mark.parametrize("name", ["dense3x3", "pointwise", "dw3x3"])
def test_fast_runs_the_set_and_exact_runs_portable(bundle, name):
    assert _kernel_sets(bundle, name, "fast") == [SETS[bundle[0]]]
    # the size report puts the set's cost beside the portable kernels it keeps
    sizes = json.loads((bundle[1] / "manifest.json").read_text())["sizes"]["kernel_set_bytes"]
    assert set(sizes) == {"portable", SETS[bundle[0]]} and sizes[SETS[bundle[0]]] > 0
    assert f"- kernel set {SETS[bundle[0]]}: " in (bundle[1] / "size_report.md").read_text()
    assert _kernel_sets(bundle, name, "exact") == ["portable"]


def _sets(board: str, ops: OpList | None = None, toolchain: str | None = None) -> set[str]:
    plan = make_plan(board, ops=ops, toolchain=toolchain)
    return {s.rel.split("/")[1] for s in plan.sources if s.rel.startswith("kernels/") and "kernels/common" not in s.rel}


def test_the_board_isa_list_chooses_the_set():
    conv = OpList.from_entries(["conv2d:float32", "relu:float32"])
    assert _sets("rk3588", conv) == {"portable", "neon64"}          # aarch64, isa lists neon
    assert _sets("rpi4", conv) == {"portable", "neon64"}
    assert _sets("rk3588", OpList.from_entries(["relu:float32"])) == {"portable"}  # no neon64 kernel for relu
    assert _sets("rv1126", conv) == {"portable", "neon32"}           # armv7, isa lists neon and vfpv4
    assert _sets("stm32mp157", conv) == {"portable", "neon32"}
    assert _sets("licheepi4a", conv) == {"portable"}                 # riscv64 without RVV 1.0
    assert _sets("k230", conv) == {"portable", "rvv"}                 # rvv1.0, built by zig
    plan = make_plan("rk3588", ops=conv)
    (src,) = [s for s in plan.sources if s.rel == "kernels/neon64/conv2d.cc"]
    assert "-DDTORCH_KERNEL_ISA=isa_neon64" in src.extra_flags
    assert not any(s.rel.startswith(("kernels/avx", "kernels/x86")) for s in plan.sources)


def test_a_set_its_compiler_cannot_build_is_left_out_and_said():
    conv = OpList.from_entries(["conv2d:float32"])
    plan = make_plan("k230", ops=conv, toolchain="gcc-cross")  # GCC 12 has no RVV intrinsics
    assert plan.kernel_sets == () and _sets("k230", conv, "gcc-cross") == {"portable"}
    (note,) = plan.kernel_set_notes
    assert "rvv left out: gcc does not build it (it needs zig or clang)" in note
    assert plan.to_json()["kernel_set_notes"] == [note]
    assert make_plan("k230", ops=conv, toolchain="zig").kernel_sets == ("rvv",)
    assert make_plan("rv1126", ops=conv, toolchain="gcc-cross").kernel_sets == ("neon32",)


def test_kernels_exact_plans_keep_only_sets_with_the_portable_bits():
    conv = OpList.from_entries(["conv2d:float32"])
    plan = make_plan("rk3588", ops=conv, kernels="exact")
    # neon64 goes; neon64dot (int8, the portable bits) would stay but has no kernel for a float conv2d
    assert plan.kernel_sets == () and _sets_of(plan) == {"portable"}
    assert plan.variant.endswith("-exact") and plan.variant != make_plan("rk3588", ops=conv).variant
    (note,) = plan.kernel_set_notes
    assert "kernel set neon64 left out (kernels=exact)" in note
    assert plan.to_json()["kernels"] == "exact"
    for board in ("rv1126", "k230"):
        assert make_plan(board, ops=conv, kernels="exact").kernel_sets == ()
    host = make_plan("host", ops=conv, kernels="exact")
    if host.board.arch == "x86_64":  # the bit-exact sets stay (x86; vnni, amx: int8 only), the FMA sets go
        assert set(host.kernel_sets) == {"x86"}
        int8 = OpList.from_entries(["qconv2d:int8", "conv2d:float32"])
        assert set(make_plan("host", ops=int8, kernels="exact").kernel_sets) == {"x86", "vnni", "amx"}
    with pytest.raises(PlanError, match="kernels must be 'fast' .* or 'exact'"):
        make_plan("rk3588", ops=conv, kernels="turbo")


def _sets_of(plan) -> set[str]:
    return {s.rel.split("/")[1] for s in plan.sources if s.rel.startswith("kernels/") and "kernels/common" not in s.rel}


def test_build_kernels_exact_makes_a_smaller_portable_bundle(bundle, tmp_path):
    """`dtorch-edge build --kernels exact`: the board's binary without its SIMD set (the smallest; the same bits
    as the host's portable kernels), said in the build log and the manifest."""
    from click.testing import CliRunner

    from dtorch.edge.cli import main

    board, fast_dist, root = bundle
    r = CliRunner().invoke(main, ["build", "--board", board, "--model", str(root / "dense3x3.dtm"), "--out",
                                  str(tmp_path), "--kernels", "exact", "--no-full", "--no-agent", "--quiet"],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert f"kernel set {SETS[board]} left out (kernels=exact)" in r.output
    dist = tmp_path / board
    manifest = json.loads((dist / "manifest.json").read_text())
    assert manifest["kernels"] == "exact" and manifest["kernel_sets"] == ["portable"]
    assert set(manifest["sizes"]["kernel_set_bytes"]) == {"portable"}
    assert (dist / "dtorch-run").stat().st_size < (fast_dist / "dtorch-run").stat().st_size
    (model,) = dist.glob("*.dtm")  # a one-model bundle names it model.dtm

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        argv = load_board(board).emulator.command(dist / "dtorch-run", str(model), "--input",
                                                  str(root / "dense3x3.npy"), *args)
        r = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        return r

    prof = [json.loads(line) for line in run("--bench", "1", "--profile", "--json", "--threads", "1").stdout.splitlines()
            if '"profile"' in line][-1]
    assert [n["kernel_set"] for n in prof["profile"]] == ["portable"]  # the default "fast" policy: nothing else here
    host = rt.InferenceSession(str(root / "dense3x3.dtm"), kernels="portable")
    want = host.run(None, {host.get_inputs()[0].name: np.load(root / "dense3x3.npy")})[0]
    out = tmp_path / "exact_build.npy"
    run("--output", str(out))
    assert np.load(out).tobytes() == want.tobytes()
