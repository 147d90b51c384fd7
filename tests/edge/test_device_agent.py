"""`dtorch-edge flash` and `dtorch-edge device ...` against the REAL dtorch-agent (build/host/dtorch-agent, served
on a loopback socket), never a mock of it: install, run (the host runtime's bits), selftest, rollback, logs, the
checks before a byte is sent, every error a user meets (one line, exit 1), and fault injection through
tests/edge/serial_proxy.py (dropped, corrupted, duplicated, reordered and delayed frames, a cut line): the flash
completes with a verified model or fails with a clear message, the device keeps a valid active model, and a rerun
resumes and completes."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from dtorch.edge.cli import main
from dtorch.edge.device.client import AgentClient
from dtorch.edge.device.link import Link

from .agent_fixtures import Agent, build_host_agent, bundle_id, export_mlp, host_output, write_bundle
from .serial_proxy import Faults, SerialProxy


@pytest.fixture(scope="module")
def agent_exe() -> Path:
    return build_host_agent()


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("models")
    return {"a": export_mlp(d / "a.dtm", seed=1), "b": export_mlp(d / "b.dtm", seed=2)}


@pytest.fixture
def agent(agent_exe, tmp_path):
    with Agent([str(agent_exe)], tmp_path / "store") as a:
        yield a


def hello(url: str):
    with Link(url) as link:
        return AgentClient(link).hello()


def bundles_for(url: str, models: dict[str, Path], root: Path, **extra) -> dict[str, Path]:
    """Bundles A and B for the agent at `url` (its board, runtime and op-set hashes)."""
    info = hello(url)
    return {k: write_bundle(root / f"bundle-{k}", m, board=info.board, runtime_hash=info.runtime_hash,
                            opset_hash=info.opset_hash, runtime_version=info.runtime_version, **extra)
            for k, m in models.items()}


def cli(*args: str):
    r = CliRunner().invoke(main, list(args))
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r


def ok(*args: str):
    r = cli(*args)
    assert r.exit_code == 0, r.output + r.stderr
    return r


def fails(*args: str, match: str):
    r = cli(*args)
    assert r.exit_code == 1, r.output
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("error: "), r.stderr
    assert "Traceback" not in r.stderr
    assert match in lines[-1], lines[-1]
    return lines[-1]


def flash_json(bundle: Path, url: str, board: str = "host") -> dict:
    r = ok("flash", "--board", board, "--port", url, "--json", str(bundle))
    return json.loads(r.stdout)


def run_on_device(url: str, x: np.ndarray, tmp: Path, *extra: str) -> np.ndarray:
    np.save(tmp / "x.npy", x)
    ok("device", "run", "--port", url, "--input", str(tmp / "x.npy"), "--output", str(tmp / "y.npy"), "--json", *extra)
    return np.load(tmp / "y.npy")


# --- the happy path ----------------------------------------------------------------------------------------------

def test_flash_run_selftest_rollback_logs(agent, models, tmp_path):
    b = bundles_for(agent.url, models, tmp_path)
    x = np.random.default_rng(0).standard_normal((1, 64)).astype(np.float32)
    ref = {k: host_output(m, x) for k, m in models.items()}

    r = ok("flash", "--board", "host", "--port", agent.url, "--quiet", str(b["a"]))
    assert f"bundle {bundle_id(b['a'])[:12]} active" in r.stdout and "kB/s" in r.stdout
    info = json.loads(ok("device", "info", "--port", agent.url, "--json").stdout)
    assert info["active"] == bundle_id(b["a"]) and info["active_model"] == "model.dtm" and info["previous"] == ""
    assert np.array_equal(run_on_device(agent.url, x, tmp_path), ref["a"])  # the host runtime's bits
    assert "selftest passed" in ok("device", "selftest", "--port", agent.url).stdout

    rep = flash_json(b["b"], agent.url)
    assert rep["active"] == bundle_id(b["b"]) and rep["previous"] == bundle_id(b["a"])
    assert rep["files_sent"] == 2 and rep["bytes_sent"] > 100_000 and rep["throughput_bytes_per_s"] > 0
    assert np.array_equal(run_on_device(agent.url, x, tmp_path), ref["b"])

    r = ok("device", "rollback", "--port", agent.url)
    assert f"active {bundle_id(b['a'])[:12]}" in r.stdout
    assert np.array_equal(run_on_device(agent.url, x, tmp_path), ref["a"])
    s = json.loads(ok("device", "rollback", "--port", agent.url, "--json").stdout)  # a second rollback undoes it
    assert s["active"] == bundle_id(b["b"])
    assert np.array_equal(run_on_device(agent.url, x, tmp_path), ref["b"])

    bench = json.loads(ok("device", "run", "--port", agent.url, "--input", str(tmp_path / "x.npy"), "--output",
                          str(tmp_path / "y.npy"), "--bench", "5", "--json").stdout)
    assert 0 <= bench["ms_min"] <= bench["ms_p50"] <= bench["ms_max"]
    text = ok("device", "logs", "--port", agent.url).stdout
    assert text.count("\n") >= 3
    events = json.loads(ok("device", "logs", "--port", agent.url, "--json", "--last", "100").stdout)
    assert any(bundle_id(b["a"])[:12] in e["text"] for e in events)


def test_reflash_sends_nothing_and_shared_files_are_skipped(agent, models, tmp_path):
    labels = b"zero\none\ntwo\n" * 1000
    b = bundles_for(agent.url, models, tmp_path, extra={"labels.txt": labels})
    flash_json(b["a"], agent.url)
    again = flash_json(b["a"], agent.url)
    assert again["already_active"] and again["bytes_sent"] == 0
    assert "already active" in ok("flash", "--board", "host", "--port", agent.url, "--quiet", str(b["a"])).stdout
    rep = flash_json(b["b"], agent.url)
    skipped = [f["name"] for f in rep["files"] if f["have"]]
    assert skipped == ["labels.txt"] and rep["bytes_skipped"] == len(labels)


def test_progress_bar_on_stderr(agent, models, tmp_path):
    b = bundles_for(agent.url, models, tmp_path)
    r = ok("flash", "--board", "host", "--port", agent.url, str(b["a"]))
    assert "flash" in r.stderr and "B/s" in r.stderr  # tqdm: bytes, rate, time left
    r = ok("flash", "--board", "host", "--port", agent.url, "--json", str(b["b"]))
    assert r.stderr == ""


# --- refused before a byte is sent -------------------------------------------------------------------------------

def _store_files(store: Path) -> list[str]:
    return sorted(str(p.relative_to(store)) for p in store.rglob("*") if p.is_file() and p.parent.name in
                  ("blobs", "incoming"))


def test_other_board_or_runtime_is_refused_before_a_byte(agent, models, tmp_path):
    info = hello(agent.url)
    other_board = write_bundle(tmp_path / "rk", models["a"], board="rk3588", runtime_hash=info.runtime_hash,
                               opset_hash=info.opset_hash)
    line = fails("flash", "--board", "rk3588", "--port", agent.url, str(other_board), match="rk3588")
    assert f"the device is a {info.board} board" in line
    other_rt = write_bundle(tmp_path / "rt", models["a"], board=info.board, runtime_hash="f" * 64,
                            opset_hash=info.opset_hash, runtime_version="9.9.9")
    line = fails("flash", "--board", "host", "--port", agent.url, str(other_rt), match="9.9.9")
    assert "ffffffffffffffff" in line and info.runtime_hash[:16] in line and info.runtime_version in line
    other_ops = write_bundle(tmp_path / "ops", models["a"], board=info.board, runtime_hash=info.runtime_hash,
                             opset_hash="e" * 64)
    line = fails("flash", "--board", "host", "--port", agent.url, str(other_ops), match="op set")
    assert "eeeeeeeeeeeeeeee" in line and info.opset_hash[:16] in line
    assert _store_files(agent.store) == []  # nothing was sent


def test_bundle_problems_are_found_before_the_port_is_opened(models, tmp_path):
    good = write_bundle(tmp_path / "b", models["a"], board="host", runtime_hash="a" * 64, opset_hash="b" * 64)
    nowhere = "socket://127.0.0.1:1"
    fails("flash", "--board", "rk3588", "--port", nowhere, str(good), match="built for host, not for --board rk3588")
    fails("flash", "--board", "host", "--port", nowhere, str(tmp_path / "missing"), match="is not a folder")
    (tmp_path / "empty").mkdir()
    fails("flash", "--board", "host", "--port", nowhere, str(tmp_path / "empty"), match="has no bundle.txt")
    (good / "model.dtm").write_bytes(b"changed after the build")
    fails("flash", "--board", "host", "--port", nowhere, str(good), match="rebuild it")
    (good / "model.dtm").unlink()
    fails("flash", "--board", "host", "--port", nowhere, str(good), match="lacks model.dtm")
    (good / "bundle.txt").write_text("something else\n")
    fails("flash", "--board", "host", "--port", nowhere, str(good), match="dtorch-bundle 1")


# --- errors the agent reports ------------------------------------------------------------------------------------

def test_store_full_is_refused_and_the_old_model_stays(agent_exe, models, tmp_path):
    with Agent([str(agent_exe)], tmp_path / "store", ["--max-store-bytes", "150000"]) as a:
        b = bundles_for(a.url, models, tmp_path)
        flash_json(b["a"], a.url)
        fails("flash", "--board", "host", "--port", a.url, "--quiet", str(b["b"]), match="store is full")
        assert hello(a.url).active == bundle_id(b["a"])
        assert "selftest passed" in ok("device", "selftest", "--port", a.url).stdout


def test_a_model_that_does_not_load_is_refused_and_the_old_model_stays(agent, models, tmp_path):
    b = bundles_for(agent.url, models, tmp_path)
    flash_json(b["a"], agent.url)
    junk = tmp_path / "junk.dtm"
    junk.write_bytes(b"DTM?" + bytes(5000))
    info = hello(agent.url)
    bad = write_bundle(tmp_path / "bad", junk, board=info.board, runtime_hash=info.runtime_hash,
                       opset_hash=info.opset_hash)
    fails("flash", "--board", "host", "--port", agent.url, "--quiet", str(bad), match="cannot load the model")
    assert hello(agent.url).active == bundle_id(b["a"])


def test_device_commands_without_a_model(agent, tmp_path):
    fails("device", "selftest", "--port", agent.url, match="no active model")
    fails("device", "rollback", "--port", agent.url, match="nothing to roll back to")
    np.save(tmp_path / "x.npy", np.zeros((1, 64), np.float32))
    fails("device", "run", "--port", agent.url, "--input", str(tmp_path / "x.npy"), "--output",
          str(tmp_path / "y.npy"), match="no active model")
    assert not (tmp_path / "y.npy").exists()


def test_device_run_input_errors(agent, models, tmp_path):
    b = bundles_for(agent.url, models, tmp_path)
    flash_json(b["a"], agent.url)
    (tmp_path / "x.txt").write_text("1 2 3")
    fails("device", "run", "--port", agent.url, "--input", str(tmp_path / "x.txt"), "--output",
          str(tmp_path / "y.npy"), match="is not a .npy file")
    fails("device", "run", "--port", agent.url, "--input", str(tmp_path / "nope.npy"), "--output",
          str(tmp_path / "y.npy"), match="no such input file")
    np.save(tmp_path / "x.npy", np.zeros((1, 64), np.float32))
    fails("device", "run", "--port", agent.url, "--input", str(tmp_path / "x.npy"), "--output",
          str(tmp_path / "y.npy"), "--output", str(tmp_path / "z.npy"), match="give --output once per output")
    np.save(tmp_path / "w.npy", np.zeros((1, 63), np.float32))
    fails("device", "run", "--port", agent.url, "--input", str(tmp_path / "w.npy"), "--output",
          str(tmp_path / "y.npy"), match="the model failed on the device")


# --- the line ----------------------------------------------------------------------------------------------------

def test_no_such_port_and_nothing_listening(tmp_path):
    fails("device", "info", "--port", "/dev/ttyDTORCHNONE", match="no such port /dev/ttyDTORCHNONE")
    fails("device", "info", "--port", "socket://127.0.0.1:1", match="nothing listens")
    fails("flash", "--board", "host", "--port", "/dev/ttyDTORCHNONE", str(tmp_path), match="has no bundle.txt")


def test_port_busy(tmp_path):
    import os
    import pty

    from dtorch.edge.device.link import open_port

    master, slave = pty.openpty()
    try:
        holder = open_port(os.ttyname(slave), 115200)
        fails("device", "info", "--port", os.ttyname(slave), match="is busy")
        holder.close()
    finally:
        os.close(master)
        os.close(slave)


def test_a_device_that_does_not_answer(agent):
    with SerialProxy(agent.port, down=Faults(drop_byte=1.0)) as proxy:
        line = fails("device", "info", "--port", proxy.url, match="no answer from")
    assert "sent HELLO 4 times" in line and "115200 baud" in line


def test_wrong_baud_rate_is_named(agent):
    # every byte the agent sends arrives damaged, as on a line read at the wrong rate
    with SerialProxy(agent.port, down=Faults(corrupt_byte=1.0)) as proxy:
        line = fails("device", "info", "--port", proxy.url, "--baud", "57600", match="none formed a valid frame")
    assert "--baud 57600" in line


FAULTS = {
    "drop": Faults(drop_byte=0.00003, skip_frames=2),
    "corrupt": Faults(corrupt_byte=0.00003, skip_frames=2),
    "duplicate": Faults(duplicate_frame=0.3),
    "reorder": Faults(reorder_frame=0.3),
    "delay": Faults(delay=0.1, jitter=0.1),
}


# The fast tier injects corruption (the damaged frames reach the agent and are dropped, as drops are); the full
# tier (-m full, .ci/run-full) every kind.
@pytest.mark.parametrize("kind", [k if k == "corrupt" else pytest.param(k, marks=pytest.mark.full) for k in sorted(FAULTS)])
def test_flash_through_a_faulty_line(agent, models, tmp_path, kind):
    """Faults both ways: the flash completes with a verified model or fails with one clear line; the device keeps
    a valid active model; a rerun completes."""
    b = bundles_for(agent.url, models, tmp_path)
    flash_json(b["a"], agent.url)
    x = np.random.default_rng(1).standard_normal((1, 64)).astype(np.float32)
    with SerialProxy(agent.port, up=FAULTS[kind], down=FAULTS[kind], seed=11) as proxy:
        r = cli("flash", "--board", "host", "--port", proxy.url, "--quiet", str(b["b"]))
        assert r.exit_code in (0, 1) and "Traceback" not in r.stderr
        if r.exit_code == 1:
            assert r.stderr.strip().count("\n") == 0 and r.stderr.startswith("error: ")
        info = hello(agent.url)
        assert info.active in (bundle_id(b["a"]), bundle_id(b["b"]))
        assert "selftest passed" in ok("device", "selftest", "--port", agent.url).stdout
        again = cli("flash", "--board", "host", "--port", proxy.url, "--quiet", str(b["b"]))
        stats = proxy.stat("up"), proxy.stat("down")
    assert again.exit_code == 0, again.stderr
    assert hello(agent.url).active == bundle_id(b["b"])
    assert np.array_equal(run_on_device(agent.url, x, tmp_path), host_output(models["b"], x))
    injected = sum(s[k] for s in stats for k in ("dropped_bytes", "corrupted_bytes", "duplicated_frames",
                                                   "reordered_frames"))
    assert kind == "delay" or injected > 0, stats
    status = json.loads(ok("device", "info", "--port", agent.url, "--json").stdout)["status"]
    assert status["state"] == "idle" and status["rx_frames"] > 50
    if kind in ("drop", "corrupt"):
        assert status["rx_dropped"] > 0  # the damaged frames reached the agent and were dropped there


def test_faults_at_the_line_rate(agent, models, tmp_path):
    """Drops and corruption on a line limited to 115200 baud's 11,520 B/s: the timeouts sized from --baud recover
    without giving up, and the payload still moves at most of the line's rate."""
    b = bundles_for(agent.url, models, tmp_path)
    faults = Faults(rate=11520.0, drop_byte=0.00001, corrupt_byte=0.00001, skip_frames=2)
    with SerialProxy(agent.port, up=faults, down=Faults(rate=11520.0, drop_byte=0.001, skip_frames=2),
                     seed=5) as proxy:
        rep = flash_json(b["a"], proxy.url)
        hit = proxy.stat("up")["dropped_bytes"] + proxy.stat("up")["corrupted_bytes"] + proxy.stat("down")["dropped_bytes"]
    assert rep["active"] == bundle_id(b["a"])
    assert hit > 0 and rep["retransmits"] > 0
    # about 8% of the 4 KB frames are damaged: each costs a resend of the window (and a timeout when fewer than
    # three frames follow it); the line still carries a good share of its rate
    assert rep["throughput_bytes_per_s"] > 0.3 * 11520, rep


def test_cut_line_fails_clearly_and_a_rerun_resumes(agent, models, tmp_path):
    b = bundles_for(agent.url, models, tmp_path)
    flash_json(b["a"], agent.url)
    with SerialProxy(agent.port, up=Faults(cut_after=60_000)) as proxy:
        line = fails("flash", "--board", "host", "--port", proxy.url, "--quiet", str(b["b"]), match="lost")
        assert "rerun the same command to resume" in line and "model.dtm" in line
        assert hello(agent.url).active == bundle_id(b["a"])
        rep = flash_json(b["b"], proxy.url)
    assert rep["active"] == bundle_id(b["b"])
    model = next(f for f in rep["files"] if f["name"] == "model.dtm")
    assert model["offset"] > 40_000 and model["sent"] == model["size"] - model["offset"]  # resumed, not resent


def test_agent_restart_between_flashes_keeps_the_model(agent_exe, models, tmp_path):
    """The store outlives the agent: after a SIGKILL and a restart the active model is there and serves."""
    store = tmp_path / "store"
    a = Agent([str(agent_exe)], store).start()
    try:
        b = bundles_for(a.url, models, tmp_path)
        flash_json(b["a"], a.url)
        a.stop(signal.SIGKILL)
        a.start()
        assert hello(a.url).active == bundle_id(b["a"])
        assert "selftest passed" in ok("device", "selftest", "--port", a.url).stdout
        flash_json(b["b"], a.url)
    finally:
        a.stop()


# --- dtorch-edge device serve ------------------------------------------------------------------------------------

def _serve(args: list[str]) -> tuple[subprocess.Popen[str], dict]:
    p = subprocess.Popen([sys.executable, "-m", "dtorch.edge.cli", "device", "serve", *args, "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None
    line = p.stdout.readline()
    if not line:
        p.wait(10)
        raise AssertionError(p.stderr.read() if p.stderr else "no output")
    return p, json.loads(line)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("mode", ["listen", "pty"])
def test_serve_host_board(agent_exe, models, tmp_path, mode):
    bundle = tmp_path / "dist" / "host"
    bundle.mkdir(parents=True)
    shutil.copy2(agent_exe, bundle / "dtorch-agent")
    p, info = _serve(["--board", "host", "--bundle", str(bundle), *(["--pty"] if mode == "pty" else [])])
    try:
        port = info["port"]
        assert port.startswith("socket://127.0.0.1:" if mode == "listen" else "/dev/pts/")
        h = hello(port)
        b = write_bundle(tmp_path / "b", models["a"], board=h.board, runtime_hash=h.runtime_hash,
                         opset_hash=h.opset_hash)
        bundle_files = flash_json(b, port)
        assert bundle_files["active"] == bundle_id(b)
        assert "selftest passed" in ok("device", "selftest", "--port", port).stdout
        store = Path(info["store"])
        assert store.is_dir() and _alive(info["pid"])
    finally:
        p.send_signal(signal.SIGINT)
        rc = p.wait(20)
    assert rc == 0, p.stderr.read() if p.stderr else ""
    assert not _alive(info["pid"])  # nothing left running
    assert not store.exists()  # the temporary store is removed


def test_serve_with_a_store_and_a_fixed_port_and_sigterm(agent_exe, tmp_path):
    import socket

    bundle = tmp_path / "bundle"
    bundle.mkdir()
    shutil.copy2(agent_exe, bundle / "dtorch-agent")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    free = s.getsockname()[1]
    s.close()
    p, info = _serve(["--board", "host", "--bundle", str(bundle), "--store", str(tmp_path / "st"), "--listen",
                      f"127.0.0.1:{free}"])
    try:
        assert info["port"] == f"socket://127.0.0.1:{free}"
        assert hello(info["port"]).board == "host"
    finally:
        p.send_signal(signal.SIGTERM)
        rc = p.wait(20)
    assert rc == 0 and not _alive(info["pid"]) and (tmp_path / "st").is_dir()


def test_serve_errors(agent_exe, tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    fails("device", "serve", "--board", "host", "--bundle", str(bundle), match="has no dtorch-agent")
    fails("device", "serve", "--board", "host", "--bundle", str(tmp_path / "none"), match="no bundle folder")
    fails("device", "serve", "--board", "nosuchboard", "--bundle", str(bundle), match="unknown board")
    fails("device", "serve", "--board", "host", "--listen", "0.0.0.0:1234", match="loopback only")
    fails("device", "serve", "--board", "host", "--listen", "nonsense", match="127.0.0.1:PORT")
    fails("device", "serve", "--board", "host", "--listen", "127.0.0.1:1", "--pty", match="not both")
    shutil.copy2(agent_exe, bundle / "dtorch-agent")
    (bundle / "bundle.txt").write_text("dtorch-bundle 1\nboard rk3588\n")
    fails("device", "serve", "--board", "host", "--bundle", str(bundle), match="built for rk3588")
    (bundle / "bundle.txt").unlink()
    with Agent([str(agent_exe)], tmp_path / "store") as a:  # the port is taken: the agent's own words
        t = time.monotonic()
        fails("device", "serve", "--board", "host", "--bundle", str(bundle), "--listen", f"127.0.0.1:{a.port}",
              match="the agent exited with status")
        assert time.monotonic() - t < 30


def test_a_device_that_requires_signed_bundles(agent_exe, models, tmp_path):
    key = tmp_path / "agent.pub"
    key.write_text("11" * 32 + "\n")
    with Agent([str(agent_exe)], tmp_path / "store", ["--pubkey", str(key)]) as a:
        b = bundles_for(a.url, {"a": models["a"]}, tmp_path)["a"]
        fails("flash", "--board", "host", "--port", a.url, str(b), match="activates only signed bundles")
        assert _store_files(a.store) == []  # refused before a byte
        with open(b / "bundle.txt", "a") as f:  # a signature that does not verify: the agent's refusal, mapped
            f.write("signature " + "00" * 64 + "\n")
        fails("flash", "--board", "host", "--port", a.url, "--quiet", str(b), match="requires a signed bundle")
        assert hello(a.url).active == ""


def test_a_line_that_goes_quiet_mid_transfer(agent, models, tmp_path):
    """No hang-up, just silence (a pulled serial cable): the flash gives up with what it tried and where it stood;
    the old model stays; a rerun resumes."""
    b = bundles_for(agent.url, models, tmp_path)
    flash_json(b["a"], agent.url)
    with SerialProxy(agent.port, up=Faults(stall_after=50_000)) as proxy:
        t = time.monotonic()
        line = fails("flash", "--board", "host", "--port", proxy.url, "--baud", "1000000", "--quiet", str(b["b"]),
                     match="no acknowledgement")
        assert time.monotonic() - t < 30
        assert "rerun the same command to resume" in line and "model.dtm" in line
        assert hello(agent.url).active == bundle_id(b["a"])
        rep = flash_json(b["b"], proxy.url)
    model = next(f for f in rep["files"] if f["name"] == "model.dtm")
    assert rep["active"] == bundle_id(b["b"]) and model["offset"] > 30_000


def test_a_failing_selftest_exits_1(agent, tmp_path):
    """A model whose bundled test vector it does not reproduce (the expected output is wrong on purpose)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
    from dtm_builder import relu_model

    g = relu_model([1, 4])
    x = np.array([[1, -2, 3, -4]], np.float32)
    g.set_test_vector([x], [np.maximum(x, 0) + 0.5])
    model = tmp_path / "wrong.dtm"
    model.write_bytes(g.build())
    info = hello(agent.url)
    b = write_bundle(tmp_path / "w", model, board=info.board, runtime_hash=info.runtime_hash,
                     opset_hash=info.opset_hash)
    flash_json(b, agent.url)
    r = cli("device", "selftest", "--port", agent.url)
    assert r.exit_code == 1 and "selftest FAILED: max abs error 0.5" in r.stdout
    assert r.stderr.startswith("error: the device's model does not reproduce its test vector")
    assert json.loads(cli("device", "selftest", "--port", agent.url, "--json").stdout)["pass"] is False


def test_ctrl_c_during_a_flash_is_one_line_and_a_rerun_resumes(agent, models, tmp_path):
    b = bundles_for(agent.url, models, tmp_path)
    with SerialProxy(agent.port, up=Faults(rate=20_000)) as proxy:
        # Ctrl-C as a terminal delivers it: with SIGINT's default action, which a test suite started as a
        # background job (SIGINT ignored, inherited by every child) would otherwise pass down.
        p = subprocess.Popen([sys.executable, "-m", "dtorch.edge.cli", "flash", "--board", "host", "--port", proxy.url,
                              "--quiet", str(b["a"])], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        time.sleep(2.5)
        p.send_signal(signal.SIGINT)
        _out, err = p.communicate(timeout=30)
        assert p.returncode == 1 and err.startswith("error: interrupted") and err.count("\n") == 1, err
        rep = flash_json(b["a"], proxy.url)
    model = next(f for f in rep["files"] if f["name"] == "model.dtm")
    assert rep["active"] == bundle_id(b["a"]) and model["offset"] > 0


def test_serve_says_when_the_agent_dies(agent_exe, tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    shutil.copy2(agent_exe, bundle / "dtorch-agent")
    p, info = _serve(["--board", "host", "--bundle", str(bundle)])
    import os

    os.kill(info["pid"], signal.SIGKILL)
    _out, err = p.communicate(timeout=30)
    assert p.returncode == 1 and "Traceback" not in err
    assert err.strip().splitlines()[-1] == "error: the agent was killed by signal 9 while serving"
    assert not Path(info["store"]).exists()


class Rfc2217Server:
    """An RFC 2217 server on 127.0.0.1 (pyserial's own PortManager) whose serial port is `target` (any pyserial URL,
    here the agent's loopback socket): what a serial-over-network box in front of a board looks like."""

    def __init__(self, target: str) -> None:
        import socket
        import threading

        self.target = target
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            with conn:
                self._bridge(conn)

    def _bridge(self, conn: Any) -> None:
        """One client: bytes from it through the PortManager's filter to the serial port, and back escaped."""
        import threading

        import serial
        import serial.rfc2217

        ser = serial.serial_for_url(self.target, timeout=0.05)

        class Out:
            def write(self, data: bytes) -> None:
                conn.sendall(data)

        pm = serial.rfc2217.PortManager(ser, Out())
        done = threading.Event()

        def to_net() -> None:
            while not done.is_set():
                try:
                    data = ser.read(4096)
                    if data:
                        conn.sendall(b"".join(pm.escape(data)))
                except OSError:
                    break

        t = threading.Thread(target=to_net, daemon=True)
        t.start()
        conn.settimeout(0.05)
        while not self.stopping.is_set():
            try:
                data = conn.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                break
            if not data:
                break
            ser.write(b"".join(pm.filter(data)))
        done.set()
        t.join(5)
        ser.close()

    def __enter__(self) -> Rfc2217Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.thread.join(10)
        self.sock.close()


def test_flash_and_run_over_rfc2217(agent, models, tmp_path):
    b = bundles_for(agent.url, models, tmp_path)
    x = np.random.default_rng(3).standard_normal((1, 64)).astype(np.float32)
    with Rfc2217Server(agent.url) as srv:
        url = f"rfc2217://127.0.0.1:{srv.port}"
        ok("flash", "--board", "host", "--port", url, "--quiet", str(b["a"]))
        assert json.loads(ok("device", "info", "--port", url, "--json").stdout)["active"] == bundle_id(b["a"])
        assert np.array_equal(run_on_device(url, x, tmp_path), host_output(models["a"], x))
