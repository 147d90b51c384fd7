"""Data-movement (concat, reshape, permute, slice, index_select, embedding, pad, expand) and reduction (sum, mean,
amax, amin) kernels against NumPy / PyTorch, plus their errors. The data-movement kernels copy float32, int64, int32
and bool elements alike; pad has torch's four modes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from dtm_builder import DtmBuilder

import dtorch as dt
import dtorch.runtime as rt

from .helpers import _C, assert_close, rand, run


@pytest.mark.parametrize("axis", [0, 1, 2])  # the catalogue's axis is in [0, 7]: the exporter normalizes it
def test_concat(axis):
    rng = np.random.default_rng(40)
    shapes = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
    xs = []
    for i, s in enumerate(shapes):
        s = list(s)
        s[axis] = i + 1
        xs.append(rand(rng, *s))
    np.testing.assert_array_equal(run("concat", dict(axis=axis), xs), np.concatenate(xs, axis=axis))


def test_reshape_and_permute():
    rng = np.random.default_rng(41)
    x = rand(rng, 2, 3, 4, 5)
    np.testing.assert_array_equal(run("reshape", dict(shape=[0, -1, 5]), [x]), x.reshape(2, 12, 5))
    np.testing.assert_array_equal(run("reshape", dict(shape=[6, 20]), [x]), x.reshape(6, 20))
    for perm in ([0, 2, 3, 1], [3, 2, 1, 0], [0, 1, 2, 3], [1, 0, 3, 2]):
        np.testing.assert_array_equal(run("permute", dict(perm=perm), [x], threads=2), x.transpose(perm))


@pytest.mark.parametrize("axes,starts,ends,steps", [
    ([1], [1], [3], [1]), ([0, 2], [0, -3], [1, 100], [1, 2]), ([3], [-100], [-1], [2]), ([1], [5], [9], [1]),
    ([2, 3], [1, 0], [4, 5], [3, 4]),
])
def test_slice(axes, starts, ends, steps):
    rng = np.random.default_rng(42)
    x = rand(rng, 2, 3, 4, 5)
    key = [slice(None)] * 4
    for a, s, e, st in zip(axes, starts, ends, steps):
        key[a] = slice(s, e, st)
    got = run("slice", dict(axes=axes, starts=starts, ends=ends, steps=steps), [x])
    np.testing.assert_array_equal(got, x[tuple(key)])


def test_index_select_and_embedding():
    rng = np.random.default_rng(43)
    x = rand(rng, 4, 5, 6)
    idx = np.array([3, 0, 0, 2], np.int64)
    for axis in (0, 1, 2):
        got = run("index_select", dict(axis=axis), [x, idx])
        np.testing.assert_array_equal(got, torch.index_select(torch.tensor(x), axis, torch.tensor(idx)).numpy())
    w = rand(rng, 10, 7)
    ids = rng.integers(0, 10, size=(3, 4)).astype(np.int64)
    got = _C.run_kernel("embedding", dict(padding_idx=0), [ids, w])[0]
    np.testing.assert_array_equal(got, F.embedding(torch.tensor(ids), torch.tensor(w)).numpy())


def test_pad_and_expand():
    rng = np.random.default_rng(44)
    x = rand(rng, 2, 3, 4)
    for pads in ([1, 2], [0, 1, 2, 0], [1, 1, 1, 1, 1, 1], [-1, 2, 1, -1]):
        got = run("pad", dict(pads=pads, mode="constant", value=1.5), [x])
        np.testing.assert_array_equal(got, F.pad(torch.tensor(x), pads, value=1.5).numpy())
    y = rand(rng, 3, 1)
    np.testing.assert_array_equal(run("expand", dict(shape=[2, 3, 4]), [y]), np.broadcast_to(y, (2, 3, 4)))
    np.testing.assert_array_equal(run("expand", dict(shape=[2, 0, 5]), [y]), np.broadcast_to(y, (2, 3, 5)))


@pytest.mark.parametrize("op", ["sum", "mean"])
@pytest.mark.parametrize("axes,keep", [([1], False), ([0, 2], True), ([-1], False), (None, False), ([0, 1, 2], True)])
def test_reductions(op, axes, keep):
    rng = np.random.default_rng(45)
    x = rand(rng, 3, 4, 5)
    attrs = dict(keepdim=int(keep))
    if axes is not None:
        attrs["axes"] = axes
    got = run(op, attrs, [x])
    fn = np.sum if op == "sum" else np.mean
    ref = fn(x.astype(np.float64), axis=None if axes is None else tuple(axes), keepdims=keep)
    assert_close(got, np.asarray(ref, np.float32))


def test_errors_name_the_op():
    rng = np.random.default_rng(46)
    x = rand(rng, 2, 3)
    with pytest.raises(ValueError, match=r"concat: input 1 has shape \[2, 4\], which does not match"):
        run("concat", dict(axis=0), [x, rand(rng, 2, 4)])
    with pytest.raises(ValueError, match=r"reshape: cannot reshape input \[2, 3\] \(6 elements\)"):
        run("reshape", dict(shape=[4, -1]), [x])
    with pytest.raises(Exception, match=r"permute: perm \[0, 0\] repeats dimension 0"):
        run("permute", dict(perm=[0, 0]), [x])
    with pytest.raises(ValueError, match=r"index_select: index 5 .* out of range for axis 1 of size 3"):
        run("index_select", dict(axis=1), [x, np.array([0, 5], np.int64)])
    with pytest.raises(ValueError, match=r"embedding: index 10 .* out of range for 10 embeddings"):
        _C.run_kernel("embedding", {}, [np.array([1, 10], np.int64), rand(rng, 10, 3)])
    with pytest.raises(ValueError, match=r"expand: cannot expand input \[2, 3\] to shape \[2, 4\]"):
        run("expand", dict(shape=[2, 4]), [x])
    with pytest.raises(ValueError, match=r"pad attribute 'mode' is \"edge\", expected one of \"constant\", "
                                         r"\"reflect\", \"replicate\", \"circular\""):
        run("pad", dict(pads=[1, 1], mode="edge"), [x])
    with pytest.raises(Exception, match=r"slice attribute 'steps' is 0, outside \[1, inf\]"):
        run("slice", dict(axes=[0], starts=[0], ends=[2], steps=[0]), [x])


# --- every dtype through the data-movement kernels (they copy elements: the same bits out) -------------------------

_MOVED = {"float32": np.float32, "int64": np.int64, "int32": np.int32, "bool": np.bool_}


def _moved(rng: np.random.Generator, dtype: str, *shape: int) -> np.ndarray:
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype == "float32":
        return rand(rng, *shape)
    info = np.iinfo(_MOVED[dtype])
    return rng.integers(info.min, info.max, size=shape, dtype=_MOVED[dtype], endpoint=True)


@pytest.mark.parametrize("dtype", list(_MOVED))
def test_data_movement_of_every_dtype(dtype):
    rng = np.random.default_rng(47)
    x = _moved(rng, dtype, 2, 3, 4)
    t = torch.from_numpy(x)

    def same(got, want):
        assert got.dtype == _MOVED[dtype]
        np.testing.assert_array_equal(got, want)

    same(run("reshape", dict(shape=[0, -1]), [x]), x.reshape(2, 12))
    y = _moved(rng, dtype, 2, 1, 4)
    same(run("concat", dict(axis=1), [y, x]), torch.cat([torch.from_numpy(y), t], 1).numpy())
    same(run("slice", dict(axes=[2, 0], starts=[-1, 0], ends=[-4, 2], steps=[1, 1]), [x]), x[:, :, -1:-4])
    same(run("slice", dict(axes=[1], starts=[0], ends=[3], steps=[2]), [x], threads=2), x[:, 0:3:2])
    same(run("expand", dict(shape=[3, 2, 3, 4]), [x]), t.expand(3, 2, 3, 4).numpy())
    same(run("permute", dict(perm=[2, 0, 1]), [x], threads=3), t.permute(2, 0, 1).numpy())
    idx = np.array([2, -1, 0, 0], np.int64)
    same(run("index_select", dict(axis=1), [x, idx]), torch.index_select(t, 1, torch.tensor([2, 2, 0, 0])).numpy())
    empty = _moved(rng, dtype, 0, 3)
    same(run("permute", dict(perm=[1, 0]), [empty]), empty.T)
    same(run("expand", dict(shape=[2, 0, 3]), [empty]), np.broadcast_to(empty, (2, 0, 3)))


def test_data_movement_refuses_a_mismatched_output():
    x = np.arange(6, dtype=np.int64)
    with pytest.raises(ValueError, match=r"reshape: output 0 is declared float32, but the reshape kernel writes int64"):
        _C.run_kernel("reshape", dict(shape=[2, 3]), [x], output_dtypes=["float32"])
    with pytest.raises(ValueError, match=r"concat: output is int32 but the inputs are int64"):
        _C.run_kernel("concat", dict(axis=0), [x, x], output_dtypes=["int32"])
    with pytest.raises(ValueError, match=r"concat: input 1 has dtype bool but input 0 has int64"):
        run("concat", dict(axis=0), [x, x.astype(bool)])


# --- amax / amin -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["amax", "amin"])
@pytest.mark.parametrize("axes,keep", [([1], False), ([0, 2], True), ([-1], False), (None, False), ([0, 1, 2], True),
                                       ([], False)])
def test_amax_amin_match_pytorch(op, axes, keep):
    rng = np.random.default_rng(48)
    x = rand(rng, 3, 4, 5)
    x[1, 2, 3] = np.nan  # propagates into its outputs, as torch.amax
    x[0, 0, :] = -np.inf
    attrs = dict(keepdim=int(keep))
    if axes is not None:
        attrs["axes"] = axes
    dims = tuple(range(3)) if axes is None else tuple(axes)
    want = getattr(torch, op)(torch.from_numpy(x), dim=dims, keepdim=keep).numpy() if dims else x
    got = run(op, attrs, [x], threads=2)
    np.testing.assert_array_equal(got, want)
    eager = getattr(dt, op)(dt.from_numpy(x), dim=dims, keepdim=keep).numpy() if dims else x  # dtorch eager
    np.testing.assert_array_equal(got, eager)
    xi = rng.integers(-(2**63), 2**63 - 1, size=(3, 4, 5), dtype=np.int64, endpoint=True)
    want_i = getattr(torch, op)(torch.from_numpy(xi), dim=dims, keepdim=keep).numpy() if dims else xi
    got_i = run(op, attrs, [xi])
    assert got_i.dtype == np.int64
    np.testing.assert_array_equal(got_i, want_i)


def test_amax_amin_zero_size_and_errors():
    x = np.zeros((0, 3), np.float32)
    assert run("amax", dict(axes=[1]), [x]).shape == (0,)  # nothing reduced over an empty dim: an empty output
    with pytest.raises(ValueError, match=r"amax: dimension 0 of input \[0, 3\] has size 0, which cannot be reduced"):
        run("amax", dict(axes=[0]), [x])
    with pytest.raises(ValueError, match=r"amin: dimension 0 of input \[0, 3\] has size 0"):
        run("amin", {}, [x])
    with pytest.raises(Exception, match=r"amax: axis 1 appears more than once"):
        run("amax", dict(axes=[1, -1]), [np.ones((2, 3), np.float32)])
    with pytest.raises(NotImplementedError, match=r"no kernel for operator 'amax' \(int32\)"):
        run("amax", {}, [np.ones(3, np.int32)])


# --- pad modes -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,pads", [((2, 3, 5), [2, 1]), ((2, 3, 5), [-1, 3]), ((2, 3, 5), [3, -1]),
                                        ((2, 3, 5), [-2, -1]), ((2, 3, 5), [4, 0]), ((1, 2, 4, 5), [1, 2, 2, 1]),
                                        ((1, 2, 4, 5), [0, 4, -1, 3]), ((2, 2, 3, 4, 5), [1, 1, 2, 0, 0, 2]),
                                        ((0, 3, 5), [1, 2]), ((2, 3, 1), [0, 0]), ((2, 3, 5), [-1, 5])])
def test_pad_modes_match_pytorch(mode, shape, pads):
    rng = np.random.default_rng(49)
    x = rand(rng, *shape)
    try:
        want = F.pad(torch.from_numpy(x), pads, mode=mode).numpy()
    except (RuntimeError, NotImplementedError):  # torch refuses (e.g. circular pad > cropped size): so does the kernel
        with pytest.raises(ValueError):
            run("pad", dict(pads=pads, mode=mode), [x])
        return
    for threads in (1, 3):
        np.testing.assert_array_equal(run("pad", dict(pads=pads, mode=mode), [x], threads=threads), want)


def test_pad_modes_beyond_torchs_ranks():
    """The kernel pads any rank (torch's non-constant modes take 2-D to 5-D inputs with 1 to 3 padded dims)."""
    rng = np.random.default_rng(50)
    x = rand(rng, 5)
    np.testing.assert_array_equal(run("pad", dict(pads=[2, 3], mode="reflect"), [x]), np.pad(x, (2, 3), "reflect"))
    y = rand(rng, 2, 3, 4, 2)
    pads = [1, 1, 2, 1, 1, 2, 1, 0]  # every dimension, PyTorch order
    for mode, np_mode in (("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")):
        want = np.pad(y, [(1, 0), (1, 2), (2, 1), (1, 1)], np_mode)
        np.testing.assert_array_equal(run("pad", dict(pads=pads, mode=mode), [y]), want)


def test_pad_mode_errors():
    x = np.ones((1, 2, 5), np.float32)
    with pytest.raises(ValueError, match=r"pad: mode \"reflect\" with pads \(5, 0\) for dimension 2 of input "
                                         r"\[1, 2, 5\]: each pad must be smaller than the dimension"):
        run("pad", dict(pads=[5, 0], mode="reflect"), [x])
    with pytest.raises(ValueError, match=r"pad: mode \"reflect\" with pads \(0, 2\) for dimension 1"):
        run("pad", dict(pads=[1, 1, 0, 2], mode="reflect"), [x])
    with pytest.raises(ValueError, match=r"pad: mode \"circular\" with pads \(6, 0\) .* at most the dimension \(it "
                                         r"would wrap around more than once"):
        run("pad", dict(pads=[6, 0], mode="circular"), [x])
    with pytest.raises(ValueError, match=r"pad: mode \"circular\" with pads \(-5, 1\) .* leave nothing to wrap"):
        run("pad", dict(pads=[-5, 1], mode="circular"), [x])
    # cropped to 2 elements, then wrapped three times (torch agrees; it reads outside the input for (4, -3))
    np.testing.assert_array_equal(run("pad", dict(pads=[-3, 4], mode="circular"), [np.arange(5, dtype=np.float32)]),
                                  [3, 4, 3, 4, 3, 4])
    np.testing.assert_array_equal(run("pad", dict(pads=[4, -3], mode="circular"), [np.arange(5, dtype=np.float32)]),
                                  [0, 1, 0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"pad: mode \"replicate\" with pads \(1, 0\) for dimension 2 of input "
                                         r"\[1, 2, 0\]: the dimension is empty"):
        run("pad", dict(pads=[1, 0], mode="replicate"), [np.ones((1, 2, 0), np.float32)])
    g = DtmBuilder()
    g.node("pad", [g.input("x", [1, 2, 5])], [g.output("y", [1, 2, 11])], dict(pads=[5, 1], mode="reflect"))
    with pytest.raises(rt.InvalidModelError, match=r"each pad must be smaller than the dimension"):
        rt.InferenceSession(g.build())


# --- shape: the dims as data ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", list(_MOVED))
@pytest.mark.parametrize("start,end", [(0, 8), (1, 8), (0, -1), (-2, 8), (-8, 8), (-3, 7), (2, 1), (3, 8), (1, 2)])
def test_shape_slices_the_dims_as_python_does(dtype, start, end):
    x = _moved(np.random.default_rng(48), dtype, 2, 0, 5)
    got = run("shape", dict(start=start, end=end), [x])
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.array(x.shape[start:end], np.int64))


def test_shape_of_a_scalar_and_its_errors():
    assert run("shape", dict(start=0, end=8), [np.asarray(3.0, np.float32)]).shape == (0,)
    with pytest.raises(Exception, match=r"shape attribute 'start' is -9, outside \[-8, 8\]"):
        run("shape", dict(start=-9, end=8), [np.zeros(3, np.float32)])
    with pytest.raises(ValueError, match=r"shape: output 0 is declared float32"):
        _C.run_kernel("shape", dict(start=0, end=8), [np.zeros(3, np.float32)], output_dtypes=["float32"])


@pytest.mark.parametrize("shape,axes", [((2, 5, 3, 7), [2, 3]), ((6, 33), [1]), ((3, 4, 5), [0, 1, 2]), ((5, 4, 3), [0]),
                                        ((4, 6, 5), [1]), ((7, 3, 2), [1, 2])])
@pytest.mark.parametrize("op", ["sum", "mean"])
def test_sum_and_mean_add_each_output_in_row_major_order_in_double(shape, axes, op):
    # The spec of the portable reductions: each output's inputs added one by one, in row-major order, in float64
    # (then divided once for mean). Trailing reductions run four outputs side by side; the bits stay the same.
    rng = np.random.default_rng(len(shape) * 10 + axes[0])
    x = (rng.standard_normal(shape) * np.exp(rng.uniform(-12, 12, shape))).astype(np.float32)
    got = run(op, dict(axes=axes, keepdim=0), [x])
    moved = np.moveaxis(x, axes, list(range(x.ndim - len(axes), x.ndim)))
    rows = moved.reshape(-1, int(np.prod([shape[a] for a in axes])))
    want = []
    for r in rows:
        acc = 0.0
        for v in r.tolist():
            acc += v
        want.append(acc / len(r) if op == "mean" else acc)
    want = np.asarray(want, np.float64).astype(np.float32).reshape(got.shape)
    assert got.tobytes() == want.tobytes()
