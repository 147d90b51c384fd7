"""The FMA kernel sets, used by the "fast" kernel policy and never by "exact": runtime/kernels/avx512 (AVX-512
F/BW/DQ/VL, 12 x 32 register tiles) and runtime/kernels/avx2 (AVX2 + FMA, 4 x 24 register tiles), each registered
above the bit-exact sets (x86, portable) on CPUs that have its ISA.

Their documented tolerance (runtime/kernels/<set>/<set>.h): within 1e-5 x the output scale of a float64
reference; identical bits for any thread count. The shapes below hit every edge of their GEMMs (partial row tiles,
partial column panels, K blocks of 256, the avx2 set's K-block order over groups of panels when its packed A
outgrows L2), their im2col fills (padding, stride, dilation, asymmetric padding; the masked-load runs inside one
output row, the avx2 set's gathers across rows, the avx512 set's gathers where a panel meets more than 6 output
rows), both sets' transposed product for small maps (output channels across the register tile), the avx2 set's
direct B rows read from a padded copy of the input (small K: stems), the avx512 set's B blocks copied from phase
planes of the padded input (3x3 and larger kernels with few output channels: stems, 32-128 channel layers; output
rows packed out of padded flat positions, partial sums between K blocks expanded back), the avx512 set's
channel-major tiles (output channels across the vectors, positions broadcast from the input in place, a padded
copy or phase planes, for K >= 192 and at least 32 output channels: partial channel panels, rows cut into tiles
of 1-14 positions, flat pointwise tiles across rows), grouped convolutions and the depthwise kernels (stride 1 and 2 interior loads, border gathers, widths below one vector).

A set this CPU lacks is skipped with the reason printed: QEMU cannot emulate AVX-512, so on an AVX2-only machine
the avx512 set's tests run only on machines that have it."""

from __future__ import annotations

import platform

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from .helpers import _C, assert_close, rand

FMA_SETS = ("avx512", "avx2")


def _why_inactive(kernel_set: str) -> str:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return f"not an x86-64 machine ({platform.machine()}): the {kernel_set} kernel set is not built"
    sets = {(op, ks) for op, dt, ks, _ in _C.registered_kernel_sets() if dt == "float32"}
    if ("conv2d", kernel_set) not in sets:
        need = "AVX-512 F/BW/DQ/VL" if kernel_set == "avx512" else "AVX2 and FMA"
        return f"this CPU lacks {need} (or the build lacks kernels/{kernel_set}): no {kernel_set} kernels"
    return ""


_WHY = {ks: _why_inactive(ks) for ks in FMA_SETS}
for _ks, _why in _WHY.items():
    if _why:
        print(f"test_fma_kernels: {_ks} skipped: {_why}")
KERNEL_SETS = [pytest.param(ks, marks=pytest.mark.skipif(bool(_WHY[ks]), reason=_WHY[ks]), id=ks) for ks in FMA_SETS]


@pytest.mark.parametrize("kernel_set", KERNEL_SETS)
def test_fma_set_ranks_above_the_exact_sets_and_is_not_in_the_exact_policy(kernel_set):
    sets = {(op, ks): prio for op, dt, ks, prio in _C.registered_kernel_sets() if dt == "float32"}
    assert sets[("conv2d", kernel_set)] > sets[("conv2d", "x86")] > sets[("conv2d", "portable")]
    if ("conv2d", "avx512") in sets and ("conv2d", "avx2") in sets:
        assert sets[("conv2d", "avx512")] > sets[("conv2d", "avx2")]
    best = max((ks for (op, ks) in sets if op == "conv2d"), key=lambda ks: sets[("conv2d", ks)])
    x, w = np.ones((1, 2, 5, 5), np.float32), np.ones((3, 2, 3, 3), np.float32)
    attrs = dict(stride=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1)
    fast = _C.run_kernel("conv2d", attrs, [x, w, None])[0]
    np.testing.assert_array_equal(fast, _C.run_kernel("conv2d", attrs, [x, w, None], kernel_set=best)[0])
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
    (1, 3, 30, 48, 8, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1),      # OW = 24: avx2 panels = output rows (stride 2)
    (1, 4, 9, 50, 5, 3, 3, (1, 1), (0, 0, 0, 0), (1, 1), 1),       # OW = 48, unpadded: plain-load runs
    (2, 6, 7, 9, 13, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),       # OW = 9 < a panel: rows change inside panels
    (1, 2, 6, 100, 3, 1, 3, (1, 2), (0, 0, 0, 1), (1, 1), 1),      # stride 2 runs ending at the padded edge
    (1, 5, 9, 5, 7, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),        # OW = 5: avx512 panels of 7 rows gather, 4 load
    (1, 4, 23, 21, 6, 3, 3, (2, 2), (2, 1, 1, 2), (2, 2), 1),      # OW = 10, stride 2, dilated: runs across rows
    (2, 40, 7, 7, 64, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),      # 7x7 maps: avx512's transposed product, 2 K blocks
    (1, 300, 7, 7, 64, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),     # pointwise, transposed
    (1, 16, 14, 14, 96, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1),    # stride 2, transposed: 3 channel panels
    (1, 32, 7, 7, 128, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 2),     # grouped, transposed
    (1, 8, 12, 1, 70, 3, 1, (1, 1), (1, 1, 0, 0), (1, 1), 1),      # one output column: transposed, gathered cols^T
    (1, 64, 12, 12, 128, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),   # packed A of 295 KB: avx2 K blocks over panel groups
    (1, 160, 7, 7, 40, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),     # transposed, cols^T 300 KB, O = 40: partial panel
    (1, 3, 61, 120, 20, 7, 7, (2, 2), (3, 3, 3, 3), (1, 1), 1),    # avx2 direct (small K): 7x7 stem, OW = 60, O = 20
    (2, 5, 13, 46, 7, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),      # avx2 direct, stride 1: panels of 24 and 22
    (1, 4, 15, 98, 6, 3, 3, (1, 2), (0, 2, 1, 0), (2, 2), 1),      # avx2 direct, dilated, odd left padding
    (1, 5, 13, 8, 5, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 5),       # depthwise 3x3, one vector a row: 6-row blocks
    (1, 3, 11, 16, 3, 3, 3, (1, 1), (0, 2, 2, 0), (1, 1), 3),      # depthwise 3x3, 2 vectors x 3 rows, asymmetric
    (2, 4, 9, 120, 4, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 4),      # depthwise 3x3, 15 vectors: 6 + 6 + 3 per row
    (1, 3, 17, 130, 3, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 3),     # depthwise 3x3 stride 2, unmasked interior blocks
    (1, 2, 9, 30, 2, 3, 3, (3, 2), (0, 1, 1, 0), (1, 1), 2),       # depthwise 3x3, row stride 3, column stride 2
    (1, 2, 5, 300, 2, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 2),      # depthwise 3x3, 19 avx512 vectors a row: 8 + 8 + 3
    (1, 6, 25, 31, 10, 3, 3, (3, 3), (2, 1, 0, 3), (2, 2), 1),     # avx512 phase planes: stride 3, dilated, asymmetric
    (2, 8, 16, 18, 12, 3, 3, (2, 1), (1, 1, 1, 1), (1, 1), 2),     # phase planes: grouped, two images, row stride 2
    (1, 3, 20, 9, 2, 3, 7, (1, 1), (1, 1, 0, 0), (1, 1), 1),       # phase planes: OW = 3 in rows of 9 (vectors span rows)
    (1, 2, 30, 5, 1, 3, 5, (1, 1), (1, 1, 0, 0), (1, 1), 1),       # phase planes: OW = 1, 3-4 output rows a vector
    (1, 36, 19, 23, 14, 5, 5, (2, 3), (2, 2, 2, 2), (1, 1), 1),    # phase planes, K = 900: 4 K blocks of packed partials
    (2, 24, 15, 29, 33, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),    # avx512 channel-major: O = 33 (panel of 1), rows 10+10+9
    (1, 64, 11, 30, 48, 3, 3, (2, 2), (0, 1, 2, 1), (1, 2), 1),    # channel-major, stride 2, dilated, asymmetric padding
    (1, 64, 9, 16, 64, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 2),     # channel-major per group, OW = 16: tiles of 8 + 8
    (1, 32, 6, 28, 48, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),     # channel-major, OW = 28: two whole tiles of 14
    (1, 200, 5, 27, 35, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),    # channel-major pointwise: flat tiles across rows
    (1, 30, 13, 3, 32, 3, 3, (1, 1), (1, 1, 0, 0), (1, 1), 1),     # channel-major, OW = 1: one-position tiles
    (1, 12, 20, 26, 40, 5, 5, (3, 3), (2, 2, 2, 2), (1, 1), 1),    # channel-major, 5x5 stride 3: 9 phase planes
    (1, 48, 12, 17, 40, 3, 3, (2, 2), (0, 0, 0, 0), (1, 1), 1),    # channel-major, unpadded stride 2: input read in place
    (1, 256, 9, 11, 33, 1, 1, (2, 2), (0, 0, 0, 0), (1, 1), 1),    # channel-major 1x1 stride 2 (a shortcut), in place
    (1, 24, 10, 13, 32, 3, 3, (1, 2), (3, 0, 0, 4), (2, 3), 1),    # channel-major padded copy: dilated, one-sided pads
    (1, 300, 9, 13, 20, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),    # avx512 pointwise GEMM reading B in place: 2 K blocks,
                                                                   # 3 whole panels (rows 117 floats apart) + a copied one
    (1, 24, 7, 7, 24, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 24),     # avx512 depthwise on a small map: flat positions
    (2, 8, 6, 6, 8, 5, 5, (1, 1), (2, 2, 2, 2), (1, 1), 8),        # ... 5x5 (the generic taps loop), 2 images
    (1, 16, 11, 8, 16, 3, 3, (1, 1), (0, 2, 2, 0), (2, 1), 16),    # ... dilated rows skipped at the bottom, one-sided
    (2, 20, 14, 13, 20, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 20),   # small depthwise maps the flat path leaves: stride 2,
    (1, 8, 9, 6, 8, 5, 5, (1, 2), (2, 2, 2, 2), (1, 1), 8),        # column stride 2, OW = 3
]


@pytest.mark.parametrize("kernel_set", KERNEL_SETS)
@pytest.mark.parametrize("case", CONV)
@pytest.mark.parametrize("act", ["none", "relu", "relu6", "hardtanh", "silu"])
def test_conv2d_fma_within_tolerance_and_thread_invariant(kernel_set, case, act):
    n, c, h, w, o, kh, kw, stride, pad, dil, groups = case
    rng = np.random.default_rng(n + c * 7 + h * 31 + o * 101 + kh)
    x, wt, b = rand(rng, n, c, h, w), rand(rng, o, c // groups, kh, kw), rand(rng, o)
    attrs = dict(stride=list(stride), padding=list(pad), dilation=list(dil), groups=groups, activation=act)
    if act == "hardtanh":
        attrs.update(min_val=-0.5, max_val=0.25)
    for bias in (b, None):
        one = _C.run_kernel("conv2d", attrs, [x, wt, bias], kernel_set=kernel_set)[0]
        pre = _conv_ref64(x, wt, bias, stride, pad, dil, groups, "none")  # the scale of the accumulated sums
        assert_close(one, _conv_ref64(x, wt, bias, stride, pad, dil, groups, act),
                     scale=float(np.abs(pre).max()) if pre.size else 1.0)
        for t in (2, 3):
            np.testing.assert_array_equal(_C.run_kernel("conv2d", attrs, [x, wt, bias], threads=t,
                                                        kernel_set=kernel_set)[0], one)
        # weights packed at load (a session's constant weights) or at run time: the same bits
        np.testing.assert_array_equal(_C.run_kernel("conv2d", attrs, [x, wt, bias], kernel_set=kernel_set,
                                                    prepare=False)[0], one)


@pytest.mark.skipif(bool(_WHY["avx512"] or _WHY["avx2"]), reason="needs both FMA sets: " + (_WHY["avx512"] or _WHY["avx2"]))
@pytest.mark.parametrize("case", CONV)
def test_conv2d_avx512_and_avx2_agree_bit_for_bit(case):
    """Both sets start each output at its bias and add its products in k order with one FMA each, whatever their
    tiles, fills or orientation (avx512's transposed product for small maps): the same bits."""
    n, c, h, w, o, kh, kw, stride, pad, dil, groups = case
    rng = np.random.default_rng(h * 7 + o)
    x, wt, b = rand(rng, n, c, h, w), rand(rng, o, c // groups, kh, kw), rand(rng, o)
    for act in ("none", "relu6", "silu"):
        attrs = dict(stride=list(stride), padding=list(pad), dilation=list(dil), groups=groups, activation=act)
        for bias in (b, None):
            a = _C.run_kernel("conv2d", attrs, [x, wt, bias], kernel_set="avx512")[0]
            v = _C.run_kernel("conv2d", attrs, [x, wt, bias], kernel_set="avx2")[0]
            np.testing.assert_array_equal(a.view(np.uint32), v.view(np.uint32))


@pytest.mark.parametrize("kernel_set", KERNEL_SETS)
def test_conv2d_fma_nan_inf_and_relu(kernel_set):
    rng = np.random.default_rng(5)
    for groups, o in ((1, 9), (6, 6)):
        x, wt = rand(rng, 1, 6, 9, 11), rand(rng, o, 6 // groups, 3, 3)
        x[0, 1, 4, 5], x[0, 3, 0, 0] = np.nan, np.inf
        attrs = dict(stride=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=groups, activation="relu")
        fast = _C.run_kernel("conv2d", attrs, [x, wt, None], kernel_set=kernel_set)[0]
        ref = _C.run_kernel("conv2d", attrs, [x, wt, None], kernel_set="portable")[0]
        np.testing.assert_array_equal(np.isnan(fast), np.isnan(ref))   # relu passes NaN through, as portable
        finite = np.isfinite(ref)
        np.testing.assert_array_equal(np.isinf(fast), np.isinf(ref))
        assert_close(np.where(finite, fast, 0), np.where(finite, ref, 0))


@pytest.mark.skipif(bool(_WHY["avx512"] or _WHY["avx2"]), reason="needs both FMA sets: " + (_WHY["avx512"] or _WHY["avx2"]))
@pytest.mark.parametrize("hw", [7, 20])
def test_conv2d_depthwise_skips_rows_outside_the_image(hw):
    """A depthwise tap row outside the image is skipped, not added as a +0 product: with a -0 bias, a positive weight in
    that row and negative ones elsewhere on a zero input, skipping leaves -0 and adding would give +0. Small maps (the
    avx512 set's flat positions, masked FMAs) and wider ones (row vectors) agree with the avx2 set bit for bit."""
    x = np.zeros((1, 4, hw, hw), np.float32)
    wt = -np.ones((4, 1, 3, 3), np.float32)
    wt[:, :, 0, :] = 1.0
    b = np.full(4, -0.0, np.float32)
    attrs = dict(stride=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=4, activation="none")
    a = _C.run_kernel("conv2d", attrs, [x, wt, b], kernel_set="avx512")[0]
    v = _C.run_kernel("conv2d", attrs, [x, wt, b], kernel_set="avx2")[0]
    np.testing.assert_array_equal(a.view(np.uint32), v.view(np.uint32))
    assert np.signbit(a[:, :, 0]).all()  # the first output row: its kernel row 0 lies above the image


@pytest.mark.parametrize("kernel_set", KERNEL_SETS)
def test_conv2d_fma_leaky_relu_and_gelu_epilogue(kernel_set):
    rng = np.random.default_rng(8)
    x, wt, b = rand(rng, 2, 10, 13, 14), rand(rng, 21, 10, 3, 3), rand(rng, 21)
    for act, extra in (("leaky_relu", dict(alpha=0.1)), ("gelu", {})):
        attrs = dict(stride=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, activation=act, **extra)
        got = _C.run_kernel("conv2d", attrs, [x, wt, b], kernel_set=kernel_set)[0]
        assert_close(got, _conv_ref64(x, wt, b, (1, 1), (1, 1, 1, 1), (1, 1), 1, act))


@pytest.mark.parametrize("kernel_set", KERNEL_SETS)
def test_conv2d_fma_errors_are_the_portable_errors(kernel_set):
    x, w = np.zeros((1, 4, 5, 5), np.float32), np.zeros((3, 3, 3, 3), np.float32)  # weight expects 3 channels
    attrs = dict(stride=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1)
    with pytest.raises(ValueError) as fast:
        _C.run_kernel("conv2d", attrs, [x, w, None], kernel_set=kernel_set)
    with pytest.raises(ValueError) as ref:
        _C.run_kernel("conv2d", attrs, [x, w, None], kernel_set="portable")
    assert str(fast.value) == str(ref.value)


@pytest.mark.parametrize("kernel_set", KERNEL_SETS)
def test_conv2d_fma_empty_output(kernel_set):
    x, w = np.zeros((0, 4, 5, 5), np.float32), np.ones((3, 4, 3, 3), np.float32)
    attrs = dict(stride=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1)
    assert _C.run_kernel("conv2d", attrs, [x, w, None], kernel_set=kernel_set)[0].shape == (0, 3, 3, 3)


# linear and matmul on the sets' GEMMs (kernels/common/fma_linear.h, fma_matmul.h): rows and columns around the
# register tiles (avx512 12 x 32, avx2 4 x 24), K across blocks of 256 (300 = 2 x 150, 513 = 3 x 171), leading batch
# dims, a weight packed at load or at run time, and matmul's 1-D operands, batch broadcasting and many batches (one
# product per thread).
LINEAR = [  # (x shape, out features)
    ((1, 7), 5), ((5, 1), 33), ((13, 64), 31), ((197, 192), 100), ((2, 3, 300), 64), ((1, 513), 1000),
    ((25, 16), 48), ((4, 0), 7),
]


def _linear_ref64(x, w, b, act):
    y = torch.tensor(x, dtype=torch.float64) @ torch.tensor(w, dtype=torch.float64).T
    if b is not None:
        y = y + torch.tensor(b, dtype=torch.float64)
    return {"none": y, "relu": y.relu(), "gelu": F.gelu(y), "silu": F.silu(y)}[act].numpy(), y.numpy()


@pytest.mark.parametrize("kernel_set", KERNEL_SETS)
@pytest.mark.parametrize("case", LINEAR)
@pytest.mark.parametrize("act", ["none", "relu", "gelu", "silu"])
def test_linear_fma_within_tolerance_and_thread_invariant(kernel_set, case, act):
    shape, m = case
    rng = np.random.default_rng(sum(shape) * 13 + m)
    x, w, b = rand(rng, *shape), rand(rng, m, shape[-1]), rand(rng, m)
    attrs = dict(activation=act)
    for bias in (b, None):
        one = _C.run_kernel("linear", attrs, [x, w, bias], kernel_set=kernel_set)[0]
        ref, pre = _linear_ref64(x, w, bias, act)
        assert_close(one, ref, scale=float(np.abs(pre).max()) if pre.size else 1.0)
        for t in (2, 3):
            np.testing.assert_array_equal(_C.run_kernel("linear", attrs, [x, w, bias], threads=t,
                                                        kernel_set=kernel_set)[0], one)
        np.testing.assert_array_equal(_C.run_kernel("linear", attrs, [x, w, bias], kernel_set=kernel_set,
                                                    prepare=False)[0], one)


MATMUL = [  # (a shape, b shape)
    ((197, 64), (64, 197)), ((3, 197, 64), (3, 64, 197)), ((2, 1, 5, 7), (3, 7, 33)), ((7,), (7, 9)),
    ((5, 7), (7,)), ((7,), (7,)), ((16, 4, 8), (16, 8, 33)), ((13, 600), (600, 40)), ((2, 3, 0), (0, 4)),
    ((4, 6, 9), (9, 24)), ((1, 9), (2, 9, 50)),
]


@pytest.mark.parametrize("kernel_set", KERNEL_SETS)
@pytest.mark.parametrize("case", MATMUL)
def test_matmul_fma_within_tolerance_and_thread_invariant(kernel_set, case):
    sa, sb = case
    rng = np.random.default_rng(sum(sa) * 7 + sum(sb))
    a, b = rand(rng, *sa), rand(rng, *sb)
    one = _C.run_kernel("matmul", {}, [a, b], kernel_set=kernel_set)[0]
    ref = torch.matmul(torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)).numpy()
    assert_close(one, ref)
    for t in (2, 3):
        np.testing.assert_array_equal(_C.run_kernel("matmul", {}, [a, b], threads=t, kernel_set=kernel_set)[0], one)


@pytest.mark.skipif(bool(_WHY["avx512"] or _WHY["avx2"]), reason="needs both FMA sets: " + (_WHY["avx512"] or _WHY["avx2"]))
def test_linear_and_matmul_avx512_and_avx2_agree_bit_for_bit():
    rng = np.random.default_rng(5)
    for shape, m in LINEAR:
        x, w, b = rand(rng, *shape), rand(rng, m, shape[-1]), rand(rng, m)
        for act in ("none", "gelu"):
            got = [_C.run_kernel("linear", dict(activation=act), [x, w, b], kernel_set=ks)[0] for ks in FMA_SETS]
            np.testing.assert_array_equal(got[0].view(np.uint32), got[1].view(np.uint32))
    for sa, sb in MATMUL:
        a, b = rand(rng, *sa), rand(rng, *sb)
        got = [_C.run_kernel("matmul", {}, [a, b], kernel_set=ks)[0] for ks in FMA_SETS]
        np.testing.assert_array_equal(got[0].view(np.uint32), got[1].view(np.uint32))


@pytest.mark.parametrize("kernel_set", KERNEL_SETS)
def test_linear_and_matmul_fma_errors_are_the_portable_errors(kernel_set):
    bad = [
        ("linear", {}, [np.zeros((2, 5), np.float32), np.zeros((3, 4), np.float32), None]),   # K mismatch
        ("linear", {}, [np.zeros((2, 4), np.float32), np.zeros((3, 4), np.float32), np.zeros(2, np.float32)]),
        ("linear", {}, [np.zeros((2, 4), np.float32), np.zeros((3, 4, 1), np.float32), None]),
        ("linear", dict(activation="swish"), [np.zeros((2, 4), np.float32), np.zeros((3, 4), np.float32), None]),
        ("matmul", {}, [np.zeros((2, 5), np.float32), np.zeros((4, 3), np.float32)]),
        ("matmul", {}, [np.zeros((2, 2, 5), np.float32), np.zeros((3, 5, 3), np.float32)]),
        ("matmul", {}, [np.zeros((), np.float32), np.zeros((3,), np.float32)]),
    ]
    for op, attrs, inputs in bad:
        with pytest.raises(ValueError) as fast:
            _C.run_kernel(op, attrs, inputs, kernel_set=kernel_set)
        with pytest.raises(ValueError) as ref:
            _C.run_kernel(op, attrs, inputs, kernel_set="portable")
        assert str(fast.value) == str(ref.value)


@pytest.mark.parametrize("kernel_set", KERNEL_SETS)
def test_linear_fma_nan_and_inf_propagate(kernel_set):
    x = np.ones((3, 40), np.float32)
    x[0, 5], x[1, 39] = np.nan, np.inf
    w = np.ones((50, 40), np.float32)
    got = _C.run_kernel("linear", {}, [x, w, None], kernel_set=kernel_set)[0]
    assert np.isnan(got[0]).all() and np.isposinf(got[1]).all() and (got[2] == 40.0).all()


# softmax along a contiguous dim in the FMA sets (kernels/common/vector_softmax.h): rows shorter than a vector, around
# the 16-element groups and the 1024-element flushes of the float sums; other dims go to portable (its bits).
SOFTMAX = [((3, 1), -1), ((2, 7), -1), ((4, 16), 1), ((5, 17), -1), ((3, 197, 197), -1), ((2, 1024), -1),
           ((1, 1030), -1), ((2, 5000), -1), ((2, 3, 4), 1), ((0, 5), -1)]


@pytest.mark.parametrize("kernel_set", KERNEL_SETS)
@pytest.mark.parametrize("case", SOFTMAX)
def test_softmax_fma_within_tolerance_and_thread_invariant(kernel_set, case):
    shape, dim = case
    rng = np.random.default_rng(sum(shape) + dim)
    x = (rand(rng, *shape) * 8.0).astype(np.float32)
    one = _C.run_kernel("softmax", dict(dim=dim), [x], kernel_set=kernel_set)[0]
    ref = torch.softmax(torch.tensor(x, dtype=torch.float64), dim=dim).numpy()
    assert_close(one, ref)
    if x.size:
        assert np.allclose(one.sum(axis=dim), 1.0, atol=1e-5)
    for t in (2, 3):
        np.testing.assert_array_equal(_C.run_kernel("softmax", dict(dim=dim), [x], threads=t,
                                                    kernel_set=kernel_set)[0], one)
    if dim != -1 and dim != len(shape) - 1:  # not a contiguous dim: the portable kernel's bits
        np.testing.assert_array_equal(one, _C.run_kernel("softmax", dict(dim=dim), [x], kernel_set="portable")[0])


@pytest.mark.parametrize("kernel_set", KERNEL_SETS)
def test_softmax_fma_special_rows_are_portable_s(kernel_set):
    """A row of -inf gives NaN (0 / 0), a row holding +inf NaN where it is inf and 0 elsewhere (its maximum counts as
    0), a NaN makes its row NaN, a huge spread underflows to exact zeros: as portable."""
    inf, nan = np.inf, np.nan
    x = np.array([[-inf] * 20, [1.0, inf] + [2.0] * 18, [0.0] * 10 + [nan] + [0.0] * 9,
                  [0.0] * 19 + [-200.0], [-inf] * 19 + [3.0], [5.0] * 20], np.float32)
    got = _C.run_kernel("softmax", dict(dim=-1), [x], kernel_set=kernel_set)[0]
    want = _C.run_kernel("softmax", dict(dim=-1), [x], kernel_set="portable")[0]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    assert got[3, 19] == 0.0 and got[4, 19] == 1.0 and (got[4, :19] == 0.0).all()


@pytest.mark.skipif(bool(_WHY["avx512"] or _WHY["avx2"]), reason="needs both FMA sets: " + (_WHY["avx512"] or _WHY["avx2"]))
def test_softmax_avx512_and_avx2_agree_bit_for_bit():
    rng = np.random.default_rng(11)
    for shape, dim in SOFTMAX:
        x = (rand(rng, *shape) * 8.0).astype(np.float32)
        got = [_C.run_kernel("softmax", dict(dim=dim), [x], kernel_set=ks)[0] for ks in FMA_SETS]
        np.testing.assert_array_equal(got[0].view(np.uint32), got[1].view(np.uint32))


@pytest.mark.parametrize("kernel_set", KERNEL_SETS)
def test_softmax_fma_errors_are_the_portable_errors(kernel_set):
    for attrs, inputs in ((dict(dim=2), [np.zeros((2, 3), np.float32)]),
                          (dict(dim=-3), [np.zeros((2, 3), np.float32)]), (dict(dim=1), [np.zeros((), np.float32)])):
        with pytest.raises(ValueError) as fast:
            _C.run_kernel("softmax", attrs, inputs, kernel_set=kernel_set)
        with pytest.raises(ValueError) as ref:
            _C.run_kernel("softmax", attrs, inputs, kernel_set="portable")
        assert str(fast.value) == str(ref.value)


# layer_norm in the FMA sets (kernels/common/vector_layer_norm.h): rows shorter than a vector, around the 16-element
# groups and the 1024-element flushes, over one or more trailing dims, with and without weight and bias.
LAYER_NORM = [((197, 192), 1), ((2, 5, 7), 2), ((3, 1), 1), ((4, 1030), 1), ((2, 3, 16), 1), ((0, 8), 1),
              ((3, 2, 2, 9), 3)]


@pytest.mark.parametrize("kernel_set", KERNEL_SETS)
@pytest.mark.parametrize("case", LAYER_NORM)
def test_layer_norm_fma_within_tolerance_and_thread_invariant(kernel_set, case):
    shape, nd = case
    rng = np.random.default_rng(sum(shape) + nd)
    x = (rand(rng, *shape) * 3.0 + 5.0).astype(np.float32)  # an offset mean: the variance's cancellation
    norm = shape[len(shape) - nd:]
    w, b = rand(rng, *norm), rand(rng, *norm)
    attrs = dict(normalized_ndim=nd, eps=1e-5)
    for wb in ((w, b), (w, None), (None, None)):
        one = _C.run_kernel("layer_norm", attrs, [x, *wb], kernel_set=kernel_set)[0]
        ref = F.layer_norm(torch.tensor(x, dtype=torch.float64), norm,
                           None if wb[0] is None else torch.tensor(wb[0], dtype=torch.float64),
                           None if wb[1] is None else torch.tensor(wb[1], dtype=torch.float64), eps=1e-5).numpy()
        assert_close(one, ref)
        exact = _C.run_kernel("layer_norm", attrs, [x, *wb], kernel_set="portable")[0]
        np.testing.assert_allclose(one, exact, rtol=0, atol=2e-6 * max(1.0, float(np.abs(exact).max(initial=0))))
        for t in (2, 3):
            np.testing.assert_array_equal(_C.run_kernel("layer_norm", attrs, [x, *wb], threads=t,
                                                        kernel_set=kernel_set)[0], one)


@pytest.mark.skipif(bool(_WHY["avx512"] or _WHY["avx2"]), reason="needs both FMA sets: " + (_WHY["avx512"] or _WHY["avx2"]))
def test_layer_norm_avx512_and_avx2_agree_bit_for_bit():
    rng = np.random.default_rng(12)
    for shape, nd in LAYER_NORM:
        x = rand(rng, *shape)
        norm = shape[len(shape) - nd:]
        w, b = rand(rng, *norm), rand(rng, *norm)
        got = [_C.run_kernel("layer_norm", dict(normalized_ndim=nd, eps=1e-5), [x, w, b], kernel_set=ks)[0]
               for ks in FMA_SETS]
        np.testing.assert_array_equal(got[0].view(np.uint32), got[1].view(np.uint32))


@pytest.mark.parametrize("kernel_set", KERNEL_SETS)
def test_layer_norm_fma_special_values_and_errors_are_portable_s(kernel_set):
    x = np.array([[1.0, 2.0, np.nan, 4.0], [np.inf, 0.0, 1.0, 2.0], [3.0, 3.0, 3.0, 3.0]], np.float32)
    attrs = dict(normalized_ndim=1, eps=1e-5)
    got = _C.run_kernel("layer_norm", attrs, [x], kernel_set=kernel_set)[0]
    want = _C.run_kernel("layer_norm", attrs, [x], kernel_set="portable")[0]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert (got[2] == 0.0).all()  # a constant row: (x - mean) is exactly 0
    for attrs, inputs in ((dict(normalized_ndim=3, eps=1e-5), [x]),
                          (dict(normalized_ndim=1, eps=1e-5), [x, np.ones(3, np.float32)]),
                          (dict(normalized_ndim=1, eps=1e-5), [x, None, np.ones(5, np.float32)])):
        with pytest.raises(ValueError) as fast:
            _C.run_kernel("layer_norm", attrs, inputs, kernel_set=kernel_set)
        with pytest.raises(ValueError) as ref:
            _C.run_kernel("layer_norm", attrs, inputs, kernel_set="portable")
        assert str(fast.value) == str(ref.value)


# conv_transpose2d in the FMA sets (kernels/common/fma_conv_transpose.h): the columns by the set's GEMM (rows =
# Og*kh*kw around the register tiles, H*W around the column panels), portable's col2im: strides, padding, output
# padding, dilation, groups, batches, a fused activation.
CONV_T = [  # (N, C, H, W, Og, kh, kw, stride, padding, output_padding, dilation, groups, act)
    (1, 128, 16, 16, 64, 2, 2, (2, 2), (0, 0), (0, 0), (1, 1), 1, "none"),   # UNet's up-convolution
    (2, 6, 7, 9, 5, 3, 3, (2, 1), (1, 0), (1, 0), (1, 1), 1, "relu"),
    (1, 8, 5, 5, 3, 3, 2, (3, 2), (2, 1), (2, 1), (2, 1), 2, "silu"),
    (1, 4, 1, 1, 7, 4, 4, (1, 1), (0, 0), (0, 0), (1, 1), 1, "none"),
    (1, 33, 12, 10, 13, 1, 1, (1, 1), (0, 0), (0, 0), (1, 1), 1, "none"),
]


@pytest.mark.parametrize("kernel_set", KERNEL_SETS)
@pytest.mark.parametrize("case", CONV_T)
def test_conv_transpose2d_fma_within_tolerance_and_thread_invariant(kernel_set, case):
    n, c, h, w, og, kh, kw, stride, pad, opad, dil, groups, act = case
    rng = np.random.default_rng(c * 3 + h + og)
    x, wt, b = rand(rng, n, c, h, w), rand(rng, c, og, kh, kw), rand(rng, og * groups)
    attrs = dict(stride=list(stride), padding=list(pad), output_padding=list(opad), dilation=list(dil),
                 groups=groups, activation=act)
    for bias in (b, None):
        one = _C.run_kernel("conv_transpose2d", attrs, [x, wt, bias], kernel_set=kernel_set)[0]
        pre = F.conv_transpose2d(torch.tensor(x, dtype=torch.float64), torch.tensor(wt, dtype=torch.float64),
                                 None if bias is None else torch.tensor(bias, dtype=torch.float64), stride=stride,
                                 padding=pad, output_padding=opad, groups=groups, dilation=dil)
        ref = {"none": pre, "relu": pre.relu(), "silu": F.silu(pre)}[act].numpy()
        assert_close(one, ref, scale=float(np.abs(pre.numpy()).max()))
        for t in (2, 3):
            np.testing.assert_array_equal(_C.run_kernel("conv_transpose2d", attrs, [x, wt, bias], threads=t,
                                                        kernel_set=kernel_set)[0], one)
        np.testing.assert_array_equal(_C.run_kernel("conv_transpose2d", attrs, [x, wt, bias], kernel_set=kernel_set,
                                                    prepare=False)[0], one)


@pytest.mark.skipif(bool(_WHY["avx512"] or _WHY["avx2"]), reason="needs both FMA sets: " + (_WHY["avx512"] or _WHY["avx2"]))
def test_conv_transpose2d_avx512_and_avx2_agree_bit_for_bit():
    rng = np.random.default_rng(13)
    for n, c, h, w, og, kh, kw, stride, pad, opad, dil, groups, act in CONV_T:
        x, wt = rand(rng, n, c, h, w), rand(rng, c, og, kh, kw)
        attrs = dict(stride=list(stride), padding=list(pad), output_padding=list(opad), dilation=list(dil),
                     groups=groups, activation=act)
        got = [_C.run_kernel("conv_transpose2d", attrs, [x, wt, None], kernel_set=ks)[0] for ks in FMA_SETS]
        np.testing.assert_array_equal(got[0].view(np.uint32), got[1].view(np.uint32))


@pytest.mark.parametrize("kernel_set", KERNEL_SETS)
def test_conv_transpose2d_fma_errors_are_the_portable_errors(kernel_set):
    base = dict(stride=[2, 2], padding=[0, 0], output_padding=[0, 0], dilation=[1, 1], groups=1)
    x = np.zeros((1, 4, 3, 3), np.float32)
    bad = [(base, [x, np.zeros((3, 2, 2, 2), np.float32), None]),                      # channels mismatch
           (dict(base, groups=3), [x, np.zeros((4, 2, 2, 2), np.float32), None]),     # groups do not divide C
           (dict(base, output_padding=[2, 0]), [x, np.zeros((4, 2, 2, 2), np.float32), None]),
           (base, [x, np.zeros((4, 2, 2, 2), np.float32), np.zeros(3, np.float32)]),  # bias length
           (dict(base, padding=[4, 4]), [x, np.zeros((4, 2, 2, 2), np.float32), None])]  # empty output
    for attrs, inputs in bad:
        with pytest.raises(ValueError) as fast:
            _C.run_kernel("conv_transpose2d", attrs, inputs, kernel_set=kernel_set)
        with pytest.raises(ValueError) as ref:
            _C.run_kernel("conv_transpose2d", attrs, inputs, kernel_set="portable")
        assert str(fast.value) == str(ref.value)


# The fused activations in the FMA sets' registers (kernels/common/vector_activation.h): e^x by the sets' own
# polynomial for sigmoid, tanh, silu, gelu_tanh and gelu (erf through a fit of erfc; within the tolerance of portable,
# which uses kernels/common/scalar_math.h), portable's float operations for the clamps, leaky_relu, hardswish and
# hardsigmoid (its bits).
# A 1x1 convolution with identity weights passes each input through, so the activation sees chosen values: both
# tails of e^x, the overflow and underflow edges (|x| near 88, 104), infinities, NaN and signed zeros.
_EXP_ACTS = ("sigmoid", "tanh", "silu", "gelu_tanh", "gelu")
_EXACT_ACTS = ("relu", "relu6", "hardtanh", "leaky_relu", "hardswish", "hardsigmoid")


def _identity_conv(c: int, values: np.ndarray, act: str):
    """x, weights and attrs of a 1x1 convolution with identity weights and the fused activation `act`, each value
    at its own position in every channel, the rest of the 9 x 9 map a ramp."""
    h = w = 9
    x = np.zeros((1, c, h, w), np.float32)
    flat = x.reshape(c, -1)
    flat[:, : values.size] = values[None, :]  # every channel sees each value at its own position
    flat[:, values.size:] = np.linspace(-12.0, 12.0, h * w - values.size, dtype=np.float32)[None, :]
    wt = np.eye(c, dtype=np.float32).reshape(c, c, 1, 1)
    attrs = dict(stride=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, activation=act)
    if act == "hardtanh":
        attrs.update(min_val=-0.5, max_val=0.25)
    if act == "leaky_relu":
        attrs["alpha"] = 0.125
    return x, wt, attrs


_SPECIAL = np.array([0.0, -0.0, 1e-30, -1e-30, 1e-3, -1e-3, 0.5, -0.5, 3.0, -3.0, 15.0, -15.0, 44.0, -44.0, 87.0,
                     -87.0, 88.5, -88.5, 89.5, -89.5, 103.0, -103.0, 110.0, -110.0, 1e30, -1e30, np.inf, -np.inf,
                     np.nan], np.float32)


@pytest.mark.parametrize("kernel_set", KERNEL_SETS)
@pytest.mark.parametrize("act", _EXP_ACTS + _EXACT_ACTS)
def test_fused_activations_in_registers(kernel_set, act):
    x, wt, attrs = _identity_conv(32, _SPECIAL, act)
    exact = _C.run_kernel("conv2d", attrs, [x, wt, None], kernel_set="portable")[0]
    got = _C.run_kernel("conv2d", attrs, [x, wt, None], kernel_set=kernel_set)[0]
    if act in _EXP_ACTS:
        finite = np.isfinite(exact)
        scale = max(1.0, float(np.abs(exact[finite]).max()))
        np.testing.assert_allclose(got, exact, rtol=0, atol=1e-5 * scale)  # NaN where portable has NaN
        np.testing.assert_array_equal(np.isinf(got), np.isinf(exact))
        # Relative accuracy where the values are small: sigmoid's tail, silu and tanh near 0 (the gelus' far
        # negative tails are 1 + tanh and 1 + erf cancelling in portable's formulas: absolute only).
        if act not in ("gelu_tanh", "gelu"):
            small = finite & (np.abs(exact) < 1e-3) & (exact != 0)
            np.testing.assert_allclose(got[small], exact[small], rtol=2e-6)
    else:
        np.testing.assert_array_equal(got.view(np.uint32), exact.view(np.uint32))
    # Blocked output (the tiles' registers) and NCHW output (the transposed tiles' rows) give the same bits, and
    # so do threads.
    for t in (1, 3):
        for bi, bo in (([0], [0]), ([], [0]), ([0], [])):
            again = _C.run_kernel("conv2d", attrs, [x, wt, None], kernel_set=kernel_set, threads=t, blocked_inputs=bi,
                                  blocked_outputs=bo)[0]
            np.testing.assert_array_equal(again.view(np.uint32), got.view(np.uint32))


@pytest.mark.parametrize("kernel_set", KERNEL_SETS)
def test_fused_gelu_is_relatively_accurate_in_both_tails(kernel_set):
    """gelu (erf) in registers against float64: relative error within 1e-6 wherever the result is a normal float,
    the negative tail included (x down to -13, where portable's 1 + erf has long cancelled to 0)."""
    import math

    x = np.concatenate([np.linspace(-13.0, 13.0, 2001, dtype=np.float32), _SPECIAL[:10]]).reshape(-1, 1)
    # A linear with a 1 x 1 unit weight passes each value to its epilogue unchanged.
    got = _C.run_kernel("linear", dict(activation="gelu"), [x, np.ones((1, 1), np.float32), None],
                        kernel_set=kernel_set)[0].ravel()
    xs = x.ravel().astype(np.float64)
    want = np.array([v * 0.5 * math.erfc(-v / math.sqrt(2.0)) for v in xs])
    normal = np.abs(want) >= np.finfo(np.float32).tiny
    np.testing.assert_allclose(got[normal], want[normal], rtol=1e-6)
    assert np.all(np.abs(got[~normal]) < 1e-37)


_WHY_BOTH = _WHY["avx512"] or _WHY["avx2"]


@pytest.mark.skipif(bool(_WHY_BOTH), reason="needs both FMA sets: " + _WHY_BOTH)
@pytest.mark.parametrize("act", _EXP_ACTS + _EXACT_ACTS)
def test_fused_activations_agree_between_the_fma_sets(act):
    """One definition over both sets' vector operations (16 and 8 lanes): the same bits, e^x's included."""
    x, wt, attrs = _identity_conv(48, _SPECIAL, act)
    a = _C.run_kernel("conv2d", attrs, [x, wt, None], kernel_set="avx512")[0]
    v = _C.run_kernel("conv2d", attrs, [x, wt, None], kernel_set="avx2")[0]
    np.testing.assert_array_equal(a.view(np.uint32), v.view(np.uint32))
