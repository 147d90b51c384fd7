"""Build one-node (or small) ONNX models with onnx.helper and compare dtorch's import with ONNX Runtime."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
        np.dtype(np.bool_): TensorProto.BOOL, np.dtype(np.int32): TensorProto.INT32,
        np.dtype(np.float64): TensorProto.DOUBLE}


def node_model(op: str, inputs: Mapping[str, np.ndarray | tuple[Sequence[int | str], Any]],
               consts: Mapping[str, np.ndarray] | None = None, attrs: Mapping[str, Any] | None = None,
               outputs: int | Sequence[str] = 1, opset: int = 18, order: Sequence[str] | None = None,
               out_dtype: Any = np.float32) -> onnx.ModelProto:
    """A model of one `op` node. `inputs`: graph inputs, name -> example array (its shape is the input's) or
    (dims with str for dim_param, dtype); `consts`: initializers; `order`: the node's input names ('' = absent)."""
    consts = dict(consts or {})
    names = list(order) if order is not None else [*inputs, *consts]
    out_names = [f"y{i}" for i in range(outputs)] if isinstance(outputs, int) else list(outputs)
    node = helper.make_node(op, names, out_names, **dict(attrs or {}))
    g_in = []
    for n, v in inputs.items():
        if isinstance(v, np.ndarray):
            g_in.append(helper.make_tensor_value_info(n, ELEM[v.dtype], list(v.shape)))
        else:
            dims, dt = v
            g_in.append(helper.make_tensor_value_info(n, ELEM[np.dtype(dt)], list(dims)))
    g_out = [helper.make_tensor_value_info(n, ELEM[np.dtype(out_dtype)], None) for n in out_names]
    inits = [numpy_helper.from_array(np.asarray(a), n) for n, a in consts.items()]
    graph = helper.make_graph([node], f"{op}_test", g_in, g_out, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    model = onnx.shape_inference.infer_shapes(model)
    for o in model.graph.output:  # a function op whose shape inference gives nothing: rank unknown
        if not o.type.tensor_type.HasField("shape"):
            o.type.tensor_type.shape.SetInParent()
    return model


def save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.save(model, str(path))
    return path


def ort_run(path: Path, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"]).run(None, dict(feeds))


def dtm_run(path: Path, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    from dtorch.runtime import InferenceSession

    return InferenceSession(str(path)).run(None, dict(feeds))


def assert_close(got: np.ndarray, ref: np.ndarray, tol: float = 1e-5) -> None:
    ref = np.asarray(ref)
    assert got.shape == ref.shape, f"shape {got.shape} != ONNX Runtime's {ref.shape}"
    if ref.dtype.kind != "f":
        np.testing.assert_array_equal(got, ref)
        return
    if ref.size == 0:
        return
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    scale = max(1.0, float(np.nanmax(np.abs(ref))))
    err = float(np.nanmax(np.abs(got.astype(np.float64) - ref))) / scale
    assert err <= tol, f"max error {err:.3g} x output scale > {tol}"
