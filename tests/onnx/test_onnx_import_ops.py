"""dtorch.onnx.import_model, operator by operator: one-node ONNX models run by the imported .dtm and by ONNX
Runtime on the same inputs (the import's own parity check is off here so the comparison is the test's)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx", reason="dtorch.onnx needs the onnx package (pip install 'dtorch[onnx]')")
pytest.importorskip("onnxruntime", reason="the ONNX import tests compare with ONNX Runtime (pip install onnxruntime)")

from onnx_cases import assert_close, dtm_run, node_model, ort_run, save

import dtorch.onnx as don

R = np.random.default_rng(0)


def f32(*shape: int) -> np.ndarray:
    return R.standard_normal(shape).astype(np.float32)


def pos(*shape: int) -> np.ndarray:
    return (np.abs(R.standard_normal(shape)) + 0.1).astype(np.float32)


def i64(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


X4 = f32(2, 3, 9, 9)
W33 = f32(4, 3, 3, 3)
# (id, op, inputs, initializers, attributes, opset, number of outputs, node input order)
CASES = [
    ("add_broadcast", "Add", {"a": f32(2, 3, 4), "b": f32(4)}, {}, {}, 13, 1, None),
    ("sub_const", "Sub", {"a": f32(2, 3)}, {"b": f32(2, 1)}, {}, 13, 1, None),
    ("mul", "Mul", {"a": f32(3, 1, 5), "b": f32(1, 4, 5)}, {}, {}, 14, 1, None),
    ("div", "Div", {"a": f32(4, 5)}, {"b": pos(5)}, {}, 14, 1, None),
    ("pow_int_exponent", "Pow", {"a": pos(3, 4)}, {"b": np.array(2, np.int64)}, {}, 15, 1, None),
    ("max3", "Max", {"a": f32(3, 4), "b": f32(4), "c": f32(3, 1)}, {}, {}, 13, 1, None),
    ("min2", "Min", {"a": f32(3, 4), "b": f32(3, 4)}, {}, {}, 13, 1, None),
    ("mean3", "Mean", {"a": f32(3, 4), "b": f32(3, 4), "c": f32(3, 4)}, {}, {}, 13, 1, None),
    ("sum2", "Sum", {"a": f32(3, 4), "b": f32(4)}, {}, {}, 13, 1, None),
    *[(op.lower(), op, {"x": pos(2, 7) if op in ("Log", "Sqrt", "Reciprocal") else f32(2, 7)}, {}, {}, 13, 1, None)
      for op in ("Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Neg", "Abs", "Erf", "Sin", "Cos", "Reciprocal",
                 "Softplus", "Softsign", "Selu")],
    ("hardswish", "HardSwish", {"x": f32(3, 9) * 4}, {}, {}, 14, 1, None),
    ("mish", "Mish", {"x": f32(3, 9) * 4}, {}, {}, 18, 1, None),
    ("leaky_relu", "LeakyRelu", {"x": f32(3, 5)}, {}, {"alpha": 0.2}, 16, 1, None),
    ("elu", "Elu", {"x": f32(3, 5)}, {}, {"alpha": 0.7}, 13, 1, None),
    ("hardsigmoid_default", "HardSigmoid", {"x": f32(3, 9) * 4}, {}, {}, 13, 1, None),
    ("hardsigmoid_torch", "HardSigmoid", {"x": f32(3, 9) * 4}, {}, {"alpha": 1 / 6}, 13, 1, None),
    ("gelu", "Gelu", {"x": f32(4, 6)}, {}, {}, 20, 1, None),
    ("gelu_tanh", "Gelu", {"x": f32(4, 6)}, {}, {"approximate": "tanh"}, 20, 1, None),
    ("prelu_channel", "PRelu", {"x": f32(2, 3, 4, 4)}, {"s": f32(3, 1, 1)}, {}, 16, 1, None),
    ("prelu_broadcast", "PRelu", {"x": f32(2, 3, 4)}, {"s": f32(4)}, {}, 16, 1, None),
    ("clip_inputs", "Clip", {"x": f32(4, 4)}, {"lo": np.array(-0.5, np.float32), "hi": np.array(0.5, np.float32)},
     {}, 13, 1, None),
    ("clip_max_only", "Clip", {"x": f32(4, 4)}, {"hi": np.array(0.3, np.float32)}, {}, 13, 1, ["x", "", "hi"]),
    ("identity", "Identity", {"x": f32(2, 3)}, {}, {}, 13, 1, None),
    ("dropout", "Dropout", {"x": f32(2, 3)}, {}, {}, 13, 1, None),
    ("dropout_training_ratio0", "Dropout", {"x": f32(2, 3)},
     {"r": np.array(0.0, np.float32), "t": np.array(True)}, {}, 13, 1, None),
    ("conv_pads", "Conv", {"x": X4}, {"w": W33, "b": f32(4)}, {"pads": [1, 0, 2, 1], "strides": [2, 1]}, 11, 1,
     None),
    ("conv_same_upper", "Conv", {"x": X4}, {"w": W33}, {"auto_pad": "SAME_UPPER", "strides": [2, 2]}, 11, 1, None),
    ("conv_same_lower", "Conv", {"x": X4}, {"w": W33}, {"auto_pad": "SAME_LOWER", "strides": [2, 2]}, 11, 1,
     None),
    ("conv_groups", "Conv", {"x": f32(1, 4, 8, 8)}, {"w": f32(8, 2, 3, 3)}, {"group": 2, "pads": [1, 1, 1, 1]}, 11, 1,
     None),
    ("conv_1d", "Conv", {"x": f32(2, 3, 17)}, {"w": f32(5, 3, 4), "b": f32(5)}, {"pads": [1, 2], "strides": [2]},
     13, 1, None),
    ("conv_transpose", "ConvTranspose", {"x": f32(1, 4, 5, 5)}, {"w": f32(4, 3, 3, 3), "b": f32(3)},
     {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]}, 11, 1, None),
    ("conv_transpose_asym", "ConvTranspose", {"x": f32(1, 2, 4, 4)}, {"w": f32(2, 3, 3, 3)},
     {"strides": [2, 2], "pads": [0, 1, 2, 0]}, 11, 1, None),
    ("conv_transpose_output_shape", "ConvTranspose", {"x": f32(1, 2, 4, 4)}, {"w": f32(2, 2, 3, 3)},
     {"strides": [2, 2], "output_shape": [9, 8]}, 11, 1, None),
    ("conv_transpose_output_shape_larger", "ConvTranspose", {"x": f32(1, 1, 3, 3)}, {"w": f32(1, 2, 3, 3),
                                                                                    "b": f32(2)},
     {"strides": [3, 2], "output_shape": [10, 8]}, 11, 1, None),
    ("conv_transpose_groups", "ConvTranspose", {"x": f32(1, 4, 5, 5)}, {"w": f32(4, 2, 3, 3)},
     {"group": 2, "dilations": [2, 1]}, 11, 1, None),
    ("gemm_transb", "Gemm", {"a": f32(3, 5)}, {"b": f32(4, 5), "c": f32(4)}, {"transB": 1}, 13, 1, None),
    ("gemm_alpha_beta", "Gemm", {"a": f32(5, 3)}, {"b": f32(5, 4), "c": f32(3, 4)},
     {"transA": 1, "alpha": 0.5, "beta": 2.0}, 13, 1, None),
    ("gemm_runtime_b", "Gemm", {"a": f32(3, 5), "b": f32(5, 4)}, {"c": f32(1, 4)}, {"alpha": 2.0}, 13, 1, None),
    ("matmul_const", "MatMul", {"a": f32(2, 3, 5)}, {"b": f32(5, 4)}, {}, 13, 1, None),
    ("matmul_batched", "MatMul", {"a": f32(2, 3, 5), "b": f32(2, 5, 4)}, {}, {}, 13, 1, None),
    ("batchnorm", "BatchNormalization", {"x": f32(2, 3, 4, 4)},
     {"s": f32(3), "b": f32(3), "m": f32(3), "v": pos(3)}, {"epsilon": 1e-3}, 15, 1, None),
    ("batchnorm_training", "BatchNormalization", {"x": f32(2, 3, 4, 4)},
     {"s": f32(3), "b": f32(3), "m": f32(3), "v": pos(3)}, {"epsilon": 1e-3, "training_mode": 1, "momentum": 0.8},
     15, 3, None),
    ("batchnorm_training_3d", "BatchNormalization", {"x": f32(4, 3, 5)},
     {"s": f32(3), "b": f32(3), "m": f32(3), "v": pos(3)}, {"training_mode": 1}, 15, 3, None),
    ("instancenorm", "InstanceNormalization", {"x": f32(2, 3, 5, 4)}, {"s": f32(3), "b": f32(3)}, {}, 13, 1,
     None),
    ("layernorm_axis", "LayerNormalization", {"x": f32(2, 3, 8)}, {"s": f32(3, 8), "b": f32(3, 8)}, {"axis": 1},
     17, 1, None),
    ("layernorm_last", "LayerNormalization", {"x": f32(2, 3, 8)}, {"s": f32(8)}, {}, 17, 1, None),
    ("groupnorm18", "GroupNormalization", {"x": f32(2, 6, 3, 3)}, {"s": f32(3), "b": f32(3)}, {"num_groups": 3},
     18, 1, None),
    ("groupnorm21", "GroupNormalization", {"x": f32(2, 6, 3, 3)}, {"s": f32(6), "b": f32(6)}, {"num_groups": 2},
     21, 1, None),
    ("softmax13", "Softmax", {"x": f32(2, 3, 4)}, {}, {"axis": 1}, 13, 1, None),
    ("softmax11_coerced", "Softmax", {"x": f32(2, 3, 4)}, {}, {"axis": 1}, 11, 1, None),
    ("logsoftmax11_default", "LogSoftmax", {"x": f32(2, 3, 4)}, {}, {}, 11, 1, None),
    ("logsoftmax13", "LogSoftmax", {"x": f32(2, 3, 4)}, {}, {}, 13, 1, None),
    ("maxpool", "MaxPool", {"x": X4}, {}, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, 12, 1,
     None),
    ("maxpool_ceil", "MaxPool", {"x": f32(1, 2, 10, 10)}, {}, {"kernel_shape": [3, 3], "strides": [2, 2],
                                                               "ceil_mode": 1}, 12, 1, None),
    ("maxpool_asym_dilated", "MaxPool", {"x": X4}, {}, {"kernel_shape": [2, 3], "pads": [0, 1, 1, 2],
                                                        "dilations": [2, 1]}, 12, 1, None),
    ("maxpool_same_upper", "MaxPool", {"x": X4}, {}, {"kernel_shape": [2, 2], "auto_pad": "SAME_UPPER"}, 12, 1,
     None),
    ("maxpool_1d", "MaxPool", {"x": f32(2, 3, 11)}, {}, {"kernel_shape": [3], "strides": [2]}, 12, 1, None),
    ("avgpool_exclude_pad", "AveragePool", {"x": X4}, {}, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, 11, 1,
     None),
    ("avgpool_include_pad", "AveragePool", {"x": X4}, {}, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1],
                                                           "count_include_pad": 1}, 11, 1, None),
    ("avgpool_same_upper", "AveragePool", {"x": X4}, {}, {"kernel_shape": [2, 2], "auto_pad": "SAME_UPPER"}, 11, 1,
     None),
    ("avgpool_asym_include", "AveragePool", {"x": X4}, {}, {"kernel_shape": [3, 2], "pads": [0, 1, 2, 0],
                                                            "count_include_pad": 1, "strides": [2, 2]}, 11, 1, None),
    ("avgpool_ceil", "AveragePool", {"x": f32(1, 2, 10, 10)}, {}, {"kernel_shape": [3, 3], "strides": [2, 2],
                                                                   "ceil_mode": 1}, 11, 1, None),
    ("avgpool_ceil_asym", "AveragePool", {"x": f32(1, 2, 10, 10)}, {},
     {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1, "pads": [1, 0, 0, 1]}, 11, 1, None),
    ("avgpool_dilated", "AveragePool", {"x": f32(1, 2, 11, 10)}, {},
     {"kernel_shape": [3, 2], "dilations": [2, 3], "strides": [2, 1], "pads": [1, 1, 2, 0]}, 19, 1, None),
    ("avgpool_dilated_ceil_include", "AveragePool", {"x": f32(1, 2, 11, 10)}, {},
     {"kernel_shape": [3, 3], "dilations": [2, 2], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1,
      "count_include_pad": 1}, 19, 1, None),
    ("avgpool_dilated_1d", "AveragePool", {"x": f32(2, 3, 13)}, {}, {"kernel_shape": [2], "dilations": [3]}, 19, 1,
     None),
    ("maxpool_3d", "MaxPool", {"x": f32(1, 2, 7, 8, 9)}, {},
     {"kernel_shape": [3, 2, 3], "strides": [2, 2, 1], "pads": [1, 0, 1, 0, 1, 2], "dilations": [1, 2, 1],
      "ceil_mode": 1}, 12, 1, None),
    ("avgpool_3d_asym_include", "AveragePool", {"x": f32(2, 2, 6, 7, 5)}, {},
     {"kernel_shape": [2, 3, 2], "strides": [2, 1, 2], "pads": [1, 0, 1, 0, 2, 1], "count_include_pad": 1,
      "ceil_mode": 1}, 19, 1, None),
    ("avgpool_3d_dilated", "AveragePool", {"x": f32(1, 3, 8, 7, 6)}, {},
     {"kernel_shape": [2, 2, 3], "dilations": [2, 1, 2], "pads": [1, 1, 0, 1, 0, 2]}, 19, 1, None),
    ("global_avg", "GlobalAveragePool", {"x": X4}, {}, {}, 13, 1, None),
    ("global_max", "GlobalMaxPool", {"x": X4}, {}, {}, 13, 1, None),
    ("reshape_zero_minus1", "Reshape", {"x": f32(2, 3, 4)}, {"s": i64(0, -1)}, {}, 14, 1, None),
    ("flatten2", "Flatten", {"x": f32(2, 3, 4, 5)}, {}, {"axis": 2}, 13, 1, None),
    ("flatten0", "Flatten", {"x": f32(2, 3, 4)}, {}, {"axis": 0}, 13, 1, None),
    ("squeeze13", "Squeeze", {"x": f32(2, 1, 4, 1)}, {"a": i64(-1)}, {}, 13, 1, None),
    ("squeeze11_all", "Squeeze", {"x": f32(2, 1, 4, 1)}, {}, {}, 11, 1, None),
    ("unsqueeze13", "Unsqueeze", {"x": f32(2, 4)}, {"a": i64(0, 3)}, {}, 13, 1, None),
    ("unsqueeze11", "Unsqueeze", {"x": f32(2, 4)}, {}, {"axes": [-1]}, 11, 1, None),
    ("transpose", "Transpose", {"x": f32(2, 3, 4)}, {}, {"perm": [2, 0, 1]}, 13, 1, None),
    ("transpose_default", "Transpose", {"x": f32(2, 3, 4)}, {}, {}, 13, 1, None),
    ("concat_neg_axis", "Concat", {"a": f32(2, 3), "b": f32(2, 5)}, {"c": f32(2, 1)}, {"axis": -1}, 13, 1, None),
    ("split_equal", "Split", {"x": f32(6, 4)}, {}, {"axis": 0}, 13, 3, None),
    ("split_sizes13", "Split", {"x": f32(2, 7)}, {"s": i64(2, 5)}, {"axis": 1}, 13, 2, None),
    ("split_attr11", "Split", {"x": f32(2, 7)}, {}, {"axis": 1, "split": [3, 4]}, 11, 2, None),
    ("split_num_outputs18", "Split", {"x": f32(7, 2)}, {}, {"num_outputs": 3}, 18, 3, None),
    ("slice_basic", "Slice", {"x": f32(5, 6)}, {"s": i64(1, 0), "e": i64(4, 100)}, {}, 13, 1, None),
    ("slice_axes_steps", "Slice", {"x": f32(5, 6, 7)}, {"s": i64(-5, 1), "e": i64(-1, 7), "a": i64(2, 0),
                                                       "st": i64(2, 2)}, {}, 13, 1, None),
    ("slice_negative_step", "Slice", {"x": f32(5, 6)}, {"s": i64(-1), "e": i64(-100), "a": i64(1),
                                                         "st": i64(-2)}, {}, 13, 1, None),
    ("gather_const_scalar", "Gather", {"x": f32(3, 4, 5)}, {"i": np.array(-1, np.int64)}, {"axis": 1}, 13, 1, None),
    ("gather_const_2d", "Gather", {"x": f32(5, 4)}, {"i": np.array([[0, 4], [-2, 1]], np.int64)}, {}, 13, 1, None),
    ("gather_embedding", "Gather", {"i": np.array([[0, 3, 2]], np.int64)}, {"x": f32(5, 4)}, {}, 13, 1, ["x", "i"]),
    # GatherElements / GatherND / CumSum: the attention-mask and position-id paths of exported text models. Indices
    # given as graph inputs are run-time values (negative ones included); constant ones fold at import.
    ("gather_elements_runtime_index", "GatherElements", {"x": f32(3, 4), "i": R.integers(-4, 4, (3, 5))}, {},
     {"axis": 1}, 13, 1, None),
    ("gather_elements_int32_index", "GatherElements", {"x": f32(3, 4, 2)},
     {"i": R.integers(-3, 3, (2, 4, 1)).astype(np.int32)}, {"axis": -3}, 11, 1, None),
    ("gather_elements_const_data", "GatherElements", {"i": R.integers(-5, 5, (2, 3))}, {"x": f32(5, 3)}, {}, 13, 1,
     ["x", "i"]),
    # constant data of a large axis (a (1, 512) position buffer): ONNX's reference GatherElements fails there, the
    # kernel computes the constant
    ("gather_elements_const_large_axis", "GatherElements", {},
     {"x": np.arange(512, dtype=np.float32).reshape(1, 512) * 0.5, "i": np.array([[0, 7, 511, -1, -512]], np.int64)},
     {"axis": 1}, 13, 1, None),
    ("gather_nd_runtime_indices", "GatherND", {"x": f32(3, 4, 5), "i": R.integers(-3, 3, (2, 3, 2))}, {}, {}, 13, 1,
     None),
    ("gather_nd_full_tuples", "GatherND", {"x": f32(3, 4, 5)}, {"i": R.integers(-3, 3, (4, 3))}, {}, 13, 1, None),
    ("gather_nd_batch_dims1", "GatherND", {"x": f32(3, 4, 5), "i": R.integers(-4, 4, (3, 2, 1))}, {},
     {"batch_dims": 1}, 13, 1, None),
    ("gather_nd_batch_dims2", "GatherND", {"x": f32(2, 3, 4, 5)}, {"i": R.integers(-4, 4, (2, 3, 6, 2))},
     {"batch_dims": 2}, 13, 1, None),
    ("cumsum", "CumSum", {"x": f32(2, 7)}, {"a": np.array(-1, np.int64)}, {}, 14, 1, None),
    ("cumsum_exclusive_reverse", "CumSum", {"x": f32(3, 4, 5)}, {"a": np.array([1], np.int32)},
     {"exclusive": 1, "reverse": 1}, 14, 1, None),
    ("cumsum_exclusive_opset11", "CumSum", {"x": f32(6, 2)}, {"a": np.array(0, np.int64)}, {"exclusive": 1}, 11, 1,
     None),
    ("expand", "Expand", {"x": f32(3, 1)}, {"s": i64(2, 1, 4)}, {}, 13, 1, None),
    ("expand_ones", "Expand", {"x": f32(3, 4)}, {"s": i64(1, 1)}, {}, 13, 1, None),
    ("pad_constant", "Pad", {"x": f32(2, 3, 4)}, {"p": i64(0, 1, 2, 0, 0, 1), "v": np.array(1.5, np.float32)}, {},
     13, 1, None),
    ("pad_negative", "Pad", {"x": f32(3, 5)}, {"p": i64(0, -1, 1, -2)}, {}, 13, 1, None),
    ("pad_axes18", "Pad", {"x": f32(2, 3, 4)}, {"p": i64(1, 2), "v": np.array(0.0, np.float32), "a": i64(-1)}, {},
     18, 1, ["x", "p", "v", "a"]),
    ("reduce_mean18", "ReduceMean", {"x": f32(2, 3, 4)}, {"a": i64(1)}, {}, 18, 1, None),
    ("reduce_mean13_attr", "ReduceMean", {"x": f32(2, 3, 4)}, {}, {"axes": [0, 2], "keepdims": 0}, 13, 1, None),
    ("reduce_sum13", "ReduceSum", {"x": f32(2, 3, 4)}, {"a": i64(-1)}, {"keepdims": 0}, 13, 1, None),
    ("reduce_sum11", "ReduceSum", {"x": f32(2, 3, 4)}, {}, {"axes": [1]}, 11, 1, None),
    ("reduce_sum_all", "ReduceSum", {"x": f32(2, 3, 4)}, {}, {}, 13, 1, None),
    ("reduce_sum_noop", "ReduceSum", {"x": f32(2, 3)}, {}, {"noop_with_empty_axes": 1}, 13, 1, None),
    ("reduce_sumsquare", "ReduceSumSquare", {"x": f32(2, 3, 4)}, {"a": i64(1)}, {}, 18, 1, None),
    ("reduce_l2", "ReduceL2", {"x": f32(2, 3, 4)}, {}, {"axes": [2]}, 13, 1, None),
    ("reduce_logsumexp", "ReduceLogSumExp", {"x": f32(2, 3, 4) * 30}, {}, {"axes": [1], "keepdims": 0}, 13, 1,
     None),
    ("depth_to_space_dcr", "DepthToSpace", {"x": f32(1, 8, 2, 3)}, {}, {"blocksize": 2}, 13, 1, None),
    ("depth_to_space_crd", "DepthToSpace", {"x": f32(1, 8, 2, 3)}, {}, {"blocksize": 2, "mode": "CRD"}, 13, 1, None),
    ("space_to_depth", "SpaceToDepth", {"x": f32(1, 2, 4, 6)}, {}, {"blocksize": 2}, 13, 1, None),
    ("tile", "Tile", {"x": f32(2, 3)}, {"r": i64(2, 3)}, {}, 13, 1, None),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_operator_matches_onnxruntime(case, tmp_path):
    _, op, inputs, consts, attrs, opset, n_out, order = case
    model = node_model(op, inputs, consts, attrs, outputs=n_out, opset=opset, order=order)
    src = save(model, tmp_path / "m.onnx")
    report = don.import_model(src, tmp_path / "m.dtm", check_parity=False)
    ref = ort_run(src, inputs)
    got = dtm_run(tmp_path / "m.dtm", inputs)
    assert len(got) == len(ref) == n_out
    for g, r in zip(got, ref):
        assert_close(g, r)
    assert report.onnx_ops == {op: 1}


def ints(dtype: type, *shape: int, lo: int = -20, hi: int = 20) -> np.ndarray:
    return R.integers(lo, hi, size=shape).astype(dtype)


# Integer arithmetic and data movement (ONNX's T includes int64 / int32): (id, op, inputs, initializers, attributes,
# opset, output dtype)
INT_CASES = [
    *[(f"{op.lower()}_{dt.__name__}", op, {"a": ints(dt, 2, 3, 4), "b": ints(dt, 4, lo=1, hi=9)}, {}, {}, 14, dt)
      for op in ("Add", "Sub", "Mul", "Div", "Max", "Min") for dt in (np.int64, np.int32)],
    ("div_int64_negative", "Div", {"a": ints(np.int64, 3, 5)}, {"b": np.array([-3, 2, -7, 5, 1], np.int64)}, {},
     14, np.int64),
    ("pow_int32", "Pow", {"a": ints(np.int32, 3, 4, lo=-5, hi=6), "b": ints(np.int32, 4, lo=0, hi=5)}, {}, {}, 15,
     np.int32),
    ("pow_int64_float", "Pow", {"a": ints(np.int64, 3, 4, lo=0, hi=9)}, {"b": np.array(1.5, np.float32)}, {}, 15,
     np.int64),
    *[(f"pad_{mode}_int64", "Pad", {"x": ints(np.int64, 2, 3, 4)}, {"p": i64(0, 1, 2, 0, 1, 1)}, {"mode": mode}, 18,
       np.int64) for mode in ("constant", "reflect", "edge", "wrap")],
    ("reduce_max_bool", "ReduceMax", {"x": R.random((3, 4, 2)) > 0.7}, {"a": i64(1)}, {"keepdims": 0}, 20, np.bool_),
    ("reduce_min_bool", "ReduceMin", {"x": R.random((3, 4, 2)) > 0.3}, {"a": i64(-1)}, {}, 20, np.bool_),
    ("pad_constant_int32_value", "Pad", {"x": ints(np.int32, 3, 4)},
     {"p": i64(1, 0, 0, 2), "v": np.array(-7, np.int32)}, {}, 18, np.int32),
    # position ids from an attention mask (RoBERTa: cumsum(mask, 1) * mask), int64 and int32 masks
    ("cumsum_mask_int64", "CumSum", {"x": ints(np.int64, 2, 9, lo=0, hi=2)}, {"a": i64(1)}, {}, 14, np.int64),
    ("cumsum_int32_reverse", "CumSum", {"x": ints(np.int32, 3, 5)}, {"a": np.array(0, np.int32)}, {"reverse": 1},
     14, np.int32),
    ("gather_elements_int64", "GatherElements", {"x": ints(np.int64, 4, 3), "i": ints(np.int64, 2, 3, lo=-4, hi=4)},
     {}, {"axis": 0}, 13, np.int64),
    ("gather_elements_bool", "GatherElements", {"x": R.random((3, 4)) > 0.5, "i": ints(np.int64, 3, 2, lo=-4, hi=4)},
     {}, {"axis": 1}, 13, np.bool_),
    ("gather_nd_int32", "GatherND", {"x": ints(np.int32, 3, 4), "i": ints(np.int64, 5, 1, lo=-3, hi=3)}, {}, {}, 13,
     np.int32),
    # comparisons and logic, composed from equal / less / greater / where (the attention-mask paths)
    ("greater_or_equal_float", "GreaterOrEqual", {"a": np.round(f32(3, 4)), "b": np.round(f32(4))}, {}, {}, 16,
     np.bool_),
    ("less_or_equal_int64", "LessOrEqual", {"a": ints(np.int64, 3, 4, lo=-3, hi=3)}, {"b": ints(np.int64, 1, 4, lo=-3,
                                                                                             hi=3)}, {}, 16, np.bool_),
    ("less_or_equal_nan", "LessOrEqual", {"a": np.array([np.nan, 1.0, -np.inf, 2.0], np.float32),
                                          "b": np.array([1.0, np.nan, -np.inf, 3.0], np.float32)}, {}, {}, 16, np.bool_),
    ("not", "Not", {"a": R.random((3, 4)) > 0.5}, {}, {}, 13, np.bool_),
    *[(op.lower(), op, {"a": R.random((2, 3, 4)) > 0.5, "b": R.random((3, 1)) > 0.5}, {}, {}, 13, np.bool_)
      for op in ("And", "Or", "Xor")],
    ("equal_bool", "Equal", {"a": R.random((3, 4)) > 0.5, "b": R.random(4) > 0.5}, {}, {}, 13, np.bool_),
    ("isnan", "IsNaN", {"a": np.array([[np.nan, 1.0, np.inf], [-np.inf, -0.0, np.nan]], np.float32)}, {}, {}, 13,
     np.bool_),
    *[(f"isinf_{neg}{posi}", "IsInf", {"a": np.array([[np.nan, 1.0, np.inf], [-np.inf, 3e38, -3e38]], np.float32)}, {},
       {"detect_negative": neg, "detect_positive": posi}, 10 + 10 * neg, np.bool_) for neg in (0, 1) for posi in (0, 1)],
]


@pytest.mark.parametrize("case", INT_CASES, ids=[c[0] for c in INT_CASES])
def test_integer_operator_matches_onnxruntime(case, tmp_path):
    _, op, inputs, consts, attrs, opset, out_dtype = case
    model = node_model(op, inputs, consts, attrs, opset=opset, out_dtype=out_dtype)
    src = save(model, tmp_path / "m.onnx")
    don.import_model(src, tmp_path / "m.dtm", check_parity=False)
    ref = ort_run(src, inputs)
    got = dtm_run(tmp_path / "m.dtm", inputs)
    assert got[0].dtype == ref[0].dtype == out_dtype
    np.testing.assert_array_equal(got[0], ref[0])


def test_integer_division_by_zero_gives_zero(tmp_path):
    """The import runs the model on zero integer inputs (valid indices): a Div by an input must still import, and a
    division by zero at run time gives 0 (NumPy's result) instead of trapping."""
    a = ints(np.int64, 4)
    model = node_model("Div", {"a": a, "b": ints(np.int64, 4)}, opset=14, out_dtype=np.int64)
    don.import_model(save(model, tmp_path / "m.onnx"), tmp_path / "m.dtm")
    got = dtm_run(tmp_path / "m.dtm", {"a": np.array([7, 7, -7, 9], np.int64), "b": np.array([2, 0, 2, -1], np.int64)})
    np.testing.assert_array_equal(got[0], [3, 0, -3, -9])


def test_dropout_training_with_a_ratio_is_refused(tmp_path):
    model = node_model("Dropout", {"x": f32(2, 3)}, {"r": np.array(0.3, np.float32), "t": np.array(True)},
                       opset=13)
    with pytest.raises(don.OnnxImportError, match=r"Dropout.*training_mode is true with ratio 0.3; dtorch imports "
                                                  r"models for inference"):
        don.import_model(save(model, tmp_path / "m.onnx"), tmp_path / "m.dtm")
    runtime_mode = node_model("Dropout", {"x": f32(2, 3), "t": np.array(True)}, {"r": np.array(0.3, np.float32)},
                              opset=13, order=["x", "r", "t"])
    with pytest.raises(don.OnnxImportError, match=r"training_mode is computed from the model's inputs"):
        don.import_model(save(runtime_mode, tmp_path / "t.onnx"), tmp_path / "t.dtm")


def test_cumsum_with_a_runtime_axis_is_refused(tmp_path):
    model = node_model("CumSum", {"x": f32(2, 3), "a": np.array(1, np.int64)}, opset=14)
    with pytest.raises(don.OnnxImportError, match=r"CumSum.*input 1 \(axis\) must be a constant"):
        don.import_model(save(model, tmp_path / "m.onnx"), tmp_path / "m.dtm")


def test_gather_index_out_of_range_at_run_time(tmp_path):
    """Indices that are model inputs are checked by the kernel when the model runs: a clear error, no crash."""
    from dtorch.runtime import InferenceSession

    for op, ins, attrs, msg in [
        ("GatherElements", {"x": f32(3, 4), "i": np.zeros((3, 2), np.int64)}, {"axis": 1},
         r"gather_elements: index 4 \(position 1 of index\) is out of range for axis 1 of size 4"),
        ("GatherND", {"x": f32(3, 4), "i": np.zeros((2, 2), np.int64)}, {},
         r"gather_nd: index -4 \(position 0 of indices\) is out of range for dimension 0 of data \[3, 4\]"),
    ]:
        don.import_model(save(node_model(op, ins, attrs=attrs, opset=13), tmp_path / "m.onnx"), tmp_path / "m.dtm",
                         check_parity=False)
        bad = dict(ins)
        bad["i"] = np.array([[0, 4], [1, 2], [3, 3]] if op == "GatherElements" else [[-4, 0], [1, 1]], np.int64)
        with pytest.raises(Exception, match=msg):
            InferenceSession(str(tmp_path / "m.dtm")).run(None, bad)


def test_sizes_used_as_data_follow_the_dynamic_dimensions(tmp_path):
    """A model that turns its input's sizes into data (seq_len in arithmetic, a Slice of a position buffer to seq_len,
    an Expand to Shape(x), a Range to seq_len) computes them at run time: the .dtm matches ONNX Runtime at sizes
    other than the import's."""
    from onnx import TensorProto, helper, numpy_helper

    buf = np.arange(64, dtype=np.float32).reshape(1, 64) * 0.25
    nodes = [
        helper.make_node("Shape", ["x"], ["sh"]),
        helper.make_node("Gather", ["sh", "one"], ["seq"], axis=0),
        helper.make_node("Cast", ["seq"], ["seq_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["x", "seq_f"], ["a"]),                              # x * seq_len
        helper.make_node("Unsqueeze", ["seq", "zero1"], ["seq1"]),
        helper.make_node("Slice", ["buf", "zero1", "seq1", "one1"], ["pos"]),      # buf[:, :seq_len]
        helper.make_node("Add", ["a", "pos"], ["b"]),
        helper.make_node("Range", ["zero", "seq", "one"], ["r"]),                  # arange(seq_len)
        helper.make_node("Cast", ["r"], ["r_f"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["b", "r_f"], ["c"]),
        helper.make_node("Expand", ["half", "sh"], ["e"]),                         # 0.5 broadcast to x's shape
        helper.make_node("Mul", ["c", "e"], ["d"]),
        helper.make_node("Shape", ["x"], ["bt"], start=0, end=1),                  # batch * seq as one size
        helper.make_node("Mul", ["bt", "seq1"], ["n"]),
        helper.make_node("Reshape", ["d", "n"], ["y"]),
    ]
    inits = [numpy_helper.from_array(a, n) for n, a in (
        ("buf", buf), ("one", np.array(1, np.int64)), ("zero", np.array(0, np.int64)),
        ("zero1", np.array([0], np.int64)), ("one1", np.array([1], np.int64)), ("half", np.array([0.5], np.float32)))]
    graph = helper.make_graph(nodes, "sizes_as_data", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                     ["batch", "seq"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    src = save(model, tmp_path / "m.onnx")
    report = don.import_model(src, tmp_path / "m.dtm")
    assert report.input_shapes == {"x": ["batch", "seq"]}
    for b, q in ((1, 1), (3, 7), (2, 40), (5, 2)):
        feeds = {"x": R.standard_normal((b, q)).astype(np.float32)}
        (got,), (ref,) = dtm_run(tmp_path / "m.dtm", feeds), ort_run(src, feeds)
        assert got.shape == (b * q,)
        assert_close(got, ref)
