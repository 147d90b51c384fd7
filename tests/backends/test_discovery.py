"""Backends are found through the entry point group dtorch.backends: DTorch's own are registered that way, a package
installed with pip adds one with no change to DTorch (the example package beside this file), and a backend that
fails to load is named with its error while the rest still work."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from dtorch.backends import GROUP, Backend, BackendError, OpSupport, check_model, discover
from dtorch.backends._discovery import _installed

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = Path(__file__).with_name("example_backend")


def _ep(name: str, value: str) -> EntryPoint:
    return EntryPoint(name, value, GROUP)


def test_dtorchs_own_backends_are_entry_points_of_its_package():
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][GROUP]
    assert declared == {"cpu": "dtorch.backends.cpu:CpuBackend", "npu-sim": "dtorch.backends.npu_sim:NpuSimBackend"}
    installed = {ep.name: ep for ep in _installed() if ep.name in declared}
    assert {n: ep.value for n, ep in installed.items()} == declared, (
        "the installed dtorch metadata lacks the dtorch.backends table of pyproject.toml: reinstall dtorch "
        "(pip install -e .)")
    assert all(ep.dist.metadata["Name"] == "dtorch" for ep in installed.values())
    reg = discover()
    assert {"cpu", "npu-sim"} <= set(reg.names())
    assert reg.get("npu-sim", _board()).name == "npu-sim"


def _board():  # type: ignore[no-untyped-def]
    from dtorch.edge.boards import load_board

    return load_board("rk3588")


class _Crashes(Backend):
    def __init__(self, board):  # type: ignore[no-untyped-def]
        raise RuntimeError("vendor driver not found\nat /dev/npu0")


class _CheckCrashes(Backend):
    supports = (OpSupport("qconv2d", ("int8",), "x:conv"),)

    def check(self, node):  # type: ignore[no-untyped-def]
        raise KeyError("weights")


def test_a_backend_that_fails_to_load_is_named_and_the_rest_work(tmp_path, monkeypatch):
    (tmp_path / "explodes_at_import.py").write_text("raise RuntimeError('licence server unreachable')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = discover([
        _ep("cpu", "dtorch.backends.cpu:CpuBackend"),
        _ep("npu-sim", "dtorch.backends.npu_sim:NpuSimBackend"),
        _ep("gone", "dtorch_no_such_backend_module:Backend"),
        _ep("explodes", "explodes_at_import:Backend"),
        _ep("not-a-backend", "os.path:join"),
        _ep("a-class", "pathlib:Path"),
        _ep("npu-sim", "dtorch.backends.cpu:CpuBackend"),
        _ep("Bad Name", "dtorch.backends.cpu:CpuBackend"),
    ])
    assert reg.names() == ["cpu", "npu-sim"]
    lines = {e.name: e.line() for e in reg.errors}
    assert lines["gone"] == ("backend 'gone' (from an unknown package, dtorch_no_such_backend_module:Backend) failed "
                             "to load: ModuleNotFoundError: No module named 'dtorch_no_such_backend_module'")
    assert lines["explodes"].endswith("failed to load: RuntimeError: licence server unreachable")
    assert "it names a function, not a subclass of dtorch.backends.Backend" in lines["not-a-backend"]
    assert "it names a class Path, not a subclass" in lines["a-class"]
    assert "declares a backend of this name too; that one is used" in lines["npu-sim"]
    assert "lower-case letters" in lines["Bad Name"]
    board = _board()
    assert reg.get("npu-sim", board).kind == "accelerator"  # the first declaration wins
    with pytest.raises(BackendError, match=r"^backend 'gone' .* failed to load: ModuleNotFoundError"):
        reg.get("gone", board)
    with pytest.raises(BackendError) as e:
        reg.get("npu-simm", board)
    assert str(e.value) == ("unknown backend 'npu-simm' (did you mean npu-sim?); the backends are cpu, npu-sim; "
                            "6 failed to load: Bad Name, a-class, explodes, gone, not-a-backend, npu-sim")
    # the plan still works with what loaded
    assert discover([_ep("cpu", "dtorch.backends.cpu:CpuBackend")]).get("cpu", board).kind == "cpu"


def test_a_backend_that_crashes_at_start_or_in_check_is_contained(mixed_int8):
    import dtorch.backends as B

    reg = discover([_ep("cpu", "dtorch.backends.cpu:CpuBackend"), _ep("crashes", f"{__name__}:_Crashes"),
                    _ep("check-crashes", f"{__name__}:_CheckCrashes")])
    with pytest.raises(BackendError) as e:
        reg.get("crashes", _board())
    assert str(e.value) == ("backend 'crashes' cannot start for board 'rk3588': RuntimeError: vendor driver not found "
                            "at /dev/npu0")
    plan = B.check_model(mixed_int8, "rk3588", "check-crashes", registry=reg)
    a = plan.assignments[1]
    assert a.backend == "cpu" and a.fallback.category == "backend"
    assert a.fallback.reason == "check-crashes's check failed: KeyError: 'weights'"


def test_a_board_the_backend_cannot_serve_and_an_unknown_board(mixed_int8):
    with pytest.raises(BackendError, match="npu-sim cannot simulate board 'rpi4'"):
        check_model(mixed_int8, "rpi4", "npu-sim")
    from dtorch.edge.boards import BoardError

    with pytest.raises(BoardError, match="unknown board 'rk3589'; did you mean 'rk3588'"):
        check_model(mixed_int8, "rk3589", "npu-sim")


@pytest.fixture(scope="module")
def example_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example backend package installed with pip into a folder of its own (no network, no build isolation),
    from a copy, so that the build leaves nothing in the source tree."""
    tmp = tmp_path_factory.mktemp("example_backend")
    src = tmp / "src"
    shutil.copytree(EXAMPLE, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    site = tmp / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
                        "--quiet", "--disable-pip-version-check", "--target", str(site), str(src)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (site / "dtorch_example_dsp").is_dir()
    return site


def _cli(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-m", "dtorch.edge.cli", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)


def test_a_pip_installed_backend_package_is_used_by_ops_check(example_site, mixed_int8, tmp_path):
    r = _cli(example_site, tmp_path, "ops", "check", "--board", "rk3588", "--model", str(mixed_int8), "--backend",
             "example-dsp", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    taken = [(n["op"], n["kernel"]) for n in out["nodes"] if n["backend"] == "example-dsp"]
    assert taken == [("reshape", "dsp:view"), ("qlinear", "dsp:fc")]
    assert [s["backend"] for s in out["plan"] if s["kind"] == "subgraph"][-2:] == ["example-dsp", "cpu"]
    assert any(s["kind"] == "transfer" and s["to"] == "example-dsp" and s["bytes"] > 0 for s in out["plan"])
    assert out["summary"]["nodes_by_backend"]["example-dsp"] == 2
    # its broken sibling is named, with its error, on stderr and in the JSON; everything else worked
    warn = [line for line in r.stderr.splitlines() if line.startswith("warning: ")]
    assert warn == ["warning: backend 'example-broken' (from dtorch-example-dsp 0.1.0, "
                    "dtorch_example_dsp.broken:BrokenBackend) failed to load: ModuleNotFoundError: No module named "
                    "'dtorch_example_dsp_vendor_sdk'; the other backends work"]
    assert [e["name"] for e in out["load_errors"]] == ["example-broken"]
    # asking for the broken one: one line, exit 1
    r = _cli(example_site, tmp_path, "ops", "check", "--board", "rk3588", "--model", str(mixed_int8), "--backend",
             "example-broken")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        "error: backend 'example-broken' (from dtorch-example-dsp 0.1.0, dtorch_example_dsp.broken:BrokenBackend) "
        "failed to load: ModuleNotFoundError: No module named 'dtorch_example_dsp_vendor_sdk'"]
    # the unknown-name error lists the installed package's backend beside DTorch's own
    r = _cli(example_site, tmp_path, "ops", "check", "--board", "rk3588", "--model", str(mixed_int8), "--backend",
             "example-dps")
    assert r.returncode == 1
    assert r.stderr.strip() == ("error: unknown backend 'example-dps' (did you mean example-dsp?); the backends are "
                                "cpu, example-dsp, npu-sim; 1 failed to load: example-broken")
    # and its plan simulates with the CPU run's bits
    code = ("import numpy as np; from dtorch.backends import check_model, Simulator, run_model; "
            "from dtorch._export.reader import read_dtm; import sys; p = sys.argv[1]; "
            "plan = check_model(p, 'rk3588', 'example-dsp'); x = np.ones((2, 3, 16, 16), np.float32); "
            "print(Simulator(plan, read_dtm(p)).run([x]).outputs[0].tobytes() == run_model(p, [x])[0].tobytes())")
    r = subprocess.run([sys.executable, "-c", code, str(mixed_int8)], capture_output=True, text=True, cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": str(example_site)}, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "True", r.stderr
