"""A real board bundle on an emulated board: `dtorch-edge build --board rk3588` (its pruned aarch64 dtorch-agent and
bundle.txt), `dtorch-edge device serve --board rk3588` (that agent under qemu-aarch64 -cpu cortex-a76), then flash,
run (the board's default "fast" kernels, neon64 for the MLP's linear layers: the bits of the bundle's own dtorch-run
under the same emulator, within 1e-5 x output scale of the host's portable bits), selftest, a second model, and
rollback to the first model's output bits again. Slow: it cross-compiles the runtime and the agent."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .agent_fixtures import bundle_id, export_mlp
from .test_device_agent import _alive, _serve, ok

BOARD = "rk3588"


def _build(model: Path, out: Path) -> Path:
    r = subprocess.run([sys.executable, "-m", "dtorch.edge.cli", "build", "--board", BOARD, "--model", str(model),
                        "--out", str(out), "--no-full", "--quiet"], capture_output=True, text=True, timeout=3000)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    dist = out / BOARD
    for name in ("bundle.txt", "dtorch-agent", "model.dtm"):
        assert (dist / name).is_file(), f"dtorch-edge build wrote no {name}: {sorted(p.name for p in dist.iterdir())}"
    return dist


def _exact(model: Path, x: np.ndarray) -> np.ndarray:
    import dtorch.runtime as rt

    s = rt.InferenceSession(str(model), kernels="exact")
    return s.run(None, {s.get_inputs()[0].name: x})[0]


def _board_fast(dist: Path, model: Path, tmp: Path, y: np.ndarray) -> None:
    """y, the agent's output: the bundle's dtorch-run's bits on the same input under the same emulator (both the
    default "fast" policy), and within the fast kernels' tolerance of the host's bit-exact output."""
    from dtorch.edge.boards import load_board

    cmd = load_board(BOARD).emulator.command(dist / "dtorch-run")
    r = subprocess.run([*cmd, str(model), "--input", str(tmp / "x.npy"), "--output", str(tmp / "board_y.npy")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert y.tobytes() == np.load(tmp / "board_y.npy").tobytes()
    ref = _exact(model, np.load(tmp / "x.npy"))
    assert y.shape == ref.shape and y.dtype == ref.dtype
    np.testing.assert_allclose(y, ref, rtol=0, atol=1e-5 * max(1.0, float(np.abs(ref).max())))


@pytest.mark.slow
def test_rk3588_bundle_on_its_agent_under_qemu(tmp_path):
    if shutil.which("qemu-aarch64") is None:
        pytest.fail("qemu-aarch64 is not installed: run scripts/setup.sh")
    models = {k: export_mlp(tmp_path / f"{k}.dtm", seed=s) for k, s in (("a", 1), ("b", 2))}
    dist = {k: _build(m, tmp_path / f"dist-{k}") for k, m in models.items()}
    x = np.random.default_rng(0).standard_normal((1, 64)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    p, info = _serve(["--board", BOARD, "--bundle", str(dist["a"])])
    try:
        port = info["port"]
        assert "qemu-aarch64" in info["emulator"]
        dev = json.loads(ok("device", "info", "--port", port, "--json").stdout)
        assert dev["board"] == BOARD and dev["arch"] == "aarch64"

        def run() -> np.ndarray:
            ok("device", "run", "--port", port, "--input", str(tmp_path / "x.npy"), "--output",
               str(tmp_path / "y.npy"), "--json")
            return np.load(tmp_path / "y.npy")

        rep = json.loads(ok("flash", "--board", BOARD, "--port", port, "--json", str(dist["a"])).stdout)
        assert rep["active"] == bundle_id(dist["a"])
        ya = run()
        _board_fast(dist["a"], models["a"], tmp_path, ya)
        assert "selftest passed" in ok("device", "selftest", "--port", port).stdout
        rep = json.loads(ok("flash", "--board", BOARD, "--port", port, "--json", str(dist["b"])).stdout)
        assert rep["active"] == bundle_id(dist["b"]) and rep["previous"] == bundle_id(dist["a"])
        _board_fast(dist["b"], models["b"], tmp_path, run())
        ok("device", "rollback", "--port", port)
        assert run().tobytes() == ya.tobytes()
        assert ok("device", "logs", "--port", port).stdout.count("\n") >= 3
    finally:
        p.send_signal(signal.SIGINT)
        rc = p.wait(30)
    assert rc == 0 and not _alive(info["pid"])


@pytest.mark.slow
def test_rk3588_agent_on_a_pty_under_qemu(tmp_path):
    """--pty: the aarch64 agent on --stdio, serve pumping between a pty and it; the line carries a whole flash."""
    dist = _build(export_mlp(tmp_path / "a.dtm", seed=1), tmp_path / "dist")
    p, info = _serve(["--board", BOARD, "--bundle", str(dist), "--pty"])
    try:
        assert info["port"].startswith("/dev/pts/")
        rep = json.loads(ok("flash", "--board", BOARD, "--port", info["port"], "--json", str(dist)).stdout)
        assert rep["active"] == bundle_id(dist)
        assert "selftest passed" in ok("device", "selftest", "--port", info["port"]).stdout
    finally:
        p.send_signal(signal.SIGTERM)
        rc = p.wait(30)
    assert rc == 0 and not _alive(info["pid"])
