"""The emulation suite: bundles for rk3588 (aarch64), rv1126 (armv7) and licheepi4a (riscv64) run under QEMU user mode
(dtorch-edge emulate): bit parity with the host runtime on real digits, deterministic instruction counts, the docker
runner against the local one, the figures and their labels, and every error a user can run into.

QEMU and the cross toolchains come from scripts/setup.sh; .ci/run starts a Docker engine (dockerd --bridge=none
--iptables=false). Outside CI a missing engine skips the docker tests with the reason printed; in CI it fails."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import dtorch as dt
from dtorch.edge.build import build_bundle
from dtorch.edge.cli import main
from dtorch.edge.emulate import EmulateError, RunnerUnavailable, RunTimeout, emulate

from .docker_check import docker_or_skip

ROOT = Path(__file__).resolve().parents[2]
BOARDS = ["rk3588", "rv1126", "licheepi4a"]
MODELS = ["simplenet", "mobilenetv2"]
INT8_MODELS = [f"{m}_int8" for m in MODELS]  # the same models through dt.quant.quantize (int8 end to end)

_spec = importlib.util.spec_from_file_location("export_zoo", ROOT / "tests" / "export" / "zoo.py")
zoo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(zoo)  # type: ignore[union-attr]


def _digits(n: int) -> np.ndarray:
    """n real test digits through the demo's test transforms (32x32 RGB, ToTensor, Normalize)."""
    from dtorch.edge.demo import MEAN, STD
    from dtorch.vision import transforms
    from dtorch.vision.datasets import Digits

    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
    ds = Digits(train=False, rgb=True, size=32, transform=tf)
    return np.stack([ds[i][0].numpy() for i in range(n)])


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[object, Path]]:
    root = tmp_path_factory.mktemp("emulate_models")
    out = {}
    for name in MODELS:
        make_model, make_input = zoo.ZOO[name]
        dt.manual_seed(0)
        model = make_model().eval()
        path = root / f"{name}.dtm"
        dt.export(model, make_input(1), str(path), dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                  bundle_example=True)
        out[name] = (model, path)
        dt.manual_seed(1)
        qmodel = dt.quant.quantize(model, [make_input(8).numpy() for _ in range(3)])
        qpath = root / f"{name}_int8.dtm"
        dt.export(qmodel, make_input(1), str(qpath), bundle_example=True)
        out[f"{name}_int8"] = (qmodel, qpath)
    return out


@pytest.fixture(scope="module")
def digits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("digits") / "digits8.npy"
    np.save(path, _digits(8))
    return path


@pytest.fixture(scope="module")
def bundles(models, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One bundle per board holding both models (the union op list: the one tests/edge/test_board_build.py builds)."""
    dist = tmp_path_factory.mktemp("emulate_dist")
    out = {}
    for board in BOARDS:
        res = build_bundle(board, [models[m][1] for m in MODELS + INT8_MODELS], out=dist, compare_full=False,
                           agent=False,
                           log=lambda _m: None,
                           progress=False)
        out[board] = res.dist
    return out


def _eager(model):  # type: ignore[no-untyped-def]
    def run(arrays):  # type: ignore[no-untyped-def]
        with dt.no_grad():
            return [model(dt.from_numpy(arrays[0])).numpy()]
    return run


def _quiet(_m: str) -> None:
    pass


@pytest.mark.parametrize("model_name", MODELS)
@pytest.mark.parametrize("board", BOARDS)
def test_bit_parity_with_the_host_on_real_digits(models, bundles, digits, board, model_name):
    model, path = models[model_name]
    rep = emulate(board, bundle=bundles[board], model=bundles[board] / path.name, data=[digits], runner="local",
                  runs=1, bench_runs=2, eager=_eager(model), log=_quiet, progress=False)
    p = rep.figures["parity"]
    assert p["host_bits_equal"], p
    assert p["pass"] and p["vs_host_max_abs"] == 0.0
    assert p["eager_checked"] == 1 and p["vs_eager_max_rel"] <= 1e-5
    # fast kernels vs portable: within tolerance, and not the portable bits where a SIMD set runs the convolutions
    # (rk3588: neon64, rv1126: neon32); licheepi4a has none and runs the portable kernels under either policy
    assert p["fast_vs_portable_max_rel"] <= 1e-5
    assert (p["fast_vs_portable_max_rel"] > 0) == (board in ("rk3588", "rv1126")), p
    j = rep.to_json()
    assert j["emulated"] is True and j["board"] == board and j["runner"] == "local"
    for key in ("parity", "cold_start", "latency_ms", "memory", "instructions"):
        assert j[key]["label"] == "emulated", key
    assert j["estimate"]["label"] == "estimate" and j["estimate"]["latency_ms"] > 0
    assert j["cold_start"]["median_ms"] > 0 and j["latency_ms"]["p50"] > 0 and j["latency_ms"]["runs"] == 2
    assert j["latency_ms"]["p50"] <= j["latency_ms"]["p90"] <= j["latency_ms"]["p99"]
    mem = j["memory"]
    assert mem["fits"] and mem["runtime_peak_bytes"] >= mem["arena_bytes"] > 0 and mem["board_ram_bytes"] > 0
    assert mem["emulator_process_peak_rss_bytes"] > mem["arena_bytes"]
    assert j["instructions"]["per_inference"] > 0
    assert j["size"]["dtorch_run_bytes"] == (bundles[board] / "dtorch-run").stat().st_size
    lines = "\n".join(rep.lines())
    assert "parity (emulated): PASS" in lines and "(estimate, not measured)" in lines


@pytest.mark.parametrize("model_name", INT8_MODELS)
@pytest.mark.parametrize("board", BOARDS)
def test_int8_models_give_the_host_bits_on_every_board(models, bundles, digits, board, model_name):
    """Int8 is bit-exact everywhere: the board's binary (either kernel policy) gives the host's int8 bits."""
    qmodel, path = models[model_name]
    rep = emulate(board, bundle=bundles[board], model=bundles[board] / path.name, data=[digits], runner="local",
                  runs=1, bench_runs=1, eager=lambda arrays: qmodel.run(*arrays), log=_quiet, progress=False)
    p = rep.figures["parity"]
    assert p["host_bits_equal"] and p["vs_host_max_abs"] == 0.0, p
    assert p["fast_vs_portable_max_rel"] == 0.0 and p["vs_eager_max_rel"] == 0.0, p
    assert p["pass"]


def test_host_board_runs_natively_and_says_so(models, tmp_path):
    _, path = models["simplenet"]
    bundle = build_bundle("host", [path], out=tmp_path / "dist", compare_full=False, agent=False, log=_quiet,
                          progress=False).dist
    rep = emulate("host", bundle=bundle, runner="local", runs=1, bench_runs=2, log=_quiet, progress=False)
    j = rep.to_json()
    assert j["emulated"] is False and j["label"] == "native" and j["latency_ms"]["label"] == "native"
    assert j["parity"]["pass"] and j["instructions"]["per_inference"] is None
    assert "runs natively" in j["instructions"]["note"]
    assert "parity (native): PASS" in "\n".join(rep.lines())
    # an RSS of dtorch-run itself (VmHWM after exec), not of the Python process that started it
    assert j["memory"]["emulator_process_peak_rss_bytes"] < 30 * 2**20


def test_instruction_count_is_the_same_on_every_run(models, bundles):
    _, path = models["simplenet"]
    counts = []
    for _ in range(2):
        rep = emulate("rk3588", bundle=bundles["rk3588"], model=bundles["rk3588"] / path.name, runner="local", runs=1,
                      bench_runs=1, log=_quiet, progress=False)
        counts.append(rep.figures["instructions"]["per_inference"])
    assert counts[0] == counts[1] and counts[0] > 100_000


def test_instructions_within_the_committed_baseline(models, bundles):
    """The regression check CI runs on every change: guest instructions per inference of the zoo SimpleNet on the
    bundled test vector, against tests/edge/emulated_baseline.json, at most 10% more (fewer is fine: update the
    baseline with the command in that file)."""
    base = json.loads((ROOT / "tests" / "edge" / "emulated_baseline.json").read_text())
    _, path = models["simplenet"]
    for board in BOARDS:
        rep = emulate(board, bundle=bundles[board], model=bundles[board] / path.name, runner="local", runs=1,
                      bench_runs=1, log=_quiet, progress=False)
        now, was = rep.figures["instructions"]["per_inference"], base["instructions_per_inference"][board]
        assert now <= was * (1 + base["tolerance"]), f"{board}: {now:,} instructions per inference vs {was:,}"


def test_docker_runner_gives_the_local_runner_outputs(models, bundles, digits):
    docker_or_skip("test_emulate")
    _, path = models["mobilenetv2"]
    kw = dict(bundle=bundles["rv1126"], model=bundles["rv1126"] / path.name, data=[digits], runs=1, bench_runs=2,
              log=_quiet, progress=False)
    local = emulate("rv1126", runner="local", **kw)
    docker = emulate("rv1126", runner="docker", **kw)
    assert docker.runner == "docker" and local.runner == "local"
    assert docker.figures["parity"]["output_sha256"] == local.figures["parity"]["output_sha256"]
    assert docker.figures["parity"]["pass"]
    assert docker.figures["instructions"]["per_inference"] is None  # static QEMU loads no plugin
    assert "cannot count instructions" in docker.figures["instructions"]["note"]
    assert "container" in docker.figures["cold_start"]["what"]


def test_auto_runner_says_which_it_took(models, bundles, monkeypatch):
    _, path = models["simplenet"]
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/dtorch-test-docker.sock")
    said: list[str] = []
    rep = emulate("rk3588", bundle=bundles["rk3588"], model=bundles["rk3588"] / path.name, runner="auto", runs=1,
                  bench_runs=1, count_instructions=False, log=said.append, progress=False)
    assert rep.runner == "local"
    assert any(line.startswith("runner: local (auto: ") and "Docker engine" in line for line in said), said


# --- errors ------------------------------------------------------------------------------------------------------


def test_docker_engine_not_running(models, bundles, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/dtorch-test-docker.sock")
    with pytest.raises(RunnerUnavailable, match=r"the Docker engine is not running .*dockerd --bridge=none"):
        emulate("rk3588", bundle=bundles["rk3588"], model=bundles["rk3588"] / models["simplenet"][1].name,
                runner="docker", log=_quiet, progress=False)


def test_missing_qemu_binary(models, bundles, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no qemu-riscv64 on it
    with pytest.raises(RunnerUnavailable, match=r"qemu-riscv64 is not installed .*apt-get install qemu-user"):
        emulate("licheepi4a", bundle=bundles["licheepi4a"], runner="local", log=_quiet, progress=False,
                model=bundles["licheepi4a"] / models["simplenet"][1].name)


def test_bundle_built_for_another_board(models, bundles):
    with pytest.raises(EmulateError, match=r"was built for board 'rk3588', not 'rv1126'"):
        emulate("rv1126", bundle=bundles["rk3588"], runner="local", log=_quiet, progress=False,
                model=bundles["rk3588"] / models["simplenet"][1].name)


def test_not_a_bundle_and_model_not_in_bundle(models, bundles, tmp_path):
    with pytest.raises(EmulateError, match="bundle not found"):
        emulate("rk3588", bundle=tmp_path / "nope", runner="local", log=_quiet, progress=False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(EmulateError, match="is not a bundle"):
        emulate("rk3588", bundle=tmp_path / "empty", runner="local", log=_quiet, progress=False)
    other = tmp_path / "other.dtm"
    dt.export(zoo.ZOO["mlp"][0]().eval(), zoo.ZOO["mlp"][1](1), str(other))
    with pytest.raises(EmulateError, match="is not in the bundle"):
        emulate("rk3588", bundle=bundles["rk3588"], model=other, runner="local", log=_quiet, progress=False)
    with pytest.raises(EmulateError, match="holds several models"):
        emulate("rk3588", bundle=bundles["rk3588"], runner="local", log=_quiet, progress=False)
    with pytest.raises(EmulateError, match="give --model"):
        emulate("rk3588", runner="local", log=_quiet, progress=False)


def test_unknown_board_names_the_closest():
    with pytest.raises(EmulateError, match="rk3588"):
        emulate("rk3588x", model="x.dtm", log=_quiet, progress=False)


def _root_with_boards(tmp_path: Path, **boards: str) -> Path:
    """A resource root like the checkout's, with its own boards/ folder."""
    root = tmp_path / "root"
    root.mkdir()
    for name in ("runtime", "toolchains", "emulation", "SConstruct"):
        (root / name).symlink_to(ROOT / name)
    (root / "boards").mkdir()
    for name, text in boards.items():
        (root / "boards" / f"{name}.toml").write_text(text)
    return root


def test_board_without_an_emulator_profile(tmp_path):
    text = (ROOT / "boards" / "rk3588.toml").read_text()
    no_emu = text[:text.index("[emulator]")] + text[text.index("[[accelerators]]"):]
    root = _root_with_boards(tmp_path, rk3588=no_emu)
    with pytest.raises(EmulateError, match=r"cannot be emulated here: its board file has no \[emulator\] table"):
        emulate("rk3588", model="x.dtm", root=root, log=_quiet, progress=False)


def test_model_that_does_not_fit_fails(models, bundles, tmp_path):
    text = (ROOT / "boards" / "rk3588.toml").read_text().replace("ram_mb = 8192", "ram_mb = 1")
    root = _root_with_boards(tmp_path, rk3588=text)
    batch = tmp_path / "digits64.npy"
    np.save(batch, _digits(64))  # activations of 64 images: several MiB
    rep = emulate("rk3588", bundle=bundles["rk3588"], model=bundles["rk3588"] / models["mobilenetv2"][1].name,
                  data=[batch], runner="local", runs=1, bench_runs=1, count_instructions=False, root=root, log=_quiet,
                  progress=False)
    assert not rep.fits and rep.figures["memory"]["runtime_peak_bytes"] > 2**20
    assert any("FAIL: the model does not fit" in line for line in rep.lines())


def test_a_run_that_hangs_is_killed_and_reported(models, bundles):
    before = subprocess.run(["pgrep", "-c", "qemu-aarch64"], capture_output=True, text=True).stdout.strip()
    with pytest.raises(RunTimeout, match=r"did not finish within 0.02 s and was killed"):
        emulate("rk3588", bundle=bundles["rk3588"], model=bundles["rk3588"] / models["simplenet"][1].name,
                runner="local", timeout=0.02, log=_quiet, progress=False)
    after = subprocess.run(["pgrep", "-c", "qemu-aarch64"], capture_output=True, text=True).stdout.strip()
    assert after == before  # nothing left running


# --- the CLI -------------------------------------------------------------------------------------------------------


def test_cli_emulate_json_and_errors(models, bundles, tmp_path):
    r = CliRunner().invoke(main, ["emulate", "--board", "rk3588", "--bundle", str(bundles["rk3588"]), "--model",
                                  str(bundles["rk3588"] / models["simplenet"][1].name), "--runner", "local",
                                  "--runs", "1", "--bench-runs", "2", "--json", str(tmp_path / "out.json"), "--quiet"])
    assert r.exit_code == 0, r.output
    data = json.loads((tmp_path / "out.json").read_text())
    assert data["emulated"] is True and data["parity"]["pass"]
    assert "latency (emulated): p50" in r.output and "estimate, not measured" in r.output
    assert data["kernels"] == "fast" and "fast kernels" in r.output
    # --kernels exact: the timed and counted runs take the portable kernels, which cost rk3588 more instructions
    r = CliRunner().invoke(main, ["emulate", "--board", "rk3588", "--bundle", str(bundles["rk3588"]), "--model",
                                  str(bundles["rk3588"] / models["simplenet"][1].name), "--runner", "local",
                                  "--runs", "1", "--bench-runs", "1", "--kernels", "exact", "--json",
                                  str(tmp_path / "exact.json"), "--quiet"])
    assert r.exit_code == 0, r.output
    exact = json.loads((tmp_path / "exact.json").read_text())
    assert exact["kernels"] == "exact" and "exact kernels" in r.output
    assert exact["instructions"]["per_inference"] > data["instructions"]["per_inference"]
    r = CliRunner().invoke(main, ["emulate", "--board", "rk3588", "--bundle", str(bundles["rk3588"]), "--kernels",
                                  "portable"])
    assert r.exit_code == 2 and "'portable' is not one of 'fast', 'exact'" in r.output
    with pytest.raises(EmulateError, match="kernels must be 'fast' or 'exact', not 'simd'"):
        emulate("rk3588", bundle=bundles["rk3588"], kernels="simd", log=_quiet, progress=False)
    r = CliRunner().invoke(main, ["emulate", "--board", "rv1126", "--bundle", str(bundles["rk3588"]), "--quiet"])
    assert r.exit_code == 1
    err = [line for line in r.output.splitlines() if line.startswith("error: ")]
    assert len(err) == 1 and "was built for board 'rk3588'" in err[0]


def test_cli_emulate_with_the_simulated_npu(models, bundles, digits, tmp_path):
    """emulate --backend npu-sim: the emulated CPU figures and, beside them, the simulated NPU's plan of the int8 model
    (run on the same inputs, with the CPU run's bits) and its estimated latency, each labelled as what it is."""
    qpath = bundles["rk3588"] / models["simplenet_int8"][1].name
    r = CliRunner().invoke(main, ["emulate", "--board", "rk3588", "--bundle", str(bundles["rk3588"]), "--model",
                                  str(qpath), "--data", str(digits), "--runner", "local", "--runs", "1", "--bench-runs",
                                  "1", "--no-instructions", "--backend", "npu-sim", "--json", str(tmp_path / "npu.json"),
                                  "--quiet"])
    assert r.exit_code == 0, r.output
    d = json.loads((tmp_path / "npu.json").read_text())
    assert d["parity"]["pass"] and d["latency_ms"]["label"] == "emulated"
    acc = d["accelerator"]
    assert acc["backend"] == "npu-sim" and acc["label"] == "simulation" and acc["latency_label"] == "estimate"
    assert acc["outputs_bit_identical_to_cpu"] is True and acc["inputs"] == 1
    # quantize (float32 in) and dequantize (float32 out) stay on the CPU; the int8 rest is one NPU subgraph
    assert acc["nodes_on_backend"] == acc["nodes"] - 2 and len(acc["subgraphs"]) == 1 and acc["transfers"] == 2
    assert {f["op"] for f in acc["fallbacks"]} == {"quantize", "dequantize"}
    assert acc["estimate_total_ms"] > acc["subgraphs"][0]["estimate"]["launch_ms"] > 0
    assert "latency (emulated): p50" in r.output
    assert "npu-sim (simulation, latencies are estimates)" in r.output and "bit-identical to the CPU run" in r.output
    assert "latency with npu-sim (estimate, not measured)" in r.output


def test_cli_bench_writes_table_json_chart_and_checks_a_baseline(models, tmp_path):
    from PIL import Image

    _, path = models["simplenet"]
    report = tmp_path / "bench"
    args = ["bench", "--boards", "rk3588,licheepi4a", "--model", str(path), "--report", str(report), "--runs", "1",
            "--bench-runs", "2", "--out", str(tmp_path / "dist"), "--quiet"]
    r = CliRunner().invoke(main, [*args, "--save-baseline", str(tmp_path / "base.json")])
    assert r.exit_code == 0, r.output
    md = (report / "bench.md").read_text()
    assert md.count("| PASS |") == 2 and "rk3588" in md and "licheepi4a" in md and "(emulated)" in md
    rows = json.loads((report / "bench.json").read_text())
    assert [x["board"] for x in rows] == ["rk3588", "licheepi4a"] and all(x["emulated"] for x in rows)
    with Image.open(report / "bench.png") as im:
        assert im.format == "PNG" and im.size[0] > 600
    base = json.loads((tmp_path / "base.json").read_text())
    assert set(base["instructions_per_inference"]) == {"rk3588", "licheepi4a"}
    r = CliRunner().invoke(main, [*args, "--baseline", str(tmp_path / "base.json")])
    assert r.exit_code == 0 and "+0.00%" in r.output and "REGRESSION" not in r.output, r.output
    base["instructions_per_inference"]["rk3588"] //= 2  # the model got twice as expensive
    (tmp_path / "base.json").write_text(json.dumps(base))
    r = CliRunner().invoke(main, [*args, "--baseline", str(tmp_path / "base.json")])
    assert r.exit_code == 1 and "rk3588" in r.output and "REGRESSION" in r.output


def test_setup_installs_what_emulation_needs():
    text = (ROOT / "scripts" / "setup.sh").read_text()
    for pkg in ("qemu-user", "qemu-user-static", "docker.io"):
        assert f"    {pkg}\n" in text
    assert shutil.which("qemu-aarch64") and shutil.which("qemu-riscv64") and shutil.which("qemu-arm")
    assert "dockerd --bridge=none --iptables=false" in (ROOT / ".ci" / "run").read_text()
