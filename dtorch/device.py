"""Devices. DTorch's eager mode runs on the CPU; asking for any other device is an error, never a fallback."""

from __future__ import annotations

from typing import Any


class DeviceError(RuntimeError):
    """A device was named that this installation cannot run on."""


class device:
    __slots__ = ("index", "type")

    def __init__(self, spec: Any, index: int | None = None) -> None:
        if isinstance(spec, device):
            self.type, self.index = spec.type, spec.index
            return
        if not isinstance(spec, str):
            raise TypeError(f"device must be a string like 'cpu' or a dtorch.device, got {type(spec).__name__}")
        name = spec.strip()
        if ":" in name:
            name, _, idx = name.partition(":")
            if not idx.isdigit():
                raise ValueError(f"invalid device string {spec!r}: expected 'type' or 'type:index'")
            index = int(idx)
        self.type, self.index = name, index

    def __repr__(self) -> str:
        return f"device(type='{self.type}'" + (f", index={self.index})" if self.index is not None else ")")

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index or 0) == (other.type, other.index or 0)

    def __hash__(self) -> int:
        return hash((self.type, self.index or 0))


CPU = device("cpu")


def available_devices() -> list[str]:
    return ["cpu"]


def available_backends() -> list[str]:
    """Where models can run: 'cpu' (eager), plus compiled runtime backends when the runtime is built."""
    backends = ["cpu"]
    try:
        from . import runtime

        backends += [b for b in getattr(runtime, "available_backends", list)() if b not in backends]
    except ImportError:
        pass
    return backends


def check_device(spec: Any) -> device:
    """Return the device for `spec`, or raise DeviceError naming it and the devices that are available."""
    if spec is None:
        return CPU
    d = device(spec)
    if d.type != "cpu" or (d.index not in (None, 0)):
        raise DeviceError(f"device '{d}' is not available: this dtorch runs eager tensors on "
                          f"{available_devices()} only; use model.to('cpu'), or export the model and run it "
                          f"with dtorch.runtime on a supported backend")
    return CPU
