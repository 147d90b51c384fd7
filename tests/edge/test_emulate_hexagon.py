"""The Hexagon DSP board (qcs6490-cdsp): SimpleNet-32 float32 and int8 built with zig for hexagon-linux-musl
(-mcpu=hexagonv67) and run under qemu-hexagon (dtorch-edge emulate): bit parity with the host's portable kernels on
real digits, deterministic instruction counts within the committed baseline, the docker runner against the local one.

The board's binaries are Linux user-mode programs; the real cDSP runs QuRT (boards/qcs6490-cdsp.toml says why the
emulated figures still mean something). zig and qemu-hexagon come from scripts/setup.sh."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import dtorch as dt
from dtorch.edge.boards import load_board
from dtorch.edge.build import build_bundle
from dtorch.edge.emulate import emulate

from .docker_check import docker_or_skip

ROOT = Path(__file__).resolve().parents[2]
BOARD = "qcs6490-cdsp"

_spec = importlib.util.spec_from_file_location("export_zoo", ROOT / "tests" / "export" / "zoo.py")
zoo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(zoo)  # type: ignore[union-attr]


def _quiet(_m: str) -> None:
    pass


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[object, Path]]:
    root = tmp_path_factory.mktemp("hexagon_models")
    make_model, make_input = zoo.ZOO["simplenet"]  # 3x32x32 input: SimpleNet-32
    dt.manual_seed(0)
    model = make_model().eval()
    path = root / "simplenet.dtm"
    dt.export(model, make_input(1), str(path), dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
              bundle_example=True)
    dt.manual_seed(1)
    qmodel = dt.quant.quantize(model, [make_input(8).numpy() for _ in range(3)])
    qpath = root / "simplenet_int8.dtm"
    dt.export(qmodel, make_input(1), str(qpath), bundle_example=True)
    return {"simplenet": (model, path), "simplenet_int8": (qmodel, qpath)}


@pytest.fixture(scope="module")
def bundle(models, tmp_path_factory: pytest.TempPathFactory) -> Path:
    res = build_bundle(BOARD, [p for _, p in models.values()], out=tmp_path_factory.mktemp("hexagon_dist"),
                       compare_full=False, agent=False, log=_quiet, progress=False)
    return res.dist


@pytest.fixture(scope="module")
def digits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from dtorch.edge.demo import MEAN, STD
    from dtorch.vision import transforms
    from dtorch.vision.datasets import Digits

    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
    ds = Digits(train=False, rgb=True, size=32, transform=tf)
    path = tmp_path_factory.mktemp("hexagon_digits") / "digits4.npy"
    np.save(path, np.stack([ds[i][0].numpy() for i in range(4)]))
    return path


def test_the_board_is_a_hexagon_v67_build_under_qemu_hexagon():
    b = load_board(BOARD)
    assert b.arch == "hexagon" and b.emulator.binary == "qemu-hexagon" and b.emulator.cpu == "v67"
    assert b.flags_for("zig").cxxflags == ("-mcpu=hexagonv67",)
    assert b.emulator.stand_in  # v67 stands in for the real v68


def test_float32_gives_the_host_bits_and_the_figures(models, bundle, digits):
    model, path = models["simplenet"]

    def eager(arrays):  # type: ignore[no-untyped-def]
        with dt.no_grad():
            return [model(dt.from_numpy(arrays[0])).numpy()]

    rep = emulate(BOARD, bundle=bundle, model=bundle / path.name, data=[digits], runner="local", runs=1,
                  bench_runs=2, eager=eager, log=_quiet, progress=False)
    p = rep.figures["parity"]
    assert p["host_bits_equal"] and p["vs_host_max_abs"] == 0.0, p
    assert p["pass"] and p["eager_checked"] == 1 and p["vs_eager_max_rel"] <= 1e-5
    # no Hexagon kernel set exists: the fast and the portable policy run the same (portable) kernels
    assert p["fast_vs_portable_max_rel"] == 0.0, p
    j = rep.to_json()
    assert j["emulated"] is True and j["board"] == BOARD
    for key in ("parity", "cold_start", "latency_ms", "memory", "instructions"):
        assert j[key]["label"] == "emulated", key
    assert j["estimate"]["label"] == "estimate" and j["estimate"]["latency_ms"] > 0
    assert j["memory"]["fits"] and j["memory"]["arena_bytes"] > 0
    assert j["size"]["dtorch_run_bytes"] == (bundle / "dtorch-run").stat().st_size


def test_int8_gives_the_host_bits(models, bundle, digits):
    qmodel, path = models["simplenet_int8"]
    rep = emulate(BOARD, bundle=bundle, model=bundle / path.name, data=[digits], runner="local", runs=1,
                  bench_runs=1, eager=lambda arrays: qmodel.run(*arrays), log=_quiet, progress=False)
    p = rep.figures["parity"]
    assert p["host_bits_equal"] and p["vs_host_max_abs"] == 0.0, p
    assert p["vs_eager_max_rel"] == 0.0 and p["pass"], p


def test_instructions_are_deterministic_and_within_the_baseline(models, bundle):
    _, path = models["simplenet"]
    counts = [emulate(BOARD, bundle=bundle, model=bundle / path.name, runner="local", runs=1, bench_runs=1,
                      log=_quiet, progress=False).figures["instructions"]["per_inference"] for _ in range(2)]
    assert counts[0] == counts[1] > 100_000
    base = json.loads((ROOT / "tests" / "edge" / "emulated_baseline.json").read_text())
    was = base["instructions_per_inference"][BOARD]
    assert counts[0] <= was * (1 + base["tolerance"]), f"{BOARD}: {counts[0]:,} instructions per inference vs {was:,}"


def test_docker_runner_gives_the_local_runner_outputs(models, bundle, digits):
    docker_or_skip("test_emulate_hexagon")
    _, path = models["simplenet_int8"]
    kw = dict(bundle=bundle, model=bundle / path.name, data=[digits], runs=1, bench_runs=1, log=_quiet,
              progress=False)
    local = emulate(BOARD, runner="local", **kw)
    docker = emulate(BOARD, runner="docker", **kw)
    assert docker.runner == "docker"
    assert docker.figures["parity"]["output_sha256"] == local.figures["parity"]["output_sha256"]
    assert docker.figures["parity"]["pass"]
