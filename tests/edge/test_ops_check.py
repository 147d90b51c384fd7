"""`dtorch-edge ops check`: the support matrix of a model on a board (its CPU build, and a backend such as the
simulated NPU offered every node first), the plan with its transfers, --json, and every error a user can cause."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dtorch.catalogue import OPSET
from dtorch.edge.cli import main

_spec = importlib.util.spec_from_file_location("backend_test_models",
                                               Path(__file__).resolve().parents[1] / "backends" / "models.py")
models = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(models)  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def stride8(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return models.int8_model(models.WideStride(), tmp_path_factory.mktemp("ops_check") / "stride8_int8.dtm", size=32)


def _check(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, ["ops", "check", *args])


def test_ops_check_with_the_simulated_npu_says_why_each_fallback(stride8):
    r = _check("--board", "rk3588", "--model", str(stride8), "--backend", "npu-sim")
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert "npu-sim is a simulation and its latencies are estimates" in out
    assert "WHY NOT npu-sim" in out
    patch = next(line for line in out.splitlines() if " patch " in line and "qconv2d" in line)
    assert " cpu " in patch and "stride: stride 8x8 is outside [1, 7] (RKNN Conv NPU limit)" in patch
    c1 = next(line for line in out.splitlines() if " c1 " in line and "qconv2d" in line)
    assert "npu-sim" in c1 and "rknpu:conv" in c1
    assert "operator: npu-sim has no quantize kernel" in out
    transfers = [line for line in out.splitlines() if line.strip().startswith("transfer ")]
    assert len(transfers) == 4 and all("bytes" in t and "(estimate)" in t for t in transfers)
    assert "transfer quantize_1 cpu -> npu-sim: 6144 bytes" in out  # the int8 input, 2 x 3 x 32 x 32
    assert "npu-sim subgraph: nodes 3-6 (4 nodes" in out
    summary = out.strip().splitlines()[-1]
    assert summary.startswith("summary: ") and "2 subgraphs" in summary and "on the CPU alone (estimate)" in summary


def test_ops_check_json(stride8):
    r = _check("--board", "rk3588", "--model", str(stride8), "--backend", "npu-sim", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["board"] == "rk3588" and d["model"] == str(stride8)
    assert [b["name"] for b in d["backends"]] == ["cpu", "npu-sim"] and d["backends"][1]["simulated"] is True
    patch = next(n for n in d["nodes"] if n["module"] == "patch" and n["op"] == "qconv2d")
    assert patch["backend"] == "cpu" and patch["fallback"] == {
        "category": "stride", "reason": "stride 8x8 is outside [1, 7] (RKNN Conv NPU limit)"}
    assert all(set(n) == {"index", "op", "dtype", "module", "backend", "kernel", "fallback", "unsupported"}
               for n in d["nodes"])
    steps = d["plan"]
    assert {s["kind"] for s in steps} == {"subgraph", "transfer"}
    for s in steps:
        if s["kind"] == "transfer":
            assert s["bytes"] > 0 and {s["from"], s["to"]} == {"cpu", "npu-sim"} and s["estimate_ms"] > 0
        elif s["backend"] == "npu-sim":
            assert s["estimate"]["launch_ms"] == pytest.approx(0.1)
    sm = d["summary"]
    assert sm["unsupported"] == 0 and sm["nodes_by_backend"]["npu-sim"] == 5 and sm["transfers"] == 4
    assert sm["transfer_bytes"] == sum(s["bytes"] for s in steps if s["kind"] == "transfer")
    assert d["load_errors"] == []


def test_ops_check_without_a_backend_is_the_boards_cpu_build(stride8):
    r = _check("--board", "rk3588", "--model", str(stride8), "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert {n["backend"] for n in d["nodes"]} == {"cpu"} and all(n["fallback"] is None for n in d["nodes"])
    assert [s["kind"] for s in d["plan"]] == ["subgraph"]
    r = _check("--board", "rk3588", "--model", str(stride8))
    assert r.exit_code == 0 and "WHY NOT" not in r.stdout and "portable:qmean" in r.stdout


def test_a_node_the_cpu_build_has_no_kernel_for(stride8, monkeypatch):
    from dtorch.backends.cpu import CpuBackend

    init = CpuBackend.__init__

    def without_qmean(self, board):  # type: ignore[no-untyped-def]
        init(self, board)
        self.supports = tuple(s for s in self.supports if s.op != "qmean")

    monkeypatch.setattr(CpuBackend, "__init__", without_qmean)
    r = _check("--board", "rk3588", "--model", str(stride8))
    assert r.exit_code == 1
    row = next(line for line in r.stdout.splitlines() if "qmean" in line)
    assert " NONE " in row
    assert r.stderr.strip().splitlines() == [
        "error: 1 node(s) have no kernel in rk3588's CPU build and no backend takes them: node 4 qmean:int8 "
        "(operator: cpu has no qmean kernel); a runtime built for rk3588 refuses this model"]
    # with the NPU, which takes it, the model runs
    assert _check("--board", "rk3588", "--model", str(stride8), "--backend", "npu-sim").exit_code == 0


@pytest.mark.parametrize(("args", "message"), [
    (["--board", "rk3588", "--backend", "npu-simm"],
     "error: unknown backend 'npu-simm' (did you mean npu-sim?); the backends are cpu, npu-sim"),
    (["--board", "rpi4", "--backend", "npu-sim"],
     "error: npu-sim cannot simulate board 'rpi4': it lists no [[accelerators]] entry of kind \"npu\""),
    (["--board", "rk3589"], "error: unknown board 'rk3589'; did you mean 'rk3588'?"),
])
def test_ops_check_errors_are_one_line(stride8, args, message):
    r = _check("--model", str(stride8), *args)
    assert r.exit_code == 1 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), lines


def test_ops_check_on_a_missing_or_corrupt_model(stride8, tmp_path):
    r = _check("--board", "rk3588", "--model", str(tmp_path / "nope.dtm"), "--backend", "npu-sim")
    assert r.exit_code == 1 and r.stderr.strip() == f"error: model file not found: {str(tmp_path / 'nope.dtm')!r}"
    junk = tmp_path / "junk.dtm"
    junk.write_bytes(b"not a model at all, just text")
    r = _check("--board", "rk3588", "--model", str(junk))
    assert r.exit_code == 1 and "is not a .dtm model file" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    cut = tmp_path / "cut.dtm"
    cut.write_bytes(stride8.read_bytes()[:400])
    r = _check("--board", "rk3588", "--model", str(cut), "--backend", "npu-sim")
    assert r.exit_code == 1 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1
    assert "truncated" in r.stderr or "corrupt" in r.stderr
    r = _check("--board", "rk3588")
    assert r.exit_code == 2 and "Missing option '--model'" in r.output
    # an operator outside the catalogue: the model's reader names it (no runtime of any board has it)
    alien = tmp_path / "alien.dtm"
    alien.write_bytes(stride8.read_bytes().replace(b"qmean", b"qmeen"))
    r = _check("--board", "rk3588", "--model", str(alien))
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr.strip() == (f"error: {alien}: node 4 ('qmeen' at <top>): unknown operator 'qmeen' (not in the "
                                f"opset {OPSET} catalogue); the file does not follow the opset {OPSET} catalogue "
                                f"(runtime/OPS.md)")


def test_emulate_checks_its_backend_before_building_or_running(stride8, tmp_path):
    """emulate --backend: an unknown backend or a board it cannot serve is refused first, with one line (nothing is
    built: the bundle folder is never created)."""
    out = tmp_path / "dist"
    for args, message in [
        (["--board", "rk3588", "--backend", "npu-simm"], "error: unknown backend 'npu-simm' (did you mean npu-sim?)"),
        (["--board", "rpi4", "--backend", "npu-sim"], "error: npu-sim cannot simulate board 'rpi4'"),
    ]:
        r = CliRunner().invoke(main, ["emulate", "--model", str(stride8), "--out", str(out), "--runner", "local",
                                      "--quiet", *args])
        assert r.exit_code == 1, r.output
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(message), lines
    assert not out.exists()
