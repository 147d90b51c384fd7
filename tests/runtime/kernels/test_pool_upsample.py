"""Pooling (max, avg, adaptive) and upsampling kernels against dtorch eager and PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import dtorch as dt
import dtorch.nn.functional as DF

from .helpers import assert_close, rand, run


@pytest.mark.parametrize("k,s,p,d,ceil", [
    ((2, 2), (2, 2), (0, 0), (1, 1), False), ((3, 3), (2, 2), (1, 1), (1, 1), False),
    ((3, 3), (2, 2), (1, 1), (1, 1), True), ((2, 3), (2, 1), (1, 0), (2, 1), True), ((3, 2), (3, 2), (0, 1), (1, 1), True),
])
def test_max_pool2d(k, s, p, d, ceil):
    rng = np.random.default_rng(30)
    x = rand(rng, 2, 3, 11, 8)
    got = run("max_pool2d", dict(kernel=list(k), stride=list(s), padding=list(p), dilation=list(d), ceil_mode=int(ceil)),
              [x])
    ref = F.max_pool2d(torch.tensor(x), k, s, p, d, ceil_mode=ceil).numpy()
    assert_close(got, ref)
    assert_close(got, DF.max_pool2d(dt.tensor(x), k, s, p, d, ceil_mode=ceil).numpy())


def test_max_pool2d_nan_wins():
    x = np.zeros((1, 1, 2, 2), np.float32)
    x[0, 0, 1, 0] = np.nan
    assert np.isnan(run("max_pool2d", dict(kernel=[2, 2]), [x])[0, 0, 0, 0])


@pytest.mark.parametrize("k,s,p,ceil,include,div", [
    ((2, 2), (2, 2), (0, 0), False, True, 0), ((3, 3), (2, 2), (1, 1), False, True, 0),
    ((3, 3), (2, 2), (1, 1), True, False, 0), ((3, 2), (2, 2), (1, 1), True, True, 0),
    ((2, 2), (1, 1), (1, 0), False, True, 3),
])
def test_avg_pool2d(k, s, p, ceil, include, div):
    rng = np.random.default_rng(31)
    x = rand(rng, 2, 3, 9, 10)
    attrs = dict(kernel=list(k), stride=list(s), padding=list(p), ceil_mode=int(ceil), count_include_pad=int(include),
                 divisor_override=div)
    got = run("avg_pool2d", attrs, [x])
    ref = F.avg_pool2d(torch.tensor(x), k, s, p, ceil_mode=ceil, count_include_pad=include,
                       divisor_override=div or None).numpy()
    assert_close(got, ref)


@pytest.mark.parametrize("op", ["adaptive_avg_pool2d", "adaptive_max_pool2d"])
@pytest.mark.parametrize("hw,out", [((7, 7), (1, 1)), ((8, 6), (4, 3)), ((7, 5), (3, 4)), ((5, 5), (7, 7))])
def test_adaptive_pools(op, hw, out):
    rng = np.random.default_rng(32)
    x = rand(rng, 2, 3, *hw)
    got = run(op, dict(output_size=list(out)), [x])
    fn = F.adaptive_avg_pool2d if op == "adaptive_avg_pool2d" else F.adaptive_max_pool2d
    assert_close(got, fn(torch.tensor(x), out).numpy())


@pytest.mark.parametrize("mode,align", [("nearest", False), ("bilinear", False), ("bilinear", True)])
@pytest.mark.parametrize("size,scale", [((8, 10), None), ((5, 3), None), (None, (2.0, 2.0)), (None, (1.5, 2.7)),
                                        (None, (0.5, 0.75)), ((4, 5), None)])
def test_upsample(mode, size, scale, align):
    rng = np.random.default_rng(33)
    x = rand(rng, 2, 3, 4, 5)
    op = "upsample_nearest2d" if mode == "nearest" else "upsample_bilinear2d"
    attrs = dict(size=list(size)) if size is not None else dict(scales=list(scale))
    kw = {} if mode == "nearest" else dict(align_corners=align)
    if mode == "bilinear":
        attrs["align_corners"] = int(align)
    got = run(op, attrs, [x])
    ref_dt = DF.interpolate(dt.tensor(x), size=size, scale_factor=scale, mode=mode, **kw).numpy()
    ref_t = F.interpolate(torch.tensor(x), size=size, scale_factor=scale, mode=mode, **kw).numpy()
    assert_close(got, ref_dt)
    assert_close(got, ref_t)


def test_errors_name_the_op():
    rng = np.random.default_rng(34)
    x = rand(rng, 1, 2, 4, 4)
    with pytest.raises(Exception, match=r"max_pool2d: missing required attribute 'kernel'"):
        run("max_pool2d", {}, [x])
    with pytest.raises(Exception, match=r"max_pool2d: padding \[2, 2\] should be at most half"):
        run("max_pool2d", dict(kernel=[2, 2], padding=[2, 2]), [x])
    with pytest.raises(ValueError, match=r"avg_pool2d: input \(N, C, H, W\) must have 4 dimensions"):
        run("avg_pool2d", dict(kernel=[2, 2]), [x[0]])
    with pytest.raises(Exception, match=r"upsample_bilinear2d: needs attribute 'size'"):
        run("upsample_bilinear2d", {}, [x])
    with pytest.raises(Exception, match=r"adaptive_avg_pool2d attribute 'output_size' is 0, outside \[1, "):
        run("adaptive_avg_pool2d", dict(output_size=[0, 2]), [x])
