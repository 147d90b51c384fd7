"""The docker runner: the same QEMU user-mode command in a container built FROM scratch from the static QEMU binary
(qemu-user-static) and the bundle, run with --network none. Nothing is pulled; the image is built from a local
folder (emulation/docker/Dockerfile.in), tagged by the bundle's contents so an unchanged bundle reuses it.

Static QEMU binaries cannot load TCG plugins, so this runner does not count instructions.
The engine must be running (as root: dockerd --bridge=none --iptables=false &, which creates no network).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path

from .errors import EmulateError, RunnerUnavailable
from .runner import Runner, RunResult, run_process

__all__ = ["DockerRunner", "docker_engine_answers"]

_START = "start it as root with: dockerd --bridge=none --iptables=false & (or use --runner local)"


def docker_engine_answers(timeout: float = 10.0) -> tuple[bool, str]:
    """(True, server version) when a Docker engine answers, else (False, why)."""
    docker = shutil.which("docker")
    if docker is None:
        return False, "docker is not installed (apt-get install docker.io, or run scripts/setup.sh)"
    try:
        r = subprocess.run([docker, "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, f"the Docker engine did not answer within {timeout:g} s; {_START}"
    if r.returncode != 0 or not r.stdout.strip():
        return False, f"the Docker engine is not running ({(r.stderr.strip().splitlines() or ['no answer'])[-1]}); {_START}"
    return True, r.stdout.strip()


def _runs(board, profile) -> bool:  # type: ignore[no-untyped-def]
    return "docker" in profile.runners and board.emulator.kind == "qemu-user"


class DockerRunner(Runner):
    name = "docker"
    capabilities = frozenset()
    auto_priority = 10  # before local: the same run, isolated, where the profile allows it and an engine answers

    @classmethod
    def available(cls, board, profile) -> tuple[bool, str]:  # type: ignore[no-untyped-def]
        if not _runs(board, profile):
            return False, f"the {profile.kind} profile runs locally only"
        ok, what = docker_engine_answers()
        return ok, f"a Docker engine {what} answers" if ok else what

    def __init__(self, board, profile, bundle: Path, workdir: Path) -> None:  # type: ignore[no-untyped-def]
        super().__init__(board, profile, bundle, workdir)
        self.image: str | None = None
        self.engine = ""

    def _static_qemu(self) -> Path:
        emu = self.board.emulator
        name = f"{emu.binary}{self.profile.static_suffix}"
        path = shutil.which(name)
        if path is None:
            raise RunnerUnavailable(f"{name} is not installed (the static emulator the container runs): install it "
                                    f"with: apt-get install {self.profile.static_apt_package or 'qemu-user-static'}")
        return Path(path)

    def check(self) -> None:
        if not _runs(self.board, self.profile):
            raise RunnerUnavailable(f"the docker runner runs QEMU user-mode boards; {self.board.name} uses the "
                                    f"{self.profile.kind} profile (use --runner local)")
        self._static_qemu()
        ok, what = docker_engine_answers()
        if not ok:
            raise RunnerUnavailable(what)
        self.engine = what

    def describe(self) -> str:
        return f"docker (engine {self.engine}, FROM scratch, --network none, {self.board.emulator.summary()} static)"

    def bundle(self, name: str) -> str:
        return f"/bundle/{name}"

    def work(self, name: str) -> str:
        return f"/work/{name}"

    def prepare(self) -> None:
        from ..resources import resource_root

        qemu = self._static_qemu()
        h = hashlib.sha256()
        for p in sorted(self.bundle_dir.iterdir()):
            if p.is_file():
                h.update(p.name.encode() + b"\0" + p.read_bytes())
        h.update(qemu.read_bytes())
        template = (resource_root() / "emulation" / "docker" / "Dockerfile.in").read_text()
        h.update(template.encode() + (self.board.emulator.cpu or "").encode())
        tag = f"dtorch-emulate:{self.board.name}-{h.hexdigest()[:16]}"
        if subprocess.run(["docker", "image", "inspect", tag], capture_output=True).returncode == 0:
            self.image = tag
            return
        with tempfile.TemporaryDirectory() as d:
            ctx = Path(d)
            shutil.copy2(qemu, ctx / qemu.name)
            shutil.copytree(self.bundle_dir, ctx / "bundle", ignore=shutil.ignore_patterns("*.md"))
            (ctx / "Dockerfile").write_text(template.replace("@QEMU@", qemu.name)
                                            .replace("@CPU@", self.board.emulator.cpu or ""))
            r = subprocess.run(["docker", "build", "--network", "none", "-q", "-t", tag, str(ctx)], capture_output=True,
                               text=True, timeout=600)
        if r.returncode != 0:
            raise EmulateError(f"building the container image failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
        self.image = tag

    def run(self, args: Sequence[str], *, timeout: float, count_instructions: bool = False) -> RunResult:
        if count_instructions:
            raise EmulateError("the docker runner cannot count instructions (static QEMU loads no plugins); "
                               "use --runner local")
        if self.image is None:
            self.prepare()
        name = f"dtorch-emulate-{uuid.uuid4().hex[:12]}"
        argv = ["docker", "run", "--rm", "--name", name, "--network", "none", "-v", f"{self.workdir}:/work",
                str(self.image), "/bundle/dtorch-run", *args]

        def kill(_proc: object) -> None:
            subprocess.run(["docker", "kill", name], capture_output=True, timeout=30)

        try:
            return run_process(argv, timeout=timeout, what=f"dtorch-run on {self.board.name} (docker)", kill=kill)
        finally:
            subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=30)
