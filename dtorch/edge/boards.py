"""Boards: one TOML data file per board under ``boards/`` (no code), loaded and validated into a `Board`.

A board file names its architecture, CPU clusters (cores, clock, fp32 FLOPs per cycle), RAM, the build profile
(``size`` = -Os, ``speed`` = -O2), the toolchain families it accepts in order of preference with the compile
flags each family spells for it, its emulator profile (QEMU user-mode binary and ``-cpu`` model) and its
accelerators. ``boards/host.toml`` describes the machine you are on: ``arch = "native"`` and its CPU and RAM are
detected when it is loaded.

    >>> from dtorch.edge.boards import load_board
    >>> b = load_board("rk3588")
    >>> b.arch, b.opt_flag, b.flags_for("gcc-cross").cxxflags
    ('aarch64', '-O2', ('-mcpu=cortex-a76',))
"""

from __future__ import annotations

import difflib
import os
import platform
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._fileio import read_regular

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "BARE_METAL_ARCHES",
    "Mcu",
    "ARCHES",
    "PROFILES",
    "Accelerator",
    "Board",
    "BoardError",
    "BoardFlags",
    "CpuCluster",
    "Emulator",
    "boards_dir",
    "host_arch",
    "list_boards",
    "load_board",
    "load_board_file",
    "load_boards",
]

#: Architectures a board file may name ("native": the machine the SDK runs on, detected at load time).
ARCHES = ("aarch64", "armv7", "riscv64", "x86_64", "hexagon", "armv7e-m", "armv8.1-m")
#: Architectures without an operating system: a board of one of these builds a bare-metal firmware ([mcu] table).
BARE_METAL_ARCHES = ("armv7e-m", "armv8.1-m")
#: Build profiles and the optimisation flag each one means.
PROFILES = {"size": "-Os", "speed": "-O2"}
EMULATOR_KINDS = ("qemu-user", "qemu-system", "native")
ACCELERATOR_KINDS = ("npu", "gpu", "dsp", "mcu")

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_MACHINE_ARCH = {
    "x86_64": "x86_64", "amd64": "x86_64",
    "aarch64": "aarch64", "arm64": "aarch64",
    "armv7l": "armv7", "armv7": "armv7", "armv8l": "armv7",
    "riscv64": "riscv64",
    "hexagon": "hexagon",
}


class BoardError(ValueError):
    """An unknown board name, or a board file that is missing, unreadable or malformed.

    `path` is the board file (None for an unknown name), `field` the offending field (dotted, e.g.
    ``cpu[0].mhz``) when there is one.
    """

    def __init__(self, message: str, *, path: Path | None = None, field: str | None = None) -> None:
        self.path = path
        self.field = field
        prefix = ""
        if path is not None:
            prefix = f"{path}: "
            if field is not None:
                prefix += f"field '{field}': "
        super().__init__(prefix + message)


@dataclass(frozen=True)
class CpuCluster:
    """A group of identical cores. `fp32_flops_per_cycle` is the per-core peak (FMA = 2) for code built for
    this board (NEON/RVV width where the board's flags enable it); None only for the detected host."""

    core: str
    count: int
    mhz: int
    fp32_flops_per_cycle: float | None = None
    note: str = ""

    @property
    def peak_gflops_per_core(self) -> float | None:
        """Peak fp32 GFLOP/s of one core: FLOPs per cycle x clock."""
        if self.fp32_flops_per_cycle is None:
            return None
        return self.fp32_flops_per_cycle * self.mhz / 1000.0

    def summary(self) -> str:
        if not self.mhz:
            clock = ""
        elif self.mhz < 1000:
            clock = f" @ {self.mhz} MHz"
        else:
            clock = f" @ {self.mhz / 1000:.3f}".rstrip("0").rstrip(".") + " GHz"
        return f"{self.count}x {self.core}{clock}"


@dataclass(frozen=True)
class BoardFlags:
    """The compile and link flags one toolchain family spells for a board's CPU."""

    cxxflags: tuple[str, ...] = ()
    ldflags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Emulator:
    """How a board's binaries run on this machine: QEMU user mode with a ``-cpu`` model, or natively (host).

    `stand_in` is true when QEMU 7.2 has no model of the board's exact core and `cpu` is the closest one it has.
    """

    kind: str
    binary: str | None = None
    cpu: str | None = None
    stand_in: bool = False
    note: str = ""
    machine: str | None = None  # qemu-system: the -M machine (e.g. mps2-an500)
    flash_origin: int = 0x0            # qemu-system: where the machine maps the memory that stands in for flash
    ram_origin: int = 0x20000000       # ... and for RAM

    def command(self, program: str | os.PathLike[str], *args: str) -> list[str]:
        """The argv that runs `program` on this board's emulator (the program itself for a native board)."""
        if self.kind == "none":
            raise ValueError("this board has no emulator ([emulator] is missing from its board file)")
        if self.kind == "native":
            return [str(program), *args]
        assert self.binary is not None and self.cpu is not None
        if self.kind == "qemu-system":  # a firmware ELF; its arguments reach it as the semihosting command line
            sh = ",".join(["enable=on", "target=native", f"arg={Path(program).name}", *(f"arg={a}" for a in args)])
            return [self.binary, "-M", str(self.machine), "-cpu", self.cpu, "-nographic", "-monitor", "none",
                    "-serial", "none", "-semihosting-config", sh, "-kernel", str(program)]
        return [self.binary, "-cpu", self.cpu, str(program), *args]

    @property
    def cpu_model(self) -> str | None:
        """The ``-cpu`` model name without QEMU properties (``rv64,v=true`` -> ``rv64``)."""
        return self.cpu.split(",", 1)[0] if self.cpu else None

    def summary(self) -> str:
        if self.kind == "none":
            return "none"
        if self.kind == "native":
            return "native"
        machine = f" -M {self.machine}" if self.machine else ""
        return f"{self.binary}{machine} -cpu {self.cpu}" + (" (stand-in)" if self.stand_in else "")


@dataclass(frozen=True)
class Mcu:
    """A microcontroller's memories (bare-metal boards): flash and RAM in KiB as the part has them, the stack the
    firmware reserves, and the cycles per instruction the latency estimate assumes."""

    flash_kb: int
    ram_kb: int
    stack_kb: int
    cpi: float

    @property
    def flash_bytes(self) -> int:
        return self.flash_kb * 1024

    @property
    def ram_bytes(self) -> int:
        return self.ram_kb * 1024

    @property
    def stack_bytes(self) -> int:
        return self.stack_kb * 1024


@dataclass(frozen=True)
class Accelerator:
    """An accelerator on the board. `tops` is the vendor's peak figure in `precision` (None when the vendor publishes
    no comparable figure). The cost-model figures a simulating backend reads (dtorch/backends/npu_sim.py), each None
    when the file gives none: `mhz` (clock), `cores`, `macs_per_cycle` (int8 multiply-accumulates per cycle of one
    core), `dma_gbs` (the bandwidth its DMA gets, GB/s), `launch_us` (the cost of starting one job)."""

    kind: str
    name: str
    tops: float | None = None
    precision: str = ""
    note: str = ""
    mhz: int | None = None
    cores: int | None = None
    macs_per_cycle: int | None = None
    dma_gbs: float | None = None
    launch_us: float | None = None


@dataclass(frozen=True)
class Board:
    """One board, as described by its file under ``boards/``."""

    name: str
    description: str
    arch: str  # resolved: never "native"
    cpu: tuple[CpuCluster, ...]
    ram_mb: int
    profile: str
    toolchains: tuple[str, ...]
    flags: Mapping[str, BoardFlags]
    emulator: Emulator
    accelerators: tuple[Accelerator, ...] = ()
    isa: tuple[str, ...] = ()
    mem_bandwidth_gbs: float | None = None
    native: bool = False  # the file says arch = "native" (the host board)
    path: Path | None = field(default=None, compare=False)
    mcu: Mcu | None = None  # bare-metal boards: flash, RAM, stack

    @property
    def bare_metal(self) -> bool:
        """Whether the board runs a bare-metal firmware (no operating system) rather than dtorch-run."""
        return self.mcu is not None

    @property
    def opt_flag(self) -> str:
        """``-Os`` for the size profile, ``-O2`` for speed."""
        return PROFILES[self.profile]

    @property
    def cores(self) -> int:
        return sum(c.count for c in self.cpu)

    @property
    def primary(self) -> CpuCluster:
        """The cluster a model runs on (the first one listed: the big cores)."""
        return self.cpu[0]

    def flags_for(self, family: str) -> BoardFlags:
        """The CPU flags `family` spells for this board; a `BoardError` if the board has none for it."""
        try:
            return self.flags[family]
        except KeyError:
            raise BoardError(
                f"board '{self.name}' has no flags for toolchain family '{family}' (it has: "
                f"{', '.join(sorted(self.flags)) or 'none'}); add a [flags.{family}] table to its file",
                path=self.path) from None

    def cpu_summary(self) -> str:
        return " + ".join(c.summary() for c in self.cpu)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "arch": self.arch,
            "native": self.native,
            "cpu": [
                {"core": c.core, "count": c.count, "mhz": c.mhz, "fp32_flops_per_cycle": c.fp32_flops_per_cycle,
                 "peak_gflops_per_core": c.peak_gflops_per_core, "note": c.note}
                for c in self.cpu
            ],
            "isa": list(self.isa),
            "ram_mb": self.ram_mb,
            "mcu": None if self.mcu is None else {"flash_kb": self.mcu.flash_kb, "ram_kb": self.mcu.ram_kb,
                                                  "stack_kb": self.mcu.stack_kb, "cpi": self.mcu.cpi},
            "mem_bandwidth_gbs": self.mem_bandwidth_gbs,
            "profile": self.profile,
            "opt_flag": self.opt_flag,
            "toolchains": list(self.toolchains),
            "flags": {k: {"cxxflags": list(v.cxxflags), "ldflags": list(v.ldflags)} for k, v in self.flags.items()},
            "emulator": {"kind": self.emulator.kind, "binary": self.emulator.binary, "cpu": self.emulator.cpu,
                         "machine": self.emulator.machine,
                         "stand_in": self.emulator.stand_in, "note": self.emulator.note},
            "accelerators": [{"kind": a.kind, "name": a.name, "tops": a.tops, "precision": a.precision,
                              "note": a.note, "mhz": a.mhz, "cores": a.cores, "macs_per_cycle": a.macs_per_cycle,
                              "dma_gbs": a.dma_gbs, "launch_us": a.launch_us} for a in self.accelerators],
            "file": str(self.path) if self.path else None,
        }


# --- host detection ---------------------------------------------------------------------------------------------

def host_arch(machine: str | None = None) -> str:
    """This machine's architecture in board-file spelling (``x86_64``, ``aarch64``, ``armv7``, ``riscv64``)."""
    m = (machine or platform.machine()).lower()
    return _MACHINE_ARCH.get(m, m)


def _host_cpu() -> CpuCluster:
    name, mhz = "", 0
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip().lower(), value.strip()
        if not name and key in ("model name", "uarch", "cpu model", "hardware"):
            name = value
        if not mhz and key == "cpu mhz":
            try:
                mhz = round(float(value))
            except ValueError:
                pass
    try:  # the maximum clock, where cpufreq is there (ARM and RISC-V boards have no "cpu MHz" line)
        mhz = round(int(Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq").read_text()) / 1000) or mhz
    except (OSError, ValueError):
        pass
    return CpuCluster(core=name or platform.processor() or host_arch(), count=os.cpu_count() or 1, mhz=mhz,
                      note="detected")


def _host_ram_mb() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 0


# --- validation -----------------------------------------------------------------------------------------------

_TOP_KEYS = {"name", "description", "arch", "ram_mb", "profile", "toolchains", "isa", "cpu", "memory", "flags",
             "emulator", "accelerators", "mcu"}


class _Reader:
    """Typed field access on a parsed board file; every problem becomes a `BoardError` naming the file and field."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, fld: str | None, message: str) -> BoardError:
        return BoardError(message, path=self.path, field=fld)

    def table(self, data: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> dict[str, Any] | None:
        fld = f"{where}{key}"
        if key not in data:
            if required:
                raise self.fail(fld, "missing (a [" + fld + "] table is required)")
            return None
        value = data[key]
        if not isinstance(value, dict):
            raise self.fail(fld, f"expected a table, got {type(value).__name__}")
        return value

    def str_(self, data: Mapping[str, Any], key: str, where: str = "", *, required: bool = True,
             choices: tuple[str, ...] | None = None, default: str | None = None) -> str | None:
        fld = f"{where}{key}"
        if key not in data:
            if required:
                raise self.fail(fld, "missing")
            return default
        value = data[key]
        if not isinstance(value, str) or not value.strip():
            raise self.fail(fld, f"expected a non-empty string, got {value!r}")
        if choices is not None and value not in choices:
            raise self.fail(fld, f"{value!r} is not one of {', '.join(choices)}")
        return value

    def int_(self, data: Mapping[str, Any], key: str, where: str = "", *, required: bool = True) -> int | None:
        fld = f"{where}{key}"
        if key not in data:
            if required:
                raise self.fail(fld, "missing")
            return None
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise self.fail(fld, f"expected a positive integer, got {value!r}")
        return value

    def num(self, data: Mapping[str, Any], key: str, where: str = "", *, required: bool = True) -> float | None:
        fld = f"{where}{key}"
        if key not in data:
            if required:
                raise self.fail(fld, "missing")
            return None
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise self.fail(fld, f"expected a positive number, got {value!r}")
        return float(value)

    def bool_(self, data: Mapping[str, Any], key: str, where: str = "", *, default: bool = False) -> bool:
        if key not in data:
            return default
        value = data[key]
        if not isinstance(value, bool):
            raise self.fail(f"{where}{key}", f"expected true or false, got {value!r}")
        return value

    def strs(self, data: Mapping[str, Any], key: str, where: str = "", *, required: bool = True,
             nonempty: bool = False) -> tuple[str, ...]:
        fld = f"{where}{key}"
        if key not in data:
            if required:
                raise self.fail(fld, "missing")
            return ()
        value = data[key]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.fail(fld, f"expected a list of non-empty strings, got {value!r}")
        if nonempty and not value:
            raise self.fail(fld, "must not be empty")
        return tuple(value)

    def no_extra(self, data: Mapping[str, Any], allowed: set[str], where: str) -> None:
        extra = sorted(set(data) - allowed)
        if extra:
            raise self.fail(f"{where}{extra[0]}", f"unknown field (allowed here: {', '.join(sorted(allowed))})")


def _parse(path: Path, data: Mapping[str, Any]) -> Board:
    r = _Reader(path)
    r.no_extra(data, _TOP_KEYS, "")
    name = r.str_(data, "name")
    assert name is not None
    if not _NAME_RE.match(name):
        raise r.fail("name", f"{name!r} must be lower-case letters, digits and '-'")
    if name != path.stem:
        raise r.fail("name", f"{name!r} does not match the file name {path.name!r} (expected {path.stem!r})")
    description = r.str_(data, "description")
    declared_arch = r.str_(data, "arch", choices=(*ARCHES, "native"))
    native = declared_arch == "native"
    arch = host_arch() if native else declared_arch
    assert description is not None and arch is not None

    # CPU clusters: required, except on the native (host) board where they are detected.
    clusters: list[CpuCluster] = []
    raw_cpu = data.get("cpu")
    if raw_cpu is None:
        if not native:
            raise r.fail("cpu", "missing (one [[cpu]] table per cluster: core, count, mhz, fp32_flops_per_cycle)")
        clusters.append(_host_cpu())
    else:
        if not isinstance(raw_cpu, list) or not raw_cpu:
            raise r.fail("cpu", "expected one or more [[cpu]] tables")
        for i, c in enumerate(raw_cpu):
            where = f"cpu[{i}]."
            if not isinstance(c, dict):
                raise r.fail(f"cpu[{i}]", "expected a table")
            r.no_extra(c, {"core", "count", "mhz", "fp32_flops_per_cycle", "note"}, where)
            clusters.append(CpuCluster(
                core=r.str_(c, "core", where) or "",
                count=r.int_(c, "count", where) or 0,
                mhz=r.int_(c, "mhz", where) or 0,
                fp32_flops_per_cycle=r.num(c, "fp32_flops_per_cycle", where, required=not native),
                note=r.str_(c, "note", where, required=False, default="") or "",
            ))

    bare = arch in BARE_METAL_ARCHES
    mcu = None
    raw_mcu = r.table(data, "mcu", "", required=bare)
    if raw_mcu is not None:
        if not bare:
            raise r.fail("mcu", f"only bare-metal boards ({', '.join(BARE_METAL_ARCHES)}) have an [mcu] table")
        r.no_extra(raw_mcu, {"flash_kb", "ram_kb", "stack_kb", "cpi"}, "mcu.")
        mcu = Mcu(flash_kb=r.int_(raw_mcu, "flash_kb", "mcu.") or 0, ram_kb=r.int_(raw_mcu, "ram_kb", "mcu.") or 0,
                  stack_kb=r.int_(raw_mcu, "stack_kb", "mcu.") or 0, cpi=r.num(raw_mcu, "cpi", "mcu.") or 1.0)
        if min(mcu.flash_kb, mcu.ram_kb, mcu.stack_kb) <= 0 or mcu.stack_kb >= mcu.ram_kb or mcu.cpi <= 0:
            raise r.fail("mcu", "flash_kb, ram_kb and stack_kb must be > 0 (stack_kb < ram_kb), cpi > 0")
    ram_mb = r.int_(data, "ram_mb", required=not native and not bare)
    if ram_mb is None:
        ram_mb = -(-mcu.ram_kb // 1024) if mcu is not None else _host_ram_mb()
    profile = r.str_(data, "profile", choices=tuple(PROFILES))
    toolchains = r.strs(data, "toolchains", nonempty=True)
    if len(set(toolchains)) != len(toolchains):
        raise r.fail("toolchains", f"lists a family twice: {list(toolchains)}")
    isa = r.strs(data, "isa", required=False)

    memory = r.table(data, "memory", "", required=not native and not bare) or {}
    r.no_extra(memory, {"bandwidth_gbs", "note"}, "memory.")
    bandwidth = r.num(memory, "bandwidth_gbs", "memory.", required=not native and not bare)

    raw_flags = r.table(data, "flags", "")
    assert raw_flags is not None
    flags: dict[str, BoardFlags] = {}
    for family, ff in raw_flags.items():
        where = f"flags.{family}."
        if not isinstance(ff, dict):
            raise r.fail(f"flags.{family}", "expected a table with cxxflags (and optionally ldflags)")
        r.no_extra(ff, {"cxxflags", "ldflags"}, where)
        flags[family] = BoardFlags(cxxflags=r.strs(ff, "cxxflags", where), ldflags=r.strs(ff, "ldflags", where,
                                                                                           required=False))
    for family in toolchains:
        if family not in flags:
            raise r.fail(f"flags.{family}", f"missing: toolchains lists {family!r}, so a [flags.{family}] table "
                                            "with its cxxflags is required (cxxflags = [] when it needs none)")

    emu = r.table(data, "emulator", "", required=False)
    kind = None
    if emu is not None:
        r.no_extra(emu, {"kind", "binary", "cpu", "stand_in", "note", "machine"}, "emulator.")
        kind = r.str_(emu, "kind", "emulator.", choices=EMULATOR_KINDS)
    if emu is None:  # a board nothing here emulates: dtorch-edge emulate says so
        emulator = Emulator(kind="none")
    elif kind == "qemu-user":
        binary = r.str_(emu, "binary", "emulator.")
        cpu_model = r.str_(emu, "cpu", "emulator.")
        expected = {"aarch64": "qemu-aarch64", "armv7": "qemu-arm", "riscv64": "qemu-riscv64",
                    "x86_64": "qemu-x86_64", "hexagon": "qemu-hexagon"}.get(arch)
        if binary != expected:
            raise r.fail("emulator.binary", f"{binary!r} does not run {arch} binaries (expected {expected!r})")
        emulator = Emulator(kind=kind, binary=binary, cpu=cpu_model, stand_in=r.bool_(emu, "stand_in", "emulator."),
                            note=r.str_(emu, "note", "emulator.", required=False, default="") or "")
    elif kind == "qemu-system":
        if not bare:
            raise r.fail("emulator.kind", "'qemu-system' runs bare-metal firmware: only for boards with an [mcu] table")
        binary = r.str_(emu, "binary", "emulator.")
        if binary != "qemu-system-arm":
            raise r.fail("emulator.binary", f"{binary!r} does not run {arch} firmware (expected 'qemu-system-arm')")
        emulator = Emulator(kind=kind, binary=binary, cpu=r.str_(emu, "cpu", "emulator."),
                            machine=r.str_(emu, "machine", "emulator."), stand_in=r.bool_(emu, "stand_in", "emulator."),
                            note=r.str_(emu, "note", "emulator.", required=False, default="") or "")
    else:
        if not native:
            raise r.fail("emulator.kind", "'native' is only for the host board (arch = \"native\")")
        emulator = Emulator(kind="native", note=r.str_(emu, "note", "emulator.", required=False, default="") or "")

    accelerators: list[Accelerator] = []
    raw_acc = data.get("accelerators", [])
    if not isinstance(raw_acc, list):
        raise r.fail("accelerators", "expected [[accelerators]] tables")
    for i, a in enumerate(raw_acc):
        where = f"accelerators[{i}]."
        if not isinstance(a, dict):
            raise r.fail(f"accelerators[{i}]", "expected a table")
        r.no_extra(a, {"kind", "name", "tops", "precision", "note", "mhz", "cores", "macs_per_cycle", "dma_gbs",
                       "launch_us"}, where)
        accelerators.append(Accelerator(
            kind=r.str_(a, "kind", where, choices=ACCELERATOR_KINDS) or "",
            name=r.str_(a, "name", where) or "",
            tops=r.num(a, "tops", where, required=False),
            precision=r.str_(a, "precision", where, required=False, default="") or "",
            note=r.str_(a, "note", where, required=False, default="") or "",
            mhz=r.int_(a, "mhz", where, required=False),
            cores=r.int_(a, "cores", where, required=False),
            macs_per_cycle=r.int_(a, "macs_per_cycle", where, required=False),
            dma_gbs=r.num(a, "dma_gbs", where, required=False),
            launch_us=r.num(a, "launch_us", where, required=False),
        ))

    return Board(name=name, description=description, arch=arch, cpu=tuple(clusters), ram_mb=ram_mb,
                 profile=profile or "speed", toolchains=toolchains, flags=flags, emulator=emulator,
                 accelerators=tuple(accelerators), isa=isa, mem_bandwidth_gbs=bandwidth, native=native, path=path,
                 mcu=mcu)


# --- loading --------------------------------------------------------------------------------------------------

def boards_dir(root: str | os.PathLike[str] | None = None) -> Path:
    """The boards folder: ``<root>/boards``, where `root` defaults to `resource_root()`."""
    if root is None:
        from .resources import resource_root

        root = resource_root()
    return Path(root) / "boards"


def _dir(root: str | os.PathLike[str] | None, boards_dir_: str | os.PathLike[str] | None) -> Path:
    d = Path(boards_dir_) if boards_dir_ is not None else boards_dir(root)
    if not d.is_dir():
        raise BoardError(f"no boards folder at {d}")
    return d


def list_boards(root: str | os.PathLike[str] | None = None, *,
                boards_dir: str | os.PathLike[str] | None = None) -> list[str]:
    """The names of the boards (their file names without ``.toml``), sorted."""
    return sorted(p.stem for p in _dir(root, boards_dir).glob("*.toml") if not p.name.startswith("."))


def load_board_file(path: str | os.PathLike[str]) -> Board:
    """Load and validate one board file."""
    p = Path(path)
    try:
        raw = read_regular(p, limit=1 << 20)
    except FileNotFoundError:
        raise BoardError("no such board file", path=p) from None
    except OSError as e:
        raise BoardError(f"cannot read: {e.strerror or e}", path=p) from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise BoardError(f"not UTF-8 text ({e.reason} at byte {e.start})", path=p) from None
    except tomllib.TOMLDecodeError as e:
        raise BoardError(f"not valid TOML: {e}", path=p) from None
    return _parse(p, data)


def load_board(name: str, root: str | os.PathLike[str] | None = None, *,
               boards_dir: str | os.PathLike[str] | None = None) -> Board:
    """Load the board called `name`; an unknown name raises `BoardError` with the list and the closest match."""
    d = _dir(root, boards_dir)
    names = list_boards(boards_dir=d)
    if name not in names:
        close = difflib.get_close_matches(name.lower(), names, n=1, cutoff=0.5)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise BoardError(f"unknown board '{name}'{hint} Boards: {', '.join(names) or '(none)'}")
    return load_board_file(d / f"{name}.toml")


def load_boards(root: str | os.PathLike[str] | None = None, *,
                boards_dir: str | os.PathLike[str] | None = None) -> list[Board]:
    """Every board, sorted by name (the first malformed file raises)."""
    d = _dir(root, boards_dir)
    return [load_board_file(d / f"{n}.toml") for n in list_boards(boards_dir=d)]
