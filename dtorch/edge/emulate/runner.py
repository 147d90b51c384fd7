"""The runner interface: how a bundle's dtorch-run is started on an emulated board.

A runner has a name, a set of capabilities, a check that it can run here (with the command that fixes it when
not), and `run(args)`, which starts dtorch-run with `args` under the board's emulator and returns what came out.
Paths in `args` are written with `bundle(name)` (a file of the bundle) and `work(name)` (a file of the run's
work folder, for inputs and outputs), which each runner maps to what its process sees. One runner per file
(local.py, docker.py); `flash` (a board on a serial port) will take the same shape.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .errors import EmulateError, RunTimeout

__all__ = ["CAP_INSTRUCTIONS", "RunResult", "Runner"]

#: Capabilities a runner may have.
CAP_INSTRUCTIONS = "instructions"  # counts guest instructions (a TCG plugin)


@dataclass
class RunResult:
    returncode: int
    stdout: str
    stderr: str
    wall_s: float                       # exec (or container start) to exit
    first_output_s: float | None = None  # exec to dtorch-run's {"event": "first_output"} line
    instructions: int | None = None      # guest instructions, when counted
    argv: list[str] = field(default_factory=list)

    def last_error_line(self) -> str:
        text = (self.stderr or self.stdout).strip()
        return text.splitlines()[-1] if text else f"exit status {self.returncode}"


class Runner(ABC):
    """Runs one bundle's dtorch-run for one board. Subclasses set `name` and `capabilities`."""

    name: str = ""
    capabilities: frozenset[str] = frozenset()

    def __init__(self, board, profile, bundle: Path, workdir: Path) -> None:  # type: ignore[no-untyped-def]
        self.board = board
        self.profile = profile
        self.bundle_dir = Path(bundle)
        self.workdir = Path(workdir)

    # --- what a runner says about itself -----------------------------------------------------------------
    @abstractmethod
    def check(self) -> None:
        """Raise RunnerUnavailable (one line, with the fix) when this runner cannot run the board here."""

    def prepare(self) -> None:  # noqa: B027 (optional hook: most runners need nothing)
        """Anything to do once before runs (the docker runner builds its image)."""

    def describe(self) -> str:
        return self.name

    # --- paths as the runner's process sees them ---------------------------------------------------------
    @abstractmethod
    def bundle(self, name: str) -> str: ...

    @abstractmethod
    def work(self, name: str) -> str: ...

    # --- running -------------------------------------------------------------------------------------------
    @abstractmethod
    def run(self, args: Sequence[str], *, timeout: float, count_instructions: bool = False) -> RunResult:
        """Run dtorch-run (the bundle's) with `args`; raise RunTimeout when it does not finish in `timeout` s."""

    def close(self) -> None:  # noqa: B027 (optional hook)
        """Release what prepare() made."""


def run_process(argv: Sequence[str], *, timeout: float, what: str,
                kill: Callable[[subprocess.Popen], None] | None = None) -> RunResult:
    """Start `argv`, read its output as it comes (noting when the first_output line arrives), and wait for it at
    most `timeout` seconds; on timeout the process group is killed (or `kill` is called) and RunTimeout raised."""
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    except OSError as e:
        raise EmulateError(f"cannot start {what}: {e}") from None
    out: list[str] = []
    err: list[str] = []
    first: list[float] = []

    def read_out() -> None:
        assert proc.stdout is not None
        for raw in iter(proc.stdout.readline, b""):
            line = raw.decode("utf-8", "replace")
            if not first and '"event": "first_output"' in line:
                first.append(time.perf_counter() - t0)
            out.append(line)

    def read_err() -> None:
        assert proc.stderr is not None
        for raw in iter(proc.stderr.readline, b""):
            err.append(raw.decode("utf-8", "replace"))

    readers = [threading.Thread(target=read_out, daemon=True), threading.Thread(target=read_err, daemon=True)]
    for t in readers:
        t.start()
    try:
        rc = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        if kill is not None:
            kill(proc)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait(10)
        for t in readers:
            t.join(2)
        raise RunTimeout(f"{what} did not finish within {timeout:g} s and was killed; a hang or a model too slow "
                         f"under emulation: raise --timeout, or use smaller inputs") from None
    wall = time.perf_counter() - t0
    for t in readers:
        t.join(10)
    return RunResult(returncode=rc, stdout="".join(out), stderr="".join(err), wall_s=wall,
                     first_output_s=first[0] if first else None, argv=list(argv))
