"""The reliable link of PROTOCOL.md section 4 over anything pyserial opens (a device path, `socket://HOST:PORT`,
`rfc2217://HOST:PORT`): stop-and-wait control requests with retransmission and back-off, and the windowed
(go-back-N) PUT_DATA stream.

Timeouts are sized from the line rate (`baud`, 10 bits per byte on 8N1), so bytes queued on a slow line are not
taken for a lost frame. Every failure is one exception of `errors.py` with a one-line message: no such port, port
busy, device not answering (what was sent, how often, for how long), garbage on the line (bytes but never a valid
frame: most often a wrong --baud), an agent ERROR, the line lost.
"""

from __future__ import annotations

import errno
import os
import select
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import AgentError, GarbageOnLine, LineLost, NoResponse, PortBusy, PortError, PortNotFound, ProtocolError
from .frames import (
    MAX_CHUNK,
    MAX_ENCODED,
    Frame,
    FrameDecoder,
    FrameError,
    FrameType,
    encode_frame,
    parse_ack,
    parse_kv,
    put_data_payload,
)

__all__ = ["BACKOFF", "WINDOW", "Link", "LinkStats", "line_seconds", "open_port"]

BACKOFF = (0.5, 1.0, 2.0, 4.0)  # section 4: the waits before each retransmission, then give up
WINDOW = 4  # section 4: PUT_DATA frames in flight
_SEQ_MASK = 0xFFFFFFFF
_POLL = 0.05  # the longest single wait for bytes (a deadline is checked at least this often)


def line_seconds(nbytes: int, baud: int) -> float:
    """The time `nbytes` take on a `baud` line with 8N1 framing (10 bits per byte)."""
    return nbytes * 10.0 / baud


def open_port(url: str, baud: int) -> Any:
    """Open `url` with pyserial (non-blocking reads: timeout 0), or raise PortNotFound / PortBusy / PortError with
    one line. A device path is opened exclusively, so two programs cannot talk on one line at once."""
    import serial

    kwargs: dict[str, Any] = {"baudrate": baud, "timeout": 0}
    if not url.startswith("rfc2217://"):  # pyserial's RFC 2217 client has no write timeout (NotImplementedError)
        kwargs["write_timeout"] = 10.0 + line_seconds(1 << 16, baud)
    if url.startswith(("socket://", "rfc2217://")):
        host, sep, rest = url.split("://", 1)[1].rpartition(":")
        port = rest.split("?", 1)[0].split("/", 1)[0]
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise PortError(f"cannot use port {url!r}: give {url.split('://')[0]}://HOST:PORT with PORT in 1..65535")
    if "://" not in url:
        kwargs["exclusive"] = True
    try:
        return serial.serial_for_url(url, **kwargs)
    except ValueError as e:  # a malformed URL or setting
        raise PortError(f"cannot use port {url!r}: {e}") from None
    except serial.SerialException as e:
        raise _open_error(url, e) from None
    except OSError as e:  # pragma: no cover - pyserial wraps these, but not on every path of every handler
        raise _open_error(url, e) from None


def _open_error(url: str, e: OSError) -> PortError:
    text = str(e)
    code = e.errno if isinstance(e.errno, int) else None
    if code is None:  # pyserial's URL handlers put the cause in the text only
        for c, word in ((errno.ECONNREFUSED, "Connection refused"), (errno.ENOENT, "No such file"),
                        (errno.EBUSY, "busy"), (errno.EACCES, "Permission denied")):
            if word in text:
                code = c
                break
    if code == errno.ECONNREFUSED:
        return PortNotFound(f"nothing listens at {url} (connection refused): start the emulated board with "
                            f"`dtorch-edge device serve`, or check the address")
    if code in (errno.ENOENT, errno.ENODEV, errno.ENXIO):
        return PortNotFound(f"no such port {url}: check the device path (ls /dev/ttyUSB* /dev/ttyACM*), or use "
                            f"`dtorch-edge device serve` for an emulated board")
    if code in (errno.EBUSY, errno.EAGAIN) or "exclusively lock" in text:
        return PortBusy(f"port {url} is busy: another program holds it (a terminal such as minicom or screen, or "
                        f"another dtorch-edge); close it and retry")
    if code == errno.ENOTTY or "Inappropriate ioctl" in text:
        return PortError(f"{url} is not a serial port (the terminal settings cannot be applied to it)")
    if code == errno.EISDIR:
        return PortError(f"{url} is a directory, not a serial port")
    if "Name or service not known" in text or "nodename nor servname" in text:
        return PortNotFound(f"cannot resolve the host of {url}: check the name, or use 127.0.0.1 for an emulated board")
    if code in (errno.EACCES, errno.EPERM):
        return PortError(f"no permission to open {url}: add your user to the group that owns it (usually "
                         f"`dialout`) and log in again")
    return PortError(f"cannot open port {url}: {text}")


@dataclass
class LinkStats:
    """What went over the line since the link was opened."""

    bytes_out: int = 0
    bytes_in: int = 0
    frames_out: int = 0
    frames_in: int = 0
    dropped_in: int = 0  # frames the host's decoder dropped (damaged, truncated)
    retransmits: int = 0  # control frames sent again, and go-back-N resends of the window
    data_timeouts: int = 0  # go-back-N resends after a timeout without progress
    data_dup_acks: int = 0  # go-back-N resends after three repeated ACKs


class Link:
    """One open connection to an agent. `request` sends a control frame and returns the OK response (raising
    AgentError on ERROR); `send_data` streams one blob's bytes with PUT_DATA after a PUT_BEGIN.

    `port` may be an object with pyserial's read/write/close (tests pass their own); otherwise `url` is opened
    with `open_port`. Sequence numbers start at a random value, so a new connection never reuses the sequence
    number of the previous connection's last request (the agent answers a repeated `seq` from its cache)."""

    def __init__(self, url: str, baud: int = 115200, *, port: Any = None, backoff: tuple[float, ...] = BACKOFF,
                 window: int = WINDOW) -> None:
        if baud <= 0:
            raise PortError(f"--baud must be positive, not {baud}")
        self.url = url
        self.baud = baud
        self.backoff = backoff
        self.window = window
        self.stats = LinkStats()
        self._port = port
        self._decoder = FrameDecoder()
        self._pending: deque[Frame] = deque()
        self._seq_next = int.from_bytes(os.urandom(4), "little")
        self._fd: int | None = None
        self._tx_free = 0.0  # when the line will have carried every byte written so far, at `baud`

    # --- opening and closing -------------------------------------------------------------------------------------

    def open(self) -> Link:
        if self._port is None:
            self._port = open_port(self.url, self.baud)
        try:
            self._fd = self._port.fileno()
        except Exception:  # rfc2217 and loop:// have no file descriptor: poll instead
            self._fd = None
        try:
            try:
                self._port.reset_input_buffer()
            except Exception as e:
                raise self._lost(e) from None
            # A delimiter first: whatever the agent's receiver holds of a frame (noise on the line, a host killed
            # mid-frame) ends here instead of spoiling our first frame.
            self._write(b"\x00")
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        if self._port is not None:
            try:
                self._port.close()
            except Exception:
                pass
            self._port = None

    def __enter__(self) -> Link:
        return self.open()

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def line_seconds(self, nbytes: int) -> float:
        return line_seconds(nbytes, self.baud)

    # --- control requests (stop-and-wait) -----------------------------------------------------------------------

    def request(self, ftype: FrameType, payload: bytes = b"", *, what: str = "", allowance: float = 0.0) -> Frame:
        """Send one control request and return its OK response. Retransmits the same frame (same seq) after each
        wait of `backoff` (plus the line time of the request and of the longest response, plus `allowance`: the
        seconds the agent may need to carry the request out, e.g. hashing a large file), then raises NoResponse
        (or GarbageOnLine). An ERROR response raises AgentError."""
        name = ftype.name
        seq = self._new_seq()
        frame = encode_frame(ftype, seq, payload)
        answer = self.line_seconds(MAX_ENCODED)  # the longest response's time on the line
        waits: list[float] = []
        start = time.monotonic()
        for wait in self.backoff:
            if waits:
                self.stats.retransmits += 1
            self._write(frame)
            now = time.monotonic()
            # the bytes still queued ahead of the answer: this request, and frames written before it (the tail of
            # a window) that a slow line has not carried yet
            waits.append(wait + answer + allowance + max(0.0, self._tx_free - now))
            deadline = now + waits[-1]
            while (f := self._recv(deadline)) is not None:
                if f.seq == seq and f.type in (FrameType.OK, FrameType.ERROR):
                    return self._checked(f, what or name)
                # anything else is stale: a duplicate answer to an earlier request, an ACK of an earlier window
                if time.monotonic() >= deadline:
                    break
        raise self._silence(name, waits, time.monotonic() - start)

    def _checked(self, f: Frame, what: str) -> Frame:
        if f.type == FrameType.ERROR:
            try:
                kv = parse_kv(f.payload)
            except FrameError as e:
                raise ProtocolError(f"{what}: the agent's ERROR payload does not parse ({e})") from None
            raise AgentError(kv.get("code", "?"), kv.get("message", ""), what)
        return f

    def _silence(self, name: str, waits: list[float], elapsed: float) -> NoResponse:
        tried = f"sent {name} {len(waits)} times over {elapsed:.1f} s (waits of " \
                f"{', '.join(f'{w:.1f}' for w in waits)} s, sized for {self.baud} baud)"
        d = self._decoder
        if d.frames == 0 and d.bytes_in > 0:
            return GarbageOnLine(f"{self.url}: {d.bytes_in} bytes arrived but none formed a valid frame ({tried}): "
                                 f"the line's rate is probably not --baud {self.baud}; give the device's rate, and "
                                 f"check that nothing but dtorch-agent talks on this port")
        damaged = f"; {d.dropped} damaged frames were dropped" if d.dropped else ""
        return NoResponse(f"no answer from {self.url}: {tried}, nothing came back{damaged}; check that dtorch-agent "
                          f"runs on the device and is connected to this port")

    # --- PUT_DATA (go-back-N) -------------------------------------------------------------------------------------

    def send_data(self, start: int, size: int, read: Callable[[int, int], bytes],
                  progress: Callable[[int], None] | None = None) -> None:
        """Stream bytes `start` .. `size` of the blob that the last PUT_BEGIN named, `read(offset, n)` giving them,
        with up to `window` PUT_DATA frames in flight. Returns when the agent acknowledges all `size` bytes;
        `progress(received)` is called on every advance. Resends from the agent's `received` after a timeout
        without progress or three repeated ACKs; raises LineLost after `backoff` timeouts in a row (the caller
        knows where the transfer stood: the last `progress`), AgentError on ERROR."""
        base = nxt = start
        first_seq = self._seq_next  # ACKs of frames sent before this transfer are stale
        epoch_seq = first_seq  # duplicate ACKs count only for frames sent since the last go-back
        dups = 0
        timeouts = 0
        # after the last byte written has crossed the line (at `baud`): the agent's ACK back, and slack for its disk
        slack = self.line_seconds(64) + 0.5
        last_progress = time.monotonic()
        silent_since = last_progress
        while base < size:
            while nxt < size and nxt - base < self.window * MAX_CHUNK:
                n = min(MAX_CHUNK, size - nxt)
                data = read(nxt, n)
                if len(data) != n:
                    raise LineLost(f"the file being sent shrank at byte {nxt} (it changed while being sent)")
                self._write(encode_frame(FrameType.PUT_DATA, self._new_seq(), put_data_payload(nxt, data)))
                nxt += n
            deadline = max(last_progress, self._tx_free) + slack + self.backoff[min(timeouts, len(self.backoff) - 1)]
            f = self._recv(deadline)
            received = self._ack(f, first_seq, size) if f is not None else None
            if received is not None and received > base:
                base = received
                nxt = max(nxt, base)
                dups = timeouts = 0
                last_progress = silent_since = time.monotonic()
                if progress is not None:
                    progress(base)
                continue
            if received is not None and received == base and f is not None and self._unwrap(f.seq) >= epoch_seq:
                dups += 1
                if dups >= 3:
                    self.stats.retransmits += 1
                    self.stats.data_dup_acks += 1
                    nxt, epoch_seq, dups = base, self._seq_next, 0
            # no progress: a timeout once the deadline has passed (also while stale frames keep arriving)
            if f is None or time.monotonic() >= deadline:
                timeouts += 1
                if timeouts >= len(self.backoff):
                    raise LineLost(f"no acknowledgement from {self.url} for "
                                   f"{time.monotonic() - silent_since:.1f} s (sent the window {timeouts} times, waits "
                                   f"sized for {self.baud} baud)")
                self.stats.retransmits += 1
                self.stats.data_timeouts += 1
                nxt, epoch_seq, dups = base, self._seq_next, 0
                last_progress = time.monotonic()

    def _ack(self, f: Frame, first_seq: int, size: int) -> int | None:
        """The `received` of an ACK to this transfer's PUT_DATA (None for a stale or other frame); raises AgentError
        for an ERROR answer and ProtocolError for a malformed ACK."""
        if self._unwrap(f.seq) < first_seq:
            return None
        if f.type == FrameType.ERROR:
            self._checked(f, "PUT_DATA")
        if f.type != FrameType.ACK:
            return None
        try:
            received = parse_ack(f.payload)
        except FrameError as e:
            raise ProtocolError(f"the agent's ACK does not parse ({e})") from None
        if received > size:
            raise ProtocolError(f"the agent acknowledged {received} bytes of a {size}-byte file")
        return received

    # --- the byte stream ------------------------------------------------------------------------------------------

    def _new_seq(self) -> int:
        s = self._seq_next & _SEQ_MASK
        self._seq_next += 1
        return s

    def _unwrap(self, wire: int) -> int:
        """The sequence counter value (unbounded) of the most recent frame sent with 32-bit `wire` seq."""
        last = self._seq_next - 1
        return last - ((last - wire) & _SEQ_MASK)

    def _write(self, data: bytes) -> None:
        if self._port is None:
            raise LineLost(f"the link to {self.url} is closed")
        try:
            self._port.write(data)
        except Exception as e:
            raise self._lost(e) from None
        self.stats.bytes_out += len(data)
        self._tx_free = max(self._tx_free, time.monotonic()) + self.line_seconds(len(data))
        if len(data) > 1:
            self.stats.frames_out += 1

    def _recv(self, deadline: float) -> Frame | None:
        """The next valid frame, or None once `deadline` (time.monotonic) has passed."""
        while True:
            if self._pending:
                return self._pending.popleft()
            if self._port is None:
                raise LineLost(f"the link to {self.url} is closed")
            try:
                data = self._port.read(1 << 16)
            except Exception as e:
                raise self._lost(e) from None
            if data:
                self.stats.bytes_in += len(data)
                frames = self._decoder.feed(data)
                self.stats.frames_in = self._decoder.frames
                self.stats.dropped_in = self._decoder.dropped
                self._pending.extend(frames)
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self._wait(min(left, _POLL))

    def _wait(self, seconds: float) -> None:
        if self._fd is None:
            time.sleep(min(seconds, 0.002))
            return
        try:
            select.select([self._fd], [], [], seconds)
        except (OSError, ValueError):
            time.sleep(min(seconds, 0.002))

    def _lost(self, e: BaseException) -> LineLost:
        reason = str(e) or type(e).__name__
        return LineLost(f"the connection to {self.url} was lost ({reason})")
