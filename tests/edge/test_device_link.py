"""The host's link logic (PROTOCOL.md section 4) against an in-process loopback responder: retransmission and its
back-off, the agent's repeated-seq cache, the go-back-N window, resume, and every error a user meets (no such port,
port busy, no answer, garbage on the line / wrong baud, line lost). The responder is a few lines of the protocol for
these unit tests only; the flash and device tests run against the real dtorch-agent (test_device_agent.py)."""

from __future__ import annotations

import hashlib
import os
import pty
import socket
import threading
import time

import pytest

from dtorch.edge.device.client import AgentClient, Blob
from dtorch.edge.device.errors import AgentError, GarbageOnLine, LineLost, NoResponse, PortBusy, PortNotFound
from dtorch.edge.device.frames import (
    Frame,
    FrameDecoder,
    FrameType,
    ack_payload,
    encode_frame,
    encode_kv,
    parse_kv,
    parse_put_data,
)
from dtorch.edge.device.link import Link, open_port

from .serial_proxy import Faults, SerialProxy

FAST = (0.05, 0.1, 0.2, 0.4)  # a short back-off for the tests (the link's default is the protocol's 0.5 .. 4 s)


class Responder:
    """A loopback that answers like the agent for HELLO, PUT_BEGIN/PUT_DATA/VERIFY, STATUS, GET; knobs make it
    silent, answer garbage, or skip answers. One connection at a time; state survives reconnects."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.url = f"socket://127.0.0.1:{self.port}"
        self.blobs: dict[str, bytes] = {}
        self.part: dict[str, bytearray] = {}
        self.receiving: str | None = None
        self.sizes: dict[str, int] = {}
        self.executed: list[int] = []  # types of the control requests carried out (not answered from the cache)
        self.silent = False
        self.garbage = False
        self.skip_answers = 0  # the next N control requests are carried out but not answered
        self.babble = False  # a stream of valid frames that answer nothing, without end
        self.hello_fields: dict[str, object] = {}
        self.last: tuple[int, bytes] | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        self.server.close()
        self.thread.join(5)

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                self.server.settimeout(0.1)
                conn, _ = self.server.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                conn.settimeout(0.1)
                dec = FrameDecoder()
                if self.babble:
                    threading.Thread(target=self._babble, args=(conn,), daemon=True).start()
                while not self.stop.is_set():
                    try:
                        data = conn.recv(65536)
                    except TimeoutError:
                        continue
                    except OSError:
                        break
                    if not data:
                        break
                    if self.garbage:
                        conn.sendall(bytes((b * 37 + 11) % 255 + 1 for b in data))  # never a zero: never a frame
                        continue
                    for f in dec.feed(data):
                        out = self._handle(f)
                        if out is not None and not self.silent:
                            try:
                                conn.sendall(out)
                            except OSError:
                                break

    def _babble(self, conn: socket.socket) -> None:
        stale = encode_frame(FrameType.ACK, 12345, ack_payload(0)) * 20
        while not self.stop.is_set():
            try:
                conn.sendall(stale)
            except OSError:
                return
            time.sleep(0.002)

    def _handle(self, f: Frame) -> bytes | None:
        if f.type == FrameType.PUT_DATA:
            off, data = parse_put_data(f.payload)
            part = self.part[self.receiving] if self.receiving else None
            if part is None:
                return encode_frame(FrameType.ERROR, f.seq, encode_kv({"code": "not_receiving", "message": "no PUT"}))
            if off == len(part):
                part += data
            return encode_frame(FrameType.ACK, f.seq, ack_payload(len(part)))
        if self.last is not None and self.last[0] == f.seq:
            out = self.last[1]
        else:
            out = self._execute(f)
            self.last = (f.seq, out)
        if self.skip_answers:
            self.skip_answers -= 1
            return None
        return out

    def _execute(self, f: Frame) -> bytes:
        self.executed.append(f.type)
        kv = parse_kv(f.payload)
        if f.type == FrameType.HELLO:
            out = self._ok(f, **{"protocol": 1, "board": "toy", "runtime_hash": "r" * 64, "opset_hash": "o" * 64,
                                 "max_payload": 4096, **self.hello_fields})
        elif f.type == FrameType.PUT_BEGIN:
            sha = kv["sha256"]
            if sha in self.blobs:
                out = self._ok(f, have=1)
            else:
                self.receiving = sha
                self.sizes[sha] = int(kv["size"])
                out = self._ok(f, have=0, offset=len(self.part.setdefault(sha, bytearray())))
        elif f.type == FrameType.VERIFY:
            sha = kv["sha256"]
            part = self.part.pop(sha, bytearray())
            self.receiving = None
            if hashlib.sha256(part).hexdigest() != sha:
                out = encode_frame(FrameType.ERROR, f.seq, encode_kv({"code": "verify_failed", "message": "bad hash"}))
            else:
                self.blobs[sha] = bytes(part)
                out = self._ok(f, sha256=sha, size=len(part))
        elif f.type == FrameType.STATUS:
            out = self._ok(f, state="receiving" if self.receiving else "idle")
        elif f.type == FrameType.GET:
            blob = self.blobs[kv["sha256"]]
            o, n = int(kv["offset"]), int(kv["length"])
            out = encode_frame(FrameType.OK, f.seq, blob[o:o + n])
        else:
            out = encode_frame(FrameType.ERROR, f.seq, encode_kv({"code": "unknown_command", "message": "what?"}))
        return out

    @staticmethod
    def _ok(f: Frame, **fields: object) -> bytes:
        return encode_frame(FrameType.OK, f.seq, encode_kv(fields))


@pytest.fixture
def responder():
    r = Responder()
    yield r
    r.close()


def _send(url: str, data: bytes, baud: int = 115200, backoff=FAST) -> tuple[AgentClient, Link]:
    link = Link(url, baud, backoff=backoff).open()
    c = AgentClient(link)
    blob = Blob.from_bytes("x.bin", data)
    r = c.put_blob(blob)
    if not r.have:
        c.verify(blob.sha256, blob.size, blob.name)
    return c, link


def test_put_verify_get_round_trip(responder):
    data = os.urandom(50_000)
    c, link = _send(responder.url, data)
    sha = hashlib.sha256(data).hexdigest()
    assert responder.blobs[sha] == data
    assert c.get(sha, len(data)) == data
    # a second PUT of the same blob sends nothing
    r = c.put_blob(Blob.from_bytes("x.bin", data))
    assert r.have and r.sent == 0
    link.close()


def test_a_lost_answer_is_retransmitted_and_carried_out_once(responder):
    with Link(responder.url, backoff=FAST) as link:
        responder.skip_answers = 2
        AgentClient(link).status()
        assert responder.executed.count(FrameType.STATUS) == 1  # the retransmissions were answered from the cache
        assert link.stats.retransmits == 2


def test_silent_device_says_what_was_tried(responder):
    responder.silent = True
    with Link(responder.url, backoff=FAST) as link, pytest.raises(NoResponse) as e:
        AgentClient(link).hello()
    msg = str(e.value)
    assert "sent HELLO 4 times" in msg and "nothing came back" in msg and "115200 baud" in msg
    assert not isinstance(e.value, GarbageOnLine)


def test_a_babbling_line_still_times_out(responder):
    """Valid frames that answer nothing, arriving without pause, do not hold a request (or a transfer) forever."""
    responder.babble = True
    responder.silent = True
    t = time.monotonic()
    with Link(responder.url, 1_000_000, backoff=FAST) as link:
        with pytest.raises(NoResponse, match="sent HELLO 4 times"):
            AgentClient(link).hello()
        with pytest.raises(LineLost, match="no acknowledgement"):
            link.send_data(0, 10_000, lambda o, n: bytes(n))
    assert time.monotonic() - t < 10


def test_garbage_on_the_line_suggests_the_baud_rate(responder):
    responder.garbage = True
    with Link(responder.url, 57600, backoff=FAST) as link, pytest.raises(GarbageOnLine) as e:
        AgentClient(link).hello()
    assert "none formed a valid frame" in str(e.value) and "--baud 57600" in str(e.value)


def test_garbage_on_a_pty_at_the_wrong_baud():
    """A real tty: the far end answers bytes that never decode (what a wrong baud rate gives)."""
    master, slave = pty.openpty()
    stop = threading.Event()

    def noise() -> None:
        while not stop.is_set():
            try:
                os.write(master, b"\xf0\x0f\xaa" * 20)
            except OSError:
                return
            time.sleep(0.02)

    t = threading.Thread(target=noise, daemon=True)
    t.start()
    try:
        with Link(os.ttyname(slave), 115200, backoff=FAST) as link, pytest.raises(GarbageOnLine):
            AgentClient(link).hello()
    finally:
        stop.set()
        t.join()
        os.close(master)
        os.close(slave)


def test_an_agent_of_another_protocol_is_named(responder):
    from dtorch.edge.device.errors import ProtocolError

    responder.hello_fields = {"protocol": 2}
    with Link(responder.url, backoff=FAST) as link, pytest.raises(ProtocolError, match="speaks protocol 2"):
        AgentClient(link).hello()
    responder.hello_fields = {"protocol": "x"}
    with Link(responder.url, backoff=FAST) as link, pytest.raises(ProtocolError, match="not an integer"):
        AgentClient(link).hello()


def test_agent_error_is_one_clear_line(responder):
    with Link(responder.url, backoff=FAST) as link, pytest.raises(AgentError) as e:
        AgentClient(link).rollback()
    assert e.value.code == "unknown_command" and "older than this dtorch-edge" in str(e.value)


def test_no_such_port():
    with pytest.raises(PortNotFound, match="no such port /dev/ttyDOESNOTEXIST"):
        open_port("/dev/ttyDOESNOTEXIST", 115200)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(PortNotFound, match="nothing listens"):
        open_port(f"socket://127.0.0.1:{port}", 115200)


@pytest.mark.parametrize("url,words", [
    ("bogus://x", "protocol 'bogus' not known"),
    ("socket://127.0.0.1:99999", "PORT in 1..65535"),
    ("socket://127.0.0.1", "socket://HOST:PORT"),
    ("socket://no-such-host.invalid:5", "cannot resolve the host"),
])
def test_malformed_ports(url, words):
    from dtorch.edge.device.errors import PortError

    with pytest.raises(PortError, match=words):
        open_port(url, 115200)


def test_not_a_serial_port(tmp_path):
    from dtorch.edge.device.errors import PortError

    (tmp_path / "plain").write_text("")
    with pytest.raises(PortError, match="is not a serial port"):
        open_port(str(tmp_path / "plain"), 115200)
    with pytest.raises(PortError, match="is a directory"):
        open_port(str(tmp_path), 115200)


def test_port_busy():
    master, slave = pty.openpty()
    try:
        first = open_port(os.ttyname(slave), 115200)
        with pytest.raises(PortBusy, match="busy"):
            open_port(os.ttyname(slave), 115200)
        first.close()
    finally:
        os.close(master)
        os.close(slave)


@pytest.mark.parametrize("faults", [
    Faults(drop_byte=0.00005, skip_frames=1),
    Faults(corrupt_byte=0.00005, skip_frames=1),
    Faults(duplicate_frame=0.2, skip_frames=1),
    Faults(reorder_frame=0.2, skip_frames=1),
    Faults(delay=0.05, jitter=0.05),
], ids=["drop", "corrupt", "duplicate", "reorder", "delay"])
def test_window_survives_faults_both_ways(responder, faults):
    data = os.urandom(120_000)
    with SerialProxy(responder.port, up=faults, down=faults, seed=3) as proxy:
        _c, link = _send(proxy.url, data, backoff=FAST)
        link.close()
    assert responder.blobs[hashlib.sha256(data).hexdigest()] == data


def test_cut_line_then_resume(responder):
    data = os.urandom(100_000)
    blob = Blob.from_bytes("x.bin", data)
    with SerialProxy(responder.port, up=Faults(cut_after=40_000)) as proxy:
        link = Link(proxy.url, backoff=FAST).open()
        with pytest.raises(LineLost, match="lost"):
            AgentClient(link).put_blob(blob)
        link.close()
        link = Link(proxy.url, backoff=FAST).open()
        c = AgentClient(link)
        r = c.put_blob(blob)
        assert 0 < r.offset < len(data) and r.sent == len(data) - r.offset
        c.verify(blob.sha256, blob.size)
        link.close()
    assert responder.blobs[blob.sha256] == data


def test_rate_limited_window_keeps_the_line_busy(responder):
    """At 11,520 B/s through the proxy, the window keeps the payload rate near the line's (>= 85%)."""
    data = os.urandom(60_000)
    with SerialProxy(responder.port, up=Faults(rate=11520.0), down=Faults(rate=11520.0)) as proxy:
        link = Link(proxy.url, 115200).open()
        c = AgentClient(link)
        c.hello()
        t = time.monotonic()
        c.put_blob(Blob.from_bytes("x.bin", data))
        rate = len(data) / (time.monotonic() - t)
        link.close()
    assert rate >= 0.85 * 11520, rate
