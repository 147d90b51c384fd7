"""Toolchain families: each compiles and links a small static C++17 program (threads, sub-word atomics, an
exception, floats across the libc boundary) for each architecture with a board's flags; `file` shows the right
architecture and static linking; the binary runs under the board's QEMU user-mode emulator. A missing compiler
gives its install command.

These tests do not skip: scripts/setup.sh installs the cross compilers and QEMU, pip installs ziglang. When one
is missing the test fails with the command that installs it. The first zig link for a target builds musl and
libc++ into zig's cache (about 1.5 minutes per target on 2 cores); later runs take seconds.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dtorch.edge.boards import BoardError, host_arch, list_boards, load_board
from dtorch.edge.toolchains import (
    BuildFlags,
    Found,
    Toolchain,
    ToolchainError,
    ToolchainMissing,
    command_line,
    get_toolchain,
    load_toolchains,
    select_toolchain,
)

PROGRAM = r"""
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <vector>

static std::atomic<unsigned char> small{0};  // a 1-byte atomic: libatomic on riscv64 with GCC 12
__attribute__((noinline)) double twice(double x) { return x * 2.0; }

int main(int argc, char** argv) {
    std::atomic<long> sum{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) threads.emplace_back([&sum, i] { sum += i + 1; small.fetch_add(1); });
    for (auto& t : threads) t.join();
    int caught = 0;
    try {
        if (argc < 100) throw std::runtime_error("unwind");
    } catch (const std::exception& e) {
        caught = e.what()[0] == 'u';
    }
    double d = std::strtod(argc > 1 ? argv[1] : "2.25", nullptr);  // floats returned from libc (hard-float ABI)
    std::printf("dtorch-ok threads=%ld small=%d caught=%d fp=%.4f pow=%.4f ptr=%zu\n", sum.load(),
                int(small.load()), caught, twice(d), std::pow(d, 1.5), sizeof(void*));
    return sum.load() == 10 && caught ? 0 : 1;
}
"""

#: The board each (cross) architecture is tested with: the boards of the issue's checks.
REPRESENTATIVE = {"aarch64": "rk3588", "armv7": "rv1126", "riscv64": "licheepi4a", host_arch(): "host"}
#: What `file` says for each architecture.
FILE_ARCH = {
    "aarch64": r"ELF 64-bit LSB .*ARM aarch64",
    "armv7": r"ELF 32-bit LSB .*ARM, EABI5",
    "riscv64": r"ELF 64-bit LSB .*UCB RISC-V.*double-float ABI",
    "x86_64": r"ELF 64-bit LSB .*x86-64",
    "hexagon": r"ELF 32-bit LSB .*QUALCOMM DSP6",
}
PTR = {"aarch64": 8, "armv7": 4, "riscv64": 8, "x86_64": 8, "hexagon": 4}
EXPECTED_OUTPUT = "dtorch-ok threads=10 small=4 caught=1 fp=4.5000 pow=3.3750 ptr={ptr}"

CASES = [("gcc-cross", a) for a in ("aarch64", "armv7", "riscv64")] + \
        [("zig", a) for a in ("aarch64", "armv7", "riscv64")] + [("host", host_arch())]


def _require_tool(name: str, install: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed; install it with: {install}")
    return path


def _found(family: str, arch: str) -> tuple[Toolchain, Found]:
    tc = get_toolchain(family)
    found = tc.find(arch)
    if not found.found:
        pytest.fail(f"toolchain {family} for {arch} is missing ({found.reason}); install it with: {found.install}")
    return tc, found


@pytest.fixture(scope="session")
def build(tmp_path_factory):
    """build(family, board_name) -> the linked program, compiled once per session."""
    src = tmp_path_factory.mktemp("tc-src") / "probe.cc"
    src.write_text(PROGRAM)
    out_dir = tmp_path_factory.mktemp("tc-bin")
    cache: dict[tuple[str, str], Path] = {}

    def _build(family: str, board_name: str) -> Path:
        key = (family, board_name)
        if key not in cache:
            board = load_board(board_name)
            tc, found = _found(family, board.arch)
            flags = tc.flags(found, board)
            out = out_dir / f"probe-{family}-{board_name}"
            argv = command_line(found, flags, [src], out, extra_cxxflags=["-std=c++17"])
            p = subprocess.run(argv, capture_output=True, text=True, timeout=900)
            assert p.returncode == 0, f"{' '.join(argv)}\n{p.stderr[-3000:]}"
            cache[key] = out
        return cache[key]

    return _build


def _check_binary(path: Path, arch: str, board_name: str) -> None:
    file_exe = _require_tool("file", "apt-get install -y file")
    desc = subprocess.run([file_exe, "-b", str(path)], capture_output=True, text=True, timeout=30).stdout
    assert re.search(FILE_ARCH[arch], desc), desc
    assert "statically linked" in desc and "dynamically" not in desc, desc
    assert "not stripped" not in desc and "stripped" in desc, desc
    board = load_board(board_name)
    emu = board.emulator
    if emu.binary:
        _require_tool(emu.binary, "apt-get install -y qemu-user")
    p = subprocess.run(emu.command(path), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"{emu.command(path)}: rc={p.returncode}\n{p.stdout}\n{p.stderr}"
    assert p.stdout.strip() == EXPECTED_OUTPUT.format(ptr=PTR[arch]), p.stdout + p.stderr


@pytest.mark.parametrize("family,arch", CASES, ids=[f"{f}-{a}" for f, a in CASES])
def test_family_builds_static_program_that_runs_under_qemu(build, family, arch):
    board_name = REPRESENTATIVE[arch]
    _check_binary(build(family, board_name), arch, board_name)


GCC_BOARDS = [b for b in list_boards() if "gcc-cross" in load_board(b).toolchains]
ZIG_BOARDS = [b for b in list_boards() if "zig" in load_board(b).toolchains]


@pytest.mark.parametrize("board_name", GCC_BOARDS)
def test_gcc_cross_every_board_runs_under_its_emulator_profile(build, board_name):
    """Every board's CPU flags and its -cpu model agree: a -mcpu the emulator's CPU lacks would trap."""
    _check_binary(build("gcc-cross", board_name), load_board(board_name).arch, board_name)


@pytest.mark.parametrize("board_name", ZIG_BOARDS)
def test_zig_accepts_every_boards_flags(tmp_path, board_name):
    """Compile only (no link, so no libc++ build): zig takes each board's -mcpu spelling."""
    board = load_board(board_name)
    tc, found = _found("zig", board.arch)
    flags = tc.flags(found, board)
    src = tmp_path / "probe.cc"
    src.write_text(PROGRAM)
    argv = [*found.cxx, "-std=c++17", *flags.cxxflags, "-c", str(src), "-o", str(tmp_path / "probe.o")]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"{' '.join(argv)}\n{p.stderr[-3000:]}"


@pytest.mark.full
@pytest.mark.parametrize("board_name", ZIG_BOARDS)
def test_zig_every_board_runs_under_its_emulator_profile(build, board_name):
    """Link and run with every board's zig flags (a new CPU/-O combination costs zig ~1.5 min to build libc++, one
    core, so this is the full tier: .ci/run-full). The fast tier links and runs the representative board of each
    architecture (test_family_builds_static_program_that_runs_under_qemu) and compiles every board's flags
    (test_zig_accepts_every_boards_flags)."""
    _check_binary(build("zig", board_name), load_board(board_name).arch, board_name)


# --- flags --------------------------------------------------------------------------------------------------------

def test_flags_per_family():
    rk, rv, lp = load_board("rk3588"), load_board("rv1126"), load_board("licheepi4a")
    gcc, zig = get_toolchain("gcc-cross"), get_toolchain("zig")
    f = gcc.flags(gcc.find("aarch64"), rk)
    assert isinstance(f, BuildFlags) and f.lto and f.static and f.strip
    assert f.cxxflags[:2] == ("-mcpu=cortex-a76", "-O2")
    for flag in ("-ffunction-sections", "-fdata-sections", "-flto=auto"):
        assert flag in f.cxxflags
    for flag in ("-static", "-s", "-Wl,--gc-sections", "-flto=auto", "-mcpu=cortex-a76", "-O2", "-pthread"):
        assert flag in f.ldflags
    assert f.libs == ()
    f = gcc.flags(gcc.find("armv7"), rv)
    assert {"-mcpu=cortex-a7", "-mfpu=neon-vfpv4", "-mfloat-abi=hard", "-Os"} <= set(f.cxxflags)
    assert gcc.flags(gcc.find("riscv64"), lp).libs == ("-latomic",)
    f = zig.flags(zig.find("aarch64"), rk)
    assert f.cxxflags[:4] == ("-target", "aarch64-linux-musl", "-mcpu=cortex_a76", "-O2")
    assert f.ldflags[:4] == ("-target", "aarch64-linux-musl", "-mcpu=cortex_a76", "-O2") and "-flto" in f.ldflags
    f = zig.flags(zig.find("armv7"), rv)  # zig's LTO breaks C++ unwinding on arm: off by default there
    assert not f.lto and "-flto" not in f.cxxflags + f.ldflags and "-Os" in f.cxxflags
    f = zig.flags(zig.find("armv7"), rv, exceptions=False)  # a build that throws nothing (the runtime's) gets LTO
    assert f.lto and "-flto" in f.cxxflags and "-flto" in f.ldflags
    assert not zig.flags(zig.find("armv7"), rv, exceptions=False, lto=False).lto
    assert zig.flags(zig.find("riscv64"), lp).lto
    f = zig.flags(zig.find("aarch64"), rk, lto=False, strip=False, profile="size")
    assert "-flto" not in f.cxxflags and "-s" not in f.ldflags and "-Os" in f.cxxflags
    f = zig.flags(zig.find("armv7"), rv, lto=True, strip=False, profile="speed")
    assert "-flto" not in f.cxxflags and "-O2" in f.cxxflags  # lto=True cannot turn on what the toolchain lacks
    assert f.cxxflags[:2] == ("-target", "arm-linux-musleabihf")
    assert gcc.map_flags("/x/y.map") == ["-Wl,-Map=/x/y.map"]
    with pytest.raises(ToolchainError, match="is aarch64"):
        gcc.flags(gcc.find("armv7"), rk)
    with pytest.raises(BoardError, match="no flags for toolchain family 'host'"):
        get_toolchain("host").flags(get_toolchain("host").find(host_arch()), dataclasses.replace(rk, arch=host_arch()))


def test_found_tools_for_size_reports():
    for family, arch in CASES:
        _, found = _found(family, arch)
        assert found.version and found.cxx and found.target
        assert "ar" in found.tools and "nm" in found.tools and "size" in found.tools, (family, arch, found.tools)


# --- missing toolchains -------------------------------------------------------------------------------------------

def test_missing_gcc_cross_gives_apt_command(tmp_path):
    gcc = get_toolchain("gcc-cross")
    env = {"PATH": str(tmp_path)}
    for arch, pkg in (("aarch64", "g++-aarch64-linux-gnu"), ("armv7", "g++-arm-linux-gnueabihf"),
                      ("riscv64", "g++-riscv64-linux-gnu")):
        f = gcc.find(arch, env)
        assert not f.found and f.install.endswith(f"apt-get install -y {pkg}")
        assert "not on PATH" in f.reason
        with pytest.raises(ToolchainMissing, match=re.escape(f"apt-get install -y {pkg}")):
            f.require()


def test_missing_zig_gives_pip_command(tmp_path):
    f = get_toolchain("zig").find("riscv64", {"PATH": str(tmp_path), "DTORCH_ZIG_PYTHON": str(tmp_path / "python")})
    assert not f.found and f.install.endswith("-m pip install ziglang==0.17.0")
    assert str(tmp_path / "python") in f.install
    f = get_toolchain("zig").find("riscv64", {"PATH": ""})
    assert f.found and f.install == f"{sys.executable} -m pip install ziglang==0.17.0" and f.version == "zig 0.17.0"


def test_missing_host_compiler_gives_apt_command(tmp_path):
    f = get_toolchain("host").find(host_arch(), {"PATH": str(tmp_path)})
    assert not f.found and f.install.endswith("apt-get install -y g++")
    f = get_toolchain("host").find(host_arch(), {"PATH": str(tmp_path), "CXX": shutil.which("g++") or "g++"})
    assert f.found == bool(shutil.which("g++"))


def test_select_toolchain_order_override_and_all_missing(tmp_path):
    rk = load_board("rk3588")
    tc, found = select_toolchain(rk)
    assert tc.family == "zig" and found.found  # the board's first family
    tc, found = select_toolchain(rk, override="gcc-cross")
    assert tc.family == "gcc-cross"
    # zig missing (its Python has no ziglang): falls through to gcc-cross.
    tc, found = select_toolchain(rk, env={**os.environ, "DTORCH_ZIG_PYTHON": str(tmp_path / "python")})
    assert tc.family == "gcc-cross"
    with pytest.raises(ToolchainMissing) as e:
        select_toolchain(rk, env={"PATH": str(tmp_path), "DTORCH_ZIG_PYTHON": str(tmp_path / "python")})
    msg = str(e.value)
    assert "apt-get install -y g++-aarch64-linux-gnu" in msg and "pip install ziglang==0.17.0" in msg
    assert [f.family for f in e.value.missing] == ["zig", "gcc-cross"]
    with pytest.raises(BoardError, match="no flags for toolchain family 'host'"):
        select_toolchain(rk, override="host")
    with pytest.raises(ToolchainError, match="did you mean 'zig'"):
        select_toolchain(rk, override="zog")


def test_toolchain_modules_load_and_errors(tmp_path):
    families = load_toolchains()
    assert {"gcc-cross", "zig", "host"} <= set(families)
    assert families["host"].arches == (host_arch(),)
    with pytest.raises(ToolchainError, match="cannot target"):
        families["gcc-cross"].find("x86_64")
    d = tmp_path / "toolchains"
    d.mkdir()
    (d / "broken.py").write_text("X = 1\n")
    with pytest.raises(ToolchainError, match=r"broken\.py: defines no TOOLCHAIN"):
        load_toolchains(toolchains_dir=d)
    (d / "broken.py").write_text("raise ImportError('nope')\n")
    with pytest.raises(ToolchainError, match=r"broken\.py: the toolchain module failed to load"):
        load_toolchains(root=tmp_path)
    with pytest.raises(ToolchainError, match="no toolchains folder"):
        load_toolchains(toolchains_dir=tmp_path / "absent")
