"""The runner interface: how a bundle's dtorch-run is started on an emulated board.

A runner has a name, a set of capabilities, a check that it can run here (with the command that fixes it when
not), and `run(args)`, which starts dtorch-run with `args` under the board's emulator and returns what came out.
Paths in `args` are written with `bundle(name)` (a file of the bundle) and `work(name)` (a file of the run's
work folder, for inputs and outputs), which each runner maps to what its process sees.

One runner per file, found the way kernels are: every module of this package is looked at, and each concrete
Runner subclass with a `name` that it defines is a runner (`runners()`), so adding one (local.py, docker.py; a
board on a serial port next) is one new file. `--runner auto` tries the runners with an `auto_priority`, the
highest first, and takes the first whose `available(board, profile)` and `check()` pass; the lowest is the
fallback, taken (and checked) when none of the others is.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import signal
import subprocess
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .errors import EmulateError, RunTimeout

__all__ = ["CAP_INSTRUCTIONS", "RunResult", "Runner", "runner_names", "runners"]

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
    """Runs one bundle's dtorch-run for one board. Subclasses set `name` and `capabilities`, and `auto_priority`
    when `--runner auto` may take them."""

    name: str = ""
    capabilities: frozenset[str] = frozenset()
    #: Where auto tries this runner: the highest first, the lowest is the fallback; None: only when asked by name.
    auto_priority: int | None = None

    @classmethod
    def available(cls, board, profile) -> tuple[bool, str]:  # type: ignore[no-untyped-def]
        """Whether auto may take this runner for `board` and its emulator `profile` (before its check), and why:
        the reason auto prints when it takes the runner, or passes it over."""
        return True, ""

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


def runners() -> dict[str, type[Runner]]:
    """Every runner of this package, by name, in the order --runner lists them (auto's fallback first, then by
    rising auto priority, then the runners auto never takes)."""
    package = importlib.import_module(__package__)
    found: dict[str, type[Runner]] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{__package__}.{info.name}")
        for cls in vars(module).values():
            if (isinstance(cls, type) and issubclass(cls, Runner) and cls.__module__ == module.__name__ and cls.name
                    and not inspect.isabstract(cls)):
                if cls.name in found or cls.name == "auto":
                    other = found.get(cls.name)
                    where = f"{other.__module__}.{other.__qualname__}" if other else "--runner auto"
                    raise EmulateError(f"two runners are called {cls.name!r}: {cls.__module__}.{cls.__qualname__} "
                                       f"and {where}; rename one")
                found[cls.name] = cls

    def order(cls: type[Runner]) -> tuple[bool, int, str]:
        return cls.auto_priority is None, cls.auto_priority or 0, cls.name

    return {cls.name: cls for cls in sorted(found.values(), key=order)}


def runner_names() -> list[str]:
    """The names --runner takes besides auto."""
    return list(runners())
