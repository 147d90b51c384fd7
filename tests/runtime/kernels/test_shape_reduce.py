"""Data-movement (concat, reshape, permute, slice, index_select, embedding, pad, expand) and reduction (sum, mean)
kernels against NumPy / PyTorch, plus their errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

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
    with pytest.raises(ValueError, match=r"pad attribute 'mode' is \"reflect\", expected one of \"constant\""):
        run("pad", dict(pads=[1, 1], mode="reflect"), [x])
    with pytest.raises(Exception, match=r"slice attribute 'steps' is 0, outside \[1, inf\]"):
        run("slice", dict(axes=[0], starts=[0], ends=[2], steps=[0]), [x])
