"""Helpers for the tests that run the real dtorch-agent: build it, start and stop it on a loopback socket, export
small models, and write bundle folders (bundle.txt of PROTOCOL.md section 5) for an agent's runtime and op set."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
HOST_AGENT = ROOT / "build" / "host" / "dtorch-agent"


def build_host_agent() -> Path:
    """build/host/dtorch-agent (`scons -Q dtorch-agent`, incremental); fails when scons is missing."""
    if shutil.which("scons") is None:
        pytest.fail("scons is not installed: run scripts/setup.sh")
    r = subprocess.run(["scons", "-Q", "-j1", "dtorch-agent"], cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert HOST_AGENT.is_file()
    return HOST_AGENT


class Agent:
    """A dtorch-agent process serving `store` on 127.0.0.1 (a free port), in its own process group."""

    def __init__(self, argv: Sequence[str], store: Path, extra: Sequence[str] = ()) -> None:
        self.argv = [*argv, "--store", str(store), "--listen", "127.0.0.1:0", *extra]
        self.store = store
        self.proc: subprocess.Popen[bytes] | None = None
        self.lines: list[str] = []
        self.port = 0

    @property
    def url(self) -> str:
        return f"socket://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> Agent:
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, start_new_session=True)
        ready = threading.Event()

        def drain(proc: subprocess.Popen[bytes] = self.proc) -> None:
            assert proc.stderr is not None
            for raw in proc.stderr:
                line = raw.decode(errors="replace").rstrip()
                self.lines.append(line)
                m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
                if m:
                    self.port = int(m.group(1))
                    ready.set()
            ready.set()

        threading.Thread(target=drain, daemon=True).start()
        if not ready.wait(timeout) or not self.port:
            self.stop()
            raise AssertionError(f"the agent did not listen: {self.lines[-5:]}")
        return self

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def __enter__(self) -> Agent:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def export_mlp(path: Path, seed: int, hidden: int = 256) -> Path:
    """A Linear-ReLU-Linear model (about 100 KB of weights at hidden=256) with its bundled test vector; models of
    one `hidden` share an op list (so one agent's op set serves them all) and differ in their weights."""
    import dtorch as dt
    import dtorch.nn as nn

    dt.manual_seed(seed)
    m = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 32))
    m.eval()
    dt.export(m, dt.randn(1, 64), str(path), bundle_example=True)
    return path


def host_output(model: Path, x: np.ndarray) -> np.ndarray:
    import dtorch.runtime as rt

    s = rt.InferenceSession(str(model))
    return s.run(None, {s.get_inputs()[0].name: x})[0]


def write_bundle(folder: Path, model: Path, *, board: str, runtime_hash: str, opset_hash: str,
                 runtime_version: str = "0.1.0", extra: dict[str, bytes] | None = None) -> Path:
    """A bundle folder: model.dtm, the `extra` files, and bundle.txt listing them (section 5)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(model, folder / "model.dtm")
    for name, data in (extra or {}).items():
        (folder / name).write_bytes(data)
    lines = ["dtorch-bundle 1", f"board {board}", f"runtime_hash {runtime_hash}", f"opset_hash {opset_hash}",
             f"runtime_version {runtime_version}", "model model.dtm"]
    for name in ["model.dtm", *sorted(extra or {})]:
        data = (folder / name).read_bytes()
        lines.append(f"file {name} {hashlib.sha256(data).hexdigest()} {len(data)}")
    (folder / "bundle.txt").write_text("\n".join(lines) + "\n")
    return folder


def bundle_id(folder: Path) -> str:
    return hashlib.sha256((folder / "bundle.txt").read_bytes()).hexdigest()
