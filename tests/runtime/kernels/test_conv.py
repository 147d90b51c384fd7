"""conv2d and conv_transpose2d kernels against PyTorch and dtorch eager; thread-count bit-identity; errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import dtorch as dt
import dtorch.nn.functional as DF

from .helpers import assert_close, rand, run

ACTS = {"none": lambda t: t, "relu": F.relu, "relu6": F.relu6, "silu": F.silu, "hardswish": F.hardswish,
        "sigmoid": torch.sigmoid, "gelu": F.gelu}

CASES = [  # (N, C, H, W, O, kh, kw, stride, padding(t,b,l,r), dilation, groups)
    (1, 3, 8, 8, 4, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    (2, 6, 9, 11, 8, 3, 2, (2, 1), (1, 2, 0, 1), (1, 2), 2),
    (1, 5, 7, 7, 7, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),       # pointwise (no im2col)
    (3, 4, 10, 6, 4, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 4),      # depthwise
    (1, 4, 12, 12, 8, 5, 5, (1, 2), (2, 2, 2, 2), (2, 1), 4),     # depthwise, multiplier 2, dilated
    (1, 1, 5, 5, 3, 5, 5, (1, 1), (0, 0, 0, 0), (1, 1), 1),       # output 1x1
    (2, 17, 13, 9, 33, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),    # odd sizes, GEMM edge tiles
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("act", ["none", "relu6"])
def test_conv2d_matches_torch(case, act):
    n, c, h, w, o, kh, kw, stride, pad, dil, groups = case
    rng = np.random.default_rng(hash(case) % 2**32)
    x, wt, b = rand(rng, n, c, h, w), rand(rng, o, c // groups, kh, kw), rand(rng, o)
    attrs = dict(stride=list(stride), padding=list(pad), dilation=list(dil), groups=groups, activation=act)
    got = run("conv2d", attrs, [x, wt, b])
    xt = F.pad(torch.tensor(x), (pad[2], pad[3], pad[0], pad[1]))
    ref = ACTS[act](F.conv2d(xt, torch.tensor(wt), torch.tensor(b), stride=stride, dilation=dil, groups=groups))
    assert_close(got, ref.numpy())


def test_conv2d_matches_dtorch_eager_without_bias():
    rng = np.random.default_rng(1)
    x, wt = rand(rng, 2, 4, 9, 9), rand(rng, 6, 2, 3, 3)
    got = run("conv2d", dict(stride=[2, 2], padding=[1, 1, 1, 1], groups=2), [x, wt, None])
    ref = DF.conv2d(dt.tensor(x), dt.tensor(wt), None, stride=2, padding=1, groups=2).numpy()
    assert_close(got, ref)


@pytest.mark.parametrize("act", list(ACTS))
def test_conv2d_fused_activations(act):
    rng = np.random.default_rng(2)
    x, wt, b = rand(rng, 1, 3, 6, 6), rand(rng, 5, 3, 3, 3), rand(rng, 5)
    got = run("conv2d", dict(padding=[1, 1, 1, 1], activation=act), [x, wt, b])
    assert_close(got, ACTS[act](F.conv2d(torch.tensor(x), torch.tensor(wt), torch.tensor(b), padding=1)).numpy())


def test_conv2d_hardtanh_and_leaky_relu_attrs():
    rng = np.random.default_rng(3)
    x, wt = rand(rng, 1, 2, 5, 5), rand(rng, 3, 2, 3, 3)
    ref = F.conv2d(torch.tensor(x), torch.tensor(wt))
    got = run("conv2d", dict(activation="hardtanh", min_val=-0.5, max_val=0.25), [x, wt, None])
    assert_close(got, F.hardtanh(ref, -0.5, 0.25).numpy())
    got = run("conv2d", dict(activation="leaky_relu", alpha=0.2), [x, wt, None])
    assert_close(got, F.leaky_relu(ref, 0.2).numpy())


@pytest.mark.parametrize("case", [CASES[1], CASES[3], CASES[6]])
def test_conv2d_threads_bit_identical(case):
    n, c, h, w, o, kh, kw, stride, pad, dil, groups = case
    rng = np.random.default_rng(4)
    x, wt, b = rand(rng, n, c, h, w), rand(rng, o, c // groups, kh, kw), rand(rng, o)
    attrs = dict(stride=list(stride), padding=list(pad), dilation=list(dil), groups=groups)
    one = run("conv2d", attrs, [x, wt, b], threads=1)
    for t in (2, 3):
        np.testing.assert_array_equal(one, run("conv2d", attrs, [x, wt, b], threads=t))


@pytest.mark.parametrize("stride,pad,opad,dil,groups", [
    ((1, 1), (0, 0), (0, 0), (1, 1), 1),
    ((2, 2), (1, 1), (1, 1), (1, 1), 1),
    ((2, 3), (1, 0), (1, 2), (1, 2), 2),
])
def test_conv_transpose2d_matches_torch(stride, pad, opad, dil, groups):
    rng = np.random.default_rng(5)
    x, wt, b = rand(rng, 2, 4, 5, 6), rand(rng, 4, 3, 3, 3), rand(rng, 3 * groups)
    attrs = dict(stride=list(stride), padding=list(pad), output_padding=list(opad), dilation=list(dil), groups=groups)
    got = run("conv_transpose2d", attrs, [x, wt, b], threads=2)
    ref = F.conv_transpose2d(torch.tensor(x), torch.tensor(wt), torch.tensor(b), stride=stride, padding=pad,
                             output_padding=opad, dilation=dil, groups=groups)
    assert_close(got, ref.numpy())
    np.testing.assert_array_equal(got, run("conv_transpose2d", attrs, [x, wt, b], threads=1))


def test_conv2d_errors_name_the_op():
    rng = np.random.default_rng(6)
    x, wt = rand(rng, 1, 4, 8, 8), rand(rng, 5, 3, 3, 3)
    with pytest.raises(ValueError, match=r"conv2d: input has 4 channels but the weight expects 3"):
        run("conv2d", {}, [x, wt, None])
    with pytest.raises(ValueError, match=r"conv2d: input \(N, C, H, W\) must have 4 dimensions"):
        run("conv2d", {}, [x[0], rand(rng, 5, 4, 3, 3), None])
    with pytest.raises(Exception, match=r"conv2d attribute 'stride' is 0, outside \[1, "):
        run("conv2d", dict(stride=[0, 1]), [x, rand(rng, 5, 4, 3, 3), None])
    with pytest.raises(Exception, match=r"conv2d attribute 'padding' has 2 values, expected 4"):
        run("conv2d", dict(padding=[1, 1]), [x, rand(rng, 5, 4, 3, 3), None])
    with pytest.raises(ValueError, match=r"conv2d attribute 'activation' is \"swish\", expected one of"):
        run("conv2d", dict(activation="swish"), [x, rand(rng, 5, 4, 3, 3), None])
    with pytest.raises(ValueError, match=r"conv2d: bias must have shape \[5\]"):
        run("conv2d", {}, [x, rand(rng, 5, 4, 3, 3), rand(rng, 4)])
    with pytest.raises(ValueError, match=r"conv2d: .*smaller than the dilated kernel"):
        run("conv2d", {}, [rand(rng, 1, 4, 2, 2), rand(rng, 5, 4, 3, 3), None])
