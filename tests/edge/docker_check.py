"""The docker runner's tests need an engine: in CI a missing one fails the test (CI starts one); elsewhere it skips
with the reason printed (start one as root with dockerd --bridge=none --iptables=false &)."""

from __future__ import annotations

import os

import pytest

from dtorch.edge.emulate.docker import docker_engine_answers


def docker_or_skip(suite: str) -> None:
    ok, why = docker_engine_answers()
    if not ok:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the docker runner, but {why}")
        print(f"{suite}: docker runner skipped: {why}")
        pytest.skip(why)
