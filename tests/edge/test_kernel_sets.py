"""runtime/kernels/*/kernel_set.json: the ISA kernel sets every build of the runtime takes its per-set flags from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dtorch.edge.kernel_sets import KernelSetError, kernel_sets

RUNTIME = Path(__file__).resolve().parents[2] / "runtime"


def test_the_x86_64_sets_and_their_flags():
    sets = {ks.name: ks for ks in kernel_sets(RUNTIME)}
    assert {"x86", "avx2", "avx512"} <= set(sets)
    assert "portable" not in sets and "common" not in sets  # the baseline files carry no set file
    assert sets["avx512"].flags[-2:] == ("-DDTORCH_KERNEL_ISA=isa_avx512", "-DDTORCH_KERNEL_RANK=20")
    assert "-mavx512f" in sets["avx512"].flags and "-mfma" in sets["avx2"].flags
    assert all(ks.sources() for ks in sets.values())
    assert {ks.name for ks in kernel_sets(RUNTIME, "aarch64")} == {"neon64", "neon64dot"}  # never the x86-64 sets
    assert {ks.name for ks in kernel_sets(RUNTIME, "armv7")} == {"neon32", "neon32int8"}
    assert {ks.name for ks in kernel_sets(RUNTIME, "riscv64")} == {"rvv"}
    assert {ks.name for ks in kernel_sets(RUNTIME, "x86_64")} == {"x86", "avx2", "avx512", "vnni", "amx"}
    assert "-mavx512vnni" in sets["vnni"].flags and sets["vnni"].exact  # int8: the portable bits
    assert "-mamx-int8" in sets["amx"].flags and sets["amx"].exact and sets["amx"].rank > sets["vnni"].rank


def test_a_board_takes_the_sets_its_isa_list_calls_for():
    sets = {ks.name: ks for ks in kernel_sets(RUNTIME)}
    neon = sets["neon64"]
    assert neon.requires == ("neon",) and neon.flags == ("-DDTORCH_KERNEL_ISA=isa_neon64", "-DDTORCH_KERNEL_RANK=15")
    assert neon.for_board("aarch64", ["armv8.2-a", "neon", "dotprod"])
    assert not neon.for_board("aarch64", ["armv8-a"])            # an aarch64 board file without neon
    assert not neon.for_board("armv7", ["armv7-a", "neon"])       # the right feature, another architecture
    assert sets["neon32"].for_board("armv7", ["armv7-a", "neon", "vfpv4", "thumb2"])
    assert not sets["neon32"].for_board("armv7", ["armv7-a", "neon"])  # NEON without VFPv4: no fused multiply-add
    rvv = sets["rvv"]
    assert rvv.for_board("riscv64", ["rv64gcv", "rvv1.0", "vlen128"]) and not rvv.for_board("riscv64", ["rv64gc"])
    assert rvv.builds_with("zig") and rvv.builds_with("clang") and not rvv.builds_with("gcc")
    assert neon.builds_with("gcc") and neon.builds_with("zig")  # no `compilers`: any
    dot = sets["neon64dot"]  # int8 on the dot-product instructions: boards that list dotprod, the portable bits
    assert dot.requires == ("neon", "dotprod") and dot.exact and dot.rank == 25
    assert dot.flags == ("-DDTORCH_KERNEL_ISA=isa_neon64dot", "-DDTORCH_KERNEL_RANK=25")
    assert dot.for_board("aarch64", ["armv8.2-a", "neon", "fp16", "dotprod"])
    assert not dot.for_board("aarch64", ["armv8-a", "neon"])  # Cortex-A72 (rpi4): no dot product
    i8 = sets["neon32int8"]  # int8 on armv7 NEON's widening multiplies (no dot product): the portable bits
    assert i8.requires == ("neon",) and i8.exact and not sets["neon32"].exact
    assert i8.flags == ("-DDTORCH_KERNEL_ISA=isa_neon32int8", "-DDTORCH_KERNEL_RANK=20")
    assert i8.for_board("armv7", ["armv7-a", "neon", "vfpv4", "thumb2"]) and i8.for_board("armv7", ["armv7-a", "neon"])
    assert not i8.for_board("aarch64", ["armv8.2-a", "neon", "dotprod"]) and not i8.for_board("armv7", ["armv7-a"])
    assert sets["neon64"].rank == 15 and sets["x86"].rank == 10 and sets["vnni"].rank == 25
    # host-only sets (no `requires`: they check the CPU when they register) never go to a board
    assert not any(sets[n].for_board("x86_64", ["avx2", "fma", "avx512f"]) for n in ("x86", "avx2", "avx512", "vnni", "amx"))


def _write(tmp_path: Path, folder: str, text: str) -> Path:
    d = tmp_path / "kernels" / folder
    d.mkdir(parents=True)
    (d / "kernel_set.json").write_text(text)
    return tmp_path


@pytest.mark.parametrize("folder,text,match", [
    ("neon", "{not json", "cannot read"),
    ("neon", json.dumps({"name": "sve", "arch": ["aarch64"], "flags": []}), "must be the folder's name 'neon'"),
    ("neon", json.dumps({"name": "neon", "arch": [], "flags": []}), "'arch' must be a non-empty list"),
    ("neon", json.dumps({"name": "neon", "arch": ["aarch64"], "flags": ["O2"], "rank": 1}), "'flags' must be a list of compiler"),
    ("Neon", json.dumps({"name": "Neon", "arch": ["aarch64"], "flags": []}), "must be the folder's name"),
    ("neon", json.dumps(["neon"]), "must be the folder's name"),
    ("neon", json.dumps({"name": "neon", "arch": ["aarch64"], "flags": [], "requires": "neon"}),
     "'requires' must be a list of board ISA features"),
    ("neon", json.dumps({"name": "neon", "arch": ["aarch64"], "flags": [], "requires": [""]}),
     "'requires' must be a list of board ISA features"),
    ("neon", json.dumps({"name": "neon", "arch": ["aarch64"], "flags": [], "compilers": ["icc"]}),
     "'compilers' must be a list of compiler kinds"),
    ("neon", json.dumps({"name": "neon", "arch": ["aarch64"], "flags": []}), "'rank' must be an integer"),
    ("neon", json.dumps({"name": "neon", "arch": ["aarch64"], "flags": [], "rank": 0}), "'rank' must be an integer"),
    ("neon", json.dumps({"name": "neon", "arch": ["aarch64"], "flags": [], "rank": "25"}), "'rank' must be an integer"),
    ("neon", json.dumps({"name": "neon", "arch": ["aarch64"], "flags": [], "rank": True}), "'rank' must be an integer"),
])
def test_bad_kernel_set_files_are_named(tmp_path, folder, text, match):
    root = _write(tmp_path, folder, text)
    with pytest.raises(KernelSetError, match=match) as e:
        kernel_sets(root)
    assert "kernel_set.json" in str(e.value)
