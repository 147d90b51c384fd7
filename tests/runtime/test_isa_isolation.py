"""The ISA kernel sets never leak their instructions into code that runs on CPUs without that ISA.

Two checks:
- the objects of every ISA kernel set (runtime/kernels/<set>/, compiled with e.g. -mavx512f) define no weak
  symbol outside the set's own namespaces. A weak symbol is an inline function or template the linker may keep
  for the whole binary; a shared helper compiled with AVX-512 and chosen for the portable kernels killed the
  runtime with SIGILL on an AVX2-only CPU (kernels/common/isa.h is the fix);
- the host dtorch-run runs the model zoo under `qemu-x86_64 -cpu <model>` for CPUs without AVX-512 (Haswell:
  AVX2 + FMA) and without AVX at all (qemu64): each kernel policy runs, picks only kernel sets that CPU has, and
  gives the bits the host gives under the policy whose kernels are bit-identical on every CPU.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from host_build import scons_host

import dtorch as dt
from dtorch.edge.kernel_sets import host_arch, kernel_sets

ROOT = Path(__file__).resolve().parents[2]

_spec = importlib.util.spec_from_file_location("export_zoo", ROOT / "tests" / "export" / "zoo.py")
zoo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(zoo)  # type: ignore[union-attr]

# What each emulated CPU model runs (QEMU 7.2 TCG emulates up to AVX2 + FMA, not AVX-512).
CPUS = {
    "qemu64": {"portable"},                 # x86-64 baseline: no AVX
    "Haswell-v4": {"portable", "x86", "avx2"},  # AVX2 + FMA, no AVX-512
}


@pytest.fixture(scope="module")
def host_build() -> Path:
    return scons_host("dtorch-run")


def _weak_symbols(obj: Path) -> list[str]:
    r = subprocess.run(["nm", "-C", "--defined-only", str(obj)], capture_output=True, text=True, check=True)
    out = []
    for line in r.stdout.splitlines():
        parts = line.split(maxsplit=2)
        if len(parts) == 3 and parts[1] in ("W", "V", "u"):
            # The operator schemas (core/ops_generated.h) are constexpr data, constant-initialized: no instruction
            # of any ISA is in them, so whichever copy the linker keeps is the same bytes.
            if parts[1] in ("V", "u") and parts[2].startswith("dtorch::ops::"):
                continue
            out.append(parts[2])
    return out


@pytest.mark.skipif(not kernel_sets(ROOT / "runtime", host_arch()),
                    reason=f"no ISA kernel set is built for this host's architecture ({host_arch()})")
def test_isa_objects_keep_their_inline_code_to_themselves(host_build: Path) -> None:
    checked = 0
    bad: list[str] = []
    for ks in kernel_sets(ROOT / "runtime", host_arch()):
        own = (f"::isa_{ks.name}::", f"dtorch::kernels::{ks.name}::")
        for src in ks.sources():
            obj = host_build / "obj" / src.relative_to(ROOT).with_suffix(".o")
            assert obj.is_file(), f"{obj} was not built"
            checked += 1
            for sym in _weak_symbols(obj):
                if sym.startswith("DW.ref.__gxx_personality_v0") or any(o in sym for o in own):
                    continue
                bad.append(f"{obj.relative_to(host_build)}: {sym}")
    assert checked > 0
    assert not bad, ("ISA objects define weak symbols the linker may keep for baseline code (put them in the "
                     "DTORCH_ISA namespace, kernels/common/isa.h, or out of line):\n" + "\n".join(bad))


@pytest.fixture(scope="module")
def zoo_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    root = tmp_path_factory.mktemp("isa_zoo")
    out = {}
    for name in sorted(zoo.ZOO):
        make_model, make_input = zoo.ZOO[name]
        dt.manual_seed(0)
        model = make_model().eval()
        x = make_input(1)
        path = root / f"{name}.dtm"
        dt.export(model, x, str(path))
        np.save(root / f"{name}.npy", x.numpy())
        out[name] = (path, root / f"{name}.npy")
    return out


def _run(cmd: list[str], out: Path) -> tuple[str, np.ndarray]:
    r = subprocess.run(cmd + ["--output", str(out), "--info"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr[-1500:]}"
    kernels = next(line for line in r.stdout.splitlines() if line.startswith("kernels: "))
    return kernels, np.load(out)


@pytest.mark.skipif(host_arch() != "x86_64", reason="emulates x86-64 CPU models: only on an x86-64 host")
@pytest.mark.parametrize("cpu", sorted(CPUS))
@pytest.mark.parametrize("policy", ["fast", "exact", "portable"])
def test_runs_on_cpus_without_avx512(host_build: Path, zoo_models, tmp_path: Path, cpu: str, policy: str) -> None:
    qemu = shutil.which("qemu-x86_64")
    if qemu is None:
        pytest.fail("qemu-x86_64 is missing: run scripts/setup.sh (apt package qemu-user)")
    for name, (model, x) in zoo_models.items():
        base = [str(host_build / "dtorch-run"), str(model), "--input", str(x), "--kernels", policy]
        kernels, got = _run([qemu, "-cpu", cpu, *base], tmp_path / f"{name}_{cpu}.npy")
        sets = {entry.rsplit(":", 1)[1] for entry in kernels.split()[1:]}
        assert sets <= CPUS[cpu], f"{name} on {cpu} ({policy}) ran kernel sets {sorted(sets - CPUS[cpu])}: {kernels}"
        if policy == "fast" and "avx2" in CPUS[cpu]:
            continue  # FMA sets: within tolerance of portable, checked in tests/runtime/kernels
        # exact / portable (and fast where the CPU has only bit-exact sets): the host's portable bits
        _, want = _run([*base[:-1], "portable"], tmp_path / f"{name}_host.npy")
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), f"{name} on {cpu} ({policy}) differs"
