"""batch_norm, layer_norm, group_norm, softmax and log_softmax kernels against dtorch eager / PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import dtorch as dt
import dtorch.nn.functional as DF

from .helpers import assert_close, rand, run


@pytest.mark.parametrize("shape", [(2, 3), (1, 4, 5, 5), (3, 2, 7)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_inference(shape, affine):
    rng = np.random.default_rng(20)
    c = shape[1]
    x, mean, var = rand(rng, *shape), rand(rng, c), np.abs(rand(rng, c)) + 0.5
    w, b = (rand(rng, c), rand(rng, c)) if affine else (None, None)
    got = run("batch_norm", dict(eps=1e-3), [x, mean, var, w, b])
    ref = DF.batch_norm(dt.tensor(x), dt.tensor(mean), dt.tensor(var), None if w is None else dt.tensor(w),
                        None if b is None else dt.tensor(b), training=False, eps=1e-3).numpy()
    assert_close(got, ref)


@pytest.mark.parametrize("shape,nd", [((2, 5, 16), 1), ((3, 4, 6), 2), ((7, 33), 1)])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(shape, nd, affine):
    rng = np.random.default_rng(21)
    norm = shape[len(shape) - nd:]
    x = rand(rng, *shape) * 3 + 1
    w, b = (rand(rng, *norm), rand(rng, *norm)) if affine else (None, None)
    got = run("layer_norm", dict(normalized_ndim=nd, eps=1e-5), [x, w, b])
    ref = F.layer_norm(torch.tensor(x), norm, None if w is None else torch.tensor(w),
                       None if b is None else torch.tensor(b), eps=1e-5)
    assert_close(got, ref.numpy())


@pytest.mark.parametrize("shape,groups", [((2, 6, 4, 4), 3), ((1, 4, 9), 4), ((2, 8, 3, 5), 1)])
def test_group_norm(shape, groups):
    rng = np.random.default_rng(22)
    c = shape[1]
    x, w, b = rand(rng, *shape), rand(rng, c), rand(rng, c)
    got = run("group_norm", dict(groups=groups, eps=1e-5), [x, w, b])
    assert_close(got, F.group_norm(torch.tensor(x), groups, torch.tensor(w), torch.tensor(b)).numpy())
    got = run("group_norm", dict(groups=groups), [x, None, None])
    assert_close(got, F.group_norm(torch.tensor(x), groups).numpy())


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,dim", [((4, 10), 1), ((2, 3, 5), 0), ((2, 3, 5), 1), ((3, 7), -1), ((6,), 0)])
def test_softmax(op, shape, dim):
    rng = np.random.default_rng(23)
    x = rand(rng, *shape) * 5
    fn = F.softmax if op == "softmax" else F.log_softmax
    got = run(op, dict(dim=dim), [x])
    assert_close(got, fn(torch.tensor(x), dim=dim).numpy())
    ref = (DF.softmax if op == "softmax" else DF.log_softmax)(dt.tensor(x), dim=dim).numpy()
    assert_close(got, ref)


def test_softmax_all_minus_inf_row_matches_eager():
    x = np.array([[-np.inf, -np.inf], [0.0, 1.0]], np.float32)
    got = run("softmax", dict(dim=1), [x])
    ref = DF.softmax(dt.tensor(x), dim=1).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))


def test_errors_name_the_op():
    rng = np.random.default_rng(24)
    with pytest.raises(ValueError, match=r"batch_norm: running mean must have shape \[3\]"):
        run("batch_norm", {}, [rand(rng, 2, 3, 4), rand(rng, 4), rand(rng, 3)])
    with pytest.raises(ValueError, match=r"group_norm: input has 6 channels, which groups=4 does not divide"):
        run("group_norm", dict(groups=4), [rand(rng, 1, 6, 2)])
    with pytest.raises(ValueError, match=r"layer_norm: weight has shape \[5\] but the normalized shape is \[4\]"):
        run("layer_norm", dict(normalized_ndim=1), [rand(rng, 2, 4), rand(rng, 5), None])
    with pytest.raises(ValueError, match=r"softmax: dim 2 is out of range"):
        run("softmax", dict(dim=2), [rand(rng, 2, 4)])
