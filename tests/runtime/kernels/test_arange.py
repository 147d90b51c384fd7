"""arange (ONNX Range / torch.arange whose length follows a dynamic dimension): values against torch.arange, the
length from the attribute or from a dimension of `like`, and the errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .helpers import _C, run


@pytest.mark.parametrize("dtype,start,step", [(np.int64, 0, 1.0), (np.int64, 7, -3.0), (np.int32, -4, 2.0),
                                              (np.float32, 0.5, 0.25), (np.float32, 1.0, -0.1)])
def test_arange_matches_torch(dtype, start, step):
    n = 11
    got = run("arange", dict(shape=[n], step=step), [np.array(start, dtype)])
    tdt = {np.int64: torch.int64, np.int32: torch.int32, np.float32: torch.float64}[dtype]
    want = torch.arange(n, dtype=torch.float64).mul(step).add(start).to(tdt).numpy().astype(dtype)
    assert got.dtype == dtype and got.shape == (n,)
    if dtype is np.float32:
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got, torch.arange(start, start + n * int(step), int(step)).numpy().astype(dtype))


def test_length_from_like_at_run_time():
    like = np.zeros((3, 9, 2), np.bool_)
    got = run("arange", dict(shape=[1], like_dims=[1], step=1.0), [np.array(0, np.int64), like])
    np.testing.assert_array_equal(got, np.arange(9))
    empty = run("arange", dict(shape=[0]), [np.array(5, np.int32)])
    assert empty.shape == (0,) and empty.dtype == np.int32


def test_arange_errors():
    with pytest.raises(ValueError, match=r"arange: step 0.5 must be a whole number for int64"):
        _C.run_kernel("arange", dict(shape=[3], step=0.5), [np.array(0, np.int64)])
    with pytest.raises(ValueError, match=r"arange: start must be a scalar, got shape \[2\]"):
        _C.run_kernel("arange", dict(shape=[3]), [np.array([0, 1], np.int64)])
    with pytest.raises(ValueError, match=r"like_dims \[3\] reads dimension 3 of 'like'"):
        _C.run_kernel("arange", dict(shape=[3], like_dims=[3]), [np.array(0, np.int64), np.zeros((2, 2), np.float32)])
    with pytest.raises(Exception, match=r"no kernel for operator 'arange' \(bool\)"):
        _C.run_kernel("arange", dict(shape=[3]), [np.array(True)])
