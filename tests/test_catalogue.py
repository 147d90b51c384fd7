"""The operator catalogue (dtorch/catalogue) is the one description of an operator: everything generated from it
is current, and every place that lists operators agrees with it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dtorch.catalogue import CATALOGUE, FUSED_ACTIVATIONS, generate
from dtorch.catalogue._schema import ACTIVATION_ATTRS

ROOT = Path(__file__).resolve().parents[1]
PORTABLE = ROOT / "runtime" / "kernels" / "portable"
_REGISTER = re.compile(r"DTORCH_REGISTER_[A-Z0-9_]*KERNEL\(\s*([a-z0-9_]+)\s*,\s*DType::k(\w+)")
_DT = {"Float32": "float32", "Float16": "float16", "BFloat16": "bfloat16", "Float64": "float64", "Int64": "int64",
       "Int32": "int32", "Int16": "int16", "Int8": "int8", "UInt8": "uint8", "Bool": "bool"}


@pytest.mark.parametrize("rel", sorted(generate.outputs()))
def test_generated_file_is_current(rel: str) -> None:
    want = generate.outputs()[rel]
    have = (ROOT / rel).read_text()
    if have != want:
        old, new = have.splitlines(), want.splitlines()
        first = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
        line = new[first] if first < len(new) else "(remove the rest)"
        pytest.fail(f"{rel} is stale at line {first + 1}: expected {line!r}; run python -m dtorch.catalogue.generate")


def test_generate_check_mode(tmp_path: Path) -> None:
    for rel, text in generate.outputs().items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert generate.main(["--check", "--root", str(tmp_path)]) == 0
    (tmp_path / generate.OPS_MD).write_text("hand-edited\n")
    assert generate.main(["--check", "--root", str(tmp_path)]) == 1


def _registrations(folder: Path) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for f in sorted(folder.glob("*.cc")):
        for op, dt in _REGISTER.findall(f.read_text()):
            assert f.stem == op, f"{f} registers '{op}': one operator per kernel file, named after it"
            found.setdefault(op, set()).add(_DT[dt])
    return found


def test_portable_kernels_are_the_catalogue() -> None:
    regs = _registrations(PORTABLE)
    missing = sorted(set(CATALOGUE) - set(regs))
    extra = sorted(set(regs) - set(CATALOGUE))
    assert not missing, f"catalogue operators without a portable kernel file: {missing} (add runtime/kernels/portable/<op>.cc)"
    assert not extra, f"portable kernels without a catalogue entry: {extra} (add an OpDef to dtorch/catalogue)"
    for name, op in CATALOGUE.items():
        assert regs[name] == {s.key for s in op.signatures}, (
            f"{name}: the portable kernel registers {sorted(regs[name])}, the catalogue's signatures are keyed by "
            f"{sorted(s.key for s in op.signatures)}")


def test_optimized_sets_register_only_catalogue_operators() -> None:
    for folder in sorted(p for p in (ROOT / "runtime" / "kernels").iterdir() if p.is_dir() and p.name not in
                         ("portable", "common")):
        for op, dts in _registrations(folder).items():
            assert op in CATALOGUE, f"{folder.name}/{op}.cc: '{op}' is not in the catalogue"
            assert dts <= {s.key for s in CATALOGUE[op].signatures}, f"{folder.name}/{op}.cc: dtypes {dts}"


def test_runtime_registry_matches_the_catalogue() -> None:
    rt = pytest.importorskip("dtorch.runtime")
    pairs = {tuple(p) for p in rt._C.registered_kernels()}
    want = {(name, s.key) for name, op in CATALOGUE.items() for s in op.signatures}
    assert pairs == want


def test_exporter_tables_come_from_the_catalogue() -> None:
    from dtorch._export import lower, passes

    assert lower.EXPORTABLE_OPS == sorted(CATALOGUE)
    for op in CATALOGUE.values():
        for prim in op.eager:
            assert prim in lower.HANDLERS, f"{op.name}: eager primitive '{prim}' has no lowering in dtorch/_export/lower.py"
    assert set(passes._FUSABLE) == {n for n, o in CATALOGUE.items() if o.fuses}


def test_fusion_entries_are_consistent() -> None:
    names = {a.name for a in ACTIVATION_ATTRS}
    for op in CATALOGUE.values():
        if op.fuses:
            assert names <= {a.name for a in op.attrs}, f"{op.name} fuses activations but lacks their attributes"
            assert set(op.fuses) <= set(FUSED_ACTIVATIONS)
        if op.fused_as is not None:
            assert op.fused_as in FUSED_ACTIVATIONS, op.name
            for mine, fused in op.fused_attrs:
                assert op.attr(mine) is not None and fused in names, (op.name, mine, fused)


def test_activation_enum_follows_the_catalogue() -> None:
    text = (ROOT / "runtime" / "kernels" / "common" / "activation.h").read_text()
    enum = re.search(r"enum class ActKind \{(.*?)\}", text, re.S)
    assert enum is not None
    kinds = [k.strip() for k in enum.group(1).split(",") if k.strip()]
    camel = ["k" + "".join(p.capitalize() for p in a.split("_")) for a in ("none", *FUSED_ACTIVATIONS)]
    assert [k.lower() for k in kinds] == [c.lower() for c in camel]


def test_catalogue_refuses_a_duplicate_or_bad_entry() -> None:
    from dtorch.catalogue import Attr

    with pytest.raises(ValueError, match="unknown type"):
        Attr("x", "complex")  # type: ignore[arg-type]
