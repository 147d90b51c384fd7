"""`dtorch-edge flash`: install a bundle folder (dist/<board>/ from `dtorch-edge build`) on a device.

Order (PROTOCOL.md section 5): read bundle.txt and check every file it lists against its sha256; HELLO; refuse,
before sending a byte, a bundle for another board or for a runtime / op set other than the agent's (both named);
PUT each file the device lacks (resuming an interrupted transfer), VERIFY it; then bundle.txt itself; ACTIVATE it.
The device switches to the new bundle only at ACTIVATE, so an interrupted flash leaves the old model active, and a
rerun resumes where the last one stopped.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .client import AgentClient, Blob, DeviceInfo, PutResult
from .errors import BundleError, LineLost, NoResponse
from .link import Link

__all__ = ["BUNDLE_TEXT", "Bundle", "BundleFile", "FlashReport", "flash_bundle", "read_bundle"]

BUNDLE_TEXT = "bundle.txt"
_HEX64 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class BundleFile:
    name: str
    sha256: str
    size: int


@dataclass(frozen=True)
class Bundle:
    """A bundle folder's bundle.txt (section 5), its files checked against it."""

    dir: Path
    id: str  # sha256 of bundle.txt
    text: bytes
    board: str
    runtime_hash: str
    opset_hash: str
    runtime_version: str
    model: str
    files: tuple[BundleFile, ...]
    signed: bool = False  # a last line `signature <hex>` (dtorch-edge build --sign)


def read_bundle(folder: Path) -> Bundle:
    """Parse folder/bundle.txt and check that every file it lists is in the folder with its size and sha256.
    Raises BundleError with one line (nothing has been sent at that point)."""
    from ..._fileio import read_regular

    if not folder.is_dir():
        raise BundleError(f"{folder} is not a folder: give the bundle folder of dtorch-edge build (dist/<board>)")
    path = folder / BUNDLE_TEXT
    try:
        text = read_regular(path, limit=1 << 20)
    except FileNotFoundError:
        raise BundleError(f"{folder} has no {BUNDLE_TEXT}: it is not a bundle of this dtorch-edge; rebuild it with "
                          f"dtorch-edge build") from None
    except OSError as e:
        raise BundleError(f"cannot read {path}: {e.strerror or e}") from None
    try:
        lines = text.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise BundleError(f"{path} is not UTF-8 text") from None
    if not lines or lines[0].strip() != "dtorch-bundle 1":
        raise BundleError(f"{path} does not start with 'dtorch-bundle 1': rebuild the bundle with this dtorch-edge")
    keys: dict[str, str] = {}
    files: list[BundleFile] = []
    for n, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        key, _, rest = line.partition(" ")
        if key == "file":
            parts = rest.rsplit(" ", 2)
            if len(parts) != 3 or not _HEX64.fullmatch(parts[1]) or not parts[2].isdigit() or not parts[0]:
                raise BundleError(f"{path}:{n}: not 'file <name> <sha256> <bytes>': {line[:80]!r}")
            files.append(BundleFile(parts[0], parts[1], int(parts[2])))
        else:
            keys[key] = rest
    for key in ("board", "runtime_hash", "opset_hash", "model"):
        if not keys.get(key):
            raise BundleError(f"{path} has no '{key}' line: rebuild the bundle with dtorch-edge build")
    if keys["model"] not in {f.name for f in files}:
        raise BundleError(f"{path} names the model {keys['model']} but lists no such file")
    for f in files:
        p = folder / f.name
        if "/" in f.name or f.name in (".", "..") or not p.is_file():
            raise BundleError(f"{folder} lacks {f.name}, which {BUNDLE_TEXT} lists: rebuild the bundle")
        size = p.stat().st_size
        if size != f.size or _sha256_file(p) != f.sha256:
            raise BundleError(f"{p} is not the file {BUNDLE_TEXT} lists ({size} bytes, expected {f.size}, or another "
                              f"sha256): the bundle was changed after its build; rebuild it")
    signed = bool(lines) and lines[-1].startswith("signature ")
    return Bundle(folder, hashlib.sha256(text).hexdigest(), text, keys["board"], keys["runtime_hash"],
                  keys["opset_hash"], keys.get("runtime_version", "?"), keys["model"], tuple(files), signed)


def _sha256_file(p: Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def check_compatible(bundle: Bundle, info: DeviceInfo) -> None:
    """Refuse a bundle the agent would refuse, naming both sides."""
    where = bundle.dir
    if bundle.board != info.board:
        raise BundleError(f"the device is a {info.board} board, {where} was built for {bundle.board}: build a bundle "
                          f"for it (dtorch-edge build --board {info.board})")
    if bundle.runtime_hash != info.runtime_hash:
        raise BundleError(f"the device's agent runs runtime {info.runtime_version} (hash {info.runtime_hash[:16]}), "
                          f"{where} was built for runtime {bundle.runtime_version} (hash {bundle.runtime_hash[:16]}): "
                          f"put the bundle's dtorch-agent on the board, or build with the device's runtime")
    if bundle.opset_hash != info.opset_hash:
        raise BundleError(f"the device's agent has op set {info.opset_hash[:16]}, {where} needs op set "
                          f"{bundle.opset_hash[:16]}: put the bundle's dtorch-agent on the board, or build the bundle "
                          f"with the agent's op list")
    if info.signing == "required" and not bundle.signed:
        raise BundleError(f"the device activates only signed bundles and {where} is not signed: build it with "
                          f"dtorch-edge build --sign KEY (the key the device was provisioned with)")


@dataclass
class FlashReport:
    port: str
    board: str
    bundle: str
    model: str
    active: str
    previous: str
    already_active: bool
    bytes_sent: int
    bytes_skipped: int
    files_sent: int
    files_skipped: int
    seconds: float
    transfer_seconds: float
    line_bytes_out: int
    retransmits: int
    files: list[PutResult] = field(default_factory=list)

    @property
    def throughput(self) -> float:
        """Payload bytes per second while sending."""
        return self.bytes_sent / self.transfer_seconds if self.transfer_seconds > 0 else 0.0

    def to_json(self) -> dict[str, object]:
        d = asdict(self)
        d["files"] = [f.to_json() for f in self.files]
        d["throughput_bytes_per_s"] = round(self.throughput, 1)
        return d

    def lines(self) -> list[str]:
        if self.already_active:
            return [f"{self.board} at {self.port}: bundle {self.bundle[:12]} (model {self.model}) is already active; "
                    f"nothing sent ({self.seconds:.1f} s)"]
        prev = f"previous {self.previous[:12]} (dtorch-edge device rollback returns to it)" if self.previous else \
            "no previous bundle"
        skipped = f", {self.files_skipped} already on the device" if self.files_skipped else ""
        resumed = self.bytes_skipped - sum(f.size for f in self.files if f.have)
        resumed_text = f", {resumed:,} bytes resumed from an earlier run" if resumed else ""
        return [f"flashed {self.board} at {self.port}: bundle {self.bundle[:12]} active (model {self.model}), {prev}",
                f"sent {self.bytes_sent:,} bytes in {self.files_sent} files{skipped}{resumed_text}; "
                f"{self.throughput / 1000:.1f} kB/s, {self.transfer_seconds:.1f} s sending, {self.seconds:.1f} s "
                f"in all ({self.retransmits} retransmissions)"]


def flash_bundle(folder: Path, port: str, *, board: str | None = None, baud: int = 115200, progress: bool = True,
                 log: Callable[[str], None] = lambda _m: None, link: Link | None = None) -> FlashReport:
    """Install the bundle in `folder` on the device at `port`. Raises a DeviceError (one line) on any failure;
    the device's active bundle changes only when this returns."""
    start = time.monotonic()
    bundle = read_bundle(folder)
    if board is not None and bundle.board != board:
        raise BundleError(f"{folder} was built for {bundle.board}, not for --board {board}")
    blobs = [Blob(f.name, f.sha256, f.size, path=folder / f.name) for f in bundle.files]
    blobs.append(Blob.from_bytes(BUNDLE_TEXT, bundle.text))
    own = link is None
    if link is None:
        link = Link(port, baud)
        link.open()
    try:
        client = AgentClient(link)
        info = client.hello()
        check_compatible(bundle, info)
        log(f"device: {info.board} ({info.arch}), agent {info.agent_version}, runtime {info.runtime_version}; "
            f"active {info.active[:12] or 'none'}")
        if info.active == bundle.id:
            return FlashReport(port, info.board, bundle.id, bundle.model, info.active, info.previous, True, 0, 0, 0,
                               0, time.monotonic() - start, 0.0, link.stats.bytes_out, link.stats.retransmits)
        results, transfer = _send_all(client, blobs, progress)
        try:
            slots = client.activate(bundle.id)
        except (LineLost, NoResponse) as e:
            raise type(e)(f"{e} during ACTIVATE: the device has the whole bundle; rerun the same command to finish "
                          f"the install (the active model is the old one or the new one, never a partial one)") \
                from None
        sent = [r for r in results if not r.have]
        return FlashReport(
            port, info.board, bundle.id, bundle.model, slots.active, slots.previous, False,
            bytes_sent=sum(r.sent for r in results), bytes_skipped=sum(r.size - r.sent for r in results),
            files_sent=len(sent), files_skipped=len(results) - len(sent), seconds=time.monotonic() - start,
            transfer_seconds=transfer, line_bytes_out=link.stats.bytes_out, retransmits=link.stats.retransmits,
            files=results)
    finally:
        if own:
            link.close()


def _send_all(client: AgentClient, blobs: list[Blob], progress: bool) -> tuple[list[PutResult], float]:
    """PUT and VERIFY each blob, with one progress bar over the bytes to send."""
    from tqdm import tqdm

    bar = tqdm(total=sum(b.size for b in blobs), unit="B", unit_scale=True, unit_divisor=1000, desc="flash",
               disable=not progress, leave=False, dynamic_ncols=True)
    results: list[PutResult] = []
    transfer = 0.0
    try:
        for blob in blobs:
            bar.set_postfix_str(blob.name)
            done_before = bar.n
            state = {"offset": -1, "at": 0}

            def advance(received: int, done_before: int = done_before, state: dict[str, int] = state) -> None:
                if state["offset"] < 0:  # the first call: where the device stands
                    state["offset"] = received
                    bar.total -= received  # resumed bytes are not sent again: not part of the rate or time left
                    bar.refresh()
                state["at"] = received
                bar.update(done_before + received - state["offset"] - bar.n)

            t0 = time.monotonic()
            try:
                r = client.put_blob(blob, advance)
                if not r.have:
                    client.verify(blob.sha256, blob.size, blob.name)
            except (LineLost, NoResponse) as e:
                at = max(state["at"], 0)
                raise type(e)(f"{e}, while sending {blob.name} (byte {at:,} of {blob.size:,}); rerun the same command "
                              f"to resume from there (the device keeps its active model)") from None
            transfer += time.monotonic() - t0
            if r.have:
                bar.total -= blob.size
                bar.refresh()
            results.append(r)
    finally:
        bar.close()
    return results, transfer
