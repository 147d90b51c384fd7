"""`dtorch-edge` command line: the demo trains to >= 90% and is reproducible; bad options are refused."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from dtorch.edge.cli import main


def test_version_and_help():
    r = CliRunner().invoke(main, ["--version"])
    assert r.exit_code == 0 and "dtorch-edge" in r.output
    r = CliRunner().invoke(main, ["--help"])
    assert r.exit_code == 0 and "demo" in r.output


@pytest.mark.parametrize("args,needle", [
    (["demo", "--epochs", "0"], "--epochs"),
    (["demo", "--batch-size", "-1"], "--batch-size"),
    (["demo", "--workers", "-2"], "--workers"),
    (["demo", "--amp", "int8"], "--amp"),
    (["demo", "--lr", "0"], "--lr"),
    (["no-such-command"], "No such command"),
])
def test_bad_options_are_refused(args, needle):
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2
    assert needle in r.output


@pytest.mark.slow
def test_demo_reaches_90_percent_and_same_seed_same_result(tmp_path):
    """The console script itself, twice with one seed: >= 90% test accuracy, identical figures, and the exported
    model gives the same predictions through the C++ runtime."""
    exe = [sys.executable, "-m", "dtorch.edge.cli"]
    results = []
    for run in range(2):
        out = tmp_path / f"run{run}"
        proc = subprocess.run(exe + ["demo", "--out", str(out), "--quiet", "--json", str(out / "r.json")],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "test accuracy" in proc.stdout
        # it ends with a bundle for rk3588 (the default board); the second run's build is up to date
        assert "bundle for rk3588" in proc.stdout and (out / "dist" / "rk3588" / "manifest.json").exists()
        assert run == 0 or "up to date, nothing rebuilt" in proc.stdout
        results.append(json.loads((out / "r.json").read_text()))
        assert (out / "simplenet.safetensors").exists()
    assert results[0]["test_accuracy"] >= 0.90
    assert results[0]["history"] == results[1]["history"]
    ex = results[0]["export"]
    assert ex["nodes_after_passes"] < ex["nodes_traced"]
    assert ex["predictions_agree"] == 1.0 and ex["runtime_accuracy"] == results[0]["test_accuracy"]
    assert ex["max_abs_error"] < 1e-4
    assert (tmp_path / "run0" / "simplenet.dtm").exists()
