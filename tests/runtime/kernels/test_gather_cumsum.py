"""gather_elements, gather_nd and cumsum (the attention-mask / position-id paths of exported text models) against
PyTorch, NumPy, ONNX's reference evaluator and ONNX Runtime: every dtype, negative indices, zero-size tensors, the same
bits on any thread count, and every error path with its message."""

from __future__ import annotations

import numpy as np
import pytest

import dtorch as dt

from .helpers import _C, run

torch = pytest.importorskip("torch")

_NP = {"float32": np.float32, "int64": np.int64, "int32": np.int32, "bool": np.bool_}
_MOVABLE = ["float32", "int64", "int32", "bool"]


def _data(rng: np.random.Generator, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype == "float32":  # with -0.0 and NaN: a copy keeps their bits
        x = rng.standard_normal(shape).astype(np.float32)
        flat = x.reshape(-1)
        flat[: min(2, flat.size)] = [-0.0, np.nan][: min(2, flat.size)]
        return x
    info = np.iinfo(_NP[dtype])
    return rng.integers(info.min, info.max, size=shape, dtype=_NP[dtype], endpoint=True)


def _same_bits(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    np.testing.assert_array_equal(got.reshape(-1).view(np.uint8), np.ascontiguousarray(want).reshape(-1).view(np.uint8))


# ---------------------------------------------------------------------------- gather_elements

_GE_SHAPES = [((3, 4), (3, 5), 1), ((3, 4), (2, 4), 0), ((2, 3, 4), (2, 3, 2), 2), ((2, 3, 4), (1, 6, 2), 1),
              ((5,), (7,), 0), ((2, 1, 3), (2, 1, 3), 1), ((2, 3, 4, 5), (1, 3, 4, 2), 3)]


@pytest.mark.parametrize("dtype", _MOVABLE)
@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
@pytest.mark.parametrize("ds,ishape,axis", _GE_SHAPES)
def test_gather_elements_matches_torch(dtype, index_dtype, ds, ishape, axis) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1)
    x = _data(rng, dtype, ds)
    idx = rng.integers(0, ds[axis], size=ishape).astype(_NP[index_dtype])
    got = run("gather_elements", {"axis": axis}, [x, idx])
    want = torch.gather(torch.from_numpy(x), axis, torch.from_numpy(idx.astype(np.int64))).numpy()
    _same_bits(got, want)
    if dtype == "float32" and index_dtype == "int64":  # dtorch eager (torch.gather's semantics) gives the same
        np.testing.assert_array_equal(got, dt.gather(dt.from_numpy(x), axis, dt.from_numpy(idx)).numpy())


@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
def test_gather_elements_negative_indices_count_from_the_end(index_dtype) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(2)
    x = _data(rng, "float32", (3, 6, 2))
    idx = rng.integers(-6, 6, size=(3, 9, 2)).astype(_NP[index_dtype])
    idx.reshape(-1)[:2] = [-6, 5]  # both ends
    got = run("gather_elements", {"axis": 1}, [x, idx])
    _same_bits(got, np.take_along_axis(x, idx.astype(np.int64) % 6, axis=1))
    want = torch.gather(torch.from_numpy(x), 1, torch.from_numpy(idx.astype(np.int64) % 6)).numpy()
    _same_bits(got, want)


def test_gather_elements_matches_onnx() -> None:
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(3)
    x = _data(rng, "float32", (4, 5))
    idx = rng.integers(-4, 4, size=(3, 5))
    node = helper.make_node("GatherElements", ["x", "i"], ["y"], axis=0)
    want = ReferenceEvaluator(node).run(None, {"x": x, "i": idx})[0]
    _same_bits(run("gather_elements", {"axis": 0}, [x, idx]), want)


def test_gather_elements_zero_size() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    empty = run("gather_elements", {"axis": 1}, [x, np.zeros((3, 0), np.int64)])
    assert empty.shape == (3, 0) and empty.dtype == np.float32
    assert run("gather_elements", {"axis": 0}, [x, np.zeros((0, 4), np.int32)]).shape == (0, 4)
    # an empty axis with an empty index is fine; with any index it is out of range
    assert run("gather_elements", {"axis": 1}, [np.zeros((2, 0), np.int64), np.zeros((2, 0), np.int64)]).shape == (2, 0)
    with pytest.raises(ValueError, match=r"index 0 \(position 0 of index\) is out of range for axis 1 of size 0"):
        _C.run_kernel("gather_elements", {"axis": 1}, [np.zeros((2, 0), np.int64), np.zeros((2, 1), np.int64)])


def test_gather_elements_errors() -> None:
    x = np.zeros((3, 4), np.float32)
    i = np.zeros((3, 2), np.int64)
    with pytest.raises(ValueError, match=r"^gather_elements: index 4 \(position 3 of index\) is out of range for axis 1 "
                                         r"of size 4$"):
        _C.run_kernel("gather_elements", {"axis": 1}, [x, np.array([[0, 1], [3, 4], [0, 0]], np.int64)])
    with pytest.raises(ValueError, match=r"index -5 \(position 0 of index\) is out of range for axis 1 of size 4"):
        _C.run_kernel("gather_elements", {"axis": 1}, [x, np.full((3, 2), -5, np.int32)])
    with pytest.raises(ValueError, match=r"gather_elements: index must have data's rank 2, got shape \[6\] "
                                         r"\(data \[3, 4\]\)"):
        _C.run_kernel("gather_elements", {"axis": 1}, [x, np.zeros(6, np.int64)])
    with pytest.raises(ValueError, match=r"gather_elements: index \[4, 2\] is larger than data \[3, 4\] in dimension 0 "
                                         r"\(only the axis 1 may be larger\)"):
        _C.run_kernel("gather_elements", {"axis": 1}, [x, np.zeros((4, 2), np.int64)])
    with pytest.raises(ValueError, match=r"gather_elements: axis 2 is out of range for a tensor with 2 dimensions"):
        _C.run_kernel("gather_elements", {"axis": 2}, [x, i])
    with pytest.raises(ValueError, match=r"attribute 'axis' is -1, outside \[0, 7\]"):  # the file holds it normalized
        _C.run_kernel("gather_elements", {"axis": -1}, [x, i])
    with pytest.raises(ValueError, match=r"gather_elements: data must have at least 1 dimension, got a scalar"):
        _C.run_kernel("gather_elements", {}, [np.array(1.0, np.float32), np.array(0, np.int64)])
    with pytest.raises(ValueError, match=r"gather_elements: input 1 is float32, but gather_elements takes int64 there"):
        _C.run_kernel("gather_elements", {"axis": 1}, [x, i.astype(np.float32)])
    with pytest.raises(ValueError, match=r"gather_elements: input 1 is bool, but gather_elements takes int64 there"):
        _C.run_kernel("gather_elements", {"axis": 1}, [x, i > 0])
    with pytest.raises(Exception, match=r"no kernel for operator 'gather_elements' \(float64\)"):
        _C.run_kernel("gather_elements", {"axis": 1}, [x.astype(np.float64), i])


# ---------------------------------------------------------------------------- gather_nd


def _gather_nd_onnx(x: np.ndarray, idx: np.ndarray, batch_dims: int) -> tuple[np.ndarray, np.ndarray]:
    """ONNX's reference GatherND and ONNX Runtime's, on the same inputs."""
    import onnxruntime as ort
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    node = helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=batch_dims)
    ref = ReferenceEvaluator(node).run(None, {"x": x, "i": idx})[0]
    elem = {np.float32: TensorProto.FLOAT, np.int64: TensorProto.INT64, np.int32: TensorProto.INT32,
            np.bool_: TensorProto.BOOL}[x.dtype.type]
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", elem, list(x.shape)),
                                        helper.make_tensor_value_info("i", TensorProto.INT64, list(idx.shape))],
                          [helper.make_tensor_value_info("y", elem, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    got = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(
        None, {"x": x, "i": idx})[0]
    return np.asarray(ref), got


# (data shape, indices shape, batch_dims): batch_dims 0 and 1 (and 2), tuples shorter than data's rank (slices) and
# as long (elements)
_ND_SHAPES = [((4, 5), (3, 2), 0), ((4, 5), (3, 1), 0), ((4, 5, 2), (2, 3, 2), 0), ((4,), (6, 1), 0),
              ((3, 4, 5), (3, 2, 1), 1), ((3, 4, 5), (3, 2), 1), ((3, 4, 5), (3, 2, 2, 2), 1),
              ((2, 3, 4, 5), (2, 3, 6, 2), 2), ((2, 3, 4), (2, 1), 1)]


@pytest.mark.parametrize("dtype", _MOVABLE)
@pytest.mark.parametrize("ds,ishape,b", _ND_SHAPES)
def test_gather_nd_matches_onnx(dtype, ds, ishape, b) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(4)
    x = _data(rng, dtype, ds)
    k = ishape[-1]
    idx = np.stack([rng.integers(-ds[b + j], ds[b + j], size=ishape[:-1]) for j in range(k)], axis=-1).astype(np.int64)
    got = run("gather_nd", {"batch_dims": b}, [x, idx])
    ref, ort_y = _gather_nd_onnx(x, idx, b)
    _same_bits(got, ref)
    _same_bits(got, ort_y)


def test_gather_nd_is_torch_advanced_indexing() -> None:
    """batch_dims 0: data[indices[..., 0], indices[..., 1]] in torch."""
    rng = np.random.default_rng(5)
    x = _data(rng, "float32", (4, 5, 3))
    idx = np.stack([rng.integers(0, 4, (2, 6)), rng.integers(-5, 5, (2, 6))], axis=-1)
    t = torch.from_numpy(x)[torch.from_numpy(idx[..., 0]), torch.from_numpy(idx[..., 1] % 5)]
    _same_bits(run("gather_nd", {}, [x, idx]), t.numpy())


def test_gather_nd_zero_size() -> None:
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    assert run("gather_nd", {}, [x, np.zeros((0, 1), np.int64)]).shape == (0, 5)
    assert run("gather_nd", {}, [np.zeros((4, 0), np.int32), np.zeros((3, 1), np.int64)]).shape == (3, 0)
    assert run("gather_nd", {"batch_dims": 1}, [np.zeros((0, 3), np.bool_), np.zeros((0, 2, 1), np.int64)]).shape == (0, 2)
    with pytest.raises(ValueError, match=r"index 0 \(position 1 of indices\) is out of range for dimension 1 of data "
                                         r"\[4, 0\] \(size 0\)"):
        _C.run_kernel("gather_nd", {}, [np.zeros((4, 0), np.float32), np.zeros((3, 2), np.int64)])


def test_gather_nd_errors() -> None:
    x = np.zeros((3, 4), np.float32)
    with pytest.raises(ValueError, match=r"^gather_nd: index 4 \(position 3 of indices\) is out of range for dimension 1 "
                                         r"of data \[3, 4\] \(size 4\)$"):
        _C.run_kernel("gather_nd", {}, [x, np.array([[0, 0], [1, 4]], np.int64)])
    with pytest.raises(ValueError, match=r"index -4 \(position 0 of indices\) is out of range for dimension 0"):
        _C.run_kernel("gather_nd", {}, [x, np.array([[-4]], np.int64)])
    with pytest.raises(ValueError, match=r"gather_nd: batch_dims 2 must be less than the ranks of data \[3, 4\] and "
                                         r"indices \[3, 1\]"):
        _C.run_kernel("gather_nd", {"batch_dims": 2}, [x, np.zeros((3, 1), np.int64)])
    with pytest.raises(ValueError, match=r"gather_nd: the batch dimensions of data \[3, 4\] and indices \[2, 1\] differ "
                                         r"\(dimension 0; batch_dims 1\)"):
        _C.run_kernel("gather_nd", {"batch_dims": 1}, [x, np.zeros((2, 1), np.int64)])
    with pytest.raises(ValueError, match=r"gather_nd: the last dimension of indices \[2, 3\] \(the tuple length\) must "
                                         r"be in \[1, 2\] for data \[3, 4\] with batch_dims 0, got 3"):
        _C.run_kernel("gather_nd", {}, [x, np.zeros((2, 3), np.int64)])
    with pytest.raises(ValueError, match=r"the last dimension of indices \[2, 0\] \(the tuple length\) must be in "
                                         r"\[1, 2\]"):
        _C.run_kernel("gather_nd", {}, [x, np.zeros((2, 0), np.int64)])
    with pytest.raises(ValueError, match=r"gather_nd: data and indices must have at least 1 dimension, got \[3, 4\] and "
                                         r"\[\]"):
        _C.run_kernel("gather_nd", {}, [x, np.array(0, np.int64)])
    with pytest.raises(ValueError, match=r"gather_nd: the output would have 14 dimensions; at most 8 are supported"):
        _C.run_kernel("gather_nd", {}, [np.zeros((1,) * 8, np.float32), np.zeros((1,) * 8, np.int64)])
    with pytest.raises(ValueError, match=r"gather_nd: input 1 is int32, but gather_nd takes int64 there"):
        _C.run_kernel("gather_nd", {}, [x, np.zeros((2, 1), np.int32)])
    with pytest.raises(ValueError, match=r"attribute 'batch_dims' is -1, outside \[0, 7\]"):
        _C.run_kernel("gather_nd", {"batch_dims": -1}, [x, np.zeros((2, 1), np.int64)])


# ---------------------------------------------------------------------------- cumsum


def _torch_cumsum(x: np.ndarray, axis: int, exclusive: bool = False, reverse: bool = False) -> np.ndarray:
    """torch.cumsum, with flip for reverse and the shifted form (a 0, then all but the last sum) for exclusive. Integers
    sum in int64 and wrap back to x's dtype (addition modulo 2^32 gives int32's wrapped sums)."""
    t = torch.from_numpy(x)
    if reverse:
        t = torch.flip(t, [axis])
    s = torch.cumsum(t, axis, dtype=torch.int64 if x.dtype.kind == "i" else None)
    if exclusive:
        s = torch.cat([torch.zeros_like(s.narrow(axis, 0, 1)), s.narrow(axis, 0, s.shape[axis] - 1)], axis)
    if reverse:
        s = torch.flip(s, [axis])
    return s.numpy().astype(x.dtype)


def _numpy_cumsum(x: np.ndarray, axis: int, exclusive: bool = False, reverse: bool = False) -> np.ndarray:
    """Sequential sums in x's dtype (np.cumsum adds one element at a time; integers wrap)."""
    y = np.flip(x, axis) if reverse else x
    s = np.cumsum(y, axis=axis, dtype=x.dtype)
    if exclusive:
        s = np.concatenate([np.zeros_like(np.take(s, [0], axis)), np.take(s, range(s.shape[axis] - 1), axis)], axis)
    return np.ascontiguousarray(np.flip(s, axis) if reverse else s)


_FLAGS = [(0, 0), (1, 0), (0, 1), (1, 1)]
_CS_SHAPES = [((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 4), 1), ((2, 3, 4), 2), ((1, 9), 1), ((4, 1, 3), 1)]


@pytest.mark.parametrize("dtype", ["int64", "int32"])
@pytest.mark.parametrize("exclusive,reverse", _FLAGS)
@pytest.mark.parametrize("shape,axis", _CS_SHAPES)
def test_cumsum_integers_match_torch(dtype, exclusive, reverse, shape, axis) -> None:  # type: ignore[no-untyped-def]
    x = np.random.default_rng(6).integers(-50, 50, size=shape).astype(_NP[dtype])
    got = run("cumsum", {"axis": axis, "exclusive": exclusive, "reverse": reverse}, [x])
    _same_bits(got, _torch_cumsum(x, axis, bool(exclusive), bool(reverse)))


@pytest.mark.parametrize("exclusive,reverse", _FLAGS)
@pytest.mark.parametrize("shape,axis", _CS_SHAPES)
def test_cumsum_float_matches_torch(exclusive, reverse, shape, axis) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(7)
    attrs = {"axis": axis, "exclusive": exclusive, "reverse": reverse}
    # small integers and halves: every partial sum is exact in float32, so any order gives torch's bits
    exact = (rng.integers(-64, 64, size=shape) / 2).astype(np.float32)
    np.testing.assert_array_equal(run("cumsum", attrs, [exact]), _torch_cumsum(exact, axis, bool(exclusive),
                                                                               bool(reverse)))
    # random values: float32 sums in order (NumPy's bits); torch's CPU cumsum sums in double, so it is close only
    x = rng.standard_normal(shape).astype(np.float32)
    got = run("cumsum", attrs, [x])
    _same_bits(got, _numpy_cumsum(x, axis, bool(exclusive), bool(reverse)))
    np.testing.assert_allclose(got, _torch_cumsum(x, axis, bool(exclusive), bool(reverse)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "int64", "int32"])
@pytest.mark.parametrize("exclusive,reverse", _FLAGS)
def test_cumsum_matches_onnxruntime(dtype, exclusive, reverse) -> None:  # type: ignore[no-untyped-def]
    """ONNX Runtime's CumSum adds in the same order, so float32 gives the same bits."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(8)
    x = (rng.standard_normal((3, 200, 2)) * 100).astype(_NP[dtype])
    node = helper.make_node("CumSum", ["x", "a"], ["y"], exclusive=exclusive, reverse=reverse)
    elem = {"float32": TensorProto.FLOAT, "int64": TensorProto.INT64, "int32": TensorProto.INT32}[dtype]
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", elem, list(x.shape))],
                          [helper.make_tensor_value_info("y", elem, None)],
                          [numpy_helper.from_array(np.array(1, np.int64), "a")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    want = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    _same_bits(run("cumsum", {"axis": 1, "exclusive": exclusive, "reverse": reverse}, [x]), want)


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_cumsum_integers_wrap_around(dtype) -> None:  # type: ignore[no-untyped-def]
    info = np.iinfo(_NP[dtype])
    x = np.array([info.max, 1, 1, info.min, -1, info.max, info.max], _NP[dtype])
    got = run("cumsum", {"axis": 0}, [x])
    _same_bits(got, _numpy_cumsum(x, 0))
    assert got[1] == info.min and got[3] == 1  # max + 1 wraps to min; min + 1 + min wraps to 1
    if dtype == "int32":
        _same_bits(got, _torch_cumsum(x, 0))
    _same_bits(run("cumsum", {"axis": 0, "exclusive": 1, "reverse": 1}, [x]), _numpy_cumsum(x, 0, True, True))


def test_cumsum_special_values_and_rank0() -> None:
    x = np.array([-0.0, 1.0, np.inf, -np.inf, 2.0, np.nan, 3.0], np.float32)
    got = run("cumsum", {"axis": 0}, [x])
    with np.errstate(invalid="ignore"):
        want = np.cumsum(x)
    np.testing.assert_array_equal(got, want)  # NaN where NumPy has it (a NaN's sign bit is the CPU's choice)
    assert np.signbit(got[0]) and got[2] == np.inf and np.isnan(got[3:]).all()  # the first element is copied: -0.0
    _same_bits(run("cumsum", {"axis": 0}, [np.array(2.5, np.float32)]), np.array(2.5, np.float32))
    _same_bits(run("cumsum", {"axis": 0, "exclusive": 1}, [np.array(7, np.int64)]), np.array(0, np.int64))
    np.testing.assert_array_equal(run("cumsum", {"axis": 0}, [np.array(3, np.int32)]),
                                  torch.cumsum(torch.tensor(3, dtype=torch.int32), 0).numpy())


def test_cumsum_matches_dtorch_eager() -> None:
    x = np.random.default_rng(9).standard_normal((4, 6)).astype(np.float32)
    _same_bits(run("cumsum", {"axis": 1}, [x]), dt.cumsum(dt.from_numpy(x), 1).numpy())
    m = np.random.default_rng(10).integers(0, 2, (2, 9))
    _same_bits(run("cumsum", {"axis": 1}, [m]), dt.cumsum(dt.from_numpy(m), 1).numpy())


def test_cumsum_zero_size() -> None:
    for shape, axis in (((0,), 0), ((3, 0), 1), ((3, 0), 0), ((0, 4, 2), 2)):
        for dtype in (np.float32, np.int64, np.int32):
            y = run("cumsum", {"axis": axis, "exclusive": 1}, [np.zeros(shape, dtype)])
            assert y.shape == shape and y.dtype == dtype


def test_cumsum_errors() -> None:
    x = np.zeros((3, 4), np.float32)
    with pytest.raises(ValueError, match=r"^cumsum: axis 2 is out of range for a tensor with 2 dimensions$"):
        _C.run_kernel("cumsum", {"axis": 2}, [x])
    with pytest.raises(ValueError, match=r"cumsum: missing required attribute 'axis' \(int\)"):
        _C.run_kernel("cumsum", {}, [x])
    with pytest.raises(ValueError, match=r"cumsum attribute 'exclusive' is 2, expected one of 0, 1"):
        _C.run_kernel("cumsum", {"axis": 0, "exclusive": 2}, [x])
    with pytest.raises(ValueError, match=r"attribute 'axis' is -1, outside \[0, 7\]"):
        _C.run_kernel("cumsum", {"axis": -1}, [x])
    with pytest.raises(Exception, match=r"no kernel for operator 'cumsum' \(bool\)"):
        _C.run_kernel("cumsum", {"axis": 0}, [x > 0])
    with pytest.raises(ValueError, match=r"cumsum: output 0 is declared int32, but the cumsum kernel writes float32"):
        _C.run_kernel("cumsum", {"axis": 0}, [x], output_dtypes=["int32"])


# ---------------------------------------------------------------------------- threads


@pytest.mark.parametrize("op,attrs,inputs", [
    ("gather_elements", {"axis": 1}, lambda r: [r.standard_normal((64, 300, 3)).astype(np.float32),
                                                r.integers(-300, 300, (64, 500, 3))]),
    ("gather_elements", {"axis": 0}, lambda r: [r.integers(-9, 9, (300, 200)).astype(np.int32),
                                                r.integers(0, 300, (400, 150)).astype(np.int32)]),
    ("gather_nd", {}, lambda r: [r.standard_normal((50, 40, 30)).astype(np.float32), r.integers(-40, 40, (3000, 2))]),
    ("gather_nd", {"batch_dims": 1}, lambda r: [r.random((16, 200, 50)) < 0.5, r.integers(-200, 200, (16, 300, 1))]),
    ("cumsum", {"axis": 1}, lambda r: [r.standard_normal((64, 300, 40)).astype(np.float32)]),
    ("cumsum", {"axis": 1, "reverse": 1}, lambda r: [r.standard_normal((3, 50000)).astype(np.float32)]),
    ("cumsum", {"axis": 0, "exclusive": 1}, lambda r: [r.standard_normal((2000, 700)).astype(np.float32)]),
    ("cumsum", {"axis": 2, "exclusive": 1, "reverse": 1}, lambda r: [r.integers(-(2**62), 2**62, (40, 30, 500))]),
])
def test_threads_give_the_same_bits(op, attrs, inputs) -> None:  # type: ignore[no-untyped-def]
    xs = inputs(np.random.default_rng(11))
    one = run(op, attrs, xs, threads=1)
    for threads in (2, 3, 8):
        _same_bits(run(op, attrs, xs, threads=threads), one)
