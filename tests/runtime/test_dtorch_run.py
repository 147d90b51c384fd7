"""The dtorch-run CLI (built with `scons` into build/host/) and the allocation-counting alloc-test.

Set DTORCH_RUN_BUILD_DIR to test binaries that are already built there instead of running scons.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from dtm_builder import chain_model, chain_reference, relu_model

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build" / "host"


@pytest.fixture(scope="module")
def binaries() -> Path:
    if os.environ.get("DTORCH_RUN_BUILD_DIR"):
        return Path(os.environ["DTORCH_RUN_BUILD_DIR"])
    if shutil.which("scons") is None:
        pytest.skip("scons is not installed (apt-get install scons)")
    r = subprocess.run(["scons", "-Q", "-j2", "dtorch-run", "alloc-test"], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return BUILD


def run(binaries: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(binaries / "dtorch-run"), *args], capture_output=True, text=True, timeout=60)


@pytest.fixture
def chain(tmp_path: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    g = chain_model()
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    g.set_test_vector([x], [chain_reference(x, g)])
    path = tmp_path / "chain.dtm"
    path.write_bytes(g.build())
    return path, x, chain_reference(x, g)


def one_error_line(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dtorch-run: error: "), r.stderr
    return lines[0]


def test_run_writes_outputs(binaries: Path, chain: tuple[Path, np.ndarray, np.ndarray], tmp_path: Path) -> None:
    path, x, want = chain
    np.save(tmp_path / "x.npy", x)
    r = run(binaries, str(path), "--input", str(tmp_path / "x.npy"), "--output", str(tmp_path / "y.npy"),
            "--threads", "2")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), want, rtol=1e-6, atol=1e-6)


def test_info(binaries: Path, chain: tuple[Path, np.ndarray, np.ndarray]) -> None:
    r = run(binaries, str(chain[0]), "--info")
    assert r.returncode == 0, r.stderr
    for text in ["format version: 1", "producer: dtorch test", "opset: 13", "input: x float32 [batch, 8]",
                 "output: y float32 [batch, 8]", "ops: add:float32 mul:float32 neg:float32 relu:float32",
                 "arena bytes", "weights bytes: 64", "test vector: yes"]:
        assert text in r.stdout


def test_bench_and_self_test(binaries: Path, chain: tuple[Path, np.ndarray, np.ndarray]) -> None:
    r = run(binaries, str(chain[0]), "--self-test", "--bench", "5")
    assert r.returncode == 0, r.stderr
    assert "self-test PASS: max abs error" in r.stdout
    assert "bench: 5 runs" in r.stdout and all(k in r.stdout for k in ("min", "median", "p90", "max"))


def test_bench_profile(binaries: Path, chain: tuple[Path, np.ndarray, np.ndarray]) -> None:
    r = run(binaries, str(chain[0]), "--bench", "7", "--profile", "--kernels", "portable")
    assert r.returncode == 0, r.stderr
    assert "p99" in r.stdout and "profile: median per node over 7 runs" in r.stdout
    rows = [line.split() for line in r.stdout.splitlines() if line.strip().startswith("node ")]
    assert [row[2] for row in rows] == ["add", "relu", "mul", "neg", "add"], r.stdout  # execution order
    assert all(row[3] == "portable" and row[-1].endswith("%") for row in rows)
    assert abs(sum(float(row[-1].rstrip("%")) for row in rows) - 100.0) < 0.5
    assert "--profile needs --bench N" in one_error_line(run(binaries, str(chain[0]), "--profile", "--info"))


def test_self_test_fail_and_missing_vector(binaries: Path, tmp_path: Path) -> None:
    g = relu_model([2, 4])
    x = np.ones((2, 4), np.float32)
    g.set_test_vector([x], [x * 2])
    (tmp_path / "bad.dtm").write_bytes(g.build())
    r = run(binaries, str(tmp_path / "bad.dtm"), "--self-test")
    assert r.returncode == 1 and "self-test FAIL" in r.stdout
    (tmp_path / "none.dtm").write_bytes(relu_model().build())
    assert "no bundled test vector" in one_error_line(run(binaries, str(tmp_path / "none.dtm"), "--self-test"))


def test_errors_are_one_line(binaries: Path, chain: tuple[Path, np.ndarray, np.ndarray], tmp_path: Path) -> None:
    path = str(chain[0])
    np.save(tmp_path / "f64.npy", np.zeros((2, 8)))
    np.save(tmp_path / "wrong.npy", np.zeros((2, 5), np.float32))
    np.save(tmp_path / "fortran.npy", np.asfortranarray(np.zeros((2, 8), np.float32)))
    np.save(tmp_path / "obj.npy", np.zeros(2, np.complex64))
    (tmp_path / "junk.dtm").write_bytes(b"not a model at all")
    (tmp_path / "relu.dtm").write_bytes(relu_model().build())  # no bundled test vector
    cases = [
        ([], "no model given"),
        ([path], "nothing to do"),
        ([path, "--bogus"], "unknown option '--bogus'"),
        ([path, "--threads", "0"], "--threads needs an integer"),
        ([path, "--bench", "x"], "--bench needs a positive number"),
        ([path, "--input"], "--input needs a value"),
        ([str(tmp_path / "missing.dtm"), "--info"], "cannot open model file"),
        ([str(tmp_path / "junk.dtm"), "--info"], "not a .dtm model"),
        ([path, "--input", str(tmp_path / "nope.npy")], "cannot open input file"),
        ([path, "--input", str(tmp_path / "f64.npy")], "has dtype float64 but the model expects float32"),
        ([path, "--input", str(tmp_path / "wrong.npy")], "dimension 1: expected size 8 but got 5"),
        ([path, "--input", str(tmp_path / "fortran.npy")], "Fortran order"),
        ([path, "--input", str(tmp_path / "obj.npy")], "is not supported"),
        ([path, "--input", str(tmp_path / "wrong.npy"), "--input", str(tmp_path / "wrong.npy")], "1 input(s) but 2"),
        ([path, "--repeat", "0"], "--repeat needs a positive number"),
        ([str(tmp_path / "relu.dtm"), "--repeat", "2"], "--repeat needs --input files"),
        ([path, "--info", "--json"], "--info prints text; leave out --json"),
    ]
    for args, message in cases:
        assert message in one_error_line(run(binaries, *args)), args
    r = run(binaries, path, "--input", str(tmp_path / "wrong.npy"))
    assert r.returncode == 1


def test_json_report_and_first_output_event(binaries: Path, chain: tuple[Path, np.ndarray, np.ndarray],
                                            tmp_path: Path) -> None:
    import json

    path, x, want = chain
    np.save(tmp_path / "x.npy", x)
    r = run(binaries, str(path), "--input", str(tmp_path / "x.npy"), "--output", str(tmp_path / "y.npy"), "--bench",
            "4", "--json")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert [e["event"] for e in lines] == ["first_output", "report"]  # only JSON, the event first
    assert lines[0]["ms"] > 0
    rep = lines[1]
    assert rep["outputs"] == [{"name": "y", "dtype": "float32", "shape": list(want.shape)}]
    lat = rep["latency_ms"]
    assert lat["runs"] == 4 and 0 < lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"]
    mem = rep["memory"]
    assert mem["heap_peak_bytes"] >= mem["arena_bytes"] > 0  # the arena comes from the metered heap
    assert mem["model_bytes"] == path.stat().st_size
    assert mem["runtime_peak_bytes"] == mem["heap_peak_bytes"] + mem["model_bytes"]
    assert mem["process_peak_rss_bytes"] > 0
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), want, rtol=1e-6, atol=1e-6)
    # --repeat: runs, prints nothing without --json
    r = run(binaries, str(path), "--input", str(tmp_path / "x.npy"), "--repeat", "3")
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout.startswith("output y:")  # the one line of the first (untimed) run


def test_json_self_test(binaries: Path, chain: tuple[Path, np.ndarray, np.ndarray]) -> None:
    import json

    r = run(binaries, str(chain[0]), "--self-test", "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout.splitlines()[-1])
    assert rep["self_test"]["pass"] is True and rep["self_test"]["max_abs_error"] <= 1e-5


def test_second_run_allocates_nothing(binaries: Path, chain: tuple[Path, np.ndarray, np.ndarray]) -> None:
    for threads in ("1", "2"):
        r = subprocess.run([str(binaries / "alloc-test"), str(chain[0]), threads], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0 and "alloc-test PASS: 0 allocation(s)" in r.stdout, r.stdout + r.stderr


@pytest.fixture(scope="module")
def zoo_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real exported models (conv, depthwise, linear, matmul, norms...) for the per-policy checks."""
    import importlib.util

    import dtorch as dt

    spec = importlib.util.spec_from_file_location("export_zoo", ROOT / "tests" / "export" / "zoo.py")
    zoo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(zoo)  # type: ignore[union-attr]
    out = {}
    root = tmp_path_factory.mktemp("zoo_run")
    for name in ("simplenet", "mobilenetv2", "transformer"):
        make_model, make_input = zoo.ZOO[name]
        dt.manual_seed(0)
        path = root / f"{name}.dtm"
        dt.export(make_model().eval(), make_input(2), str(path), bundle_example=True)
        out[name] = path
    return out


@pytest.mark.parametrize("kernels", ["fast", "exact", "portable"])
def test_zoo_models_allocate_nothing_after_the_first_run(binaries: Path, zoo_models: dict[str, Path],
                                                          kernels: str) -> None:
    for name, path in zoo_models.items():
        for threads in ("1", "2"):
            r = subprocess.run([str(binaries / "alloc-test"), str(path), threads, kernels], capture_output=True,
                               text=True, timeout=120)
            assert r.returncode == 0 and "alloc-test PASS: 0 allocation(s)" in r.stdout, (name, r.stdout + r.stderr)


def test_kernel_policy_option(binaries: Path, zoo_models: dict[str, Path]) -> None:
    path = str(zoo_models["simplenet"])
    for kernels in ("fast", "exact", "portable"):
        r = run(binaries, path, "--kernels", kernels, "--self-test", "--info")
        assert r.returncode == 0 and "self-test PASS" in r.stdout, r.stdout + r.stderr
        line = next(x for x in r.stdout.splitlines() if x.startswith("kernels: "))
        sets = {item.split(":")[1] for item in line.split()[1:]}
        assert sets <= {"exact": {"portable", "x86"}, "portable": {"portable"}}.get(kernels, sets), line
    assert "--kernels needs fast, exact or portable, got 'turbo'" in one_error_line(
        run(binaries, path, "--kernels", "turbo", "--info"))


def test_exclude_kernel_set_option(binaries: Path, zoo_models: dict[str, Path]) -> None:
    path = str(zoo_models["simplenet"])

    def sets(*args: str) -> set[str]:
        r = run(binaries, path, *args, "--self-test", "--info")
        assert r.returncode == 0 and "self-test PASS" in r.stdout, r.stdout + r.stderr
        line = next(x for x in r.stdout.splitlines() if x.startswith("kernels: "))
        return {item.split(":")[1] for item in line.split()[1:]}

    every = sets()
    for drop in sorted(every - {"portable"}):  # each set the fast policy took, excluded in turn
        assert drop not in sets("--exclude-kernel-set", drop)
    # without every x86 set, the portable kernels (on any CPU, whichever sets it has)
    assert sets(*[a for s in ("x86", "avx2", "avx512") for a in ("--exclude-kernel-set", s)]) == {"portable"}
    assert "'portable' cannot be excluded" in one_error_line(
        run(binaries, path, "--exclude-kernel-set", "portable", "--info"))
    assert "--exclude-kernel-set needs a value" in one_error_line(run(binaries, path, "--exclude-kernel-set"))


def test_layouts_option(binaries: Path, zoo_models: dict[str, Path], tmp_path: Path) -> None:
    """--layouts nchw keeps every tensor NCHW (SessionOptions::blocked_layouts = false): the same output bits."""
    path = str(zoo_models["simplenet"])
    x = np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    outs = []
    for layouts in ("blocked", "nchw"):
        out = tmp_path / f"{layouts}.npy"
        r = run(binaries, path, "--input", str(tmp_path / "x.npy"), "--output", str(out), "--layouts", layouts)
        assert r.returncode == 0, r.stderr
        outs.append(np.load(out))
    np.testing.assert_array_equal(outs[0], outs[1])
    r = run(binaries, path, "--layouts", "nhwc", "--info")
    assert r.returncode == 2 and "--layouts needs blocked or nchw, got 'nhwc'" in one_error_line(r)
    assert "--layouts needs a value" in one_error_line(run(binaries, path, "--layouts"))


def test_setup_installs_the_host_dtorch_run_in_the_venv(tmp_path: Path) -> None:
    """After scripts/setup.sh (the README's Quickstart), the venv has the native host runner."""
    import sys

    exe = Path(sys.executable).parent / "dtorch-run"
    if not exe.exists():
        pytest.fail(f"{exe} is missing: run scripts/setup.sh (it builds build/host/dtorch-run and installs it there)")
    g = chain_model()
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    g.set_test_vector([x], [chain_reference(x, g)])
    (tmp_path / "m.dtm").write_bytes(g.build())
    r = subprocess.run([str(exe), str(tmp_path / "m.dtm"), "--self-test"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "self-test PASS" in r.stdout, r.stdout + r.stderr
