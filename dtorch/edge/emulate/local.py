"""The local runner: the board's QEMU user-mode emulator on this machine (``qemu-aarch64 -cpu cortex-a76 ...``),
or the binary itself for the host board.

It counts guest instructions with the project's TCG plugin (emulation/qemu/insn_count.c, built on first use).
Counted runs disable address-space randomization (``setarch -R``): where the heap and stack land changes a few
instructions of the C library's memcpy/memset alignment paths, and the count must be the same on every run.
"""

from __future__ import annotations

import platform
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .errors import EmulateError, RunnerUnavailable
from .runner import CAP_INSTRUCTIONS, Runner, RunResult, run_process

__all__ = ["LocalRunner"]


class LocalRunner(Runner):
    name = "local"
    auto_priority = 0  # auto's fallback: it runs every profile, and its check says what to install

    def __init__(self, board, profile, bundle: Path, workdir: Path) -> None:  # type: ignore[no-untyped-def]
        super().__init__(board, profile, bundle, workdir)
        self.capabilities = frozenset({CAP_INSTRUCTIONS} if profile.plugins else set())
        self._plugin: Path | None = None

    def check(self) -> None:
        if "local" not in self.profile.runners:
            raise RunnerUnavailable(f"the {self.profile.kind} emulator profile has no local runner")
        emu = self.board.emulator
        if emu.kind == "native":
            return
        if shutil.which(emu.binary) is None:
            raise RunnerUnavailable(f"{emu.binary} is not installed (the {self.board.name} board's emulator): install "
                                    f"it with: apt-get install {self.profile.apt_package or 'qemu-user'} (or run "
                                    f"scripts/setup.sh)")

    def describe(self) -> str:
        return f"local ({self.board.emulator.summary()})"

    def bundle(self, name: str) -> str:
        return str(self.bundle_dir / name)

    def work(self, name: str) -> str:
        return str(self.workdir / name)

    def _argv(self, args: Sequence[str], plugin: str | None) -> list[str]:
        exe = self.bundle("dtorch-run")
        emu = self.board.emulator
        if emu.kind == "native":
            return [exe, *args]
        argv = [emu.binary, "-cpu", emu.cpu]
        if plugin is not None:
            argv += ["-plugin", plugin]
        return [*argv, exe, *args]

    def run(self, args: Sequence[str], *, timeout: float, count_instructions: bool = False) -> RunResult:
        if not count_instructions:
            return run_process(self._argv(args, None), timeout=timeout, what=f"dtorch-run on {self.board.name}")
        if CAP_INSTRUCTIONS not in self.capabilities:
            raise EmulateError(f"the {self.profile.kind} emulator cannot count instructions")
        if self._plugin is None:
            from .plugin import build_plugin

            self._plugin = build_plugin()
        setarch = shutil.which("setarch")
        if setarch is None:
            raise RunnerUnavailable("setarch is missing (it turns off address-space randomization for counted runs): "
                                    "apt-get install util-linux")
        with tempfile.TemporaryDirectory() as d:
            count_file = Path(d) / "count.txt"
            argv = [setarch, platform.machine(), "-R",
                    *self._argv(args, f"{self._plugin},outfile={count_file}")]
            r = run_process(argv, timeout=timeout, what=f"dtorch-run on {self.board.name} (counting instructions)")
            if r.returncode == 0:
                try:
                    r.instructions = int(count_file.read_text().split()[0])
                except (OSError, ValueError, IndexError):
                    raise EmulateError(f"the instruction-count plugin wrote no count ({count_file}); stderr: "
                                       f"{r.last_error_line()}") from None
        return r
