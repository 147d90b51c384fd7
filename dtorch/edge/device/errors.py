"""The exceptions of the device tools: one class per failure a user can meet, each with a one-line message that says
what went wrong and what to do. The CLI prints `error: <message>` and exits 1."""

from __future__ import annotations

__all__ = [
    "AgentError", "BundleError", "DeviceError", "GarbageOnLine", "LineLost", "NoResponse", "PortBusy",
    "PortError", "PortNotFound", "ProtocolError", "ServeError",
]


class DeviceError(Exception):
    """Base class: str(e) is the one line to show."""


class PortError(DeviceError):
    """The port could not be opened (not one of the more specific cases below)."""


class PortNotFound(PortError):
    """No such port: a missing device path, or nothing listening at a socket:// address."""


class PortBusy(PortError):
    """Another program holds the port."""


class NoResponse(DeviceError):
    """The device did not answer: nothing (or nothing valid) came back after every retransmission."""


class GarbageOnLine(NoResponse):
    """Bytes arrive but none decodes as a frame: most often a wrong --baud, or another program on the port."""


class LineLost(DeviceError):
    """The connection ended, or stopped carrying frames, in the middle of an exchange."""


class ProtocolError(DeviceError):
    """The device answered with something the protocol does not allow (a malformed payload, a wrong type)."""


class BundleError(DeviceError):
    """The bundle folder is missing, damaged, or not for this device; nothing was sent."""


class ServeError(DeviceError):
    """`dtorch-edge device serve` could not start the emulated board."""


# What a user does about each ERROR code of PROTOCOL.md section 2; {m} is the agent's own message.
_HINTS = {
    "bad_request": "the agent refused a malformed request ({m}): this dtorch-edge and the device's agent disagree on "
                   "the protocol; update one of them",
    "unknown_command": "the agent does not know this request ({m}): it is older than this dtorch-edge; put the "
                       "bundle's dtorch-agent on the board",
    "bad_name": "the agent refused the file name: {m}",
    "too_large": "the agent refused the size: {m}",
    "no_space": "the device's store is full: {m}",
    "not_receiving": "the agent is not receiving this file ({m}); it may have restarted: rerun to send it again",
    "verify_failed": "the device's copy does not match: {m} (its partial file was deleted: rerun to send it again)",
    "not_found": "the device does not have it: {m}",
    "mismatch": "the device refused the bundle: {m}",
    "bad_model": "the device cannot load the model: {m}",
    "signature": "the device requires a signed bundle: {m} (build it with dtorch-edge build --sign KEY)",
    "no_model": "the device has no active model: {m}",
    "no_previous": "nothing to roll back to: {m}",
    "run_failed": "the model failed on the device: {m}",
    "io_error": "the device could not write its store: {m}",
}


class AgentError(DeviceError):
    """The agent answered ERROR: `code` (PROTOCOL.md section 2) and its `message`; str() is the user's line."""

    def __init__(self, code: str, message: str, what: str = "") -> None:
        self.code = code
        self.agent_message = message
        self.what = what
        hint = _HINTS.get(code, "the agent answered " + code + ": {m}")
        text = hint.format(m=message or code)
        super().__init__(f"{what}: {text}" if what else text)
