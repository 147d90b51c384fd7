"""Emulating a bare-metal board (qemu-system-arm on an MPS2/MPS3 machine): the firmware of dtorch/edge/firmware.py
boots from its vector table, runs the model's bundled test vector through the C API and prints one JSON line on the
semihosting console. The figures, each labelled emulated (the estimate labelled estimate):

- parity: the firmware's output bits against the host's portable kernels on the same test vector (bit for bit),
  and against the bundled expected output (the eager model's, within the float tolerance);
- instructions per inference: the TCG plugin's count of a run of 3 inferences minus a run of 1, halved
  (deterministic; the start-up and the load are the 1-run count minus that);
- cycles and latency on the real board, estimated from the board file's clock and cycles per instruction;
- memory: flash and RAM of the firmware by part (the ELF), the arena the model really used (the firmware's report)
  against the static one, and whether it all fits the board.

QEMU runs with ``-icount shift=0`` (one instruction, one nanosecond of virtual time: the run is deterministic).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .errors import EmulateError, RunnerUnavailable
from .runner import run_process

__all__ = ["emulate_firmware", "firmware_lines", "run_firmware"]


def _result_line(text: str) -> dict[str, Any] | None:
    for line in text.splitlines():
        line = line.strip()
        if line.startswith('{"ok"'):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def run_firmware(board: Any, elf: Path, runs: int, *, timeout: float, plugin: Path | None) -> tuple[dict[str, Any],
                                                                                                    int | None]:
    """One boot of the firmware doing `runs` inferences: its JSON report and, with `plugin`, the guest instructions."""
    emu = board.emulator
    if shutil.which(emu.binary) is None:
        raise RunnerUnavailable(f"{emu.binary} is not installed (it emulates {board.name}); install it with: "
                                "apt-get install qemu-system-arm (or run scripts/setup.sh)")
    argv = emu.command(elf, str(runs))
    with tempfile.TemporaryDirectory() as d:
        count_file = Path(d) / "count.txt"
        argv = [argv[0], "-icount", "shift=0",
                *(["-plugin", f"{plugin},outfile={count_file}"] if plugin is not None else []), *argv[1:]]
        r = run_process(argv, timeout=timeout, what=f"the firmware on {board.name}")
        out = _result_line(r.stdout + "\n" + r.stderr)
        if out is None:
            raise EmulateError(f"the firmware on {board.name} printed no result (exit status {r.returncode}): "
                               f"{r.last_error_line()}")
        if not out.get("ok"):
            raise EmulateError(f"the firmware failed on the emulated {board.name} ({out.get('stage')}): "
                               f"{out.get('error')}")
        count = None
        if plugin is not None:
            try:
                count = int(count_file.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                raise EmulateError("the instruction-count plugin wrote no count for the firmware run") from None
    return out, count


def emulate_firmware(board: Any, *, model: Path | None, bundle: Path | None, out: Path, timeout: float,
                     count_instructions: bool, log: Callable[[str], None], progress: bool, kernels: str) -> Any:
    from ..build import BuildError, build_bundle
    from .core import PARITY_TOLERANCE, EmulationReport, _max_rel
    from .plugin import build_plugin

    bundle_dir = (bundle if bundle is not None else out / board.name).resolve()
    if bundle is None:
        assert model is not None
        try:
            build_bundle(board.name, [model], out=out, log=log, progress=progress, kernels=kernels)
        except BuildError as e:
            raise EmulateError(str(e)) from None
    mpath = bundle_dir / "manifest.json"
    if not mpath.is_file():
        raise EmulateError(f"{str(bundle_dir)!r} is not a firmware bundle (no manifest.json); build one with "
                           f"dtorch-edge build --board {board.name} --model MODEL.dtm")
    manifest = json.loads(mpath.read_text())
    if manifest.get("board") != board.name or manifest.get("kind") != "firmware":
        raise EmulateError(f"the bundle {str(bundle_dir)!r} was built for board '{manifest.get('board')}', not "
                           f"'{board.name}'; build it with dtorch-edge build --board {board.name}")
    elf = bundle_dir / "firmware.elf"
    dtm_path = bundle_dir / manifest["model"]
    plugin = build_plugin() if count_instructions else None
    log(f"emulating {board.name} with {board.emulator.summary()} (figures are emulated, not the board's)")
    one, c1 = run_firmware(board, elf, 1, timeout=timeout, plugin=plugin)
    _, c3 = run_firmware(board, elf, 3, timeout=timeout, plugin=plugin) if plugin is not None else (None, None)

    # Parity: the host's portable kernels on the same test vector.
    from ...runtime import InferenceSession

    sess = InferenceSession(str(dtm_path), kernels="portable")
    tv = sess.test_vector()
    if tv is None:
        raise EmulateError(f"{dtm_path.name} bundles no test vector; export it with bundle_example=True")
    inputs, expected = tv
    host = sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), inputs)})
    got = [np.frombuffer(bytes.fromhex(o["hex"]), dtype=h.dtype).reshape(h.shape)
           for o, h in zip(one["outputs"], host)]
    bits = len(got) == len(host) and all(g.tobytes() == h.tobytes() for g, h in zip(got, host))
    rel = max((_max_rel(g, e) for g, e in zip(got, expected)), default=0.0)
    host_abs = max((float(np.max(np.abs(g.astype(np.float64) - h))) for g, h in zip(got, host) if h.size), default=0.0)
    parity = {"label": "emulated", "host_bits_equal": bits, "vs_host_max_abs": host_abs, "vs_expected_max_rel": rel,
              "pass": bits and rel <= PARITY_TOLERANCE * 10, "tolerance": PARITY_TOLERANCE}

    mcu = board.mcu
    sizes = manifest["sizes"]
    per = (c3 - c1) // 2 if c1 is not None and c3 is not None else None
    instructions = {"label": "emulated", "per_inference": per, "startup_and_load": (c1 - per) if per else None}
    cycles = per * mcu.cpi if per is not None else None
    mhz = board.primary.mhz
    estimate = {"label": "estimate", "cycles": cycles, "cpi": mcu.cpi, "mhz": mhz,
                "latency_ms": cycles / (mhz * 1e3) if cycles is not None and mhz else None}
    memory = {"label": "emulated", "flash_bytes": sizes["flash"], "board_flash_bytes": mcu.flash_bytes,
              "runtime_flash_bytes": sizes["runtime_flash"], "model_bytes": sizes["model"], "ram_bytes": sizes["ram"],
              "board_ram_bytes": mcu.ram_bytes, "arena_bytes": one["arena_bytes"], "arena_used_bytes": one["arena_used"],
              "stack_bytes": sizes["stack"], "text": sizes["text"], "rodata": sizes["rodata"], "data": sizes["data"],
              "bss": sizes["bss"],
              "fits": sizes["flash"] <= mcu.flash_bytes and sizes["ram"] <= mcu.ram_bytes}
    figures = {"kind": "firmware", "label": "emulated", "parity": parity, "instructions": instructions,
               "estimate": estimate, "memory": memory, "toolchain": manifest.get("toolchain"),
               "size": {"firmware_flash_bytes": sizes["flash"], "files": {p.name: p.stat().st_size
                                                                        for p in bundle_dir.iterdir() if p.is_file()}}}
    return EmulationReport(board=board.name, runner="local", emulator=board.emulator.summary(), model=str(dtm_path),
                           bundle=str(bundle_dir), figures=figures)


def firmware_lines(rep: Any) -> list[str]:
    f = rep.figures
    p, ins, est, mem = f["parity"], f["instructions"], f["estimate"], f["memory"]
    lines = [f"{rep.board}: firmware under {rep.emulator}; all figures emulated unless marked estimate"]
    lines.append(f"  parity (emulated): {'PASS' if p['pass'] else 'FAIL'}: host portable bits "
                 f"{'identical' if p['host_bits_equal'] else 'DIFFER'}; vs the bundled expected output "
                 f"{p['vs_expected_max_rel']:.2e} x output scale")
    if ins["per_inference"] is not None:
        lines.append(f"  guest instructions per inference (emulated, deterministic): {ins['per_inference']:,} "
                     f"(start-up and load: {ins['startup_and_load']:,})")
        lines.append(f"  on the real board (estimate, not measured): {est['cycles']:,.0f} cycles at CPI {est['cpi']} "
                     f"= {est['latency_ms']:.2f} ms at {est['mhz']} MHz")
    lines.append(f"  flash: {mem['flash_bytes']:,} of {mem['board_flash_bytes']:,} bytes (runtime "
                 f"{mem['runtime_flash_bytes']:,}, model {mem['model_bytes']:,}); RAM: {mem['ram_bytes']:,} of "
                 f"{mem['board_ram_bytes']:,} (arena {mem['arena_bytes']:,}, used {mem['arena_used_bytes']:,}; stack "
                 f"{mem['stack_bytes']:,}): " + ("fits" if mem["fits"] else "FAIL: does not fit"))
    return lines
