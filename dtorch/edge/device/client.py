"""`AgentClient`: one method per request of PROTOCOL.md section 2, on top of a `Link`.

Payload fields are parsed into typed results here, so that `flash.py` and the CLI never see `key=value` text; a
field the protocol promises but the agent left out is a ProtocolError naming it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .errors import ProtocolError
from .frames import MAX_PAYLOAD, FrameError, FrameType, encode_kv, parse_kv, parse_kv_pairs
from .link import Link

__all__ = [
    "AgentClient", "Blob", "DeviceInfo", "LogEvent", "PutResult", "RunResult", "SelftestResult", "Slots",
    "StatusInfo",
]

Progress = Callable[[int], None]


def _kv(payload: bytes, what: str) -> dict[str, str]:
    try:
        return parse_kv(payload)
    except FrameError as e:
        raise ProtocolError(f"{what}: the agent's answer does not parse ({e})") from None


def _field(kv: dict[str, str], key: str, what: str) -> str:
    if key not in kv:
        raise ProtocolError(f"{what}: the agent's answer lacks {key!r} (PROTOCOL.md section 2)")
    return kv[key]


def _int(kv: dict[str, str], key: str, what: str, default: int | None = None) -> int:
    if key not in kv and default is not None:
        return default
    text = _field(kv, key, what)
    try:
        return int(text)
    except ValueError:
        raise ProtocolError(f"{what}: the agent's {key}={text[:40]!r} is not an integer") from None


def _float(kv: dict[str, str], key: str, what: str) -> float:
    text = _field(kv, key, what)
    try:
        return float(text)
    except ValueError:
        raise ProtocolError(f"{what}: the agent's {key}={text[:40]!r} is not a number") from None


@dataclass(frozen=True)
class DeviceInfo:
    """HELLO's answer."""

    protocol: int
    agent_version: str
    runtime_version: str
    runtime_hash: str
    opset_hash: str
    board: str
    arch: str
    max_payload: int
    free_bytes: int
    store_bytes: int
    active: str
    previous: str
    active_model: str
    previous_model: str
    signing: str

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class Slots:
    """The active and previous bundles after ACTIVATE or ROLLBACK."""

    active: str
    previous: str
    active_model: str

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class StatusInfo:
    state: str
    receiving: str
    received: int
    active: str
    previous: str
    rx_frames: int
    rx_dropped: int
    uptime_s: float

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class SelftestResult:
    passed: bool
    max_abs_error: float

    def to_json(self) -> dict[str, object]:
        return {"pass": self.passed, "max_abs_error": self.max_abs_error}


@dataclass(frozen=True)
class RunResult:
    outputs: list[tuple[str, int]]  # (sha256, bytes) of each output's .npy blob on the device
    ms_min: float | None = None
    ms_p50: float | None = None
    ms_max: float | None = None

    def to_json(self) -> dict[str, object]:
        return {"outputs": [{"sha256": s, "bytes": n} for s, n in self.outputs], "ms_min": self.ms_min,
                "ms_p50": self.ms_p50, "ms_max": self.ms_max}


@dataclass(frozen=True)
class LogEvent:
    time: int
    kind: str
    text: str

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class PutResult:
    name: str
    sha256: str
    size: int
    have: bool  # the device already held the blob: nothing was sent
    offset: int  # where the transfer started (resumed from an earlier, interrupted one when > 0)
    sent: int  # payload bytes sent this time

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class Blob:
    """Something to send: a name, its sha256 and size, and a way to read its bytes at an offset."""

    name: str
    sha256: str
    size: int
    path: Path | None = None
    data: bytes | None = None
    _file: object = field(default=None, repr=False)

    @classmethod
    def from_bytes(cls, name: str, data: bytes) -> Blob:
        return cls(name, hashlib.sha256(data).hexdigest(), len(data), data=bytes(data))

    @classmethod
    def from_path(cls, path: Path, name: str | None = None, sha256: str | None = None) -> Blob:
        """A file on disk (hashed now unless `sha256` is given: bundle.txt's digest, checked by VERIFY anyway)."""
        size = os.stat(path).st_size
        if sha256 is None:
            h = hashlib.sha256()
            with open(path, "rb") as f:
                while chunk := f.read(1 << 20):
                    h.update(chunk)
            sha256 = h.hexdigest()
        return cls(name or path.name, sha256, size, path=path)

    def read(self, offset: int, n: int) -> bytes:
        if self.data is not None:
            return self.data[offset:offset + n]
        assert self.path is not None
        with open(self.path, "rb") as f:
            f.seek(offset)
            return f.read(n)


class AgentClient:
    """The agent's requests, on an open Link. Long requests get an allowance (seconds the agent may work before
    it answers) on top of the link's back-off, scaled for an emulated board."""

    def __init__(self, link: Link) -> None:
        self.link = link

    def hello(self) -> DeviceInfo:
        kv = _kv(self.link.request(FrameType.HELLO).payload, "HELLO")
        protocol = _int(kv, "protocol", "HELLO")
        if protocol != 1:
            raise ProtocolError(f"the device's agent speaks protocol {protocol}, this dtorch-edge speaks 1: use a "
                                f"dtorch-edge and an agent of the same release")
        return DeviceInfo(
            protocol=protocol, agent_version=kv.get("agent_version", ""),
            runtime_version=kv.get("runtime_version", ""), runtime_hash=_field(kv, "runtime_hash", "HELLO"),
            opset_hash=_field(kv, "opset_hash", "HELLO"), board=_field(kv, "board", "HELLO"), arch=kv.get("arch", ""),
            max_payload=_int(kv, "max_payload", "HELLO", MAX_PAYLOAD), free_bytes=_int(kv, "free_bytes", "HELLO", 0),
            store_bytes=_int(kv, "store_bytes", "HELLO", 0), active=kv.get("active", ""),
            previous=kv.get("previous", ""), active_model=kv.get("active_model", ""),
            previous_model=kv.get("previous_model", ""), signing=kv.get("signing", "off"))

    def put_blob(self, blob: Blob, progress: Progress | None = None) -> PutResult:
        """PUT_BEGIN, then the bytes from where the device stands (nothing when it has the blob). Does not VERIFY.
        `progress(received)` is called as the device acknowledges bytes (with the start offset first)."""
        what = f"PUT_BEGIN {blob.name}"
        kv = _kv(self.link.request(FrameType.PUT_BEGIN, encode_kv(
            {"name": blob.name, "sha256": blob.sha256, "size": blob.size}), what=what).payload, what)
        if kv.get("have") == "1":
            return PutResult(blob.name, blob.sha256, blob.size, True, blob.size, 0)
        offset = _int(kv, "offset", what, 0)
        if not 0 <= offset <= blob.size:
            raise ProtocolError(f"{what}: the agent's offset={offset} is outside the {blob.size}-byte file")
        if progress is not None:
            progress(offset)
        self.link.send_data(offset, blob.size, blob.read, progress)
        return PutResult(blob.name, blob.sha256, blob.size, False, offset, blob.size - offset)

    def verify(self, sha256: str, size: int = 0, name: str = "") -> int:
        """VERIFY: the blob becomes complete in the device's store; returns its size."""
        what = f"VERIFY {name or sha256[:16]}"
        # hashing on the device: allow for a slow (emulated) CPU and an fsync
        kv = _kv(self.link.request(FrameType.VERIFY, encode_kv({"sha256": sha256}), what=what,
                                   allowance=2.0 + size / 4e6).payload, what)
        if kv.get("sha256", sha256) != sha256:
            raise ProtocolError(f"{what}: the agent verified {kv['sha256']}, not {sha256}")
        return _int(kv, "size", what, size)

    def activate(self, bundle: str) -> Slots:
        kv = _kv(self.link.request(FrameType.ACTIVATE, encode_kv({"bundle": bundle}), what="ACTIVATE",
                                   allowance=10.0).payload, "ACTIVATE")
        return Slots(kv.get("active", ""), kv.get("previous", ""), kv.get("active_model", ""))

    def rollback(self) -> Slots:
        kv = _kv(self.link.request(FrameType.ROLLBACK, what="ROLLBACK", allowance=10.0).payload, "ROLLBACK")
        return Slots(kv.get("active", ""), kv.get("previous", ""), kv.get("active_model", ""))

    def run(self, inputs: list[str], bench: int = 0) -> RunResult:
        fields: list[tuple[str, object]] = [(f"input{i}", s) for i, s in enumerate(inputs)]
        fields.append(("bench", bench))
        kv = _kv(self.link.request(FrameType.RUN, encode_kv(fields), what="RUN",
                                   allowance=10.0 + 2.0 * bench).payload, "RUN")
        outputs = []
        for i in range(_int(kv, "outputs", "RUN")):
            text = _field(kv, f"output{i}", "RUN")
            sha, _, size = text.partition(" ")
            if len(sha) != 64 or not size.isdigit():
                raise ProtocolError(f"RUN: the agent's output{i}={text[:80]!r} is not '<sha256> <bytes>'")
            outputs.append((sha, int(size)))
        if bench > 0:
            return RunResult(outputs, _float(kv, "ms_min", "RUN"), _float(kv, "ms_p50", "RUN"),
                             _float(kv, "ms_max", "RUN"))
        return RunResult(outputs)

    def selftest(self) -> SelftestResult:
        kv = _kv(self.link.request(FrameType.SELFTEST, what="SELFTEST", allowance=10.0).payload, "SELFTEST")
        return SelftestResult(_field(kv, "pass", "SELFTEST") == "1", _float(kv, "max_abs_error", "SELFTEST"))

    def status(self) -> StatusInfo:
        kv = _kv(self.link.request(FrameType.STATUS).payload, "STATUS")
        return StatusInfo(state=kv.get("state", ""), receiving=kv.get("receiving", ""),
                          received=_int(kv, "received", "STATUS", 0), active=kv.get("active", ""),
                          previous=kv.get("previous", ""), rx_frames=_int(kv, "rx_frames", "STATUS", 0),
                          rx_dropped=_int(kv, "rx_dropped", "STATUS", 0),
                          uptime_s=float(kv.get("uptime_s", "0") or 0))

    def logs(self, last: int = 50) -> list[LogEvent]:
        pairs = self.link.request(FrameType.LOG, encode_kv({"last": last}), what="LOG").payload
        try:
            kv = dict(parse_kv_pairs(pairs))
        except FrameError as e:
            raise ProtocolError(f"LOG: the agent's answer does not parse ({e})") from None
        events = []
        for i in range(_int(kv, "events", "LOG")):
            stamp, _, rest = _field(kv, f"event{i}", "LOG").partition(" ")
            kind, _, text = rest.partition(" ")
            try:
                t = int(float(stamp))
            except ValueError:
                raise ProtocolError(f"LOG: event{i} does not start with unix seconds ({stamp[:20]!r})") from None
            events.append(LogEvent(t, kind, text))
        return events

    def get(self, sha256: str, size: int, progress: Progress | None = None) -> bytes:
        """GET a blob from the device, chunk by chunk (stop-and-wait), and check its sha256."""
        out = bytearray()
        while len(out) < size:
            n = min(MAX_PAYLOAD, size - len(out))
            f = self.link.request(FrameType.GET, encode_kv({"sha256": sha256, "offset": len(out), "length": n}),
                                  what=f"GET {sha256[:16]}")
            if len(f.payload) != n:
                raise ProtocolError(f"GET {sha256[:16]}: asked for {n} bytes at {len(out)}, got {len(f.payload)}")
            out += f.payload
            if progress is not None:
                progress(len(out))
        if hashlib.sha256(out).hexdigest() != sha256:
            raise ProtocolError(f"GET {sha256[:16]}: the {size} bytes received do not hash to it")
        return bytes(out)
