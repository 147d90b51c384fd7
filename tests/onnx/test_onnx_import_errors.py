"""Every way an ONNX import can be refused: one clear line (OnnxImportError, or exit 1 from the CLI), no traceback,
no file left behind; and the features around them (external weight data, the IR < 4 initializer inputs, warnings)."""

from __future__ import annotations

import builtins

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper
from onnx_cases import node_model, save

import dtorch.onnx as don
from dtorch.edge.cli import main
from dtorch.onnx import OnnxImportError, OnnxMissingError

pytest.importorskip("onnxruntime", reason="the parity check of an import uses ONNX Runtime (pip install onnxruntime)")

X = np.zeros((1, 3), np.float32)


def relu_model(opset: int = 17, dims=(1, 3), dtype=TensorProto.FLOAT) -> onnx.ModelProto:
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g",
                          [helper.make_tensor_value_info("x", dtype, list(dims))],
                          [helper.make_tensor_value_info("y", dtype, list(dims))])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def refused(src, match: str, tmp_path, **kw) -> str:
    dst = tmp_path / "out.dtm"
    with pytest.raises(OnnxImportError, match=match) as e:
        don.import_model(src, dst, **kw)
    assert not dst.exists() and not list(tmp_path.glob("*.tmp*"))
    assert "\n" not in str(e.value)
    return str(e.value)


def test_missing_file_and_not_onnx(tmp_path):
    refused(tmp_path / "nope.onnx", "no such file", tmp_path)
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x00\xffnot a protobuf" * 10)
    refused(junk, "is not an ONNX model", tmp_path)
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    refused(empty, "not an ONNX model", tmp_path)
    refused(tmp_path, "not a regular file", tmp_path)


def test_opset_too_new_and_failing_checker(tmp_path):
    m = relu_model(opset=40)
    path = tmp_path / "new.onnx"
    path.write_bytes(m.SerializeToString())
    msg = refused(path, "onnx.checker|opset 40", tmp_path)
    assert "40" in msg


def test_unsupported_operator_names_node_opset_and_the_list(tmp_path):
    m = node_model("TopK", {"x": np.zeros((2, 5), np.float32)}, {"k": np.array([2], np.int64)}, outputs=2, opset=17)
    msg = refused(save(m, tmp_path / "topk.onnx"), "ONNX operator 'TopK'", tmp_path)
    assert "node 'TopK_0'" in msg and "opset 17" in msg and "Supported operators: Abs, Add" in msg and "Conv" in msg


def test_custom_domain_is_refused(tmp_path):
    g = helper.make_graph([helper.make_node("FusedGelu", ["x"], ["y"], domain="com.microsoft", name="fg")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8
    path = tmp_path / "ms.onnx"
    path.write_bytes(m.SerializeToString())  # onnx.save would check nothing either; the checker knows no schema
    refused(path, "com.microsoft::FusedGelu|onnx.checker", tmp_path)


def test_input_dtypes_and_shapes(tmp_path):
    refused(save(relu_model(dtype=TensorProto.DOUBLE), tmp_path / "f64.onnx"), r"input 'x' is float64.*model.float",
            tmp_path)
    unnamed = save(relu_model(dims=(None, None)), tmp_path / "unnamed.onnx")  # dims with neither value nor name
    r = don.import_model(unnamed, tmp_path / "ok.dtm", input_shapes={"x": [2, 5]})
    assert r.input_shapes["x"] == ["x_dim0", "x_dim1"] and r.output_shapes["y"] == ["x_dim0", "x_dim1"]
    fixed = save(relu_model(), tmp_path / "fixed.onnx")
    refused(fixed, "has rank 3, but the model's input 'x' has rank 2", tmp_path, input_shapes={"x": [1, 3, 4]})
    refused(fixed, "dimension 1 of 'x' is fixed to 3", tmp_path, input_shapes={"x": [1, 4]})
    refused(fixed, r"input_shapes names \['y'\]", tmp_path, input_shapes={"y": [1]})
    dyn = save(relu_model(dims=("batch", 3)), tmp_path / "dyn.onnx")
    refused(dyn, "sizes must be >= 0", tmp_path, input_shapes={"x": [-1, 3]})


def test_dynamic_axes_errors_and_choices(tmp_path):
    dyn = save(relu_model(dims=("batch", 3)), tmp_path / "dyn.onnx")
    refused(dyn, r"dynamic dimension\(s\) \['seq'\] are not in the model", tmp_path, dynamic_axes=["seq"])
    refused(dyn, "dynamic_axes names 'y', which is not an input", tmp_path, dynamic_axes={"y": {0: "b"}})
    refused(dyn, "has 2 dimensions", tmp_path, dynamic_axes={"x": {5: "b"}})
    refused(dyn, "dynamic_axes must be None, a list of dimension names or a dict", tmp_path, dynamic_axes=3)
    assert don.import_model(dyn, tmp_path / "a.dtm").input_shapes["x"] == ["batch", 3]
    assert don.import_model(dyn, tmp_path / "b.dtm", dynamic_axes=[]).input_shapes["x"] == [1, 3]
    assert don.import_model(dyn, tmp_path / "c.dtm", dynamic_axes={"x": {1: "width"}}).input_shapes["x"] == \
        [1, "width"]


def test_a_model_that_bakes_in_its_batch_is_refused_with_the_node(tmp_path):
    # Reshape to a constant that holds batch 1: it cannot serve batch 2.
    m = node_model("Reshape", {"x": (["batch", 2, 3], np.float32)}, {"s": np.array([1, 6], np.int64)}, opset=17)
    msg = refused(save(m, tmp_path / "bake.onnx"), "does not support other sizes of its dynamic dimension", tmp_path)
    assert "--static" in msg and "--input-shape" in msg
    assert don.import_model(tmp_path / "bake.onnx", tmp_path / "s.dtm", dynamic_axes=[]).input_shapes["x"] == [1, 2, 3]


def test_a_computed_shape_input_must_be_a_constant(tmp_path):
    m = node_model("Reshape", {"x": np.zeros((2, 3), np.float32), "s": np.array([3, 2], np.int64)}, opset=17)
    path = save(m, tmp_path / "r.onnx")
    refused(path, r"input 1 \(shape\) must be a constant", tmp_path)
    refused(path, "constant_inputs names 'z'", tmp_path, constant_inputs={"z": np.array([1])})
    refused(path, "constant_inputs\\['s'\\] is int32, but the input is int64", tmp_path,
            constant_inputs={"s": np.array([3, 2], np.int32)})
    r = don.import_model(path, tmp_path / "ok.dtm", constant_inputs={"s": np.array([3, 2], np.int64)})
    assert r.output_shapes["y0"] == [3, 2]


def test_output_path_errors(tmp_path):
    src = save(relu_model(), tmp_path / "m.onnx")
    with pytest.raises(OnnxImportError, match="is the input model"):
        don.import_model(src, src)
    assert src.read_bytes()[:2]  # untouched
    with pytest.raises(Exception, match="(?i)director|writ|exist"):
        don.import_model(src, tmp_path / "no" / "such" / "dir" / "m.dtm")


def test_external_weight_data_and_a_missing_data_file(tmp_path):
    w = np.arange(12, dtype=np.float32).reshape(4, 3)
    m = node_model("MatMul", {"a": np.zeros((2, 4), np.float32)}, {"w": w}, opset=17)
    path = tmp_path / "ext.onnx"
    onnx.save_model(m, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location="ext.bin",
                    size_threshold=0)
    assert (tmp_path / "ext.bin").is_file()
    r = don.import_model(path, tmp_path / "ext.dtm")
    assert r.parity is not None and max(r.parity.values()) <= 1e-6 and r.parameter_bytes == w.nbytes
    (tmp_path / "ext.bin").unlink()
    refused(path, "external weight data cannot be read", tmp_path)


def test_initializers_listed_as_inputs_are_constants(tmp_path):
    """IR < 4 files list every initializer among the graph inputs too: they are weights, not inputs."""
    m = node_model("Add", {"a": np.zeros((2, 3), np.float32)}, {"b": np.ones(3, np.float32)}, opset=11)
    m.graph.input.append(helper.make_tensor_value_info("b", TensorProto.FLOAT, [3]))
    m.ir_version = 3
    r = don.import_model(save(m, tmp_path / "ir3.onnx"), tmp_path / "ir3.dtm")
    assert r.input_names == ["a"]


def test_onnx_missing_says_how_to_install(monkeypatch, tmp_path):
    real = builtins.__import__

    def no_onnx(name, *a, **kw):
        if name == "onnx" or name.startswith("onnx."):
            raise ImportError("No module named 'onnx'")
        return real(name, *a, **kw)

    monkeypatch.setattr(builtins, "__import__", no_onnx)
    with pytest.raises(OnnxMissingError, match=r"pip install 'dtorch\[onnx\]'"):
        don.import_model(tmp_path / "m.onnx", tmp_path / "m.dtm")


def test_cli_import_errors_are_one_line(tmp_path):
    src = save(relu_model(dims=("batch", 3)), tmp_path / "m.onnx")
    r = CliRunner().invoke(main, ["import", str(tmp_path / "nope.onnx")])
    assert r.exit_code == 1 and r.output.strip().startswith("error: ") and "Traceback" not in r.output
    r = CliRunner().invoke(main, ["import", str(src), "--static", "--dynamic", "batch"])
    assert r.exit_code == 2 and "exclude each other" in r.output
    r = CliRunner().invoke(main, ["import", str(src), "--input-shape", "x:1,3"])
    assert r.exit_code == 2 and "NAME=SIZES" in r.output
    r = CliRunner().invoke(main, ["import", str(src), "-o", str(tmp_path / "o.dtm"), "--json"])
    assert r.exit_code == 0, r.output
    assert '"input_shapes"' in r.output and (tmp_path / "o.dtm").is_file()
    r = CliRunner().invoke(main, ["import", str(src)])
    assert r.exit_code == 0 and "parity vs ONNX Runtime" in r.output and (tmp_path / "m.dtm").is_file()


def test_unknown_attribute_value_of_a_known_op(tmp_path):
    m = node_model("Gelu", {"x": X}, attrs={"approximate": "cubic"}, opset=20)
    refused(save(m, tmp_path / "g.onnx"), "approximate='cubic'|onnx.checker", tmp_path)



def test_parity_comparison_treats_nan_and_inf_as_onnx_runtime_does():
    """The parity check compares NaN with NaN and an infinity with the same infinity as agreeing (a model whose
    example output is NaN where ONNX Runtime's is, e.g. a fully masked softmax, is not a dtorch bug); NaN or inf on
    one side only, or a wrong integer, is an infinite error."""
    from dtorch.onnx.importer import _parity_error

    nan, inf = float("nan"), float("inf")
    f = lambda *v: np.array(v, np.float32)  # noqa: E731
    assert _parity_error(f(nan, nan), f(nan, nan)) == 0.0
    assert _parity_error(f(nan, 1.0, inf, -inf), f(nan, 1.0, inf, -inf)) == 0.0
    assert _parity_error(f(1.0, 2.5), f(1.0, 2.0)) == pytest.approx(0.25)  # over the output scale 2
    assert _parity_error(f(nan, 1.0), f(0.0, 1.0)) == inf
    assert _parity_error(f(inf, 1.0), f(-inf, 1.0)) == inf
    assert _parity_error(f(inf, 1.0), f(5.0, 1.0)) == inf
    assert _parity_error(np.array([1, 2]), np.array([1, 3])) == inf
    assert _parity_error(np.array([True]), np.array([True])) == 0.0
