"""A fault-injection TCP proxy for the agent tests: host <-> proxy <-> agent, on 127.0.0.1 only.

It is frame-aware (a frame ends at 0x00, PROTOCOL.md section 1) and applies, per direction and seeded:
- `drop_byte` / `corrupt_byte`: the probability that each byte of a frame is dropped / flipped;
- `duplicate_frame` / `reorder_frame`: the probability that a frame is sent twice / held back and sent after the
  next one;
- `delay` (+ random `jitter`): latency added to every frame, the order kept;
- `rate`: a byte rate limit, as a serial line has (115200 baud 8N1 = 11,520 B/s);
- `cut_after`: after this many bytes forwarded in this direction, the connection is cut (both sides closed), on
  the first `cuts` connections; the proxy keeps accepting, so the host can reconnect;
- `stall_after`: after this many bytes forwarded in this direction, nothing more is (the connection stays open:
  a cable pulled from a serial line gives no hang-up), on the first `cuts` connections;
- `skip_frames`: the first frames of each connection pass untouched (so a HELLO can get through).

    with SerialProxy(agent_port, up=Faults(drop_byte=0.001), down=Faults(rate=11520), seed=1) as proxy:
        flash(..., port=proxy.url)
        proxy.stats["up"]["dropped_bytes"]

`up` is host -> agent, `down` agent -> host. The test that starts a proxy stops it (the context manager does).
"""

from __future__ import annotations

import heapq
import itertools
import random
import select
import socket
import threading
import time
from dataclasses import dataclass, field

__all__ = ["Faults", "SerialProxy", "RATE_115200"]

RATE_115200 = 11520.0  # bytes per second of a 115200-baud 8N1 line


@dataclass
class Faults:
    drop_byte: float = 0.0
    corrupt_byte: float = 0.0
    duplicate_frame: float = 0.0
    reorder_frame: float = 0.0
    delay: float = 0.0
    jitter: float = 0.0
    rate: float | None = None
    cut_after: int | None = None
    stall_after: int | None = None
    cuts: int = 1
    skip_frames: int = 0


@dataclass
class _Stats:
    bytes_in: int = 0
    bytes_out: int = 0
    frames: int = 0
    dropped_bytes: int = 0
    corrupted_bytes: int = 0
    duplicated_frames: int = 0
    reordered_frames: int = 0
    cuts: int = 0
    stalled_bytes: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class _Conn:
    index: int
    a: socket.socket  # the host's side
    b: socket.socket  # the agent's side
    closed: threading.Event = field(default_factory=threading.Event)

    def cut(self) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        for s in (self.a, self.b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


class SerialProxy:
    """Listens on 127.0.0.1 (an ephemeral port: `port`, `url`), forwards each connection to 127.0.0.1:`upstream`."""

    def __init__(self, upstream: int, *, up: Faults | None = None, down: Faults | None = None, seed: int = 0) -> None:
        self.upstream = upstream
        self.faults = {"up": up or Faults(), "down": down or Faults()}
        self.seed = seed
        self.stats = {"up": _Stats(), "down": _Stats()}
        self.connections = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.url = f"socket://127.0.0.1:{self.port}"
        self._threads: list[threading.Thread] = []
        self._conns: list[_Conn] = []

    def start(self) -> SerialProxy:
        t = threading.Thread(target=self._accept, name="proxy-accept", daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def stop(self) -> None:
        self._stop.set()
        self._listener.close()
        for c in list(self._conns):
            c.cut()
        for t in self._threads:
            t.join(timeout=5)

    def __enter__(self) -> SerialProxy:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def cut_all(self) -> None:
        """Cut every open connection now."""
        for c in list(self._conns):
            c.cut()

    def stat(self, direction: str) -> dict[str, int]:
        with self._lock:
            return self.stats[direction].as_dict()

    # --- internals ------------------------------------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                r, _, _ = select.select([self._listener], [], [], 0.1)
                if not r:
                    continue
                a, _ = self._listener.accept()
            except OSError:
                return
            try:
                b = socket.create_connection(("127.0.0.1", self.upstream), timeout=5)
            except OSError:
                a.close()
                continue
            for s in (a, b):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                s.settimeout(None)
            conn = _Conn(self.connections, a, b)
            self.connections += 1
            self._conns.append(conn)
            for direction, src, dst in (("up", a, b), ("down", b, a)):
                pipe = _Direction(self, conn, direction, src, dst)
                for target in (pipe.read_loop, pipe.write_loop):
                    t = threading.Thread(target=target, name=f"proxy-{direction}-{conn.index}", daemon=True)
                    t.start()
                    self._threads.append(t)


class _Direction:
    """One direction of one connection: a reader that cuts the stream into frames and applies the faults, and a
    writer that releases them at their time and at the line's rate."""

    def __init__(self, proxy: SerialProxy, conn: _Conn, direction: str, src: socket.socket,
                 dst: socket.socket) -> None:
        self.proxy = proxy
        self.conn = conn
        self.f = proxy.faults[direction]
        self.st = proxy.stats[direction]
        self.rng = random.Random(f"{proxy.seed}/{direction}/{conn.index}")
        self.src, self.dst = src, dst
        self.queue: list[tuple[float, int, bytes]] = []
        self.order = itertools.count()
        self.cv = threading.Condition()
        self.last_release = 0.0
        self.held: bytes | None = None
        self.frames_seen = 0
        self.forwarded = 0
        self.eof = False

    # reader ---------------------------------------------------------------------------------------------------

    def read_loop(self) -> None:
        buf = bytearray()
        try:
            while not self.conn.closed.is_set():
                r, _, _ = select.select([self.src], [], [], 0.2)
                if not r:  # idle: release a held frame and a partial one (garbage without a delimiter)
                    self._flush_held()
                    if buf:
                        self._emit(bytes(buf), frame=False)
                        buf.clear()
                    continue
                data = self.src.recv(65536)
                if not data:
                    break
                with self.proxy._lock:
                    self.st.bytes_in += len(data)
                buf += data
                while (z := buf.find(0)) >= 0:
                    frame = bytes(buf[:z + 1])
                    del buf[:z + 1]
                    self._frame(frame)
        except OSError:
            pass
        finally:
            self._flush_held()
            with self.cv:
                self.eof = True
                self.cv.notify()

    def _frame(self, frame: bytes) -> None:
        self.frames_seen += 1
        with self.proxy._lock:
            self.st.frames += 1
        if self.frames_seen <= self.f.skip_frames:
            self._emit(frame, frame=True)
            return
        frame = self._mangle(frame)
        if self.rng.random() < self.f.duplicate_frame:
            with self.proxy._lock:
                self.st.duplicated_frames += 1
            self._emit(frame, frame=True)
        if self.held is not None:
            self._emit(frame, frame=True)
            self._flush_held()
            return
        if self.rng.random() < self.f.reorder_frame:
            with self.proxy._lock:
                self.st.reordered_frames += 1
            self.held = frame
            return
        self._emit(frame, frame=True)

    def _mangle(self, frame: bytes) -> bytes:
        if not (self.f.drop_byte or self.f.corrupt_byte):
            return frame
        out = bytearray()
        for b in frame:  # the delimiter itself may be dropped or damaged too
            if self.rng.random() < self.f.drop_byte:
                with self.proxy._lock:
                    self.st.dropped_bytes += 1
                continue
            if self.rng.random() < self.f.corrupt_byte:
                with self.proxy._lock:
                    self.st.corrupted_bytes += 1
                b ^= self.rng.randrange(1, 256)
            out.append(b)
        return bytes(out)

    def _flush_held(self) -> None:
        if self.held is not None:
            held, self.held = self.held, None
            self._emit(held, frame=True)

    def _emit(self, data: bytes, *, frame: bool) -> None:
        now = time.monotonic()
        release = now + self.f.delay + (self.rng.random() * self.f.jitter if self.f.jitter else 0.0)
        release = max(release, self.last_release)  # latency, never reordering
        self.last_release = release
        with self.cv:
            heapq.heappush(self.queue, (release, next(self.order), data))
            self.cv.notify()

    # writer ---------------------------------------------------------------------------------------------------

    def write_loop(self) -> None:
        line_free = 0.0
        try:
            while True:
                with self.cv:
                    while not self.queue and not self.eof and not self.conn.closed.is_set():
                        self.cv.wait(0.2)
                    if self.conn.closed.is_set() or (not self.queue and self.eof):
                        break
                    release, _, data = self.queue[0]
                    wait = release - time.monotonic()
                    if wait > 0:
                        self.cv.wait(min(wait, 0.05))
                        continue
                    heapq.heappop(self.queue)
                view = memoryview(data)
                while view:
                    piece = view[:256] if self.f.rate else view
                    if self.f.rate:
                        now = time.monotonic()
                        line_free = max(line_free, now)
                        if line_free > now:
                            time.sleep(line_free - now)
                        line_free += len(piece) / self.f.rate
                    if self.f.stall_after is not None and self.conn.index < self.f.cuts and \
                            self.forwarded >= self.f.stall_after:
                        with self.proxy._lock:
                            self.st.stalled_bytes += len(view)
                        break
                    if self.f.cut_after is not None and self.conn.index < self.f.cuts:
                        room = self.f.cut_after - self.forwarded
                        if room <= 0:
                            with self.proxy._lock:
                                self.st.cuts += 1
                            self.conn.cut()
                            return
                        piece = piece[:room]
                    self.dst.sendall(piece)
                    self.forwarded += len(piece)
                    with self.proxy._lock:
                        self.st.bytes_out += len(piece)
                    view = view[len(piece):]
        except OSError:
            pass
        finally:
            if self.eof or self.conn.closed.is_set():
                self.conn.cut()
