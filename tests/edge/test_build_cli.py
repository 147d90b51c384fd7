"""`dtorch-edge build`: a model -> dist/<board>/ (dtorch-run with only the model's kernels, the model, manifest.json,
size_report.md), verified on the host first; incremental; every error one line with what to do."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

import dtorch as dt
from dtorch.edge.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    spec = importlib.util.spec_from_file_location("export_zoo", ROOT / "tests" / "export" / "zoo.py")
    zoo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(zoo)  # type: ignore[union-attr]
    make_model, make_input = zoo.ZOO["simplenet"]
    dt.manual_seed(0)
    path = tmp_path_factory.mktemp("build_cli") / "simplenet.dtm"
    dt.export(make_model().eval(), make_input(1), str(path), bundle_example=True)
    return path


def invoke(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def test_host_bundle(model, tmp_path):
    out = tmp_path / "dist"
    r = invoke("build", "--board", "host", "--model", str(model), "--out", str(out), "--quiet")
    assert r.exit_code == 0, r.output
    b = out / "host"
    for name in ("dtorch-run", "model.dtm", "manifest.json", "size_report.md"):
        assert (b / name).is_file(), name
    m = json.loads((b / "manifest.json").read_text())
    assert m["board"] == "host" and m["toolchain"]["name"] == "host" and m["toolchain"]["version"]
    assert m["ops"] == ["adaptive_avg_pool2d:float32", "conv2d:float32", "linear:float32", "reshape:float32"]
    assert m["models"][0]["sha256"] == hashlib.sha256(model.read_bytes()).hexdigest()
    for name, f in m["files"].items():
        assert f["sha256"] == hashlib.sha256((b / name).read_bytes()).hexdigest() and f["bytes"] > 0
    assert "-ffunction-sections" in m["flags"]["cxxflags"] and "-Wl,--gc-sections" in m["flags"]["ldflags"]
    assert m["sizes"]["full_runtime_bytes"] > m["sizes"]["dtorch_run_bytes"] > 0
    assert "kernels/portable/conv2d.cc" in m["sizes"]["kernel_bytes"]
    sets = m["sizes"]["kernel_set_bytes"]  # per kernel set, portable first
    assert list(sets)[0] == "portable" and sum(sets.values()) == sum(m["sizes"]["kernel_bytes"].values())
    assert f"- kernel set portable: {sets['portable']:,} bytes" in (b / "size_report.md").read_text()
    assert m["verified"] == ["simplenet.dtm: bundled test vector"]
    info = subprocess.run([str(b / "dtorch-run"), "--build-info"], capture_output=True, text=True).stdout
    assert m["runtime_hash"] in info and m["opset_hash"] in info
    # the bundle runs as shipped (its manifest matches the binary)
    run = subprocess.run([str(b / "dtorch-run"), str(b / "model.dtm"), "--self-test"], capture_output=True, text=True)
    assert run.returncode == 0 and "self-test PASS" in run.stdout, run.stderr
    again = invoke("build", "--board", "host", "--model", str(model), "--out", str(out), "--quiet", "--json")
    assert again.exit_code == 0 and json.loads(again.output)["up_to_date"] is True


def test_errors_are_one_line(model, tmp_path):
    cases = [
        (["--board", "rk3858", "--model", str(model)], "unknown board 'rk3858'; did you mean 'rk3588'"),
        (["--board", "host", "--model", str(tmp_path / "missing.dtm")], "model not found"),
        (["--board", "host"], "nothing to build"),
    ]
    (tmp_path / "junk.dtm").write_bytes(b"not a model")
    cases.append((["--board", "host", "--model", str(tmp_path / "junk.dtm")], "junk.dtm"))
    ops = tmp_path / "ops.yaml"
    ops.write_text("ops:\n  conv2d: [float32]\n  linear: [float32]\n")
    cases.append((["--board", "host", "--model", str(model), "--ops", str(ops)],
                  "lacks adaptive_avg_pool2d:float32, reshape:float32, which the model needs"))
    (tmp_path / "short.key").write_bytes(b"0123")
    cases += [(["--board", "host", "--model", str(model), "--sign", str(tmp_path / "none.key")],
               "cannot read the signing key"),
              (["--board", "host", "--model", str(model), "--sign", str(tmp_path / "short.key")],
               "neither 32 raw bytes nor 64 hex digits")]
    for args, message in cases:
        r = CliRunner().invoke(main, ["build", *args, "--out", str(tmp_path / "dist"), "--quiet"])
        assert r.exit_code == 1, (args, r.output)
        lines = [x for x in r.output.strip().splitlines() if x.startswith("error:")]
        assert len(lines) == 1 and message in lines[0], (args, r.output)
    assert not (tmp_path / "dist" / "host" / "manifest.json").exists()


def test_sample_inputs_are_run_before_success(model, tmp_path):
    import numpy as np

    good, bad = tmp_path / "good", tmp_path / "bad.npy"
    good.mkdir()
    np.save(good / "a.npy", np.zeros((1, 3, 32, 32), np.float32))
    np.save(good / "b.npy", np.ones((1, 3, 32, 32), np.float32))
    r = invoke("build", "--board", "host", "--model", str(model), "--data", str(good), "--out", str(tmp_path / "d"),
               "--quiet", "--no-full", "--json")
    assert r.exit_code == 0, r.output
    assert "simplenet.dtm: 2 sample input file(s)" in json.loads(r.output)["verified"]
    np.save(bad, np.zeros((1, 3, 16, 16), np.float32))  # a shape the model refuses: the check fails the build
    r = CliRunner().invoke(main, ["build", "--board", "host", "--model", str(model), "--data", str(bad),
                                  "--out", str(tmp_path / "d2"), "--quiet", "--no-full"])
    assert r.exit_code == 1 and "failed on simplenet.dtm with" in r.output and "dimension 2" in r.output, r.output
    r = CliRunner().invoke(main, ["build", "--board", "host", "--model", str(model), "--data",
                                  str(tmp_path / "none"), "--out", str(tmp_path / "d3"), "--quiet"])
    assert r.exit_code == 1 and "sample inputs not found" in r.output


def test_missing_toolchain_names_the_install_command(model, tmp_path):
    r = CliRunner().invoke(main, ["build", "--board", "rk3588", "--toolchain", "zig", "--model", str(model),
                                  "--out", str(tmp_path)], env={"DTORCH_ZIG_PYTHON": "/usr/bin/false"})
    assert r.exit_code == 1 and "pip install ziglang==0.17.0" in r.output, r.output


def test_failed_compile_shows_the_compilers_first_error(model, tmp_path):
    fake = tmp_path / "fake-g++"
    fake.write_text("#!/bin/sh\ncase \"$*\" in\n  *--version*) echo 'g++ (fake) 12.2.0';;\n"
                    "  *-dumpmachine*) echo x86_64-linux-gnu;;\n"
                    "  *) echo 'runtime/core/attrs.cc:1:1: error: simulated compiler failure' >&2; exit 1;;\nesac\n")
    fake.chmod(0o755)
    r = CliRunner().invoke(main, ["build", "--board", "host", "--model", str(model), "--out", str(tmp_path / "d"),
                                  "--quiet"], env={"CXX": str(fake)})
    assert r.exit_code == 1, r.output
    assert "error: building dtorch-run for host failed: runtime/core/attrs.cc:1:1: error: simulated compiler failure" \
        in r.output and "Traceback" not in r.output


@pytest.mark.full  # two rk3588 builds, one at a new -O level (zig builds libc++ for it): .ci/run-full
def test_profile_size_builds_kernels_for_size(model, tmp_path):
    """--profile size: the kernels at -Os too (the core is -Os on every profile), in its own build folder; the
    bundle records it, is smaller than the board's speed build, and runs under QEMU."""
    from dtorch.edge.build import build_bundle

    # (No host check here: test_host_bundle covers it; the size build is checked under QEMU below.)
    speed = build_bundle("rk3588", [model], toolchain="zig", out=tmp_path / "speed", compare_full=False, agent=False,
                         verify=False, log=lambda _m: None, progress=False)
    size = build_bundle("rk3588", [model], toolchain="zig", out=tmp_path / "size", compare_full=False, agent=False,
                        verify=False, log=lambda _m: None, progress=False, profile="size")
    assert speed.manifest["profile"] == "speed" and size.manifest["profile"] == "size"
    assert "-O2" in speed.manifest["flags"]["cxxflags"] and "-Os" in size.manifest["flags"]["cxxflags"]
    assert "-O2" not in size.manifest["flags"]["cxxflags"] and speed.manifest["flags"]["core_cxxflags"] == ["-Os"]
    assert size.manifest["runtime_hash"] != speed.manifest["runtime_hash"]
    assert size.binary_bytes < speed.binary_bytes
    b = tmp_path / "size" / "rk3588"
    run = subprocess.run(["qemu-aarch64", "-cpu", "cortex-a76", str(b / "dtorch-run"), str(b / "model.dtm"),
                          "--self-test"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "self-test PASS" in run.stdout, run.stderr


def test_unknown_profile_is_refused(model, tmp_path):
    from dtorch.edge.build import BuildError, build_bundle

    with pytest.raises(BuildError, match="unknown profile 'tiny'"):
        build_bundle("rk3588", [model], toolchain="zig", out=tmp_path / "dist", profile="tiny", log=lambda _m: None,
                     progress=False)
    assert not (tmp_path / "dist").exists()
    r = CliRunner().invoke(main, ["build", "--board", "rk3588", "--model", str(model), "--profile", "tiny"])
    assert r.exit_code == 2 and "'tiny' is not one of 'speed', 'size'" in r.output


def test_out_that_cannot_be_a_folder_is_refused_before_the_build(model, tmp_path):
    (tmp_path / "some_file").write_text("x")
    for out, message in [(tmp_path / "some_file" / "dist", "is a file, not a folder"),
                         (Path("/proc/dtorch-out"), "is not a folder this build can write into")]:
        r = CliRunner().invoke(main, ["build", "--board", "host", "--model", str(model), "--out", str(out), "--quiet"])
        lines = [x for x in r.output.strip().splitlines() if x.startswith("error:")]
        assert r.exit_code == 1 and len(lines) == 1 and message in lines[0], r.output
        assert "building" not in r.output


def test_a_rebuild_swaps_the_whole_bundle_and_cleans_up(model, tmp_path):
    import os

    from dtorch.edge.build import _swap_in

    out = tmp_path / "dist"
    dead = subprocess.run(["python3", "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    out.mkdir()
    stale = out / f".host.build-{dead}-abc123"  # a stage left by a build that was killed
    stale.mkdir()
    (stale / "dtorch-run").write_text("partial")
    assert invoke("build", "--board", "host", "--model", str(model), "--out", str(out), "--quiet").exit_code == 0
    first = json.loads((out / "host" / "manifest.json").read_text())
    assert sorted(p.name for p in out.iterdir()) == ["host"]  # the stale stage is gone, no stage is left
    assert oct((out / "host").stat().st_mode & 0o777) == oct(0o777 & ~_umask())
    # the swap itself: the target is the old folder or the new one, never a mix
    new = tmp_path / "new"
    new.mkdir()
    (new / "manifest.json").write_text("{}")
    _swap_in(new, out / "host")
    assert sorted(os.listdir(out / "host")) == ["manifest.json"] and (out / "host" / "manifest.json").read_text() == "{}"
    assert json.loads((new / "manifest.json").read_text()) == first  # the old bundle, for the caller to remove


def _umask() -> int:
    import os

    m = os.umask(0)
    os.umask(m)
    return m


def test_no_agent_leaves_the_agent_out_and_says_so(model, tmp_path):
    out = tmp_path / "dist"
    r = invoke("build", "--board", "host", "--model", str(model), "--out", str(out), "--no-agent", "--no-full")
    assert r.exit_code == 0, r.output
    assert "no dtorch-agent in this bundle" in r.output
    assert not (out / "host" / "dtorch-agent").exists() and (out / "host" / "dtorch-run").is_file()
    assert "dtorch-agent" not in json.loads((out / "host" / "manifest.json").read_text())["files"]
