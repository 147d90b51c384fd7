"""Board files: every one loads and validates, its emulator's -cpu model exists in the installed QEMU, an unknown
name names the closest board, and a malformed file gives an error that names the file and the field."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from dtorch.edge.boards import (
    ARCHES,
    PROFILES,
    Board,
    BoardError,
    host_arch,
    list_boards,
    load_board,
    load_board_file,
    load_boards,
)
from dtorch.edge.resources import ResourceError, resource_root
from dtorch.edge.toolchains import load_toolchains

REPO = Path(__file__).resolve().parents[2]
EXPECTED = {"rk3588", "rpi4", "rpi5", "jetson-orin-nano", "rv1126", "stm32mp157", "licheepi4a", "k230", "host"}
QEMU_ARCH = {"aarch64": "qemu-aarch64", "armv7": "qemu-arm", "riscv64": "qemu-riscv64"}


def test_resource_root_is_the_checkout():
    assert resource_root() == REPO
    assert (resource_root() / "boards").is_dir() and (resource_root() / "toolchains").is_dir()


def test_resource_root_installed_layout_and_missing(tmp_path):
    pkg = tmp_path / "site" / "dtorch"
    pkg.mkdir(parents=True)
    with pytest.raises(ResourceError, match="boards"):
        resource_root(pkg)
    (pkg / "_share" / "boards").mkdir(parents=True)
    assert resource_root(pkg) == pkg / "_share"


def test_all_expected_boards_are_there():
    assert EXPECTED <= set(list_boards())
    assert list_boards() == sorted(list_boards())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_board_loads_and_validates(name):
    b = load_board(name)
    assert isinstance(b, Board) and b.name == name and b.path == REPO / "boards" / f"{name}.toml"
    assert b.arch in ARCHES
    assert b.profile in PROFILES and b.opt_flag == PROFILES[b.profile]
    assert b.ram_mb > 0 and b.cores > 0 and b.description
    families = load_toolchains()
    for fam in b.toolchains:
        assert fam in families, f"{name}: toolchain family {fam!r} has no module under toolchains/"
        assert b.arch in families[fam].arches or b.native
        b.flags_for(fam)  # every listed family has its flags
    if b.native:
        assert name == "host" and b.arch == host_arch() and b.emulator.kind == "native"
        assert b.cores == (os.cpu_count() or 1)
        assert b.emulator.command("/x/prog", "a") == ["/x/prog", "a"]
        return
    # The figures the latency estimate of the next issue uses.
    for c in b.cpu:
        assert c.mhz >= 100 and c.count >= 1 and c.fp32_flops_per_cycle and c.peak_gflops_per_core
    assert b.mem_bandwidth_gbs and b.mem_bandwidth_gbs > 1
    assert b.emulator.kind == "qemu-user" and b.emulator.binary == QEMU_ARCH[b.arch]
    assert b.emulator.command("prog", "x") == [b.emulator.binary, "-cpu", b.emulator.cpu, "prog", "x"]


def test_board_figures():
    rk = load_board("rk3588")
    assert rk.arch == "aarch64" and rk.cores == 8 and rk.primary.core == "cortex-a76"
    assert rk.primary.peak_gflops_per_core == pytest.approx(38.4)
    assert rk.flags_for("gcc-cross").cxxflags == ("-mcpu=cortex-a76",)
    assert rk.flags_for("zig").cxxflags == ("-mcpu=cortex_a76",)
    assert [a.tops for a in rk.accelerators if a.kind == "npu"] == [6.0]
    assert rk.cpu_summary() == "4x cortex-a76 @ 2.4 GHz + 4x cortex-a55 @ 1.8 GHz"
    rv = load_board("rv1126")
    assert rv.arch == "armv7" and rv.opt_flag == "-Os"
    assert {"-mfpu=neon-vfpv4", "-mfloat-abi=hard"} <= set(rv.flags_for("gcc-cross").cxxflags)
    assert load_board("licheepi4a").arch == load_board("k230").arch == "riscv64"
    assert load_board("jetson-orin-nano").emulator.stand_in
    with pytest.raises(BoardError, match="no flags for toolchain family 'host'"):
        rk.flags_for("host")
    d = rk.to_json()
    assert d["cpu"][0]["peak_gflops_per_core"] == pytest.approx(38.4) and d["emulator"]["binary"] == "qemu-aarch64"


def _cpu_models(binary: str) -> set[str]:
    exe = shutil.which(binary)
    if exe is None:
        pytest.fail(f"{binary} is not installed; install it with: apt-get install -y qemu-user")
    out = subprocess.run([exe, "-cpu", "help"], capture_output=True, text=True, timeout=30).stdout
    return {line.split()[0] for line in out.splitlines()[1:] if line.strip()} | set(out.split())


@pytest.mark.parametrize("name", sorted(EXPECTED - {"host"}))
def test_emulator_cpu_model_exists_in_installed_qemu(name):
    b = load_board(name)
    assert b.emulator.binary and b.emulator.cpu_model in _cpu_models(b.emulator.binary), \
        f"{name}: -cpu {b.emulator.cpu_model} is not a model of the installed {b.emulator.binary}"


# --- errors ------------------------------------------------------------------------------------------------------

def test_unknown_board_names_the_closest_match():
    with pytest.raises(BoardError) as e:
        load_board("rk3858")
    msg = str(e.value)
    assert "unknown board 'rk3858'" in msg and "did you mean 'rk3588'?" in msg
    for name in EXPECTED:
        assert name in msg
    with pytest.raises(BoardError, match="did you mean 'licheepi4a'"):
        load_board("lichee-pi4a")
    with pytest.raises(BoardError) as e:
        load_board("zzzzzzzz")
    assert "did you mean" not in str(e.value) and "rk3588" in str(e.value)
    with pytest.raises(BoardError, match="unknown board"):
        load_board("../boards/rk3588")


GOOD = (REPO / "boards" / "rpi4.toml").read_text()


def _write(tmp_path: Path, text: str, name: str = "rpi4") -> Path:
    d = tmp_path / "boards"
    d.mkdir(exist_ok=True)
    p = d / f"{name}.toml"
    p.write_text(text)
    return p


def test_board_copy_in_another_folder_loads(tmp_path):
    p = _write(tmp_path, GOOD)
    assert load_board("rpi4", boards_dir=tmp_path / "boards").path == p
    assert load_board("rpi4", root=tmp_path).name == "rpi4"
    assert list_boards(root=tmp_path) == ["rpi4"]
    assert [b.name for b in load_boards(boards_dir=tmp_path / "boards")] == ["rpi4"]


@pytest.mark.parametrize("edit,field,needle", [
    (lambda s: s.replace('arch = "aarch64"\n', ""), "arch", "missing"),
    (lambda s: s.replace('arch = "aarch64"', 'arch = "mips"'), "arch", "not one of"),
    (lambda s: s.replace("ram_mb = 4096", 'ram_mb = "lots"'), "ram_mb", "positive integer"),
    (lambda s: s.replace("mhz = 1800", "mhz = 0"), "cpu[0].mhz", "positive integer"),
    (lambda s: s.replace("fp32_flops_per_cycle = 8\n", ""), "cpu[0].fp32_flops_per_cycle", "missing"),
    (lambda s: s.replace("ram_mb = 4096", "ram_mb = 4096\nramm_mb = 1"), "ramm_mb", "unknown field"),
    (lambda s: s.replace('profile = "speed"', 'profile = "fast"'), "profile", "not one of"),
    (lambda s: s.replace('[flags.zig]\ncxxflags = ["-mcpu=cortex_a72"]\n', ""), "flags.zig", "toolchains lists"),
    (lambda s: s.replace('cxxflags = ["-mcpu=cortex-a72"]', 'cxxflags = "-mcpu=cortex-a72"'),
     "flags.gcc-cross.cxxflags", "list of non-empty strings"),
    (lambda s: s.replace('binary = "qemu-aarch64"', 'binary = "qemu-arm"'), "emulator.binary", "does not run"),
    (lambda s: s.replace('name = "rpi4"', 'name = "rpi-4"'), "name", "does not match the file name"),
    (lambda s: s.replace('toolchains = ["zig", "gcc-cross"]', "toolchains = []"), "toolchains", "must not be empty"),
    (lambda s: s.replace('kind = "gpu"', 'kind = "tpu"'), "accelerators[0].kind", "not one of"),
    (lambda s: s.replace('kind = "qemu-user"', 'kind = "native"'), "emulator.kind", "only for the host"),
    (lambda s: s.replace("[memory]\nbandwidth_gbs = 12.8", "[memory]"), "memory.bandwidth_gbs", "missing"),
])
def test_malformed_board_file_names_file_and_field(tmp_path, edit, field, needle):
    text = edit(GOOD)
    assert text != GOOD, "the edit did not apply: update the test with the board file"
    p = _write(tmp_path, text)
    with pytest.raises(BoardError) as e:
        load_board("rpi4", boards_dir=p.parent)
    msg = str(e.value)
    assert e.value.path == p and e.value.field == field
    assert str(p) in msg and f"field '{field}'" in msg and needle in msg


def test_invalid_toml_and_missing_file(tmp_path):
    p = _write(tmp_path, GOOD.replace('name = "rpi4"', 'name = "rpi4'))
    with pytest.raises(BoardError, match="not valid TOML") as e:
        load_board_file(p)
    assert str(p) in str(e.value)
    with pytest.raises(BoardError, match="no such board file"):
        load_board_file(tmp_path / "nope.toml")
    with pytest.raises(BoardError, match="no boards folder"):
        list_boards(boards_dir=tmp_path / "absent")
    p.write_bytes(b"name = \"\xff\"\n")
    with pytest.raises(BoardError, match="not UTF-8"):
        load_board_file(p)


MCU = (REPO / "boards" / "stm32f746-disco.toml").read_text()


@pytest.mark.parametrize("base,edit,field,needle", [
    (MCU, lambda s: s[:s.index("[mcu]")] + s[s.index("[flags.arm-none-eabi]"):], "mcu", "missing"),
    (MCU, lambda s: s.replace("stack_kb = 16 ", "stack_kb = 400"), "mcu", "stack_kb < ram_kb"),
    (MCU, lambda s: s.replace('binary = "qemu-system-arm"', 'binary = "qemu-arm"'), "emulator.binary", "does not run"),
    (MCU, lambda s: s.replace('machine = "mps2-an500"', 'machine = 5'), "emulator.machine", "string"),
    (GOOD, lambda s: s + "\n[mcu]\nflash_kb = 1\nram_kb = 1\nstack_kb = 1\ncpi = 1.0\n", "mcu", "only bare-metal"),
    (GOOD, lambda s: s.replace('kind = "qemu-user"', 'kind = "qemu-system"'), "emulator.kind", "bare-metal firmware"),
])
def test_malformed_microcontroller_board_names_file_and_field(tmp_path, base, edit, field, needle):
    text = edit(base)
    assert text != base, "the edit did not apply: update the test with the board file"
    name = "stm32f746-disco" if base is MCU else "rpi4"
    p = _write(tmp_path, text, name)
    with pytest.raises(BoardError) as e:
        load_board(name, boards_dir=p.parent)
    assert e.value.path == p and e.value.field == field, str(e.value)
    assert needle in str(e.value)


def test_microcontroller_board_has_its_memories():
    b = load_board("stm32f746-disco")
    assert b.bare_metal and b.mcu is not None and b.mcu.flash_bytes == 1024 * 1024 and b.mcu.ram_bytes == 320 * 1024
    assert b.emulator.command("fw.elf", "3")[:4] == ["qemu-system-arm", "-M", "mps2-an500", "-cpu"]
    assert "arg=fw.elf,arg=3" in " ".join(b.emulator.command("fw.elf", "3"))
    assert not load_board("rk3588").bare_metal
