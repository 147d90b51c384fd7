"""Runners are found the way kernels are: one module each in dtorch.edge.emulate, nothing else to edit. These tests
drop a runner file into the package's search path and check that make_runner, --runner auto and the CLI take it."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

import dtorch.edge.emulate as emulate_pkg
from dtorch.edge.boards import load_board
from dtorch.edge.cli import main
from dtorch.edge.emulate import EmulateError, RunnerUnavailable, make_runner
from dtorch.edge.emulate import docker as docker_mod
from dtorch.edge.emulate.docker import DockerRunner
from dtorch.edge.emulate.local import LocalRunner
from dtorch.edge.emulate.profiles import profile_for
from dtorch.edge.emulate.runner import runner_names, runners

_RUNNER = '''
from dtorch.edge.emulate.runner import Runner, RunResult


class {cls}(Runner):
    name = "{name}"
    auto_priority = {priority}

    @classmethod
    def available(cls, board, profile):
        return {ok}, "{why}"

    def check(self):
        pass

    def bundle(self, name):
        return name

    def work(self, name):
        return name

    def run(self, args, *, timeout, count_instructions=False):
        return RunResult(0, "", "", 0.0)
'''


@pytest.fixture
def drop_in(tmp_path, monkeypatch):
    """Write a runner module into a folder on dtorch.edge.emulate's search path (as a new file in the package
    would be), and forget it afterwards."""
    monkeypatch.setattr(emulate_pkg, "__path__", [*emulate_pkg.__path__, str(tmp_path)])
    added: list[str] = []

    def write(module: str, **fields: object) -> None:
        values = {"cls": "DroppedRunner", "name": module, "priority": 20, "ok": True, "why": "a test port answers",
                  **fields}
        (tmp_path / f"{module}.py").write_text(textwrap.dedent(_RUNNER.format(**values)))
        added.append(f"dtorch.edge.emulate.{module}")

    yield write
    for name in added:
        sys.modules.pop(name, None)


@pytest.fixture
def rk3588():
    board = load_board("rk3588")
    return board, profile_for(board)


@pytest.fixture
def no_docker(monkeypatch):
    monkeypatch.setattr(docker_mod, "docker_engine_answers", lambda timeout=10.0: (False, "no engine (test)"))
    monkeypatch.setattr(LocalRunner, "check", lambda self: None)  # the fallback runs wherever QEMU is missing too


def test_the_package_runners_in_cli_order():
    found = runners()
    assert list(found) == ["local", "docker"] == runner_names()
    assert found["local"] is LocalRunner and found["docker"] is DockerRunner


def test_a_dropped_in_runner_is_found_and_taken_by_name_and_by_auto(drop_in, rk3588, tmp_path, no_docker):
    drop_in("serialtest")
    board, profile = rk3588
    assert runner_names() == ["local", "docker", "serialtest"]
    r = make_runner("serialtest", board, profile, tmp_path, tmp_path, log=lambda m: None)
    assert r.name == "serialtest"
    said: list[str] = []
    r = make_runner("auto", board, profile, tmp_path, tmp_path, log=said.append)  # priority 20: before docker
    assert r.name == "serialtest" and said == ["runner: serialtest (auto: a test port answers)"]


def test_the_cli_lists_a_dropped_in_runner(drop_in):
    drop_in("serialtest")
    out = CliRunner().invoke(main, ["emulate", "--help"]).output
    assert "[auto|local|docker|serialtest]" in out
    bad = CliRunner().invoke(main, ["emulate", "--board", "rk3588", "--runner", "nope"])
    assert bad.exit_code == 2 and "'auto', 'local', 'docker', 'serialtest'" in bad.output


def test_auto_passes_over_unavailable_runners_and_says_why(drop_in, rk3588, tmp_path, no_docker):
    drop_in("serialtest", ok=False, why="no test port")
    board, profile = rk3588
    said: list[str] = []
    r = make_runner("auto", board, profile, tmp_path, tmp_path, log=said.append)
    assert r.name == "local" and said == ["runner: local (auto: no test port; no engine (test))"]


def test_a_runner_auto_never_takes(drop_in, rk3588, tmp_path, no_docker):
    drop_in("serialtest", priority=None)
    board, profile = rk3588
    said: list[str] = []
    assert make_runner("auto", board, profile, tmp_path, tmp_path, log=said.append).name == "local"
    assert said == ["runner: local (auto: no engine (test))"]
    assert runner_names()[-1] == "serialtest"


def test_two_runners_with_one_name_are_refused(drop_in):
    drop_in("other_local", name="local")
    with pytest.raises(EmulateError, match=r"two runners are called 'local': .*other_local.* and "
                                           r"dtorch.edge.emulate.local.LocalRunner; rename one"):
        runners()


# --- the auto rule of the two runners, as before -------------------------------------------------------------


def test_auto_takes_docker_when_an_engine_answers_and_its_check_passes(rk3588, tmp_path, monkeypatch):
    monkeypatch.setattr(docker_mod, "docker_engine_answers", lambda timeout=10.0: (True, "27.5.1"))
    monkeypatch.setattr(DockerRunner, "check", lambda self: None)
    said: list[str] = []
    board, profile = rk3588
    assert make_runner("auto", board, profile, tmp_path, tmp_path, log=said.append).name == "docker"
    assert said == ["runner: docker (auto: a Docker engine 27.5.1 answers)"]


def test_auto_falls_back_to_local_with_the_docker_check_reason(rk3588, tmp_path, monkeypatch):
    monkeypatch.setattr(docker_mod, "docker_engine_answers", lambda timeout=10.0: (True, "27.5.1"))

    def fails(self: DockerRunner) -> None:
        raise RunnerUnavailable("qemu-aarch64-static is not installed (test)")

    monkeypatch.setattr(DockerRunner, "check", fails)
    monkeypatch.setattr(LocalRunner, "check", lambda self: None)
    said: list[str] = []
    board, profile = rk3588
    assert make_runner("auto", board, profile, tmp_path, tmp_path, log=said.append).name == "local"
    assert said == ["runner: local (auto: qemu-aarch64-static is not installed (test))"]


def test_auto_runs_locally_where_the_profile_has_no_docker(tmp_path, no_docker):
    board = load_board("host")
    said: list[str] = []
    assert make_runner("auto", board, profile_for(board), tmp_path, tmp_path, log=said.append).name == "local"
    assert said == [f"runner: local (auto: the {profile_for(board).kind} profile runs locally only)"]


def test_unknown_runner_names_the_runners(rk3588, tmp_path):
    board, profile = rk3588
    with pytest.raises(EmulateError, match=r"unknown runner 'serial'; the runners are auto, local, docker$"):
        make_runner("serial", board, profile, Path(tmp_path), Path(tmp_path))
