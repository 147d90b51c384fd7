#!/usr/bin/env bash
# Set up a development machine for DTorch (Debian 12, Python 3.11).
#
#   bash scripts/setup.sh
#
# Idempotent: a second run checks what is there and does almost nothing.
#   1. apt packages (cross compilers, QEMU, SCons, FlatBuffers, Docker), installed only when missing.
#      Set DTORCH_SKIP_APT=1 to skip this step.
#   2. .venv at the repository root (created with python3.11, else python3), if missing.
#   3. pip upgraded, and dtorch installed editable with its test extras: pip install -e '.[test,onnx]'.
#      Skipped when pyproject.toml and the set of packages have not changed since the last
#      successful install (set DTORCH_FORCE_INSTALL=1 to install anyway).
#   4. the host dtorch-run (scons dtorch-run: build/host/dtorch-run) installed as .venv/bin/dtorch-run, so a model
#      runs natively without calling scons. SCons rebuilds only what changed.
#   5. libsodium's sources for dtorch-agent (SHA-256, Ed25519): PyNaCl's sdist from PyPI, pinned by sha256, extracted
#      into build/third_party/ by python -m dtorch.edge.third_party.
#      Not fetched here: ONNX's backend test data (48 MB unpacked, the onnx 1.19.1 wheel) for the conformance runs;
#      tests/onnx/test_conformance.py and benchmarks/onnx_conformance.py fetch it on first use
#      (python -m dtorch.onnx.conformance_data).
set -euo pipefail

say() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

apt_packages=(
    build-essential
    g++
    scons
    qemu-user
    qemu-user-static
    g++-aarch64-linux-gnu
    g++-arm-linux-gnueabihf
    g++-riscv64-linux-gnu
    gcc-arm-none-eabi
    libnewlib-arm-none-eabi
    libstdc++-arm-none-eabi-newlib
    qemu-system-arm
    flatbuffers-compiler
    clang
    libclang-rt-14-dev
    libflatbuffers-dev
    docker.io
    file
)

is_installed() {
    # Same answer as `dpkg -s`, without a pipe: `dpkg -s | grep -q` under pipefail fails at
    # random when grep exits early and dpkg gets SIGPIPE.
    [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]
}

pick_python() {
    local candidate
    for candidate in python3.11 python3; do
        if command -v "$candidate" >/dev/null 2>&1 \
            && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
            command -v "$candidate"
            return 0
        fi
    done
    return 1
}

# --- 1. apt packages -------------------------------------------------------------------------
if [[ "${DTORCH_SKIP_APT:-0}" == "1" ]]; then
    say "DTORCH_SKIP_APT=1: skipping apt packages"
elif ! command -v dpkg >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
    say "no dpkg/apt-get here (not Debian?): skipping apt packages; install them by hand"
else
    wanted=("${apt_packages[@]}")
    # Debian's python3 needs python3-venv for `python3 -m venv` (ensurepip).
    py="$(pick_python || true)"
    if [[ -z "$py" ]] || ! "$py" -c 'import ensurepip, venv' >/dev/null 2>&1; then
        wanted+=(python3-venv)
    fi
    missing=()
    for pkg in "${wanted[@]}"; do
        is_installed "$pkg" || missing+=("$pkg")
    done
    if [[ ${#missing[@]} -eq 0 ]]; then
        say "apt packages: all present"
    else
        sudo_cmd=()
        if [[ "$(id -u)" -ne 0 ]]; then
            command -v sudo >/dev/null 2>&1 \
                || die "apt packages missing (${missing[*]}) and not root; rerun as root or set DTORCH_SKIP_APT=1"
            sudo_cmd=(sudo)
        fi
        say "apt packages missing: ${missing[*]}"
        say "apt-get update"
        "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
        say "apt-get install (this can take a few minutes)"
        "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -q "${missing[@]}" </dev/null >/dev/null
        say "apt packages: installed"
    fi
fi

# --- 2. virtual environment ------------------------------------------------------------------
venv_python="$repo_root/.venv/bin/python"
if [[ -x "$venv_python" ]] && "$venv_python" -c 'import sys' >/dev/null 2>&1; then
    say ".venv: present ($("$venv_python" -c 'import sys; print(sys.version.split()[0])'))"
else
    py="$(pick_python)" || die "no python3.11 or python3 (>= 3.10) on PATH"
    if [[ -e .venv ]]; then
        say ".venv: broken (no working .venv/bin/python); recreating it"
        rm -rf .venv
    fi
    say ".venv: creating with $py ($("$py" -c 'import sys; print(sys.version.split()[0])'))"
    "$py" -m venv .venv || die "'$py -m venv' failed; on Debian install python3-venv"
fi

# --- 3. pip and the package ------------------------------------------------------------------
stamp=".venv/.dtorch-setup-stamp"
# The editable install records which folders are packages, so a new or removed __init__.py
# also triggers a reinstall.
want_stamp="$( { cat pyproject.toml scripts/setup.sh; find dtorch -name __init__.py | LC_ALL=C sort; } \
    | sha256sum | cut -d' ' -f1) $repo_root"
if [[ "${DTORCH_FORCE_INSTALL:-0}" != "1" && -f "$stamp" && "$(cat "$stamp")" == "$want_stamp" ]] \
    && .venv/bin/python -c 'import importlib.metadata as m; m.version("dtorch")' >/dev/null 2>&1; then
    say "dtorch: already installed editable (pyproject.toml and packages unchanged)"
else
    say "pip: upgrading"
    .venv/bin/python -m pip install -q --upgrade pip \
        || say "warning: could not upgrade pip; continuing with $(.venv/bin/python -m pip --version)"
    say "dtorch: pip install -e '.[test,onnx]'"
    .venv/bin/python -m pip install -q -e '.[test,onnx]'
    printf '%s\n' "$want_stamp" >"$stamp"
fi

# --- 4. the host dtorch-run ------------------------------------------------------------------
say "dtorch-run: scons -Q dtorch-run, installed as .venv/bin/dtorch-run"
jobs="$(nproc 2>/dev/null || echo 2)"
.venv/bin/scons -Q -j"$jobs" dtorch-run >/tmp/dtorch-setup-scons.log 2>&1 \
    || { tail -20 /tmp/dtorch-setup-scons.log >&2; die "building dtorch-run failed (log above)"; }
if ! cmp -s build/host/dtorch-run .venv/bin/dtorch-run; then
    install -m 755 build/host/dtorch-run .venv/bin/.dtorch-run.tmp && mv -f .venv/bin/.dtorch-run.tmp .venv/bin/dtorch-run
fi

# --- 5. third-party sources ------------------------------------------------------------------
# libsodium's sources (SHA-256 and Ed25519 for dtorch-agent) from PyNaCl's sdist on PyPI, pinned by sha256, into
# build/third_party/ (dtorch/edge/third_party.py); a second run finds them there.
sodium_dir="$(.venv/bin/python -m dtorch.edge.third_party)" \
    || die "fetching libsodium's sources failed (the line above says why)"
say "third-party sources: $sodium_dir"

say "done: dtorch $(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("dtorch"))') in $repo_root/.venv"
