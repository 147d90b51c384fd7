"""Flashing over a 115200-baud serial line, emulated: the demo's bundle for a board, its real dtorch-agent run by
`dtorch-edge device serve` (under the board's QEMU), reached through tests/edge/serial_proxy.py limited to 11,520
bytes per second each way (115200 baud, 8N1: 10 bits a byte).

Figures:
  - the effective payload rate of one PUT (PUT_BEGIN .. VERIFY) of a random blob, against the line's 11,520 B/s
    (the protocol's target: >= 85%);
  - the time to flash the demo's bundle (every file, VERIFY each, ACTIVATE), and a rerun (already active).

The bundle is runs/demo/dist/<board> (`dtorch-edge demo` writes it; this script runs the demo first when it is
missing). Run: .venv/bin/python benchmarks/bench_flash.py [--board rk3588] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests" / "edge"))
from results import write_section  # noqa: E402
from serial_proxy import RATE_115200, Faults, SerialProxy  # noqa: E402

from dtorch.edge.device.client import AgentClient, Blob  # noqa: E402
from dtorch.edge.device.flash import flash_bundle  # noqa: E402
from dtorch.edge.device.link import Link  # noqa: E402

CLI = [sys.executable, "-m", "dtorch.edge.cli"]


def ensure_bundle(board: str, demo_out: Path) -> Path:
    bundle = demo_out / "dist" / board
    if not (bundle / "bundle.txt").is_file() or not (bundle / "dtorch-agent").is_file():
        print(f"{bundle} has no bundle.txt / dtorch-agent: running dtorch-edge demo --board {board} first", flush=True)
        subprocess.run([*CLI, "demo", "--out", str(demo_out), "--board", board, "--quiet"], check=True)
    return bundle


def start_serve(board: str, bundle: Path) -> tuple[subprocess.Popen[str], dict]:
    p = subprocess.Popen([*CLI, "device", "serve", "--board", board, "--bundle", str(bundle), "--json"],
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None
    line = p.stdout.readline()
    if not line:
        raise SystemExit(f"dtorch-edge device serve failed (status {p.wait()})")
    return p, json.loads(line)


def payload_rate(url: str, size: int) -> dict:
    blob = Blob.from_bytes("bench.bin", os.urandom(size))
    with Link(url, 115200) as link:
        c = AgentClient(link)
        c.hello()
        out0 = link.stats.bytes_out
        t = time.monotonic()
        r = c.put_blob(blob)
        c.verify(blob.sha256, blob.size, blob.name)
        seconds = time.monotonic() - t
        line_bytes = link.stats.bytes_out - out0
        retransmits = link.stats.retransmits
    assert not r.have and r.offset == 0
    return {"bytes": size, "seconds": seconds, "rate": size / seconds, "line_bytes": line_bytes,
            "retransmits": retransmits}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--board", default="rk3588")
    ap.add_argument("--demo-out", type=Path, default=ROOT / "runs" / "demo")
    ap.add_argument("--payload-kib", type=int, default=256)
    ap.add_argument("--write", action="store_true", help="Write the section of benchmarks/RESULTS.md.")
    args = ap.parse_args()

    bundle = ensure_bundle(args.board, args.demo_out)
    serve, info = start_serve(args.board, bundle)
    try:
        port = int(info["port"].rsplit(":", 1)[1])
        limit = Faults(rate=RATE_115200)
        with SerialProxy(port, up=limit, down=Faults(rate=RATE_115200)) as proxy:
            rate = payload_rate(proxy.url, args.payload_kib * 1024)
            print(f"payload rate: {rate['rate']:.0f} B/s = {rate['rate'] / RATE_115200:.1%} of {RATE_115200:.0f} B/s "
                  f"({rate['bytes']:,} bytes in {rate['seconds']:.1f} s; {rate['line_bytes']:,} bytes on the line, "
                  f"{rate['retransmits']} retransmissions)", flush=True)
            first = flash_bundle(bundle, proxy.url, board=args.board, progress=False)
            for line in first.lines():
                print(line, flush=True)
            again = flash_bundle(bundle, proxy.url, board=args.board, progress=False)
            print(again.lines()[0], flush=True)
    finally:
        serve.send_signal(signal.SIGINT)
        serve.wait(30)

    files = ", ".join(f"{f.name} {f.size:,} B" for f in first.files)
    where = bundle.relative_to(ROOT) if bundle.is_relative_to(ROOT) else bundle
    share = rate["rate"] / RATE_115200
    rows = [
        (f"payload rate of one PUT + VERIFY ({rate['bytes'] // 1024} KiB)",
         f"{rate['rate']:,.0f} B/s = **{share:.1%}** of the line (target >= 85%)"),
        ("bytes on the line per payload byte (frames, COBS, window resends)",
         f"{rate['line_bytes'] / rate['bytes']:.4f} ({rate['retransmits']} retransmissions)"),
        (f"flash the demo's bundle (`{where}`: {files})",
         f"**{first.seconds:.1f} s** ({first.bytes_sent:,} bytes at {first.throughput:,.0f} B/s; VERIFY each, "
         f"ACTIVATE)"),
        ("flash it again (already active: HELLO only)", f"{again.seconds:.2f} s"),
    ]
    body = (f"Emulated line: tests/edge/serial_proxy.py limits each direction to {RATE_115200:,.0f} B/s (115200 baud, "
            f"8N1); the agent is the bundle's own `dtorch-agent` for {args.board}, run by `dtorch-edge device serve` "
            f"({info['emulator']}). Throughput is the host's: payload bytes over wall time.\n\n"
            "| measurement | figure |\n| --- | ---: |\n" + "".join(f"| {a} | {b} |\n" for a, b in rows))
    print(body)
    if args.write:
        write_section("Flash over a 115200-baud line (issue 14)", body, "python benchmarks/bench_flash.py --write")


if __name__ == "__main__":
    main()
