"""ONNX's backend node tests (benchmarks/onnx_conformance.py) as a regression gate for dtorch.onnx.

- Default tier: the runner's own logic (which inputs are frozen, the comparison with ONNX's tolerances, the
  grouping, the RESULTS.md markers, the data fetch's sha256 refusal, without network), and the fast gate: every
  test in tests/onnx/conformance_pass.txt whose operator is on issue 15's list still passes.
- ``pytest -m conformance tests/onnx/test_conformance.py``: the whole suite; fails on any regression from the pass
  list and prints the tests that pass now but are not on it (add them: benchmarks/onnx_conformance.py
  --write-pass-list).

The gates fetch the test data through dtorch.onnx.conformance_data.node_tests() (pip download from the package
registry on first use, cached in build/third_party/).
"""

from __future__ import annotations

import os
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx", reason="the conformance runner reads ONNX models (pip install 'dtorch[onnx]')")

from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))  # the runner is a benchmark script

import onnx_conformance as oc

from dtorch.onnx import conformance_data as cd

ROOT = oc.ROOT
JOBS = max(1, min(2, os.cpu_count() or 1))


# --- the runner's logic ---------------------------------------------------------------------------------------------
def _model(nodes, inputs, inits=()):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


F, I64 = TensorProto.FLOAT, TensorProto.INT64


def test_frozen_inputs_by_op_and_position():
    m = _model([helper.make_node("Reshape", ["x", "shape"], ["r"]),
                helper.make_node("Gather", ["r", "idx"], ["g"]),
                helper.make_node("Clip", ["g", "lo", "hi"], ["c"]),
                helper.make_node("Slice", ["c", "starts", "ends", "", "steps"], ["s"]),
                helper.make_node("Resize", ["s", "", "", "sizes"], ["z"]),
                helper.make_node("Add", ["z", "n"], ["y"])],
               [("x", F, [2, 3]), ("shape", I64, [2]), ("idx", I64, [2]), ("lo", F, []), ("hi", F, []),
                ("starts", I64, [1]), ("ends", I64, [1]), ("steps", I64, [1]), ("sizes", I64, [2]), ("n", I64, [])])
    # shapes, clip bounds, slice and resize arguments are frozen; data (x), Gather's indices and Add's operand not
    assert oc.frozen_input_names(m) == ["shape", "lo", "hi", "starts", "ends", "steps", "sizes"]


def test_frozen_inputs_skip_initializers_and_other_domains():
    m = _model([helper.make_node("Reshape", ["x", "shape"], ["y"]),
                helper.make_node("Reshape", ["x", "s2"], ["y2"], domain="com.example")],
               [("x", F, [6]), ("shape", I64, [1]), ("s2", I64, [1])],
               [numpy_helper.from_array(np.array([6], np.int64), "shape")])
    assert oc.frozen_input_names(m) == []


def test_compare_tolerances():
    want = np.array([1.0, -2.0, 100.0], np.float32)
    assert oc.compare_value(want.copy(), want) is None
    assert oc.compare_value(want * (1 + 9e-4), want) is None  # within rtol 1e-3
    why = oc.compare_value(want * np.float32(1.01), want)
    assert why is not None and "3 of 3 values beyond rtol 0.001" in why and "max rel diff 0.01" in why
    # atol 1e-7 around zero
    assert oc.compare_value(np.array([5e-8], np.float32), np.array([0.0], np.float32)) is None
    assert oc.compare_value(np.array([5e-7], np.float32), np.array([0.0], np.float32)) is not None


def test_compare_nan_inf():
    nan = np.array([np.nan, 1.0, np.inf], np.float32)
    assert oc.compare_value(nan.copy(), nan) is None  # NaN equals NaN, inf equals inf
    why = oc.compare_value(np.array([0.0, 1.0, np.inf], np.float32), nan)
    assert why is not None and "1 NaN where the other has a number" in why
    assert oc.compare_value(np.array([np.nan, 1.0, -np.inf], np.float32), nan) is not None


def test_compare_shape_dtype_exact():
    a = np.zeros((2, 3), np.float32)
    assert oc.compare_value(a.reshape(3, 2), a) == "shape [3, 2], expected [2, 3]"
    assert oc.compare_value(np.zeros((), np.float32), np.zeros((1,), np.float32)) == "shape [], expected [1]"
    assert oc.compare_value(a.astype(np.float64), a) == "dtype float64, expected float32"
    ints = np.array([1, 2, 3], np.int64)
    assert oc.compare_value(ints.copy(), ints) is None
    why = oc.compare_value(np.array([1, 2, 4], np.int64), ints)
    assert why is not None and why.startswith("1 of 3 values differ (exact int64); first at [2]: 4, expected 3")
    assert oc.compare_value(np.array([True, False]), np.array([True, True])) is not None
    assert oc.compare_value(np.array(["a", "b"], dtype=object), np.array(["a", "b"], dtype=object)) is None
    assert oc.compare_outputs([a], [a, a]) == "1 outputs, expected 2"
    assert oc.compare_outputs([a, ints], [a, ints[:2]]) == "output 1: shape [3], expected [2]"
    assert oc.compare_value([a, a], [a]) == "a sequence of 2, expected 1"
    assert oc.compare_value(None, None) is None
    assert oc.compare_value(a, None) is not None


def test_operator_grouping():
    ops = {"test_layer_normalization_2d": ["LayerNormalization"],
           "test_layer_normalization_2d_expanded": ["ReduceMean", "Sub", "Div"],
           "test_layer_normalization_2d_expanded_ver18": ["ReduceMean", "Sub"],
           "test_basic_conv_with_padding": ["Conv"],
           "test_orphan_expanded": ["Mul", "Add"]}
    names = list(ops)
    assert oc.operator_of("test_layer_normalization_2d", ops.__getitem__, names) == ("LayerNormalization", False)
    assert oc.operator_of("test_layer_normalization_2d_expanded", ops.__getitem__, names) == \
        ("LayerNormalization", True)
    assert oc.operator_of("test_layer_normalization_2d_expanded_ver18", ops.__getitem__, names) == \
        ("LayerNormalization", True)
    assert oc.operator_of("test_basic_conv_with_padding", ops.__getitem__, names) == ("Conv", False)
    assert oc.operator_of("test_orphan_expanded", ops.__getitem__, names) == ("Mul", True)


def test_cause_drops_names_and_numbers():
    a = oc.cause("ONNX node 'n1' (Pow, opset 15) cannot be imported: input 'x' is int8; the runtime takes ...")
    b = oc.cause("ONNX node 'other' (Pow, opset 13) cannot be imported: input 'b' is int8; the runtime takes ...")
    assert a == b == "input '…' is <dtype>; the runtime takes ..."
    assert oc.cause("ONNX operator 'Resize' (node 'r', opset 19) is not supported by dtorch.onnx. Supported "
                    "operators: Abs, Add") == "operator Resize is not supported by dtorch.onnx"


def test_results_section_replaces_only_between_markers(tmp_path):
    p = tmp_path / "RESULTS.md"
    p.write_text("# Benchmark results\n\n## Other (issue 1)\n\nkeep me\n")
    oc.write_results_section("first body", "cmd --write", p)
    text = p.read_text()
    assert text.startswith("# Benchmark results\n\n## Other (issue 1)\n\nkeep me\n")
    assert f"## {oc.SECTION}\n\n{oc.BEGIN}" in text and "first body" in text and text.rstrip().endswith(oc.END)
    p.write_text(text + "\n## Later (issue 16)\n\nalso keep\n")  # someone else's section after ours
    oc.write_results_section("second body", "cmd --write", p)
    text = p.read_text()
    assert "first body" not in text and "second body" in text
    assert "keep me" in text and text.endswith("## Later (issue 16)\n\nalso keep\n")
    assert text.count(oc.BEGIN) == 1 and text.count(f"## {oc.SECTION}") == 1


def test_pass_list_update_keeps_names_outside_the_run(tmp_path):
    p = tmp_path / "pass.txt"
    p.write_text("test_a\ntest_b\ntest_c\n")
    oc.write_pass_list(["test_d", "test_b"], ["test_b", "test_c", "test_d"], p)
    assert p.read_text() == "test_a\ntest_b\ntest_d\n"


# --- the data fetch, without network --------------------------------------------------------------------------------
def test_fetch_refuses_a_corrupted_wheel(tmp_path):
    bad = tmp_path / cd.WHEEL
    with zipfile.ZipFile(bad, "w") as zf:  # a well-formed wheel with the right name, but not the pinned bytes
        zf.writestr("onnx/backend/test/data/node/test_x/model.onnx", b"not a model")
    cache = tmp_path / "cache"
    with pytest.raises(cd.ConformanceDataError, match=f"sha256 .* not the pinned {cd.WHEEL_SHA256}"):
        cd.node_tests(cache=cache, wheel=bad)
    assert list(cache.iterdir()) == []  # nothing extracted, no staging folder left behind
    with pytest.raises(cd.ConformanceDataError, match="python.* -m dtorch.onnx.conformance_data"):
        cd.node_tests(cache=cache, fetch=False)


def test_fetch_extraction_refuses_paths_outside(tmp_path):
    evil = tmp_path / "evil.whl"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("onnx/backend/test/data/node/../../../../escape.txt", b"x")
    with pytest.raises(cd.ConformanceDataError, match="unsafe path"):
        cd._extract(evil, tmp_path / "out")
    assert not (tmp_path / "escape.txt").exists()
    ok = tmp_path / "ok.whl"
    with zipfile.ZipFile(ok, "w") as zf:
        zf.writestr("onnx/backend/test/data/node/test_x/model.onnx", b"m")
        zf.writestr("onnx/__init__.py", b"")
    assert cd._extract(ok, tmp_path / "ok") == 1
    assert sorted(p.name for p in (tmp_path / "ok").rglob("*")) == ["model.onnx", "test_x"]


# --- the gates ------------------------------------------------------------------------------------------------------
def _regressions(names, results):
    bad = []
    for n in names:
        r = results.get((n, "dtorch"))
        if r is None or r["status"] != "pass":
            bad.append(f"{n}: {r['status']}: {r['detail']}" if r else f"{n}: not in ONNX {cd.ONNX_VERSION}'s suite")
    return bad


def test_pass_list_of_the_issue_operators_still_passes():
    pytest.importorskip("dtorch.runtime", reason="needs the runtime's Python module")
    root = oc.data_root(fetch=True)
    all_names = oc.list_tests(root)
    listed = oc.read_pass_list()
    assert listed == sorted(set(listed)), f"{oc.PASS_LIST} must be sorted, one name a line"
    present = [n for n in listed if (root / n / "model.onnx").is_file()]
    ops = oc.operators(root, present, all_names)
    names = [n for n in present if ops[n][0] in oc.ISSUE_OPS]
    assert names, f"{oc.PASS_LIST} names no test of the issue's operators"
    t0 = time.monotonic()
    results = oc.run_all(root, names, ("dtorch",), jobs=JOBS)
    bad = _regressions(names, results) + _regressions(sorted(set(listed) - set(all_names)), {})
    assert not bad, (f"{len(bad)} of the {len(names)} listed tests of the issue's operators no longer pass "
                     f"({time.monotonic() - t0:.0f} s):\n" + "\n".join(bad))


@pytest.mark.conformance
@pytest.mark.timeout(3600)
def test_whole_suite_against_pass_list(request, capsys):
    if "conformance" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("the whole ONNX suite runs with -m conformance")
    pytest.importorskip("dtorch.runtime", reason="needs the runtime's Python module")
    root = oc.data_root(fetch=True)
    names = oc.list_tests(root)
    listed = oc.read_pass_list()
    results = oc.run_all(root, names, ("dtorch",), jobs=JOBS)
    passing = {n for (n, _), r in results.items() if r["status"] == "pass"}
    new = sorted(passing - set(listed))
    if new:
        with capsys.disabled():
            print(f"\n{len(new)} ONNX node test(s) pass that are not in {oc.PASS_LIST.relative_to(ROOT)} (add them: "
                  f"python benchmarks/onnx_conformance.py --write-pass-list):\n  " + "\n  ".join(new))
    bad = _regressions(listed, results)
    assert not bad, f"{len(bad)} test(s) of the pass list no longer pass:\n" + "\n".join(bad)
