"""The errors of dtorch-edge emulate: each message is one line that says what was wrong and what to do."""

from __future__ import annotations

__all__ = ["EmulateError", "RunTimeout", "RunnerUnavailable"]


class EmulateError(RuntimeError):
    """An emulated run that cannot be done or failed."""


class RunnerUnavailable(EmulateError):
    """The runner cannot run here: its emulator binary or its container engine is missing or not answering."""


class RunTimeout(EmulateError):
    """A run that did not finish in time; the process (or container) was killed."""
