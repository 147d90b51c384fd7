"""Microcontroller boards (stm32f746-disco: Cortex-M7, stm32f407-disco: Cortex-M4F, corstone-300: Cortex-M55): the
firmware that `dtorch-edge build` makes for SimpleNet-32 (float32 and int8) with the arm-none-eabi toolchain, run
under qemu-system-arm by `dtorch-edge emulate`: bit parity with the host's portable kernels, deterministic
instruction counts, flash and RAM against the board, no heap; and every error a user can hit (a model too big for
flash or RAM, an operator the target lacks, a missing toolchain or emulator).

The toolchain (gcc-arm-none-eabi + newlib) and qemu-system-arm come from scripts/setup.sh."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

import dtorch as dt
from dtorch.edge.boards import load_board
from dtorch.edge.build import BuildError, build_bundle
from dtorch.edge.cli import main
from dtorch.edge.emulate import EmulateError, RunnerUnavailable, emulate
from dtorch.edge.firmware import HEAP_SYMBOLS

ROOT = Path(__file__).resolve().parents[2]
BOARDS = ["stm32f746-disco", "stm32f407-disco", "corstone-300"]

_spec = importlib.util.spec_from_file_location("export_zoo", ROOT / "tests" / "export" / "zoo.py")
zoo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(zoo)  # type: ignore[union-attr]


def _quiet(_m: str) -> None:
    pass


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("mcu_models")
    make_model, make_input = zoo.ZOO["simplenet"]  # SimpleNet-32: a 3x32x32 input
    dt.manual_seed(0)
    model = make_model().eval()
    out = {"float32": root / "simplenet32.dtm", "int8": root / "simplenet32_int8.dtm"}
    dt.export(model, make_input(1), str(out["float32"]), bundle_example=True)
    dt.manual_seed(1)
    q = dt.quant.quantize(model, [make_input(1).numpy() for _ in range(4)])
    dt.export(q, make_input(1), str(out["int8"]), bundle_example=True)
    return out


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcu_dist")


def _build(board: str, model: Path, out: Path):  # type: ignore[no-untyped-def]
    return build_bundle(board, [model], out=out, log=_quiet, progress=False)


# float32 SimpleNet-32 needs a 127 KB arena: it fits the F746's 320 KB and the M55's 512 KB DTCM, not the F407's
# 128 KB SRAM (test_a_model_too_big_for_ram_fails_with_the_numbers).
CASES = [(b, "int8") for b in BOARDS] + [("stm32f746-disco", "float32"), ("corstone-300", "float32")]


@pytest.mark.parametrize(("board", "dtype"), CASES)
def test_firmware_gives_the_host_bits_and_the_figures(models, dist, board, dtype):
    res = _build(board, models[dtype], dist / dtype)
    m = res.manifest
    assert m["kind"] == "firmware" and m["toolchain"] == "arm-none-eabi" and (res.dist / "firmware.elf").is_file()
    b = load_board(board)
    sizes = m["sizes"]
    assert sizes["model"] >= models[dtype].stat().st_size and sizes["flash"] <= b.mcu.flash_bytes
    assert sizes["ram"] <= b.mcu.ram_bytes and sizes["arena"] == m["arena_bytes"]
    assert "| flash |" in (res.dist / "size_report.md").read_text()
    rep = emulate(board, bundle=res.dist, log=_quiet, progress=False)
    p = rep.figures["parity"]
    assert p["host_bits_equal"] and p["pass"], p
    assert p["vs_expected_max_rel"] <= 1e-5
    j = rep.to_json()
    assert j["emulated"] is True and j["instructions"]["label"] == "emulated"
    assert j["estimate"]["label"] == "estimate" and j["estimate"]["latency_ms"] > 0
    mem = j["memory"]
    assert mem["fits"] and 0 < mem["arena_used_bytes"] <= mem["arena_bytes"]
    per = j["instructions"]["per_inference"]
    assert per > 1_000_000
    # deterministic: a second emulation counts the same instructions
    again = emulate(board, bundle=res.dist, log=_quiet, progress=False)
    assert again.figures["instructions"]["per_inference"] == per
    lines = "\n".join(rep.lines())
    assert "parity (emulated): PASS" in lines and "(estimate, not measured)" in lines


def test_the_firmware_links_no_heap_and_no_exception_runtime(models, dist):
    res = _build("stm32f746-disco", models["int8"], dist / "heap")
    names = set(subprocess.run(["arm-none-eabi-nm", str(res.dist / "firmware.elf")], capture_output=True, text=True,
                               check=True).stdout.split())
    assert not names & set(HEAP_SYMBOLS)
    assert "g_arena" in " ".join(names) or any("g_arena" in n for n in names)


def test_cli_build_and_emulate(models, tmp_path):
    r = CliRunner().invoke(main, ["build", "--board", "corstone-300", "--model", str(models["int8"]), "--out",
                                  str(tmp_path), "--quiet"])
    assert r.exit_code == 0, r.output
    assert "firmware:" in r.output and "firmware.elf" in r.output
    out = tmp_path / "rep.json"
    r = CliRunner().invoke(main, ["emulate", "--board", "corstone-300", "--bundle", str(tmp_path / "corstone-300"),
                                  "--json", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    j = json.loads(out.read_text())
    assert j["parity"]["pass"] and j["memory"]["fits"]


def test_a_model_too_big_for_ram_fails_with_the_numbers(models, tmp_path):
    with pytest.raises(BuildError, match=r"simplenet32.dtm does not fit stm32f407-disco's RAM: it needs [\d,]+ bytes "
                                         r".* of 131,072 .*, [\d,]+ bytes too many; quantize it to int8"):
        _build("stm32f407-disco", models["float32"], tmp_path)
    assert not (tmp_path / "stm32f407-disco").exists()


def test_a_model_too_big_for_flash_fails_with_the_numbers(tmp_path):
    dt.manual_seed(0)
    wide = dt.nn.Sequential(dt.nn.Flatten(), dt.nn.Linear(3 * 32 * 32, 256)).eval()  # 3 MB of weights
    path = tmp_path / "wide.dtm"
    dt.export(wide, dt.randn(1, 3, 32, 32), str(path), bundle_example=True)
    with pytest.raises(BuildError, match=r"wide.dtm does not fit corstone-300's flash: it needs [\d,]+ bytes "
                                         r".* of 524,288 .* bytes too many"):
        _build("corstone-300", path, tmp_path / "dist")


def test_an_operator_the_target_lacks_is_named(models, tmp_path):
    data = models["float32"].read_bytes()
    assert data.count(b"reshape") >= 1
    bad = tmp_path / "unknown_op.dtm"
    bad.write_bytes(data.replace(b"reshape", b"reshapx"))
    with pytest.raises(BuildError, match=r"reshapx"):
        _build("stm32f746-disco", bad, tmp_path / "dist")


def test_two_models_for_one_firmware_are_refused(models, tmp_path):
    with pytest.raises(BuildError, match=r"give exactly one --model \(got 2\)"):
        build_bundle("stm32f746-disco", [models["int8"], models["float32"]], out=tmp_path, log=_quiet, progress=False)


def test_missing_toolchain_says_how_to_install_it(models, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BuildError, match=r"apt-get install -y gcc-arm-none-eabi libnewlib-arm-none-eabi"):
        _build("stm32f746-disco", models["int8"], tmp_path / "dist")


def test_missing_emulator_says_how_to_install_it(models, dist, monkeypatch, tmp_path):
    res = _build("stm32f746-disco", models["int8"], dist / "int8")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RunnerUnavailable, match=r"qemu-system-arm is not installed .*apt-get install qemu-system-arm"):
        emulate("stm32f746-disco", bundle=res.dist, log=_quiet, progress=False, count_instructions=False)


def test_a_bundle_of_another_board_is_refused(models, dist):
    res = _build("stm32f746-disco", models["int8"], dist / "int8")
    with pytest.raises(EmulateError, match=r"was built for board 'stm32f746-disco', not 'corstone-300'"):
        emulate("corstone-300", bundle=res.dist, log=_quiet, progress=False)
