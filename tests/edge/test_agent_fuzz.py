"""dtorch-agent's line input under AddressSanitizer + UndefinedBehaviorSanitizer: runtime/fuzz/agent_fuzz.cc
(`scons asan=1 agent-fuzz`) feeds one Agent bursts of valid, hostile and corrupted frames of every request type in
random chunk sizes; every answer must be a valid frame, never more answers than requests, and the store must hold
only its own names. Marked `fuzz`: .ci/run runs it in its fuzz step, beside the loader's."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.fuzz

ROOT = Path(__file__).resolve().parents[2]
SUMMARY = re.compile(r"agent-fuzz: (\d+) bursts, (\d+) bytes, (\d+) answers")


@pytest.fixture(scope="module")
def driver() -> Path:
    r = subprocess.run([sys.executable, "-m", "SCons", "-Q", "-j2", "asan=1", "agent-fuzz"], cwd=ROOT,
                       capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    return ROOT / "build" / "asan" / "agent-fuzz"


@pytest.mark.parametrize("seed", [1, 2])
def test_hostile_lines_are_answered_or_dropped(driver, tmp_path, seed):
    r = subprocess.run([str(driver), "--iterations", "4000", "--max-seconds", "40", "--seed", str(seed),
                        str(tmp_path / "store")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    m = SUMMARY.search(r.stdout)
    assert m is not None, r.stdout
    bursts, _, answers = map(int, m.groups())
    assert bursts >= 500 and answers > bursts, r.stdout
    print(r.stdout.strip())


def test_usage(driver):
    r = subprocess.run([str(driver)], capture_output=True, text=True)
    assert r.returncode == 2 and "usage: agent-fuzz" in r.stderr
