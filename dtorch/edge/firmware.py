"""Bare-metal firmware builds (boards with an [mcu] table: Cortex-M under qemu-system-arm).

`build_firmware` turns one `.dtm` into a firmware ELF for a microcontroller: the model's bytes in flash (its own
section, 64-byte aligned, used in place), one static arena sized for it, and the heapless core with the portable
kernels of the model's operators (runtime/core, runtime/baremetal, through SConstruct's board build). It writes
into build/<board>/<toolchain>/<op set>/firmware/:

- model.dtm and model_data.S (``.incbin`` of it into ``.dtorch_model``);
- firmware_config.h: ``DTORCH_ARENA_BYTES``, the C API engine's figure for the model on this machine
  (``dtorch.runtime._C.engine_arena_bytes``, portable kernels: 64-bit tables, so a 32-bit target needs no more;
  the firmware reports what it really used);
- link.ld from emulation/baremetal/link.ld.in with the board's flash and RAM sizes at its emulated machine's
  addresses, so a firmware that does not fit the board does not link.

Before compiling it checks that the model's bytes and the arena fit the board, and says by how much they do not and
what would help. After linking it reads the ELF's sections (flash: code, constants, the model; RAM: data, bss with
the arena, the stack) and refuses a firmware that links a heap (malloc, sbrk, operator new) or the exception
runtime. The dist folder gets firmware.elf, model.dtm, manifest.json and size_report.md.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["FirmwareError", "FirmwareSizes", "build_firmware", "elf_sizes", "HEAP_SYMBOLS"]

#: Symbols whose presence means the firmware links a heap or the C++ exception runtime.
HEAP_SYMBOLS = ("malloc", "_malloc_r", "calloc", "realloc", "free", "_free_r", "_sbrk", "_sbrk_r", "_Znwj", "_Znaj",
                "_ZnwjSt11align_val_t", "__cxa_allocate_exception", "__cxa_throw")
_STACK_NOTE = "the stack is reserved at the top of RAM (the board file's mcu.stack_kb)"


class FirmwareError(RuntimeError):
    """A firmware that cannot be built: the model does not fit, an operator has no kernel here, the toolchain is
    missing, or the link brings in a heap."""


@dataclass
class FirmwareSizes:
    """Bytes of a firmware ELF by where they live."""

    text: int = 0           # code (the runtime's, the kernels', libc/libm's) and the vector table
    rodata: int = 0         # constants other than the model (tables, strings)
    model: int = 0          # the .dtm bytes (.dtorch_model)
    data: int = 0           # initialised RAM (its initial values also take flash)
    bss: int = 0            # zeroed RAM, the arena included
    arena: int = 0          # the static arena (in bss)
    stack: int = 0          # reserved stack
    other_flash: int = 0    # init arrays, exception index
    sections: dict[str, int] = field(default_factory=dict)

    @property
    def flash(self) -> int:
        return self.text + self.rodata + self.model + self.data + self.other_flash

    @property
    def ram(self) -> int:
        return self.data + self.bss + self.stack

    @property
    def runtime_flash(self) -> int:
        """Flash without the model: the runtime's own code and constants (what a second model would not add)."""
        return self.flash - self.model

    def to_json(self) -> dict[str, int]:
        return {"text": self.text, "rodata": self.rodata, "model": self.model, "data": self.data, "bss": self.bss,
                "arena": self.arena, "stack": self.stack, "other_flash": self.other_flash, "flash": self.flash,
                "ram": self.ram, "runtime_flash": self.runtime_flash}


def elf_sizes(elf: Path, size_tool: str, nm_tool: str) -> FirmwareSizes:
    """The firmware's sizes from ``size -A`` (sections) and ``nm`` (the arena symbol)."""
    out = subprocess.run([size_tool, "-A", str(elf)], capture_output=True, text=True, check=True).stdout
    s = FirmwareSizes()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3 or not parts[0].startswith(".") or not parts[1].isdigit():
            continue
        name, n = parts[0], int(parts[1])
        s.sections[name] = n
        if name in (".isr_vector", ".text"):
            s.text += n
        elif name == ".rodata":
            s.rodata += n
        elif name == ".dtorch_model":
            s.model += n
        elif name == ".data":
            s.data += n
        elif name == ".bss":
            s.bss += n
        elif name == ".stack":
            s.stack += n
        elif name in (".ARM.exidx", ".ARM.extab", ".preinit_array", ".init_array", ".fini_array"):
            s.other_flash += n
    syms = subprocess.run([nm_tool, "-S", str(elf)], capture_output=True, text=True, check=True).stdout
    for line in syms.splitlines():
        parts = line.split()
        if len(parts) == 4 and "g_arena" in parts[3]:
            s.arena = int(parts[1], 16)
    return s


def _kib(n: int) -> str:
    return f"{n / 1024:.1f} KiB"


def _fit_message(board: Any, what: str, need: int, have: int, model: Path, int8: bool) -> str:
    hints = ["quantize it to int8 (dt.quant.quantize: about 4x smaller weights and activations)"] if not int8 else []
    hints.append("export it with a smaller input (fewer activation bytes)")
    hints.append("or pick a board with more " + ("flash" if what == "flash" else "RAM"))
    return (f"{model.name} does not fit {board.name}'s {what}: it needs {need:,} bytes ({_kib(need)}) of "
            f"{have:,} ({_kib(have)}), {need - have:,} bytes too many; " + "; ".join(hints))


def _first_link_error(text: str) -> str:
    for line in text.splitlines():
        if "overflowed by" in line or "does not fit" in line or "undefined reference" in line or "error" in line:
            return line.strip()
    return text.strip().splitlines()[-1] if text.strip() else "unknown error"


def build_firmware(board: Any, model: Path, out: Path, *, toolchain: str | None = None, jobs: int = 2,
                   log: Callable[[str], None] = print, kernels: str = "fast",
                   run_scons: Callable[[list[str]], tuple[int, str]]) -> dict[str, Any]:
    """Builds the firmware of `model` for bare-metal `board` into `out` (the dist folder, replaced atomically by the
    caller); returns the manifest. `run_scons(args)` runs SCons in the resource root and returns (status, output)."""
    from .._export.errors import DtmFormatError
    from .._fileio import write_atomic
    from ..runtime import _C
    from .boards import BoardError
    from .build_plan import PlanError, make_plan
    from .oplist import OpList, OpListError
    from .resources import resource_root
    from .toolchains import ToolchainError

    root = resource_root()
    mcu = board.mcu
    data = model.read_bytes()
    try:
        ops = OpList.from_model(model)
        plan = make_plan(board, toolchain=toolchain, ops=ops, root=root, kernels=kernels)
    except (OpListError, DtmFormatError) as e:
        raise FirmwareError(f"{model.name} cannot run on {board.name}: {e} (this target has the portable kernels "
                            "only)") from None
    except (BoardError, ToolchainError, PlanError) as e:
        raise FirmwareError(str(e)) from None
    int8 = any(e.startswith(("qconv2d", "qlinear", "quantize")) for e in ops.entries())
    try:
        arena = int(_C.engine_arena_bytes(data, "portable"))
    except Exception as e:  # the model itself is refused: say so before compiling
        raise FirmwareError(f"{model.name} cannot be loaded: {e}") from None
    arena = (arena + 63) // 64 * 64
    if len(data) > mcu.flash_bytes:
        raise FirmwareError(_fit_message(board, "flash", len(data), mcu.flash_bytes, model, int8))
    if arena + mcu.stack_bytes > mcu.ram_bytes:
        raise FirmwareError(_fit_message(board, "RAM", arena + mcu.stack_bytes, mcu.ram_bytes, model, int8) +
                            f" (arena {arena:,} + stack {mcu.stack_bytes:,})")

    gen = root / plan.variant / "firmware"
    gen.mkdir(parents=True, exist_ok=True)
    files = {
        "model.dtm": data,
        "model_data.S": (
            "/* The model's bytes in flash (generated by dtorch-edge build). */\n"
            '  .section .dtorch_model,"a"\n  .balign 64\n  .global dtorch_model_data\ndtorch_model_data:\n'
            f'  .incbin "{gen / "model.dtm"}"\n  .section .rodata\n  .balign 4\n  .global dtorch_model_size\n'
            f"dtorch_model_size:\n  .word {len(data)}\n").encode(),
        "firmware_config.h": (f"/* Generated by dtorch-edge build for {model.name} on {board.name}. */\n"
                              f"#define DTORCH_ARENA_BYTES {arena}\n").encode(),
        "link.ld": (root / "emulation" / "baremetal" / "link.ld.in").read_text()
        .replace("@FLASH_ORIGIN@", hex(board.emulator.flash_origin)).replace("@FLASH_BYTES@", str(mcu.flash_bytes))
        .replace("@RAM_ORIGIN@", hex(board.emulator.ram_origin)).replace("@RAM_BYTES@", str(mcu.ram_bytes))
        .replace("@STACK_BYTES@", str(mcu.stack_bytes)).encode(),
    }
    for name, content in files.items():
        p = gen / name
        if not p.exists() or p.read_bytes() != content:  # unchanged files keep their time stamps: SCons skips them
            write_atomic(p, content)
    args = [f"board={board.name}", f"toolchain={plan.toolchain.family}", f"models={gen / 'model.dtm'}",
            f"firmware={gen}", *([f"kernels={kernels}"] if kernels != "fast" else [])]
    rc, text = run_scons(args)
    if rc != 0:
        why = _first_link_error(text)
        if "overflowed by" in why or "does not fit" in why:
            raise FirmwareError(f"{model.name} does not fit {board.name}: {why}; quantize it to int8 "
                                "(dt.quant.quantize) or export it with a smaller input")
        raise FirmwareError(f"building the firmware for {board.name} failed: {why}")
    elf = root / plan.variant / "firmware.elf"
    size_tool = plan.found.tools.get("size", ("arm-none-eabi-size",))[0]
    nm_tool = plan.found.tools.get("nm", ("arm-none-eabi-nm",))[0]
    names = set(subprocess.run([nm_tool, str(elf)], capture_output=True, text=True, check=True).stdout.split())
    heap = sorted(s for s in HEAP_SYMBOLS if s in names)
    if heap:
        raise FirmwareError(f"the firmware links a heap or the exception runtime ({', '.join(heap)}); the runtime "
                            "must not allocate on a microcontroller (a bug: report it)")
    sizes = elf_sizes(elf, size_tool, nm_tool)

    out.mkdir(parents=True, exist_ok=True)
    shutil.copy2(elf, out / "firmware.elf")
    shutil.copy2(model, out / model.name)
    manifest: dict[str, Any] = {
        "board": board.name, "kind": "firmware", "toolchain": plan.toolchain.family, "compiler": plan.found.version,
        "flags": list(plan.compile_flags), "link_flags": list(plan.link_flags), "runtime_hash": plan.runtime_hash,
        "opset_hash": plan.opset_hash, "ops": ops.entries(), "model": model.name, "arena_bytes": arena,
        "flash_bytes": mcu.flash_bytes, "ram_bytes": mcu.ram_bytes, "sizes": sizes.to_json(),
        "files": {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (out / "firmware.elf", out / model.name)},
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    report = size_report(board, model.name, sizes)
    (out / "size_report.md").write_text(report)
    for line in report.splitlines()[2:]:
        if line.startswith("|") and not line.startswith("|---"):
            log("  " + re.sub(r"\s*\|\s*", "  ", line).strip())
    return manifest


def size_report(board: Any, model_name: str, s: FirmwareSizes) -> str:
    """size_report.md: flash and RAM by part, against the board's."""
    mcu = board.mcu
    rows = [
        ("flash", s.flash, mcu.flash_bytes, f"code {s.text:,} + constants {s.rodata:,} + model {s.model:,} + data "
                                            f"{s.data:,} + other {s.other_flash:,}"),
        ("  of which the runtime", s.runtime_flash, mcu.flash_bytes, "everything but the model's bytes"),
        ("RAM", s.ram, mcu.ram_bytes, f"data {s.data:,} + bss {s.bss:,} (arena {s.arena:,}) + stack {s.stack:,}"),
    ]
    lines = [f"# {model_name} on {board.name}", "", "| memory | used | of | share | parts |", "|---|---:|---:|---:|---|"]
    for name, used, of, parts in rows:
        lines.append(f"| {name} | {used:,} | {of:,} | {100 * used / of:.1f}% | {parts} |")
    lines.append("")
    lines.append(f"The arena holds the model's tables, tensors, scratch and outputs; {_STACK_NOTE}.")
    return "\n".join(lines) + "\n"
