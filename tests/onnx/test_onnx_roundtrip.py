"""Round trip: a DTorch model -> dtorch.onnx.export -> dtorch.onnx.import_model gives a .dtm that behaves as the one
dt.export writes of the same model (same outputs at every batch, no more nodes, about the same arena), and ONNX
Runtime on the exported file gives the eager outputs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("onnx", reason="dtorch.onnx needs the onnx package (pip install 'dtorch[onnx]')")
pytest.importorskip("onnxruntime", reason="the round trip runs the file in ONNX Runtime (pip install onnxruntime)")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "export"))
import zoo
from onnx_cases import assert_close, ort_run

import dtorch as dt
import dtorch.onnx as don
from dtorch._export.reader import read_dtm
from dtorch.runtime import InferenceSession


@pytest.mark.parametrize("name", sorted(zoo.ZOO))
def test_export_then_import_behaves_as_dt_export(name, tmp_path):
    make, example = zoo.ZOO[name]
    dt.manual_seed(0)
    model = make().eval()
    x = example(2)
    axes = {"input": {0: "batch"}, "output": {0: "batch"}}
    native = tmp_path / "native.dtm"
    dt.export(model, (x,), native, input_names=["input"], output_names=["output"], dynamic_axes=axes)
    onnx_file = tmp_path / "m.onnx"
    don.export(model, (x,), onnx_file, input_names=["input"], output_names=["output"], dynamic_axes=axes)
    imported = tmp_path / "imported.dtm"
    report = don.import_model(onnx_file, imported)
    assert report.input_shapes["input"][0] == "batch"
    a, b = read_dtm(native), read_dtm(imported)
    # as lean as the native export (a global average pool may come back as the equivalent mean)
    assert len(b.nodes) <= len(a.nodes), ([n.op for n in a.nodes], [n.op for n in b.nodes])
    assert b.plan["arena_size"] <= a.plan["arena_size"] * 1.25 + 1024
    sa, sb = InferenceSession(str(native)), InferenceSession(str(imported))
    for batch in (1, 3):
        xb = example(batch)
        eager = model(xb).detach().numpy()
        got_a = sa.run(None, {"input": xb.numpy()})[0]
        got_b = sb.run(None, {"input": xb.numpy()})[0]
        assert_close(got_b, got_a)
        assert_close(got_b, eager)
        assert_close(ort_run(onnx_file, {"input": xb.numpy()})[0], eager)
