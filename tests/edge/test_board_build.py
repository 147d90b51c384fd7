"""SCons board builds (SConstruct `board=`, dtorch/edge/build_plan.py): for rk3588 (aarch64), rv1126 (armv7) and
licheepi4a (riscv64) with every toolchain family, and for the host, the build succeeds, `file` names the right
architecture, and the binary runs the model under the board's qemu-user profile with the same output bits as
the host runtime with the portable kernels."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dtorch as dt
import dtorch.runtime as rt
from dtorch.edge.boards import load_board
from dtorch.edge.build_plan import PlanError, make_plan
from dtorch.edge.oplist import OpList
from dtorch.edge.toolchains import get_toolchain

ROOT = Path(__file__).resolve().parents[2]
FILE_ARCH = {"aarch64": "ARM aarch64", "armv7": "ARM, EABI5", "riscv64": "RISC-V", "x86_64": "x86-64"}
# Every board with each family it takes. The fast tier (.ci/run) builds each board once and the zig family once
# (rk3588); rv1126 and licheepi4a with zig each cost zig a libc++ build for their CPU (~2 minutes of one core, the
# two slowest cases of the suite), so they run in the full tier (.ci/run-full).
CASES = [("rk3588", "gcc-cross"), ("rk3588", "zig"), ("rv1126", "gcc-cross"),
         pytest.param("rv1126", "zig", marks=pytest.mark.full, id="rv1126-zig"),
         ("licheepi4a", "gcc-cross"),
         pytest.param("licheepi4a", "zig", marks=pytest.mark.full, id="licheepi4a-zig"), ("host", "host")]


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    spec = importlib.util.spec_from_file_location("export_zoo", ROOT / "tests" / "export" / "zoo.py")
    zoo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(zoo)  # type: ignore[union-attr]
    make_model, make_input = zoo.ZOO["mobilenetv2"]  # conv (dense, depthwise, pointwise), relu6, add, pool, linear
    dt.manual_seed(0)
    path = tmp_path_factory.mktemp("board") / "model.dtm"
    x = make_input(2)
    dt.export(make_model().eval(), x, str(path), bundle_example=True)
    return path, x.numpy()


def scons(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "SCons", "-Q", "-j2", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=900)


@pytest.mark.parametrize("board,family", CASES)
def test_board_build_runs_under_qemu_with_host_bits(model, tmp_path, board, family):
    path, x = model
    b = load_board(board)
    found = get_toolchain(family).find(b.arch)
    assert found.found, f"toolchain {family} for {b.arch} is missing: install it with {found.install}"
    plan = make_plan(board, toolchain=family, ops=OpList.from_model(path))
    r = scons(f"board={board}", f"toolchain={family}", f"models={path}", "agent=0")  # the agent: test_agent.py
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    exe = ROOT / plan.variant / "dtorch-run"
    desc = subprocess.run(["file", str(exe)], capture_output=True, text=True).stdout
    assert FILE_ARCH[b.arch] in desc and "statically linked" in desc, desc
    np.save(tmp_path / "x.npy", x)
    # "exact": on the host build the x86 sets with the portable bits (boards have only the portable kernels)
    cmd = [str(exe), str(path), "--input", str(tmp_path / "x.npy"), "--output", str(tmp_path / "y.npy"),
           "--kernels", "exact"]
    run = subprocess.run(b.emulator.command(*cmd) if b.arch != "x86_64" else cmd, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    host = rt.InferenceSession(str(path), kernels="portable").run(None, {"input": x})[0]
    assert np.load(tmp_path / "y.npy").tobytes() == host.tobytes()
    # The binary names its build; the second build of the same inputs rebuilds nothing.
    info = subprocess.run(b.emulator.command(str(exe), "--build-info") if b.arch != "x86_64" else
                          [str(exe), "--build-info"], capture_output=True, text=True, timeout=120).stdout
    assert f"board {board}, toolchain {family}" in info and plan.runtime_hash in info and plan.opset_hash in info
    assert scons("-q", f"board={board}", f"toolchain={family}", f"models={path}", "agent=0").returncode == 0


def test_board_runtime_links_with_lto_on_every_zig_target():
    """The runtime is built without C++ exceptions, so it gets LTO even on armv7, where zig's LTO breaks only
    unwinding (a program that throws gets none: tests/edge/test_toolchains.py)."""
    for board in ("rk3588", "rv1126", "licheepi4a"):
        plan = make_plan(board, toolchain="zig", ops=OpList.everything())
        assert plan.flags.lto and "-flto" in plan.compile_flags and "-flto" in plan.link_flags, board
        assert "-fno-exceptions" in plan.compile_flags


def test_pruned_binary_refuses_a_model_with_an_operator_it_lacks(model, tmp_path):
    path, _ = model
    ops = tmp_path / "ops.yaml"
    ops.write_text("ops:\n  relu: [float32]\n")
    plan = make_plan("host", toolchain="host", ops=OpList.from_yaml(ops))
    assert scons("board=host", "toolchain=host", f"ops={ops}").returncode == 0
    r = subprocess.run([str(ROOT / plan.variant / "dtorch-run"), str(path), "--info"], capture_output=True, text=True)
    assert r.returncode == 1 and "model needs operator 'conv2d' (float32), which this runtime was built without" in \
        r.stderr


def test_manifest_mismatch_is_refused(model, tmp_path):
    path, _ = model
    plan = make_plan("host", toolchain="host", ops=OpList.from_model(path))
    assert scons("board=host", "toolchain=host", f"models={path}").returncode == 0
    exe = str(ROOT / plan.variant / "dtorch-run")
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "model.dtm").write_bytes(path.read_bytes())
    (bundle / "manifest.json").write_text(f'{{"runtime_hash": "{plan.runtime_hash}", "opset_hash": "{plan.opset_hash}"}}')
    assert subprocess.run([exe, str(bundle / "model.dtm"), "--self-test"], capture_output=True).returncode == 0
    (bundle / "manifest.json").write_text('{"runtime_hash": "0123456789abcdef00", "opset_hash": "fedcba9876543210ff"}')
    r = subprocess.run([exe, str(bundle / "model.dtm"), "--self-test"], capture_output=True, text=True)
    assert r.returncode == 1 and "is for runtime 0123456789abcdef / op set fedcba9876543210" in r.stderr
    assert plan.runtime_hash[:16] in r.stderr and "rebuild the bundle" in r.stderr


def test_build_errors(tmp_path):
    r = scons("board=rk3858")
    assert r.returncode != 0 and "unknown board 'rk3858'" in r.stdout and "rk3588" in r.stdout
    bad = tmp_path / "ops.yaml"
    bad.write_text("ops:\n  conv2d: [float32]\n  softmax2: [float32]\n")
    with pytest.raises(PlanError, match="softmax2:float32"):
        make_plan("host", toolchain="host", ops=OpList.from_yaml(bad))
    r = scons("board=host", "toolchain=host", f"ops={bad}")
    assert r.returncode != 0 and "softmax2:float32" in r.stdout
