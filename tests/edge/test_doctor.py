"""`dtorch-edge boards` and `dtorch-edge doctor` (text and --json), through click's CliRunner."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from click.testing import CliRunner

from dtorch.edge.boards import list_boards
from dtorch.edge.cli import main
from dtorch.edge.doctor import run_doctor


def test_boards_table():
    r = CliRunner().invoke(main, ["boards"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].split() == ["NAME", "ARCH", "CPU", "RAM", "TOOLCHAINS", "EMULATOR"]
    assert len(lines) == 1 + len(list_boards())
    rk = next(line for line in lines if line.startswith("rk3588 "))
    for part in ("aarch64", "4x cortex-a76 @ 2.4 GHz + 4x cortex-a55 @ 1.8 GHz", "8 GiB", "gcc-cross:",
                 "zig:", "qemu-aarch64 -cpu cortex-a76"):
        assert part in rk, rk
    assert "(stand-in)" in next(line for line in lines if line.startswith("licheepi4a "))
    assert "host:found" in next(line for line in lines if line.startswith("host "))


def test_boards_json():
    r = CliRunner().invoke(main, ["boards", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert [b["name"] for b in data] == list_boards()
    rk = next(b for b in data if b["name"] == "rk3588")
    assert rk["arch"] == "aarch64" and rk["ram_mb"] == 8192 and rk["toolchains"] == ["zig", "gcc-cross"]
    assert set(rk["toolchains_found"]) == {"gcc-cross", "zig"}
    assert all(isinstance(v, bool) for v in rk["toolchains_found"].values())
    assert rk["emulator"] == {"kind": "qemu-user", "binary": "qemu-aarch64", "cpu": "cortex-a76", "stand_in": False,
                              "machine": None,
                              "note": ""}
    assert rk["cpu"][0]["peak_gflops_per_core"] == 38.4 and rk["mem_bandwidth_gbs"] == 33.8
    assert rk["accelerators"][0]["tops"] == 6.0


def test_boards_json_missing_toolchains_say_false(tmp_path):
    r = CliRunner().invoke(main, ["boards", "--json"],
                           env={"PATH": str(tmp_path), "DTORCH_ZIG_PYTHON": str(tmp_path / "python"), "CXX": None})
    assert r.exit_code == 0, r.output
    for b in json.loads(r.output):
        assert not any(b["toolchains_found"].values()), b["toolchains_found"]


def test_doctor_text_reports_every_family_and_tool():
    report = run_doctor()
    r = CliRunner().invoke(main, ["doctor"])
    assert r.exit_code == 0, r.output
    for family, arch in (("gcc-cross", "aarch64"), ("gcc-cross", "armv7"), ("gcc-cross", "riscv64"),
                         ("zig", "aarch64"), ("zig", "armv7"), ("zig", "riscv64")):
        assert any(line.split()[:2] == [family, arch] for line in r.output.splitlines()), (family, arch)
    for tool in ("qemu-aarch64", "qemu-arm", "qemu-riscv64", "scons"):
        assert f"  {tool} " in r.output
    assert ("everything is installed" in r.output) == (report.missing == 0)
    r = CliRunner().invoke(main, ["doctor", "--strict"])
    assert r.exit_code == (1 if report.missing else 0)


def test_doctor_json():
    r = CliRunner().invoke(main, ["doctor", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert {"toolchains", "tools", "errors", "missing", "ok"} <= set(data)
    fams = {(t["family"], t["arch"]) for t in data["toolchains"]}
    assert {("gcc-cross", "aarch64"), ("zig", "riscv64")} <= fams and any(f == "host" for f, _ in fams)
    for t in data["toolchains"]:
        assert (t["install"] is None) == t["found"]
        if t["found"]:
            assert t["version"] and t["command"]
    assert {t["name"] for t in data["tools"]} >= {"qemu-aarch64", "qemu-arm", "qemu-riscv64", "scons"}
    assert data["ok"] == (data["missing"] == 0)


def test_doctor_with_nothing_installed_gives_install_commands(tmp_path):
    env = {"PATH": str(tmp_path), "DTORCH_ZIG_PYTHON": str(tmp_path / "python"), "CXX": None}
    r = CliRunner().invoke(main, ["doctor"], env=env)
    assert r.exit_code == 0, r.output  # missing things are reported, not fatal...
    for cmd in ("apt-get install -y g++-aarch64-linux-gnu", "apt-get install -y g++-arm-linux-gnueabihf",
                "apt-get install -y g++-riscv64-linux-gnu", "-m pip install ziglang==0.17.0",
                "apt-get install -y g++", "apt-get install -y qemu-user", "apt-get install -y scons"):
        assert cmd in r.output, cmd
    assert "MISSING" in r.output
    r = CliRunner().invoke(main, ["doctor", "--strict"], env=env)
    assert r.exit_code == 1  # ...unless --strict
    r = CliRunner().invoke(main, ["doctor", "--json", "--strict"], env=env)
    assert r.exit_code == 1
    data = json.loads(r.output)
    assert not data["ok"] and data["missing"] >= 7
    assert all(not t["found"] and t["install"] for t in data["toolchains"])


def test_cli_starts_fast_and_lazily():
    """The edge commands import their modules on use: `--help` loads neither numpy nor the board code."""
    code = ("import sys, time; t = time.perf_counter(); from dtorch.edge.cli import main; "
            "print(time.perf_counter() - t); print('numpy' in sys.modules, 'dtorch.edge.boards' in sys.modules)")
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout.split()
    assert out[1:] == ["False", "False"], out
    assert time.perf_counter() - t0 < 5
