"""dtorch-agent (runtime/apps/agent/, PROTOCOL.md), the real binary, driven with raw frames through the host's codec
(dtorch.edge.device.frames): the host build over --listen (127.0.0.1, port 0), --stdio and a pty as its serial
line, and the aarch64 board build from a `dtorch-edge build --board rk3588` bundle under qemu-aarch64.

Covered: every command's happy path; resume after a reconnect; go-back-N acknowledgements; a retransmitted request
answered from the cache (a repeated ROLLBACK happens once); bad CRCs, garbage, over-long frames, huge lengths,
unknown commands, path-traversal names, PUT past free space (--max-store-bytes), every error code the agent sends;
SIGKILL at random moments during PUT, VERIFY and ACTIVATE, each followed by a restart that finds a consistent store
with one of the two complete models active and a new flash that succeeds; and that the store never has a file
outside its folder."""

from __future__ import annotations

import hashlib
import os
import random
import select
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import dtorch as dt
import dtorch.nn as nn
import dtorch.runtime as rt
from dtorch.edge.device.frames import (
    MAX_CHUNK,
    Frame,
    FrameDecoder,
    FrameType,
    encode_frame,
    encode_kv,
    parse_ack,
    parse_kv,
    put_data_payload,
)

ROOT = Path(__file__).resolve().parents[2]
T = FrameType
DEV = {"board": "host", "runtime_hash": "dev", "opset_hash": "dev"}  # what a development build says it is


# --- the agent and a raw-frame client -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def agent_bin() -> Path:
    """build/host/dtorch-agent (a development build), built incrementally."""
    r = subprocess.run([os.sys.executable, "-m", "SCons", "-Q", "-j2", "dtorch-agent"], cwd=ROOT, capture_output=True,
                       text=True, timeout=1200)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    return ROOT / "build" / "host" / "dtorch-agent"


class Wire:
    """One connection to an agent: frames out, frames in, with a fresh seq per request."""

    def __init__(self, read, write) -> None:
        self._read, self._write = read, write
        self.decoder = FrameDecoder()
        self.pending: list[Frame] = []
        self.seq = random.randrange(1 << 31)

    def send(self, data: bytes) -> None:
        self._write(data)

    def recv(self, timeout: float = 20.0) -> Frame | None:
        deadline = time.monotonic() + timeout
        while not self.pending:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            chunk = self._read(left)
            if chunk is None:
                continue
            if chunk == b"":
                raise ConnectionError("the agent closed the connection")
            self.pending += self.decoder.feed(chunk)
        return self.pending.pop(0)

    def call(self, ftype: int, payload: bytes = b"", seq: int | None = None, timeout: float = 60.0) -> Frame:
        if seq is None:
            self.seq = (self.seq + 1) & 0xFFFFFFFF
            seq = self.seq
        self.send(encode_frame(ftype, seq, payload))
        f = self.recv(timeout)
        assert f is not None, f"no answer to {T(ftype).name if ftype in T._value2member_map_ else ftype}"
        assert f.seq == seq
        return f

    def ok(self, ftype: int, fields: dict | list | None = None, **kw) -> dict[str, str]:
        f = self.call(ftype, encode_kv(fields or {}), **kw)
        assert f.type == T.OK, (T(ftype).name, parse_kv(f.payload))
        return parse_kv(f.payload)

    def error(self, ftype: int, fields: dict | None = None, payload: bytes | None = None) -> tuple[str, str]:
        f = self.call(ftype, encode_kv(fields or {}) if payload is None else payload)
        assert f.type == T.ERROR, (ftype, f.payload)
        kv = parse_kv(f.payload)
        assert "\n" not in kv["message"] and kv["message"]
        return kv["code"], kv["message"]

    def put(self, name: str, data: bytes, *, window: int = 4, phase=lambda what: None) -> dict[str, str]:
        """PUT_BEGIN, the data go-back-N style (resuming where the agent stands), VERIFY; `phase` is told each step."""
        sha = hashlib.sha256(data).hexdigest()
        phase("put")
        begin = self.ok(T.PUT_BEGIN, {"name": name, "sha256": sha, "size": len(data)})
        if begin["have"] == "1":
            return {"sha256": sha, "size": str(len(data)), "have": "1"}
        received = int(begin["offset"])
        while received < len(data):
            sent = received
            for _ in range(window):
                if sent >= len(data):
                    break
                self.seq = (self.seq + 1) & 0xFFFFFFFF
                self.send(encode_frame(T.PUT_DATA, self.seq, put_data_payload(sent, data[sent:sent + MAX_CHUNK])))
                sent = min(sent + MAX_CHUNK, len(data))
            for _ in range(window):
                f = self.recv()
                assert f is not None and f.type == T.ACK, f
                received = max(received, parse_ack(f.payload))
                if received >= sent:
                    break
        phase("verify")
        return self.ok(T.VERIFY, {"sha256": sha})

    def get(self, sha: str, size: int) -> bytes:
        out = b""
        while len(out) < size:
            f = self.call(T.GET, encode_kv({"sha256": sha, "offset": len(out), "length": 4096}))
            assert f.type == T.OK and f.payload
            out += f.payload
        return out


def socket_wire(sock: socket.socket) -> Wire:
    def read(timeout: float) -> bytes | None:
        sock.settimeout(timeout)
        try:
            return sock.recv(65536)
        except TimeoutError:
            return None

    return Wire(read, sock.sendall)


def fd_wire(rfd: int, wfd: int) -> Wire:
    def read(timeout: float) -> bytes | None:
        r, _, _ = select.select([rfd], [], [], timeout)
        if not r:
            return None
        try:
            return os.read(rfd, 65536)
        except OSError:  # a pty master whose slave side closed
            return b""

    def write(data: bytes) -> None:
        while data:
            data = data[os.write(wfd, data):]

    return Wire(read, write)


class Agent:
    """The agent serving --listen 127.0.0.1:0 (or `argv` as given) on `store`; connect() opens a connection."""

    def __init__(self, argv: list[str], store: Path, *extra: str) -> None:
        self.store = store
        self.proc = subprocess.Popen([*argv, "--store", str(store), "--listen", "127.0.0.1:0", *extra],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     start_new_session=True)
        assert self.proc.stderr is not None
        r, _, _ = select.select([self.proc.stderr], [], [], 120)
        line = self.proc.stderr.readline().decode() if r else ""
        assert line.startswith("listening on 127.0.0.1:"), (line, self.proc.poll())
        self.port = int(line.strip().rsplit(":", 1)[1])
        self.socks: list[socket.socket] = []

    def connect(self) -> Wire:
        s = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        self.socks.append(s)
        return socket_wire(s)

    def kill(self) -> None:
        for s in self.socks:
            s.close()
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)
        if self.proc.stderr:
            self.proc.stderr.close()

    def stop(self) -> None:
        for s in self.socks:
            s.close()
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(30)
        if self.proc.stderr:
            self.proc.stderr.close()


@pytest.fixture
def agent(agent_bin, tmp_path):
    a = Agent([str(agent_bin)], tmp_path / "store")
    yield a
    a.stop()
    assert_store_only(tmp_path, "store")


# --- models and bundles ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, bytes]:
    """Two models with the same operators (linear, relu) and different weights, each with its test vector."""
    out = {}
    root = tmp_path_factory.mktemp("agent_models")
    for name, seed in (("a", 0), ("b", 1)):
        dt.manual_seed(seed)
        m = nn.Sequential(nn.Linear(4, 3), nn.ReLU()).eval()
        path = root / f"{name}.dtm"
        dt.export(m, dt.randn(1, 4), str(path), bundle_example=True)
        out[name] = path.read_bytes()
    return out


def bundle_text(model: bytes, ident: dict[str, str] = DEV, *, name: str = "model.dtm",
                extra: dict[str, bytes] | None = None) -> bytes:
    files = {name: model, **(extra or {})}
    lines = ["dtorch-bundle 1", f"board {ident['board']}", f"runtime_hash {ident['runtime_hash']}",
             f"opset_hash {ident['opset_hash']}", "runtime_version 0.1.0", f"model {name}"]
    lines += [f"file {n} {hashlib.sha256(b).hexdigest()} {len(b)}" for n, b in files.items()]
    return ("\n".join(lines) + "\n").encode()


def flash(w: Wire, model: bytes, ident: dict[str, str] = DEV, extra: dict[str, bytes] | None = None) -> dict:
    text = bundle_text(model, ident, extra=extra)
    w.put("model.dtm", model)
    for n, b in (extra or {}).items():
        w.put(n, b)
    w.put("bundle.txt", text)
    return w.ok(T.ACTIVATE, {"bundle": hashlib.sha256(text).hexdigest()})


def npy_bytes(x: np.ndarray, tmp: Path) -> bytes:
    np.save(tmp / "x.npy", x)
    return (tmp / "x.npy").read_bytes()


def run_on(w: Wire, x_npy: bytes, **fields) -> tuple[np.ndarray, dict]:
    sha = w.put("x.npy", x_npy)["sha256"]
    r = w.ok(T.RUN, {"input0": sha, **fields})
    assert r["outputs"] == "1"
    out_sha, size = r["output0"].split()
    data = w.get(out_sha, int(size))
    assert hashlib.sha256(data).hexdigest() == out_sha
    import io

    return np.load(io.BytesIO(data)), r


def host_output(model: bytes, x: np.ndarray, tmp: Path, kernels: str = "fast") -> np.ndarray:
    p = tmp / "host_model.dtm"
    p.write_bytes(model)
    s = rt.InferenceSession(str(p), kernels=kernels)
    return s.run(None, {s.get_inputs()[0].name: x})[0]


# --- store checks ---------------------------------------------------------------------------------------------------

def assert_store_only(parent: Path, store_name: str) -> None:
    """Nothing but the store under `parent`'s agent folder, and the store holds only its own names."""
    store = parent / store_name
    if not store.exists():
        return
    assert set(os.listdir(store)) <= {"blobs", "incoming", "STATE", "log"}, os.listdir(store)
    for sub in ("blobs", "incoming"):
        for name in os.listdir(store / sub):
            p = store / sub / name
            assert p.is_file() and not p.is_symlink(), p
            assert len(name.split(".")[0]) == 64 or name.startswith("run-output-"), p


def check_store(store: Path, allowed_active: set[str]) -> str:
    """A store just after a restart: no partial transfers; every blob is its sha256; STATE names a bundle whose
    files are all there (or nothing, when `allowed_active` holds ""). Returns the active bundle id."""
    assert os.listdir(store / "incoming") == []
    for name in os.listdir(store / "blobs"):
        assert hashlib.sha256((store / "blobs" / name).read_bytes()).hexdigest() == name
    state = dict(line.split(" ", 1) if " " in line else (line, "") for line in
                 (store / "STATE").read_text().splitlines()) if (store / "STATE").exists() else {"active": ""}
    active = state.get("active", "")
    assert active in allowed_active, (active, allowed_active)
    if active:
        for line in (store / "blobs" / active).read_text().splitlines():
            if line.startswith("file "):
                _, _, sha, size = line.split()
                assert (store / "blobs" / sha).stat().st_size == int(size)
    return active


# --- happy paths ----------------------------------------------------------------------------------------------------

def test_hello_names_the_build_and_the_store(agent):
    w = agent.connect()
    h = w.ok(T.HELLO)
    assert h["protocol"] == "1" and h["max_payload"] == "4096" and h["agent_version"] == "0.1.0"
    assert (h["board"], h["runtime_hash"], h["opset_hash"]) == ("host", "dev", "dev")
    assert h["arch"] == "x86_64" and h["runtime_version"] == "0.1.0" and h["signing"] == "off"
    assert int(h["free_bytes"]) > 0 and h["store_bytes"] == "0"
    assert h["active"] == h["previous"] == h["active_model"] == h["previous_model"] == ""
    s = w.ok(T.STATUS)
    assert s["state"] == "idle" and s["rx_frames"] == "2" and s["rx_dropped"] == "0" and int(s["uptime_s"]) >= 0


def test_install_run_selftest_rollback_and_log(agent, models, tmp_path):
    w = agent.connect()
    code, _ = w.error(T.RUN, {"input0": "0" * 64})
    assert code == "no_model"
    assert w.error(T.SELFTEST)[0] == "no_model"
    assert w.error(T.ROLLBACK)[0] == "no_previous"

    a = flash(w, models["a"])
    id_a = hashlib.sha256(bundle_text(models["a"])).hexdigest()
    assert a == {"active": id_a, "previous": "", "active_model": "model.dtm"}
    st = w.ok(T.SELFTEST)
    assert st["pass"] == "1" and float(st["max_abs_error"]) <= 1e-5
    x = np.random.default_rng(0).standard_normal((1, 4)).astype(np.float32)
    y, _ = run_on(w, npy_bytes(x, tmp_path))
    assert y.tobytes() == host_output(models["a"], x, tmp_path).tobytes()
    # the same blob again: nothing to send
    assert w.ok(T.PUT_BEGIN, {"name": "model.dtm", "sha256": hashlib.sha256(models["a"]).hexdigest(),
                              "size": len(models["a"])})["have"] == "1"

    b = flash(w, models["b"])
    id_b = hashlib.sha256(bundle_text(models["b"])).hexdigest()
    assert (b["active"], b["previous"]) == (id_b, id_a)
    yb, r = run_on(w, npy_bytes(x, tmp_path), bench=5)
    assert yb.tobytes() == host_output(models["b"], x, tmp_path).tobytes() and yb.tobytes() != y.tobytes()
    assert 0 <= float(r["ms_min"]) <= float(r["ms_p50"]) <= float(r["ms_max"])
    h = w.ok(T.HELLO)
    assert (h["active"], h["previous"], h["active_model"], h["previous_model"]) == (id_b, id_a, "model.dtm",
                                                                                  "model.dtm")

    rb = w.ok(T.ROLLBACK)
    assert (rb["active"], rb["previous"], rb["active_model"]) == (id_a, id_b, "model.dtm")
    assert run_on(w, npy_bytes(x, tmp_path))[0].tobytes() == y.tobytes()  # model a's output again
    assert w.ok(T.ROLLBACK)["active"] == id_b  # a second rollback undoes the first
    # activating the active bundle changes nothing
    assert w.ok(T.ACTIVATE, {"bundle": id_b}) == {"active": id_b, "previous": id_a, "active_model": "model.dtm"}

    log = w.ok(T.LOG, {"last": 100})
    events = [log[f"event{i}"] for i in range(int(log["events"]))]
    kinds = [e.split(" ", 2)[1] for e in events]
    assert kinds[0] == "start" and "activate" in kinds and kinds.count("rollback") == 2 and "selftest" in kinds
    assert all(int(e.split(" ", 1)[0]) > 1_600_000_000 for e in events)
    last2 = w.ok(T.LOG, {"last": 2})
    assert [last2["event0"], last2["event1"]] == events[-2:]


def test_a_long_running_store_holds_the_active_and_previous_bundles_only(agent, models, tmp_path):
    """Each ACTIVATE deletes the blobs no bundle in STATE needs, so flashing many bundles without a restart does not
    fill the store (inputs and outputs of earlier runs go too)."""
    w = agent.connect()
    x = npy_bytes(np.zeros((1, 4), np.float32), tmp_path)
    for k in range(4):
        flash(w, models["ab"[k % 2]], extra={"notes.txt": f"bundle {k}".encode()})
        run_on(w, x)
    blobs = sorted(p.name for p in (agent.store / "blobs").iterdir())
    # two bundles (bundle.txt, model and notes each) and the last run's input and output, nothing else
    assert len(blobs) == 8, blobs


def test_state_survives_a_restart(agent_bin, models, tmp_path):
    a = Agent([str(agent_bin)], tmp_path / "store")
    w = a.connect()
    flash(w, models["a"])
    flash(w, models["b"])
    w.put("x.npy", b"leftover")  # a blob no bundle needs
    a.stop()
    a = Agent([str(agent_bin)], tmp_path / "store")
    try:
        w = a.connect()
        h = w.ok(T.HELLO)
        assert h["active"] == hashlib.sha256(bundle_text(models["b"])).hexdigest()
        assert h["previous"] == hashlib.sha256(bundle_text(models["a"])).hexdigest()
        assert not (tmp_path / "store" / "blobs" / hashlib.sha256(b"leftover").hexdigest()).exists()
        log = w.ok(T.LOG, {"last": 1})
        assert " start " in log["event0"] and "removed" in log["event0"] and "1 blob(s)" in log["event0"]
        assert w.ok(T.SELFTEST)["pass"] == "1"
    finally:
        a.stop()


def test_stdio(agent_bin, models, tmp_path):
    p = subprocess.Popen([str(agent_bin), "--store", str(tmp_path / "store"), "--stdio"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdin and p.stdout
    w = fd_wire(p.stdout.fileno(), p.stdin.fileno())
    assert w.ok(T.HELLO)["protocol"] == "1"
    flash(w, models["a"])
    assert w.ok(T.SELFTEST)["pass"] == "1"
    p.stdin.close()
    assert p.wait(30) == 0  # end of input ends the agent
    assert p.stderr.read() == b""
    p.stdout.close()
    p.stderr.close()


def test_serial_line_on_a_pty(agent_bin, models, tmp_path):
    master, slave = os.openpty()
    name = os.ttyname(slave)
    p = subprocess.Popen([str(agent_bin), "--store", str(tmp_path / "store"), "--serial", name, "--baud", "115200"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        import termios
        import tty

        tty.setraw(master)
        attrs = termios.tcgetattr(master)
        termios.tcsetattr(master, termios.TCSANOW, attrs)
        w = fd_wire(master, master)
        # the agent sets the line raw once it opens it: retransmit HELLO (same seq) until it answers
        seq = 7
        for _ in range(40):
            w.send(encode_frame(T.HELLO, seq))
            f = w.recv(0.5)
            if f is not None:
                break
        assert f is not None and f.type == T.OK and f.seq == seq
        flash(w, models["a"])
        assert w.ok(T.SELFTEST)["pass"] == "1"
    finally:
        p.terminate()
        p.wait(30)
        p.stderr.close()
        os.close(master)
        os.close(slave)


# --- reliability ----------------------------------------------------------------------------------------------------

def test_put_resumes_after_a_reconnect_and_acks_go_back_n(agent, tmp_path):
    data = os.urandom(50_000)
    sha = hashlib.sha256(data).hexdigest()
    w = agent.connect()
    assert w.ok(T.PUT_BEGIN, {"name": "big.bin", "sha256": sha, "size": len(data)}) == {"have": "0", "offset": "0"}
    # 3 chunks in order, then one out of order: written nothing, acknowledged with what the agent holds
    acks = []
    for k in range(3):
        chunk = data[k * MAX_CHUNK:(k + 1) * MAX_CHUNK]
        acks.append(parse_ack(w.call(T.PUT_DATA, put_data_payload(k * MAX_CHUNK, chunk)).payload))
    assert acks == [MAX_CHUNK, 2 * MAX_CHUNK, 3 * MAX_CHUNK]
    f = w.call(T.PUT_DATA, put_data_payload(5 * MAX_CHUNK, data[5 * MAX_CHUNK:6 * MAX_CHUNK]))
    assert f.type == T.ACK and parse_ack(f.payload) == 3 * MAX_CHUNK
    f = w.call(T.PUT_DATA, put_data_payload(0, data[:MAX_CHUNK]))  # a duplicate: nothing written twice
    assert parse_ack(f.payload) == 3 * MAX_CHUNK
    s = w.ok(T.STATUS)
    assert (s["state"], s["receiving"], s["received"]) == ("receiving", sha, str(3 * MAX_CHUNK))
    # VERIFY before the end keeps the transfer
    code, msg = w.error(T.VERIFY, {"sha256": sha})
    assert code == "bad_request" and f"holds {3 * MAX_CHUNK} of {len(data)}" in msg
    agent.socks[-1].close()  # the line is cut

    w = agent.connect()
    assert w.ok(T.STATUS)["received"] == str(3 * MAX_CHUNK)  # all state kept across connections
    assert w.ok(T.PUT_BEGIN, {"name": "big.bin", "sha256": sha, "size": len(data)}) == {
        "have": "0", "offset": str(3 * MAX_CHUNK)}
    assert w.put("big.bin", data) == {"sha256": sha, "size": str(len(data))}
    assert (agent.store / "blobs" / sha).read_bytes() == data
    assert w.ok(T.STATUS)["state"] == "idle"
    # a repeated VERIFY of a blob the store holds (its answer was lost) is answered again
    assert w.ok(T.VERIFY, {"sha256": sha}) == {"sha256": sha, "size": str(len(data))}
    # GET returns the bytes; a GET past the end returns none
    assert w.get(sha, len(data)) == data
    f = w.call(T.GET, encode_kv({"sha256": sha, "offset": len(data), "length": 10}))
    assert f.type == T.OK and f.payload == b""


def test_a_second_transfer_replaces_the_first_which_can_resume(agent):
    one, two = os.urandom(10_000), os.urandom(9_000)
    s1, s2 = hashlib.sha256(one).hexdigest(), hashlib.sha256(two).hexdigest()
    w = agent.connect()
    w.ok(T.PUT_BEGIN, {"name": "one", "sha256": s1, "size": len(one)})
    w.call(T.PUT_DATA, put_data_payload(0, one[:MAX_CHUNK]))
    w.ok(T.PUT_BEGIN, {"name": "two", "sha256": s2, "size": len(two)})
    assert w.ok(T.STATUS)["receiving"] == s2
    assert w.error(T.VERIFY, {"sha256": s1})[0] == "not_receiving"
    assert w.put("two", two)["sha256"] == s2
    assert w.ok(T.PUT_BEGIN, {"name": "one", "sha256": s1, "size": len(one)})["offset"] == str(MAX_CHUNK)
    assert w.put("one", one)["sha256"] == s1


def test_a_retransmitted_request_is_answered_once(agent, models):
    w = agent.connect()
    flash(w, models["a"])
    flash(w, models["b"])
    before = w.ok(T.HELLO)
    seq = 4242
    first = w.call(T.ROLLBACK, seq=seq)
    again = w.call(T.ROLLBACK, seq=seq)  # the host lost the answer and sent the same frame again
    assert first.type == again.type == T.OK and first.payload == again.payload
    agent.socks[-1].close()  # and once more on a new connection (the answer was lost with the line)
    w2 = agent.connect()
    assert w2.call(T.ROLLBACK, seq=seq).payload == first.payload
    after = w2.ok(T.HELLO)
    assert (after["active"], after["previous"]) == (before["previous"], before["active"])  # rolled back once
    # the same seq with another request is a new request
    assert w2.call(T.STATUS, seq=seq).type == T.OK
    assert parse_kv(w2.call(T.ROLLBACK, seq=seq).payload)["active"] == before["active"]


# --- a hostile host -------------------------------------------------------------------------------------------------

def test_bad_frames_are_dropped_and_counted(agent):
    w = agent.connect()
    good = encode_frame(T.HELLO, 1)
    bad_crc = bytearray(encode_frame(T.HELLO, 2))
    bad_crc[-3] ^= 0x01 if bad_crc[-3] != 0x01 else 0x02
    import struct
    import zlib

    from dtorch.edge.device.frames import cobs_encode

    def raw_frame(version=1, ftype=1, flags=0, seq=3, length=None, payload=b"") -> bytes:
        head = struct.pack("<BBHII", version, ftype, flags, seq, len(payload) if length is None else length)
        body = head + payload
        return cobs_encode(body + struct.pack("<I", zlib.crc32(body))) + b"\0"

    junk = [
        bytes(bad_crc),
        b"\x05garbage-bytes\x00",                                  # invalid COBS / too short
        raw_frame(version=2), raw_frame(flags=1),                  # unknown version, reserved flags
        raw_frame(length=0xFFFFFFFF),                              # a huge length
        raw_frame(length=5, payload=b"abc"),                       # length disagrees with the size
        b"\x01" * 9000 + b"\x00",                                  # longer than any frame: cut off
        bytes(range(1, 256)) * 40 + b"\x00",                        # the same, without zero bytes
    ]
    for j in junk:
        w.send(j)
    assert w.recv(0.5) is None  # dropped silently
    w.send(b"\x00\x00" + good)  # idle delimiters, then a frame: served
    f = w.recv()
    assert f is not None and f.type == T.OK and f.seq == 1
    s = w.ok(T.STATUS)
    assert s["rx_dropped"] == str(len(junk)), s
    # a frame split across many writes still arrives
    frame = encode_frame(T.HELLO, 99)
    for i in range(0, len(frame), 3):
        w.send(frame[i:i + 3])
        time.sleep(0.001)
    assert w.recv().seq == 99


def test_every_error_is_answered_and_the_agent_keeps_serving(agent, models, tmp_path):
    w = agent.connect()
    sha = "ab" * 32
    cases = [
        (0x55, b"", "unknown_command", "0x55"),
        (0x80, b"", "unknown_command", "0x80"),
        (T.PUT_BEGIN, b"name=x\n", "bad_request", "needs name, sha256 and size"),
        (T.PUT_BEGIN, b"not a key value line\n", "bad_request", "key=value"),
        (T.PUT_BEGIN, b"name=x\0\nsha256=1\n", "bad_request", "NUL"),
        (T.PUT_BEGIN, encode_kv({"name": "x", "sha256": "AB" * 32, "size": 1}), "bad_request", "lowercase hex"),
        (T.PUT_BEGIN, encode_kv({"name": "x", "sha256": sha, "size": "-1"}), "bad_request", "byte count"),
        (T.PUT_BEGIN, encode_kv({"name": "x", "sha256": sha, "size": 1 << 30 | 1}), "too_large", "1073741824"),
        (T.PUT_BEGIN, encode_kv({"name": "x", "sha256": sha, "size": "99999999999999999999999"}), "bad_request", ""),
        (T.PUT_DATA, put_data_payload(0, b"abc"), "not_receiving", "PUT_BEGIN"),
        (T.PUT_DATA, b"\x01\x02", "bad_request", "8-byte offset"),
        (T.VERIFY, encode_kv({"sha256": sha}), "not_receiving", ""),
        (T.VERIFY, b"", "bad_request", "sha256"),
        (T.ACTIVATE, encode_kv({"bundle": sha}), "not_found", "not in the store"),
        (T.ACTIVATE, encode_kv({"bundle": "../../etc/passwd"}), "bad_request", ""),
        (T.GET, encode_kv({"sha256": sha, "offset": 0, "length": 4097}), "too_large", "MAX_PAYLOAD"),
        (T.GET, encode_kv({"sha256": sha, "offset": 0, "length": 10}), "not_found", ""),
        (T.GET, encode_kv({"sha256": "../STATE", "offset": 0, "length": 10}), "bad_request", ""),
        (T.LOG, encode_kv({"last": "many"}), "bad_request", "last"),
        (T.RUN, encode_kv({"input0": sha}), "no_model", "flash"),
    ]
    for name in ("../x", "a/b", "..", "x\x01y", "x\x7f", "n" * 129, ""):
        cases.append((T.PUT_BEGIN, f"name={name}\nsha256={sha}\nsize=3\n".encode(), "bad_name", ""))
    for ftype, payload, code, words in cases:
        got, msg = w.error(ftype, payload=payload)
        assert got == code and words in msg, (ftype, payload[:40], got, msg)
    assert w.ok(T.HELLO)["protocol"] == "1"
    assert w.ok(T.STATUS)["state"] == "idle"  # no refused PUT_BEGIN entered receiving

    # verify_failed: the bytes do not hash to the sha256; the partial file goes
    data = b"hello world"
    wrong = hashlib.sha256(b"something else").hexdigest()
    w.ok(T.PUT_BEGIN, {"name": "f", "sha256": wrong, "size": len(data)})
    w.call(T.PUT_DATA, put_data_payload(0, data))
    code, msg = w.error(T.VERIFY, {"sha256": wrong})
    assert code == "verify_failed" and hashlib.sha256(data).hexdigest() in msg
    assert os.listdir(agent.store / "incoming") == [] and not (agent.store / "blobs" / wrong).exists()
    # data past the declared size
    w.ok(T.PUT_BEGIN, {"name": "f", "sha256": wrong, "size": 2})
    code, msg = w.error(T.PUT_DATA, payload=put_data_payload(0, b"abc"))
    assert code == "bad_request" and "past the declared size" in msg

    # bundles: not a bundle, another board, another runtime, a missing file, a model that does not load
    not_bundle = w.put("bundle.txt", b"hello\n")["sha256"]
    code, msg = w.error(T.ACTIVATE, {"bundle": not_bundle})
    assert code == "bad_request" and "dtorch-bundle 1" in msg
    for ident, words in (({**DEV, "board": "rk3588"}, "for board rk3588 but this agent runs on host"),
                         ({**DEV, "runtime_hash": "f" * 64}, "runtime ffffffffffffffff / op set dev but this agent is "
                                                             "runtime dev / op set dev")):
        w.put("model.dtm", models["a"])
        t = w.put("bundle.txt", bundle_text(models["a"], ident))["sha256"]
        code, msg = w.error(T.ACTIVATE, {"bundle": t})
        assert code == "mismatch" and words in msg, msg
    t = w.put("bundle.txt", bundle_text(models["a"], extra={"weights.bin": b"123"}))["sha256"]
    code, msg = w.error(T.ACTIVATE, {"bundle": t})
    assert code == "not_found" and "weights.bin" in msg
    junk_model = b"not a model at all"
    w.put("model.dtm", junk_model)
    t = w.put("bundle.txt", bundle_text(junk_model))["sha256"]
    code, msg = w.error(T.ACTIVATE, {"bundle": t})
    assert code == "bad_model" and "does not load" in msg
    bad_names = bundle_text(models["a"]).replace(b"file model.dtm", b"file ../model.dtm").replace(
        b"model model.dtm", b"model ../model.dtm")
    t = w.put("bundle.txt", bad_names)["sha256"]
    assert w.error(T.ACTIVATE, {"bundle": t})[0] == "bad_request"
    assert w.ok(T.HELLO)["active"] == ""  # nothing was activated

    # run_failed: the wrong number of inputs, an input that is not .npy, the wrong shape
    flash(w, models["a"])
    bad_npy = w.put("x.npy", b"not npy")["sha256"]
    assert w.error(T.RUN, {"input0": bad_npy})[0] == "run_failed"
    assert w.error(T.RUN, {})[0] == "run_failed"
    wrong_shape = w.put("x.npy", npy_bytes(np.zeros((1, 5), np.float32), tmp_path))["sha256"]
    code, msg = w.error(T.RUN, {"input0": wrong_shape})
    assert code == "run_failed" and msg
    assert w.error(T.RUN, {"input0": sha})[0] == "not_found"
    assert w.error(T.RUN, {"input0": wrong_shape, "bench": "lots"})[0] == "bad_request"
    assert w.ok(T.SELFTEST)["pass"] == "1"  # still serving the active model


def test_put_past_free_space_is_refused_before_any_data(agent_bin, tmp_path):
    a = Agent([str(agent_bin)], tmp_path / "store", "--max-store-bytes", "100000")
    try:
        w = a.connect()
        assert int(w.ok(T.HELLO)["free_bytes"]) == 100000
        data = os.urandom(60_000)
        w.put("one.bin", data)
        assert int(w.ok(T.HELLO)["free_bytes"]) == 40000
        code, msg = w.error(T.PUT_BEGIN, {"name": "two.bin", "sha256": "cd" * 32, "size": 50_000})
        assert code == "no_space" and "needs 50000 more bytes but the store has 40000 free" in msg
        assert os.listdir(a.store / "incoming") == []
        assert w.ok(T.STATUS)["state"] == "idle"
    finally:
        a.stop()


def test_command_line_errors_are_one_line(agent_bin, tmp_path):
    cases = [
        ([], "--store DIR is required"),
        (["--store", str(tmp_path / "s")], "give exactly one of --serial, --listen, --stdio"),
        (["--store", str(tmp_path / "s"), "--stdio", "--listen", "127.0.0.1:0"], "exactly one"),
        (["--store", str(tmp_path / "s"), "--listen", "0.0.0.0:5555"], "refusing to listen on '0.0.0.0:5555'"),
        (["--store", str(tmp_path / "s"), "--listen", "192.168.1.5:5555"], "loopback addresses only"),
        (["--store", str(tmp_path / "s"), "--listen", "127.0.0.1"], "ADDRESS:PORT"),
        (["--store", str(tmp_path / "s"), "--listen", "127.0.0.1:99999"], "not a port number"),
        (["--store", str(tmp_path / "s"), "--serial", "/dev/null", "--baud", "fast"], "--baud needs a line rate"),
        (["--store", str(tmp_path / "s"), "--serial", "/dev/null", "--baud", "12345"], "not a rate this agent"),
        (["--store", str(tmp_path / "s"), "--stdio", "--baud", "9600"], "--baud goes with --serial"),
        (["--store", str(tmp_path / "s"), "--stdio", "--pubkey", str(tmp_path / "none")], "cannot read the public"),
        (["--store", str(tmp_path / "s"), "--stdio", "--max-store-bytes", "0"], "positive byte count"),
        (["--bogus"], "unknown argument '--bogus'"),
    ]
    (tmp_path / "file").write_text("x")
    cases.append((["--store", str(tmp_path / "file"), "--stdio"], "is not a folder"))
    (tmp_path / "key").write_text("zz")
    cases.append((["--store", str(tmp_path / "s"), "--stdio", "--pubkey", str(tmp_path / "key")],
                  "neither 32 raw bytes nor 64 hex digits"))
    for args, words in cases:
        r = subprocess.run([str(agent_bin), *args], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                           timeout=30)
        lines = r.stderr.strip().splitlines()
        assert r.returncode in (1, 2) and len(lines) == 1 and words in lines[0], (args, r.stderr)
        assert lines[0].startswith("dtorch-agent: error: ")
    a = Agent([str(agent_bin)], tmp_path / "busy")
    try:  # one agent per store
        r = subprocess.run([str(agent_bin), "--store", str(tmp_path / "busy"), "--stdio"], capture_output=True,
                           text=True, stdin=subprocess.DEVNULL, timeout=30)
        assert r.returncode == 1 and "another dtorch-agent is serving the store" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    finally:
        a.stop()
    v = subprocess.run([str(agent_bin), "--version"], capture_output=True, text=True)
    assert v.returncode == 0 and "protocol 1" in v.stdout and "runtime hash dev" in v.stdout
    h = subprocess.run([str(agent_bin), "--help"], capture_output=True, text=True)
    assert h.returncode == 0 and "--max-store-bytes" in h.stdout


def test_signed_bundles_only_when_provisioned(agent_bin, models, tmp_path):
    key = tmp_path / "agent.pub"
    key.write_text("11" * 32 + "\n")
    a = Agent([str(agent_bin)], tmp_path / "store", "--pubkey", str(key))
    try:
        w = a.connect()
        assert w.ok(T.HELLO)["signing"] == "required"
        w.put("model.dtm", models["a"])
        text = bundle_text(models["a"])
        t = w.put("bundle.txt", text)["sha256"]
        code, msg = w.error(T.ACTIVATE, {"bundle": t})
        assert code == "signature" and "has no signature" in msg
        forged = text + b"signature " + b"00" * 64 + b"\n"
        t = w.put("bundle.txt", forged)["sha256"]
        code, msg = w.error(T.ACTIVATE, {"bundle": t})
        assert code == "signature" and "does not verify" in msg
        assert w.ok(T.HELLO)["active"] == ""
    finally:
        a.stop()


def test_a_validly_signed_bundle_is_activated(agent_bin, models, tmp_path):
    signing = pytest.importorskip("nacl.signing", reason="PyNaCl signs the test bundle (pip install pynacl)")
    sk = signing.SigningKey(bytes(range(32)))
    (tmp_path / "agent.pub").write_bytes(bytes(sk.verify_key))
    a = Agent([str(agent_bin)], tmp_path / "store", "--pubkey", str(tmp_path / "agent.pub"))
    try:
        w = a.connect()
        w.put("model.dtm", models["a"])
        text = bundle_text(models["a"])
        signed = text + b"signature " + sk.sign(text).signature.hex().encode() + b"\n"
        t = w.put("bundle.txt", signed)["sha256"]
        assert w.ok(T.ACTIVATE, {"bundle": t})["active"] == t
        tampered = signed.replace(b"runtime_version 0.1.0", b"runtime_version 0.1.1")
        t2 = w.put("bundle.txt", tampered)["sha256"]
        assert w.error(T.ACTIVATE, {"bundle": t2})[0] == "signature"
    finally:
        a.stop()


# --- power loss -----------------------------------------------------------------------------------------------------

@dataclass
class Flash:
    """A flash in a thread; `phase` says where it was when the agent was killed."""

    wire: Wire
    model: bytes
    extra: dict[str, bytes]
    phase: str = "connect"
    done: bool = False

    def set_phase(self, what: str) -> None:
        self.phase = what

    def run(self) -> None:
        try:
            text = bundle_text(self.model, extra=self.extra)
            self.wire.put("model.dtm", self.model, phase=self.set_phase)
            for n, b in self.extra.items():
                self.wire.put(n, b, phase=self.set_phase)
            self.wire.put("bundle.txt", text, phase=self.set_phase)
            self.phase = "activate"
            self.wire.ok(T.ACTIVATE, {"bundle": hashlib.sha256(text).hexdigest()})
            self.phase = "after"
            self.done = True
        except (OSError, ConnectionError, AssertionError):
            pass


@pytest.mark.parametrize("kills", [8, pytest.param(30, marks=pytest.mark.full)])
def test_sigkill_at_random_moments_leaves_a_consistent_store(agent_bin, models, tmp_path, kills):
    """Each round flashes a bundle the store does not hold yet (fresh weights), kills the agent at a random moment
    of that flash, restarts it: the store must be consistent with the bundle active before or the new one (complete
    either way), and a new flash must succeed."""
    rng = random.Random(14)
    store = tmp_path / "store"

    def bundle(k: int) -> tuple[bytes, dict[str, bytes], str]:
        model = models["ab"[k % 2]]
        extra = {"weights.bin": rng.randbytes(300_000)}
        return model, extra, hashlib.sha256(bundle_text(model, extra=extra)).hexdigest()

    a = Agent([str(agent_bin)], store)
    model, extra, active = bundle(0)
    t0 = time.monotonic()
    flash(a.connect(), model, extra=extra)
    span = time.monotonic() - t0  # how long a flash takes here: the kills are spread over it
    a.kill()
    phases: dict[str, int] = {}
    for i in range(kills):
        model, extra, new = bundle(2 * i + 1)
        a = Agent([str(agent_bin)], store)
        assert check_store(store, {active}) == active
        f = Flash(a.connect(), model, extra)
        th = threading.Thread(target=f.run)
        th.start()
        time.sleep(rng.uniform(0, span))
        phase = f.phase
        a.kill()  # power loss
        th.join(60)
        phases[phase] = phases.get(phase, 0) + 1
        # restart: a consistent store with the old or the new bundle active (a complete one), and a new flash works
        a = Agent([str(agent_bin)], store)
        active = check_store(store, {active, new})
        w = a.connect()
        assert w.ok(T.HELLO)["active"] == active
        assert w.ok(T.SELFTEST)["pass"] == "1"
        model, extra, active = bundle(2 * i + 2)
        t0 = time.monotonic()
        flash(w, model, extra=extra)
        span = time.monotonic() - t0
        assert w.ok(T.HELLO)["active"] == active
        a.kill()
    print(f"\nSIGKILL at {kills} random moments of a flash (one takes {span * 1000:.0f} ms here), by phase: "
          f"{', '.join(f'{k} {v}' for k, v in sorted(phases.items()))}; after each restart the store was consistent, "
          f"one of the two complete bundles was active and a new flash succeeded")
    assert phases.get("put", 0) > 0
    assert_store_only(tmp_path, "store")


# --- the board build under QEMU -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def rk3588_bundle(models, tmp_path_factory) -> Path:
    """dist/rk3588 of `dtorch-edge build --board rk3588 --model a.dtm` (the board's first toolchain)."""
    from dtorch.edge.build import build_bundle

    root = tmp_path_factory.mktemp("agent_dist")
    (root / "a.dtm").write_bytes(models["a"])
    r = build_bundle("rk3588", [root / "a.dtm"], out=root / "dist", verify=False, compare_full=False,
                     progress=False, log=lambda line: None)
    return r.dist


def bundle_fields(text: str) -> dict[str, str]:
    return {k: v for k, _, v in (line.partition(" ") for line in text.splitlines()) if k != "file"}


def test_the_bundle_carries_the_agent_and_bundle_txt(rk3588_bundle):
    import json

    m = json.loads((rk3588_bundle / "manifest.json").read_text())
    assert "dtorch-agent" in m["files"] and m["sizes"]["dtorch_agent_bytes"] == (rk3588_bundle / "dtorch-agent").stat(
    ).st_size
    assert "dtorch-agent (the device agent" in (rk3588_bundle / "size_report.md").read_text()
    text = (rk3588_bundle / "bundle.txt").read_text()
    lines = text.splitlines()
    assert lines[0] == "dtorch-bundle 1" and text.endswith("\n")
    f = bundle_fields(text)
    assert (f["board"], f["runtime_hash"], f["opset_hash"], f["model"]) == ("rk3588", m["runtime_hash"],
                                                                             m["opset_hash"], "model.dtm")
    files = [line.split() for line in lines if line.startswith("file ")]
    assert files == [["file", "model.dtm", m["files"]["model.dtm"]["sha256"], str(m["files"]["model.dtm"]["bytes"])]]
    desc = subprocess.run(["file", str(rk3588_bundle / "dtorch-agent")], capture_output=True, text=True).stdout
    assert "ARM aarch64" in desc and "statically linked" in desc


def board_fast_output(board, bundle: Path, model: bytes, x: np.ndarray, tmp: Path, y: np.ndarray) -> None:
    """The agent's output y on the emulated board: the bits of the bundle's own dtorch-run on the same input (both
    run the default "fast" policy: the board's neon64 kernels, e.g. its linear), and within the fast kernels'
    tolerance (1e-5 x output scale) of the host's portable output."""
    (tmp / "board_model.dtm").write_bytes(model)
    np.save(tmp / "board_x.npy", x)
    subprocess.run([*board.emulator.command(bundle / "dtorch-run"), str(tmp / "board_model.dtm"), "--input",
                    str(tmp / "board_x.npy"), "--output", str(tmp / "board_y.npy")], check=True, capture_output=True,
                   timeout=300)
    assert y.tobytes() == np.load(tmp / "board_y.npy").tobytes()
    ref = host_output(model, x, tmp, kernels="portable")
    assert y.shape == ref.shape and y.dtype == ref.dtype
    np.testing.assert_allclose(y, ref, rtol=0, atol=1e-5 * max(1.0, float(np.abs(ref).max())))


def test_the_aarch64_agent_under_qemu(rk3588_bundle, models, tmp_path):
    from dtorch.edge.boards import load_board

    board = load_board("rk3588")
    text = (rk3588_bundle / "bundle.txt").read_bytes()
    f = bundle_fields(text.decode())
    a = Agent(board.emulator.command(rk3588_bundle / "dtorch-agent"), tmp_path / "store")
    try:
        w = a.connect()
        h = w.ok(T.HELLO)
        assert (h["board"], h["arch"], h["runtime_hash"], h["opset_hash"]) == ("rk3588", "aarch64", f["runtime_hash"],
                                                                              f["opset_hash"])
        # flash the bundle as built: its files, then bundle.txt, then ACTIVATE
        for line in text.decode().splitlines():
            if line.startswith("file "):
                _, name, sha, size = line.split()
                assert w.put(name, (rk3588_bundle / name).read_bytes())["sha256"] == sha
        w.put("bundle.txt", text)
        id_a = hashlib.sha256(text).hexdigest()
        assert w.ok(T.ACTIVATE, {"bundle": id_a})["active"] == id_a
        assert w.ok(T.SELFTEST)["pass"] == "1"
        x = np.random.default_rng(1).standard_normal((1, 4)).astype(np.float32)
        y, _ = run_on(w, npy_bytes(x, tmp_path))
        board_fast_output(board, rk3588_bundle, models["a"], x, tmp_path, y)
        # a second model with the same op set, then back to the first
        ident = {"board": "rk3588", "runtime_hash": f["runtime_hash"], "opset_hash": f["opset_hash"]}
        b = flash(w, models["b"], ident)
        yb, _ = run_on(w, npy_bytes(x, tmp_path))
        board_fast_output(board, rk3588_bundle, models["b"], x, tmp_path, yb)
        assert b["previous"] == id_a and w.ok(T.ROLLBACK)["active"] == id_a
        assert run_on(w, npy_bytes(x, tmp_path))[0].tobytes() == y.tobytes()
        # a bundle for another op set is refused, naming both
        code, msg = w.error(T.ACTIVATE, {"bundle": w.put("bundle.txt", bundle_text(models["b"], DEV))["sha256"]})
        assert code == "mismatch"
        w.put("bundle.txt", bundle_text(models["b"], {**ident, "opset_hash": "0" * 64}))
        code, msg = w.error(T.ACTIVATE, {"bundle": hashlib.sha256(bundle_text(models["b"], {
            **ident, "opset_hash": "0" * 64})).hexdigest()})
        assert code == "mismatch" and f["opset_hash"][:16] in msg and "0" * 16 in msg
    finally:
        a.stop()
    assert_store_only(tmp_path, "store")


def test_a_bundle_without_libsodium_says_so(models, tmp_path, monkeypatch):
    import dtorch.edge.build as build

    monkeypatch.setattr(build, "_sodium_ready", lambda: False)
    (tmp_path / "a.dtm").write_bytes(models["a"])
    lines: list[str] = []
    r = build.build_bundle("host", [tmp_path / "a.dtm"], out=tmp_path / "dist", verify=False, compare_full=False,
                           progress=False, log=lines.append)
    assert not (r.dist / "dtorch-agent").exists() and (r.dist / "bundle.txt").is_file()
    warnings = [line for line in lines if line.startswith("warning:")]
    assert len(warnings) == 1 and "python -m dtorch.edge.third_party" in warnings[0]
    assert r.manifest["sizes"]["dtorch_agent_bytes"] is None and r.agent_bytes is None


def test_an_answer_over_max_payload_is_refused_not_cut(agent, tmp_path):
    """A RUN of a model with 60 outputs would need more than one payload to name them: ERROR too_large."""
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "runtime"))
    from dtm_builder import DtmBuilder

    g = DtmBuilder()
    x = g.input("x", [1, 4])
    for k in range(60):
        g.node("relu", [x], [g.output(f"y{k}", [1, 4])])
    model = g.build()
    w = agent.connect()
    flash(w, model)
    sha = w.put("x.npy", npy_bytes(np.ones((1, 4), np.float32), tmp_path))["sha256"]
    code, msg = w.error(T.RUN, {"input0": sha})
    assert code == "too_large" and "over MAX_PAYLOAD" in msg
    assert w.ok(T.HELLO)["protocol"] == "1"


def test_a_serial_hang_up_is_waited_out(agent_bin, tmp_path):
    """The line's other side goes away (a pty closed; a USB adapter pulled): the agent keeps running, waits for the
    device without spinning, and says so once."""
    master, slave = os.openpty()
    name = os.ttyname(slave)
    p = subprocess.Popen([str(agent_bin), "--store", str(tmp_path / "store"), "--serial", name],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        time.sleep(1)
        os.close(master)
        os.close(slave)
        time.sleep(3)
        fields = Path(f"/proc/{p.pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu_ticks = int(fields[11]) + int(fields[12])  # utime + stime
        assert p.poll() is None and cpu_ticks < 100
    finally:
        p.terminate()
        p.wait(30)
    err = p.stderr.read().decode()
    p.stderr.close()
    assert err.count(f"waiting for {name} to appear") == 1, err


def test_build_signs_bundle_txt_for_an_agent_with_the_public_key(models, tmp_path):
    """build_bundle(sign=KEY) appends the signature line; the bundle's own agent, given the public key, activates it
    (PyNaCl signs on the host; without it the build says so in one line before building)."""
    from dtorch.edge.build import BuildError, build_bundle, bundle_public_key

    key = tmp_path / "signing.key"
    key.write_text("42" * 32 + "\n")
    (tmp_path / "a.dtm").write_bytes(models["a"])
    try:
        import nacl.signing  # noqa: F401
    except ImportError:
        with pytest.raises(BuildError, match="signing a bundle needs PyNaCl"):
            build_bundle("host", [tmp_path / "a.dtm"], out=tmp_path / "dist", sign=key, verify=False,
                         compare_full=False, progress=False, log=lambda line: None)
        pytest.skip("PyNaCl is not installed: the signing itself is not checked here")
    r = build_bundle("host", [tmp_path / "a.dtm"], out=tmp_path / "dist", sign=key, verify=False, compare_full=False,
                     progress=False, log=lambda line: None)
    text = (r.dist / "bundle.txt").read_bytes()
    assert text.splitlines()[-1].startswith(b"signature ") and r.manifest["bundle_signed"] is True
    (tmp_path / "agent.pub").write_text(bundle_public_key(key) + "\n")
    a = Agent([str(r.dist / "dtorch-agent")], tmp_path / "store", "--pubkey", str(tmp_path / "agent.pub"))
    try:
        w = a.connect()
        w.put("model.dtm", (r.dist / "model.dtm").read_bytes())
        w.put("bundle.txt", text)
        assert w.ok(T.ACTIVATE, {"bundle": hashlib.sha256(text).hexdigest()})["active_model"] == "model.dtm"
        assert w.ok(T.SELFTEST)["pass"] == "1"
    finally:
        a.stop()
    with pytest.raises(BuildError, match="neither 32 raw bytes nor 64 hex digits"):
        (tmp_path / "bad.key").write_text("short")
        build_bundle("host", [tmp_path / "a.dtm"], out=tmp_path / "dist", sign=tmp_path / "bad.key")
