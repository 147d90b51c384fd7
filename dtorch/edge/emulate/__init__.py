"""Emulated boards: run a bundle under QEMU (locally or in Docker) and measure it (dtorch-edge emulate / bench).

core.py orchestrates; runner.py is the runner interface and finds the runners, one module each (local.py,
docker.py); plugin.py builds the instruction-counting TCG plugin; estimate.py estimates the real board's latency;
report.py formats the figures; profiles.py reads emulation/profiles/.
"""

from __future__ import annotations

from .core import EmulationReport, emulate, make_runner
from .errors import EmulateError, RunnerUnavailable, RunTimeout

__all__ = ["EmulateError", "EmulationReport", "RunTimeout", "RunnerUnavailable", "emulate", "make_runner"]
