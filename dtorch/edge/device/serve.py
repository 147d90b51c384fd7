"""`dtorch-edge device serve`: an emulated board for the device commands: the bundle's real `dtorch-agent`, run
natively for the host board and under the board's QEMU user-mode emulator otherwise (the same argv as
`dtorch-edge emulate`'s local runner: `Emulator.command`), reached at a loopback socket (`--listen`: the agent's
own listener) or a pty (`--pty`: the agent on `--stdio`, this process pumping bytes between the pty's master and
the agent's standard input and output).

The agent runs in its own process group; when serve stops (SIGINT, SIGTERM, or the agent exiting), the whole
group is terminated, so nothing is left running; a store made for the run (no --store) is removed.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from .errors import ServeError

__all__ = ["ServeInfo", "parse_listen", "serve"]

_LISTENING = re.compile(r"listening on (127\.0\.0\.1:\d+)")
READY_TIMEOUT = 60.0  # seconds for the agent to start listening (QEMU's start-up included)


@dataclass(frozen=True)
class ServeInfo:
    port: str  # what to give --port
    board: str
    bundle: str
    store: str
    pid: int
    emulator: str  # how the agent runs: "native", "qemu-aarch64 -cpu cortex-a76"
    command: list[str]

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def parse_listen(text: str) -> tuple[str, int]:
    """`127.0.0.1:PORT` -> (host, port); the agent listens on loopback only."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ServeError(f"--listen {text!r}: give 127.0.0.1:PORT (PORT 0 picks a free one)")
    if host not in ("127.0.0.1", "localhost"):
        raise ServeError(f"--listen {text!r}: the emulated board listens on loopback only (127.0.0.1:PORT)")
    return "127.0.0.1", int(port)


def _agent_command(board_name: str, bundle: Path) -> tuple[list[str], str]:
    from ..boards import BoardError, load_board

    try:
        board = load_board(board_name)
    except BoardError as e:
        raise ServeError(str(e)) from None
    emu = board.emulator
    if emu.kind not in ("native", "qemu-user"):
        raise ServeError(f"the {board_name} board has no emulator that runs its Linux agent (emulator: "
                         f"{emu.summary()})")
    agent = bundle / "dtorch-agent"
    if not bundle.is_dir():
        raise ServeError(f"no bundle folder {bundle}: build one with dtorch-edge build --board {board_name} --model "
                         f"MODEL.dtm, or give --bundle DIR")
    if not agent.is_file():
        raise ServeError(f"{bundle} has no dtorch-agent: rebuild the bundle with this dtorch-edge (dtorch-edge build "
                         f"--board {board_name})")
    text = bundle / "bundle.txt"
    if text.is_file():
        for line in text.read_text(errors="replace").splitlines():
            if line.startswith("board ") and line[6:].strip() != board_name:
                raise ServeError(f"{bundle} was built for {line[6:].strip()}, not for --board {board_name}")
    if emu.kind == "qemu-user" and shutil.which(emu.binary or "") is None:
        raise ServeError(f"{emu.binary} is not installed (the {board_name} board's emulator): install it with "
                         f"apt-get install qemu-user (or run scripts/setup.sh)")
    if not os.access(agent, os.X_OK):
        raise ServeError(f"{agent} is not executable")
    return emu.command(agent.resolve()), emu.summary()


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the agent gets SIGKILL if serve itself dies without cleaning up (killed with SIGKILL)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def serve(board: str, *, bundle: Path | None = None, store: Path | None = None, listen: str | None = None,
          pty: bool = False, on_ready: Callable[[ServeInfo], None] = lambda _i: None,
          log: Callable[[str], None] = lambda _m: None, stop: threading.Event | None = None) -> None:
    """Run the emulated board until `stop` is set, SIGINT/SIGTERM arrives (when called in the main thread), or
    the agent exits (then ServeError with its status and last words). `on_ready` gets the port once it answers."""
    if pty and listen is not None:
        raise ServeError("give --listen or --pty, not both")
    host_port = parse_listen(listen or "127.0.0.1:0") if not pty else None
    bundle = bundle if bundle is not None else Path("dist") / board
    argv, emulator = _agent_command(board, bundle)
    made_store = store is None
    if store is None:
        store_dir = Path(tempfile.mkdtemp(prefix=f"dtorch-{board}-store-"))
    else:
        store_dir = store
        try:
            store_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ServeError(f"cannot make the store folder {store_dir}: {e.strerror or e}") from None
    stop = stop or threading.Event()
    restore = _install_signals(stop)
    try:
        _run(board, bundle, store_dir, argv, emulator, host_port, stop, on_ready, log)
    finally:
        restore()
        if made_store:
            shutil.rmtree(store_dir, ignore_errors=True)


def _install_signals(stop: threading.Event) -> Callable[[], None]:
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in old:
        signal.signal(s, lambda *_a: stop.set())

    def restore() -> None:
        for s, h in old.items():
            signal.signal(s, h)
    return restore


def _run(board: str, bundle: Path, store: Path, argv: list[str], emulator: str, host_port: tuple[str, int] | None,
         stop: threading.Event, on_ready: Callable[[ServeInfo], None], log: Callable[[str], None]) -> None:
    master = slave = -1
    if host_port is None:
        argv = [*argv, "--store", str(store), "--stdio"]
        master, slave = os.openpty()
        import tty

        tty.setraw(slave)  # bytes pass unchanged: no echo, no CR/LF translation, no signals from ^C
    else:
        argv = [*argv, "--store", str(store), "--listen", f"{host_port[0]}:{host_port[1]}"]
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE if master >= 0 else subprocess.DEVNULL,
                                stdout=subprocess.PIPE if master >= 0 else subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True, preexec_fn=_die_with_parent)
    except OSError as e:
        for fd in (master, slave):
            if fd >= 0:
                os.close(fd)
        raise ServeError(f"cannot start {argv[0]}: {e.strerror or e}") from None
    tail: deque[str] = deque(maxlen=5)
    ready = threading.Event()
    done = threading.Event()  # tells the pumps to stop
    port: list[str] = []

    def read_stderr() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            m = _LISTENING.search(line)
            if m and not port:
                port.append(f"socket://{m.group(1)}")
                ready.set()
            else:
                tail.append(line)  # the agent's last words, for the message when it exits
            log(f"agent: {line}")
        ready.set()

    threads = [threading.Thread(target=read_stderr, daemon=True)]
    if master >= 0:
        assert proc.stdin is not None and proc.stdout is not None
        threads += [threading.Thread(target=_pump, args=(master, proc.stdin.fileno(), done), daemon=True),
                    threading.Thread(target=_pump, args=(proc.stdout.fileno(), master, done), daemon=True)]
        port.append(os.ttyname(slave))
        ready.set()
    for t in threads:
        t.start()
    stopped_by_us = False
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while not ready.wait(0.1):
            if stop.is_set() or time.monotonic() > deadline:
                break
        if not port and not stop.is_set():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.5)
            if proc.poll() is not None:
                raise ServeError(_exit_message(proc, tail, "before it listened"))
            raise ServeError(f"the agent did not say where it listens within {READY_TIMEOUT:.0f} s")
        if port:
            on_ready(ServeInfo(port[0], board, str(bundle), str(store), proc.pid, emulator, argv))
            log(f"serving {board} ({emulator}) at {port[0]}, store {store}; Ctrl-C stops it")
        while not stop.wait(0.2):
            if proc.poll() is not None:
                time.sleep(0.1)  # the last stderr lines
                raise ServeError(_exit_message(proc, tail, "while serving"))
        stopped_by_us = True
    finally:
        done.set()
        _stop_group(proc)
        for fd in (master, slave):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        for t in threads:
            t.join(timeout=1.0)
        if stopped_by_us:
            log(f"stopped the {board} agent")


def _exit_message(proc: subprocess.Popen[bytes], tail: deque[str], when: str) -> str:
    rc = proc.returncode
    how = f"was killed by signal {-rc}" if rc is not None and rc < 0 else f"exited with status {rc}"
    last = next((line for line in reversed(tail) if line.strip()), "")
    return f"the agent {how} {when}" + (f": {last}" if last else "")


def _pump(src: int, dst: int, done: threading.Event) -> None:
    """Copy bytes from fd `src` to fd `dst` until either end closes or `done` is set."""
    import select

    try:
        while not done.is_set():
            if not select.select([src], [], [], 0.2)[0]:
                continue
            data = os.read(src, 65536)
            if not data:
                return
            view = memoryview(data)
            while view:
                n = os.write(dst, view)
                view = view[n:]
    except OSError:
        return


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the agent's process group, then SIGKILL after 3 s; waits for the agent."""
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    # the group may outlive its leader (a child the agent started): make sure it is gone
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    for f in (proc.stdin, proc.stdout, proc.stderr):
        if f is not None:
            with contextlib.suppress(OSError):
                f.close()
