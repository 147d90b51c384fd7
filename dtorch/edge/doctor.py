"""`dtorch-edge doctor`: what the edge SDK finds on this machine, what is missing and the command that installs it.

Every toolchain family for every architecture it targets, then the tools the build and the emulators need
(qemu-aarch64, qemu-arm, qemu-riscv64, qemu-hexagon and their static builds, qemu-system-arm, a C compiler for the
QEMU plugin, a Docker engine that answers, SCons).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .resources import ResourceError
from .toolchains import Found, ToolchainError, apt_install_command, load_toolchains, pip_install_command, probe_version, which

__all__ = ["DoctorReport", "ToolCheck", "check_tools", "run_doctor"]

#: QEMU user-mode emulators the board files name, with the Debian package that has them.
QEMU_BINARIES = ("qemu-aarch64", "qemu-arm", "qemu-riscv64", "qemu-hexagon")


@dataclass(frozen=True)
class ToolCheck:
    name: str
    found: bool
    path: str | None = None
    version: str | None = None
    install: str = ""
    purpose: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "found": self.found, "path": self.path, "version": self.version,
                "install": None if self.found else self.install, "purpose": self.purpose}


@dataclass(frozen=True)
class DoctorReport:
    toolchains: tuple[Found, ...]
    tools: tuple[ToolCheck, ...]
    errors: tuple[str, ...] = field(default=())  # toolchain modules that failed to load, etc.

    @property
    def missing(self) -> int:
        return (sum(not f.found for f in self.toolchains) + sum(not t.found for t in self.tools)
                + len(self.errors))

    def to_json(self) -> dict[str, Any]:
        return {"toolchains": [f.to_json() for f in self.toolchains], "tools": [t.to_json() for t in self.tools],
                "errors": list(self.errors), "missing": self.missing, "ok": self.missing == 0}


def check_tools(env: Mapping[str, str] | None = None) -> list[ToolCheck]:
    """The emulators and the build tool."""
    out: list[ToolCheck] = []
    for q in QEMU_BINARIES:
        path = which(q, env)
        version = probe_version([path, "--version"]) if path else None
        out.append(ToolCheck(q, path is not None and version is not None, path, version,
                             apt_install_command("qemu-user"), "runs the board binaries (QEMU user mode)"))
    for q in QEMU_BINARIES:
        path = which(q + "-static", env)
        out.append(ToolCheck(q + "-static", path is not None, path, None, apt_install_command("qemu-user-static"),
                             "the docker runner's emulator (static, in a FROM scratch image)"))
    path = which("qemu-system-arm", env)
    version = probe_version([path, "--version"]) if path else None
    out.append(ToolCheck("qemu-system-arm", path is not None and version is not None, path, version,
                         apt_install_command("qemu-system-arm"), "runs the microcontroller boards' firmware (MPS2/MPS3)"))
    cc = which("cc", env) or which("gcc", env)
    out.append(ToolCheck("cc", cc is not None, cc, None, apt_install_command("gcc"),
                         "builds the instruction-count QEMU plugin"))
    out.append(_docker_check(env))
    path = which("scons", env)
    out.append(ToolCheck("scons", path is not None, path, None, apt_install_command("scons"), "the scons command"))
    spec = importlib.util.find_spec("SCons")
    version = None
    if spec is not None:
        try:
            version = importlib.metadata.version("scons")
        except importlib.metadata.PackageNotFoundError:
            version = None
    out.append(ToolCheck("SCons (python module)", spec is not None,
                         os.path.dirname(spec.origin) if spec is not None and spec.origin else None, version,
                         pip_install_command("scons"), "dtorch-edge build drives SCons from Python"))
    return out


def _docker_check(env: Mapping[str, str] | None) -> ToolCheck:
    """The Docker engine the docker runner needs: installed, and answering."""
    import subprocess

    docker = which("docker", env)
    purpose = "the docker runner (dtorch-edge emulate --runner docker)"
    if docker is None:
        return ToolCheck("docker engine", False, None, None, apt_install_command("docker.io"), purpose)
    try:
        r = subprocess.run([docker, "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                           timeout=10, env=dict(env) if env is not None else None)
        version = r.stdout.strip() if r.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        version = None
    return ToolCheck("docker engine", bool(version), docker, version or None,
                     "start it as root: dockerd --bridge=none --iptables=false &", purpose)


def run_doctor(env: Mapping[str, str] | None = None, root: str | os.PathLike[str] | None = None) -> DoctorReport:
    """Check every toolchain family for every arch it targets, and the tools."""
    found: list[Found] = []
    errors: list[str] = []
    try:
        families = load_toolchains(root)
    except (ToolchainError, ResourceError) as e:  # a broken toolchains/ folder is itself a finding
        families = {}
        errors.append(str(e))
    for name in sorted(families):
        tc = families[name]
        for arch in tc.arches:
            found.append(tc.find(arch, env))
    return DoctorReport(toolchains=tuple(found), tools=tuple(check_tools(env)), errors=tuple(errors))
