"""Files that pass the FlatBuffers verifier but disagree with the operator catalogue are refused, cleanly, by every
entry point: InferenceSession, dtorch-run and `dtorch-edge inspect` (the generator: hostile_catalogue.py; the same
files run under ASan + UBSan in test_fuzz.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from dtm_builder import DtmBuilder
from hostile_catalogue import Case, cases, unused_int8_intermediate

import dtorch.runtime as rt
from dtorch._export.errors import DtmFormatError
from dtorch._export.reader import read_dtm
from dtorch.edge.cli import main as edge_main

ROOT = Path(__file__).resolve().parents[2]
CASES = list(cases())


def test_every_operator_and_class_is_generated() -> None:
    from dtorch.catalogue import CATALOGUE

    ops = {c.label.split(".")[0] for c in CASES} - {"plan"}
    assert ops == set(CATALOGUE)
    assert len(CASES) > 1000


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_session_refuses(case: Case) -> None:
    with pytest.raises((rt.InvalidModelError, rt.UnsupportedError)) as e:
        rt.InferenceSession(case.data)
    msg = str(e.value)
    assert case.expect in msg and "\n" not in msg, msg


def test_python_reader_refuses_every_case(tmp_path: Path) -> None:
    for case in CASES:
        p = tmp_path / "m.dtm"
        p.write_bytes(case.data)
        with pytest.raises(DtmFormatError) as e:
            read_dtm(p)
        assert "\n" not in str(e.value), case.label


def test_dtorch_run_and_inspect_refuse(tmp_path: Path, dtorch_run: Path) -> None:
    runner = CliRunner()
    for case in CASES[::7]:  # every 7th case: each class of each operator family, in a few seconds
        p = tmp_path / f"{case.label.replace(':', '_')}.dtm"
        p.write_bytes(case.data)
        r = subprocess.run([str(dtorch_run), str(p), "--info"], capture_output=True, text=True, timeout=60)
        lines = r.stderr.strip().splitlines()
        assert r.returncode != 0 and len(lines) == 1 and "error" in lines[0], (case.label, r.stderr)
        assert r.returncode < 128, (case.label, r.returncode)  # an exit status, not a signal
        res = runner.invoke(edge_main, ["inspect", str(p)])
        assert res.exit_code == 1 and res.output.strip().startswith("error:"), (case.label, res.output)


def test_unused_int8_intermediate_is_refused() -> None:
    with pytest.raises(rt.InvalidModelError, match=r"output 0 \(tensor \d+ \('unused'\)\) is declared int8, but the "
                                                   r"relu kernel writes float32"):
        rt.InferenceSession(unused_int8_intermediate())


def test_declared_shape_must_match_the_kernel() -> None:
    g = DtmBuilder()
    x = g.input("x", ["batch", 8])
    t = g.tensor("t", ["batch", 9])  # relu keeps the shape: 8, not 9
    y = g.output("y", ["batch", 8])
    g.node("relu", [x], [t])
    g.node("neg", [t], [y])
    with pytest.raises(rt.InvalidModelError, match=r"computes tensor 't' with shape \[1, 8\], but the file declares "
                                                   r"\[\?, 9\]"):
        rt.InferenceSession(g.build())


def test_declared_rank_is_checked_for_other_input_sizes_too() -> None:
    g = DtmBuilder()
    x = g.input("x", ["batch", 8])
    y = g.output("y", ["batch", 8])
    g.node("reshape", [x], [y], {"shape": [0, 8]})
    s = rt.InferenceSession(g.build())
    assert s.run(None, {"x": np.ones((3, 8), np.float32)})[0].shape == (3, 8)


def test_attribute_value_outside_the_catalogue_is_refused() -> None:
    g = DtmBuilder()
    x = g.input("x", [1, 1, 4, 4])
    y = g.output("y", [1, 1, 4, 4])
    g.node("gelu", [x], [y], {"approximate": "fast"})
    with pytest.raises(rt.InvalidModelError, match=r"gelu attribute 'approximate' is \"fast\", expected one of "
                                                   r"\"none\", \"tanh\""):
        rt.InferenceSession(g.build())
    g = DtmBuilder()
    x = g.input("x", [1, 1, 4, 4])
    y = g.output("y", [1, 1, 2, 2])
    g.node("max_pool2d", [x], [y], {"kernel": [2, 2], "ceil_mode": 2})
    with pytest.raises(rt.InvalidModelError, match=r"'ceil_mode' is 2, expected one of 0, 1"):
        rt.InferenceSession(g.build())
    g = DtmBuilder()
    x = g.input("x", [1, 1, 4, 4])
    y = g.output("y", [1, 1, 2, 2])
    g.node("max_pool2d", [x], [y], {"stride": [2, 2]})
    with pytest.raises(rt.InvalidModelError, match=r"missing required attribute 'kernel' \(ints\)"):
        rt.InferenceSession(g.build())
