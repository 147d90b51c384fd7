"""The AVX-512 kernel set (runtime/kernels/avx512): FMA kernels registered above x86 and portable on CPUs with
AVX-512 F/BW/DQ/VL, used by the "fast" kernel policy and never by "exact".

Its documented tolerance (runtime/kernels/avx512/avx512.h): within 1e-5 x the output scale of a float64
reference; identical bits for any thread count. The shapes below hit every edge of its GEMM (12 x 32 register
tiles, partial row tiles, partial 32-column panels, K blocks of 256), its im2col gather (padding, stride,
dilation, asymmetric padding), grouped convolutions and the depthwise kernel (stride 1 and 2 interior loads,
border gathers, widths below one vector)."""

from __future__ import annotations

import platform

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from .helpers import _C, assert_close, rand


def _avx512_active() -> tuple[bool, str]:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False, f"not an x86-64 machine ({platform.machine()}): the avx512 kernel set is not built"
    sets = {(op, ks) for op, dt, ks, _ in _C.registered_kernel_sets() if dt == "float32"}
    if ("conv2d", "avx512") not in sets:
        return False, "this CPU lacks AVX-512 F/BW/DQ/VL (or the build lacks kernels/avx512): no avx512 kernels"
    return True, ""


_ACTIVE, _WHY = _avx512_active()
if not _ACTIVE:
    print(f"test_avx512_kernels: skipped: {_WHY}")
pytestmark = pytest.mark.skipif(not _ACTIVE, reason=_WHY)


def test_avx512_ranks_above_x86_and_is_not_in_the_exact_policy():
    sets = {(op, ks): prio for op, dt, ks, prio in _C.registered_kernel_sets() if dt == "float32"}
    assert sets[("conv2d", "avx512")] > sets[("conv2d", "x86")] > sets[("conv2d", "portable")]
    x, w = np.ones((1, 2, 5, 5), np.float32), np.ones((3, 2, 3, 3), np.float32)
    attrs = dict(stride=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1)
    fast = _C.run_kernel("conv2d", attrs, [x, w, None])[0]
    np.testing.assert_array_equal(fast, _C.run_kernel("conv2d", attrs, [x, w, None], kernel_set="avx512")[0])
    exact = _C.run_kernel("conv2d", attrs, [x, w, None], kernels="exact")[0]
    np.testing.assert_array_equal(exact, _C.run_kernel("conv2d", attrs, [x, w, None], kernel_set="x86")[0])
    with pytest.raises(ValueError, match="kernels must be 'fast', 'exact' or 'portable'"):
        _C.run_kernel("conv2d", attrs, [x, w, None], kernels="turbo")


def _conv_ref64(x, wt, b, stride, pad, dil, groups, act):
    xt = F.pad(torch.tensor(x, dtype=torch.float64), (pad[2], pad[3], pad[0], pad[1]))
    y = F.conv2d(xt, torch.tensor(wt, dtype=torch.float64), None if b is None else torch.tensor(b, dtype=torch.float64),
                 stride=stride, dilation=dil, groups=groups)
    return {"none": y, "relu": y.relu(), "relu6": y.clamp(0, 6), "hardtanh": y.clamp(-0.5, 0.25),
            "silu": F.silu(y), "gelu": F.gelu(y), "leaky_relu": F.leaky_relu(y, 0.1)}[act].numpy()


CONV = [  # (N, C, H, W, O, kh, kw, stride, padding(t,b,l,r), dilation, groups)
    (1, 3, 224, 224, 32, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1),   # a stem: many full panels
    (2, 7, 11, 13, 9, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),      # OH*OW = 143: a partial last panel
    (3, 5, 9, 9, 37, 2, 2, (2, 3), (1, 0, 0, 1), (1, 2), 1),       # O = 37: partial row tiles
    (1, 16, 17, 19, 49, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),    # pointwise: row copies, masked right edge
    (1, 600, 6, 7, 20, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),     # pointwise with K = 600: three K blocks
    (1, 40, 9, 8, 17, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),      # im2col with K = 360: two K blocks
    (1, 4, 9, 9, 6, 1, 1, (2, 2), (1, 1, 1, 1), (1, 1), 1),        # 1x1 strided and padded: im2col
    (1, 8, 20, 23, 50, 5, 3, (1, 2), (2, 0, 1, 3), (2, 1), 1),     # dilated, asymmetric padding
    (1, 1, 12, 12, 5, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),      # one input channel, five outputs: GEMM K = 9
    (1, 6, 15, 9, 10, 3, 5, (2, 1), (0, 2, 1, 3), (2, 1), 2),      # grouped
    (1, 4, 10, 10, 12, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 4),     # one input channel per group, multiplier 3
    (2, 8, 19, 21, 8, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 8),      # depthwise stride 1
    (1, 16, 40, 70, 16, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 16),   # depthwise stride 2: de-interleaved loads
    (1, 12, 19, 37, 12, 5, 5, (3, 3), (2, 2, 2, 2), (1, 1), 12),   # depthwise stride 3: gathers
    (1, 8, 33, 50, 8, 3, 3, (1, 2), (2, 1, 0, 3), (2, 2), 8),      # depthwise dilated, asymmetric padding
    (1, 5, 4, 3, 5, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 5),        # depthwise narrower than a vector
    (1, 3, 5, 5, 4, 5, 5, (1, 1), (0, 0, 0, 0), (1, 1), 1),        # one output position
]


@pytest.mark.parametrize("case", CONV)
@pytest.mark.parametrize("act", ["none", "relu", "relu6", "hardtanh", "silu"])
def test_conv2d_avx512_within_tolerance_and_thread_invariant(case, act):
    n, c, h, w, o, kh, kw, stride, pad, dil, groups = case
    rng = np.random.default_rng(n + c * 7 + h * 31 + o * 101 + kh)
    x, wt, b = rand(rng, n, c, h, w), rand(rng, o, c // groups, kh, kw), rand(rng, o)
    attrs = dict(stride=list(stride), padding=list(pad), dilation=list(dil), groups=groups, activation=act)
    if act == "hardtanh":
        attrs.update(min_val=-0.5, max_val=0.25)
    for bias in (b, None):
        one = _C.run_kernel("conv2d", attrs, [x, wt, bias], kernel_set="avx512")[0]
        pre = _conv_ref64(x, wt, bias, stride, pad, dil, groups, "none")  # the scale of the accumulated sums
        assert_close(one, _conv_ref64(x, wt, bias, stride, pad, dil, groups, act),
                     scale=float(np.abs(pre).max()) if pre.size else 1.0)
        for t in (2, 3):
            np.testing.assert_array_equal(_C.run_kernel("conv2d", attrs, [x, wt, bias], threads=t,
                                                        kernel_set="avx512")[0], one)
        # weights packed at load (a session's constant weights) or at run time: the same bits
        np.testing.assert_array_equal(_C.run_kernel("conv2d", attrs, [x, wt, bias], kernel_set="avx512",
                                                    prepare=False)[0], one)


def test_conv2d_avx512_nan_inf_and_relu():
    rng = np.random.default_rng(5)
    for groups, o in ((1, 9), (6, 6)):
        x, wt = rand(rng, 1, 6, 9, 11), rand(rng, o, 6 // groups, 3, 3)
        x[0, 1, 4, 5], x[0, 3, 0, 0] = np.nan, np.inf
        attrs = dict(stride=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=groups, activation="relu")
        fast = _C.run_kernel("conv2d", attrs, [x, wt, None], kernel_set="avx512")[0]
        ref = _C.run_kernel("conv2d", attrs, [x, wt, None], kernel_set="portable")[0]
        np.testing.assert_array_equal(np.isnan(fast), np.isnan(ref))   # relu passes NaN through, as portable
        finite = np.isfinite(ref)
        np.testing.assert_array_equal(np.isinf(fast), np.isinf(ref))
        assert_close(np.where(finite, fast, 0), np.where(finite, ref, 0))


def test_conv2d_avx512_leaky_relu_and_gelu_epilogue():
    rng = np.random.default_rng(8)
    x, wt, b = rand(rng, 2, 10, 13, 14), rand(rng, 21, 10, 3, 3), rand(rng, 21)
    for act, extra in (("leaky_relu", dict(alpha=0.1)), ("gelu", {})):
        attrs = dict(stride=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, activation=act, **extra)
        got = _C.run_kernel("conv2d", attrs, [x, wt, b], kernel_set="avx512")[0]
        assert_close(got, _conv_ref64(x, wt, b, (1, 1), (1, 1, 1, 1), (1, 1), 1, act))


def test_conv2d_avx512_errors_are_the_portable_errors():
    x, w = np.zeros((1, 4, 5, 5), np.float32), np.zeros((3, 3, 3, 3), np.float32)  # weight expects 3 channels
    attrs = dict(stride=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1)
    with pytest.raises(ValueError) as fast:
        _C.run_kernel("conv2d", attrs, [x, w, None], kernel_set="avx512")
    with pytest.raises(ValueError) as ref:
        _C.run_kernel("conv2d", attrs, [x, w, None], kernel_set="portable")
    assert str(fast.value) == str(ref.value)


def test_conv2d_avx512_empty_output():
    x, w = np.zeros((0, 4, 5, 5), np.float32), np.ones((3, 4, 3, 3), np.float32)
    attrs = dict(stride=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1)
    assert _C.run_kernel("conv2d", attrs, [x, w, None], kernel_set="avx512")[0].shape == (0, 3, 3, 3)
