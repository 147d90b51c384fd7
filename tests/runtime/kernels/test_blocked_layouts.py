"""Blocked layouts (NCHW16c, runtime/core/kernel.h): kernels that offer them give, for every combination of blocked
and NCHW tensors they accept, the bits they give on NCHW tensors (run_kernel converts the arrays around the run);
they refuse what they do not offer; and a session's choice of blocked tensors (executor.cc) never changes a model's
result. The FMA sets' cases run for each set the CPU has (avx512: AVX-512; avx2: AVX2 and FMA), the x86 ones on CPUs
with AVX2 and FMA."""

from __future__ import annotations

import platform

import numpy as np
import pytest

from .helpers import _C


def rand(shape, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _why(kernel_set: str, op: str = "conv2d") -> str:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return f"not an x86-64 machine ({platform.machine()}): the {kernel_set} kernel set is not built"
    sets = {(o, ks) for o, dt, ks, _ in _C.registered_kernel_sets() if dt == "float32"}
    if (op, kernel_set) not in sets:
        return f"this CPU lacks the {kernel_set} kernel set's ISA (no {kernel_set} {op} kernel)"
    return ""


_WHY_AVX512, _WHY_AVX2, _WHY_X86 = _why("avx512"), _why("avx2"), _why("x86", "add")
for _name, _w in (("avx512", _WHY_AVX512), ("avx2", _WHY_AVX2), ("x86", _WHY_X86)):
    if _w:
        print(f"test_blocked_layouts: {_name} cases skipped: {_w}")
needs_x86 = pytest.mark.skipif(bool(_WHY_X86), reason=_WHY_X86)
# The FMA kernel sets whose conv2d offers blocked layouts (kernels/common/channel_conv.h), each where the CPU has it.
FMA_SETS = [
    pytest.param("avx512", marks=pytest.mark.skipif(bool(_WHY_AVX512), reason=_WHY_AVX512)),
    pytest.param("avx2", marks=pytest.mark.skipif(bool(_WHY_AVX2), reason=_WHY_AVX2)),
]
fma_sets = pytest.mark.parametrize("kset", FMA_SETS)


def _same(a: np.ndarray, b: np.ndarray) -> None:
    np.testing.assert_array_equal(a, b)
    assert np.array_equal(np.signbit(a), np.signbit(b)), "signs of zero differ"


def _near_portable(got: np.ndarray, attrs: dict, inputs: list) -> None:
    """A conv2d result within the float tolerance (1e-5 x the output's scale) of the portable kernel's."""
    exact = _C.run_kernel("conv2d", attrs, inputs, kernel_set="portable")[0]
    np.testing.assert_allclose(got, exact, rtol=0, atol=1e-5 * max(1.0, float(np.abs(exact).max())))


def _all_layouts(op: str, attrs: dict, inputs: list, kernel_set: str, combos, threads=(1, 2)) -> np.ndarray:
    ref = _C.run_kernel(op, attrs, inputs, kernel_set=kernel_set)[0]
    for bi, bo in combos:
        for t in threads:
            got = _C.run_kernel(op, attrs, inputs, kernel_set=kernel_set, threads=t, blocked_inputs=bi,
                                blocked_outputs=bo)[0]
            _same(got, ref)
    return ref


DENSE_COMBOS = [([0], [0]), ([0], []), ([], [0])]

# (N, C, H, W, O, kh, kw, stride, padding (t, b, l, r), dilation, activation)
CONV = [
    (1, 16, 12, 12, 32, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), "relu"),      # 3x3: zero-padded blocked copy
    (1, 32, 15, 17, 64, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), "none"),      # stride 2: 32-float position stride
    (2, 32, 9, 11, 48, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), "relu6"),     # O = 48: a 16-channel last panel
    (1, 16, 10, 10, 16, 3, 3, (1, 1), (0, 2, 1, 0), (2, 2), "hardswish"),  # dilated, asymmetric padding, 1 panel
    (1, 48, 14, 14, 32, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), "sigmoid"),  # 1x1 in place: the flat plane
    (1, 64, 9, 9, 128, 1, 1, (2, 2), (0, 0, 0, 0), (1, 1), "none"),      # strided 1x1 (a ResNet shortcut)
    (1, 32, 30, 31, 32, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), "none"),     # rows of 31: tiles of 11 + 10 + 10
]
# Padded blocked inputs whose zero-padded copy would exceed 768 KiB are read in place with bands (border rows) and
# strips (edge columns): Halo in kernels/common/channel_conv.h.
HALO = [
    (1, 32, 112, 112, 64, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), "relu"),    # SimpleNet's: top row, left column only
    (1, 64, 60, 61, 32, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), "hardswish"),  # borders on all four sides
    (1, 16, 130, 129, 16, 3, 3, (1, 2), (2, 0, 1, 3), (2, 2), "none"),   # dilated, asymmetric, mixed strides
    (1, 32, 600, 6, 48, 7, 7, (1, 1), (3, 3, 3, 3), (1, 1), "none"),     # no interior column: every column a strip
    (1, 16, 5, 3000, 16, 3, 3, (2, 1), (1, 1, 1, 1), (1, 1), "relu"),    # one interior row
]
STEMS = [  # NCHW inputs (C = 3) into blocked outputs
    (1, 3, 31, 29, 32, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), "relu"),
    (1, 3, 23, 23, 64, 7, 7, (2, 2), (3, 3, 3, 3), (1, 1), "none"),
    (1, 3, 20, 20, 16, 3, 3, (3, 3), (1, 1, 1, 1), (1, 1), "none"),     # column stride 3: the phase planes
]


def _conv(case, bias=True, groups=1, seed=0):
    n, c, h, w, o, kh, kw, s, p, d, act = case
    x = rand((n, c, h, w), seed=seed)
    wt = rand((o, c // groups, kh, kw), seed=seed + 1) * 0.3
    b = rand((o,), seed=seed + 2) if bias else None
    attrs = {"stride": list(s), "padding": list(p), "dilation": list(d), "groups": groups}
    if act != "none":
        attrs["activation"] = act
    return attrs, [x, wt, b]


@fma_sets
@pytest.mark.parametrize("case", CONV, ids=lambda c: f"{c[1]}x{c[2]}x{c[3]}-o{c[4]}-k{c[5]}s{c[7][0]}-{c[10]}")
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d_blocked_gives_the_nchw_bits(case, bias, kset):
    attrs, inputs = _conv(case, bias)
    _all_layouts("conv2d", attrs, inputs, kset, DENSE_COMBOS)
    # Weights not prepared at load (packed into scratch at run time): the same.
    ref = _C.run_kernel("conv2d", attrs, inputs, kernel_set=kset)[0]
    _same(_C.run_kernel("conv2d", attrs, inputs, kernel_set=kset, prepare=False, blocked_inputs=[0],
                        blocked_outputs=[0])[0], ref)


@fma_sets
@pytest.mark.parametrize("case", HALO, ids=lambda c: f"{c[1]}x{c[2]}x{c[3]}-k{c[5]}s{c[7][0]}{c[7][1]}-p{c[8]}")
def test_conv2d_reads_large_padded_blocked_inputs_in_place(case, kset):
    attrs, inputs = _conv(case)
    _all_layouts("conv2d", attrs, inputs, kset, [([0], [0]), ([0], [])])


@fma_sets
@pytest.mark.parametrize("case", STEMS, ids=lambda c: f"k{c[5]}s{c[7][0]}-o{c[4]}")
def test_conv2d_stems_write_blocked_outputs(case, kset):
    attrs, inputs = _conv(case)
    _all_layouts("conv2d", attrs, inputs, kset, [([], [0])])
    with pytest.raises(ValueError, match="blocked_inputs: input 0 is not a 4-D float32 tensor with C % 16 == 0"):
        _C.run_kernel("conv2d", attrs, inputs, kernel_set=kset, blocked_inputs=[0])


# Padded NCHW inputs (strides 1 and 2) are read in place with bands and strips unless the output rows pair up (Halo,
# ChannelSource::halo in kernels/common/channel_conv.h), into blocked and NCHW outputs. K < 192 (the stems): the NCHW
# run takes the GEMM (a zero-padded im2col), so the bits are checked against a path that copies; every case is checked
# against portable within the float tolerance too.
NCHW_HALO = [
    (1, 3, 224, 224, 32, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), "relu"),    # SimpleNet's stem: top row, left column
    (1, 3, 64, 64, 64, 7, 7, (2, 2), (3, 3, 3, 3), (1, 1), "none"),      # ResNet's 7 x 7 stem, borders all round
    (1, 24, 20, 19, 32, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), "hardswish"),  # K = 216, C not a multiple of 16
    (2, 5, 33, 40, 48, 3, 3, (1, 2), (2, 0, 1, 3), (2, 2), "relu6"),     # dilated, asymmetric, mixed strides, N = 2
    (1, 4, 60, 6, 32, 7, 7, (1, 1), (3, 3, 3, 3), (1, 1), "none"),       # no interior column: every column a strip
    (1, 8, 5, 300, 16, 3, 3, (2, 1), (1, 1, 1, 1), (1, 1), "sigmoid"),   # one interior row, O = 16 (one block)
]


@fma_sets
@pytest.mark.parametrize("case", NCHW_HALO, ids=lambda c: f"c{c[1]}-{c[2]}x{c[3]}-k{c[5]}s{c[7][0]}{c[7][1]}")
def test_conv2d_reads_padded_nchw_inputs_in_place(case, kset):
    attrs, inputs = _conv(case)
    ref = _all_layouts("conv2d", attrs, inputs, kset, [([], [0]), ([], [])], threads=(1, 2, 3, 5))
    _near_portable(ref, attrs, inputs)


@fma_sets
@pytest.mark.parametrize("groups", [2, 3])
def test_conv2d_grouped_nchw_halo_reads_its_own_channels(groups, kset):
    """A grouped convolution runs the channel-major path group by group (avx512: K = 288 per group), each reading its
    channels of the NCHW input in place with bands and strips: the bits of every thread count, portable's within
    the float tolerance."""
    attrs, inputs = _conv((1, 32 * groups, 28, 27, 32 * groups, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), "relu"),
                          groups=groups)
    ref = _all_layouts("conv2d", attrs, inputs, kset, [], threads=(1,))
    for t in (2, 3):
        _same(_C.run_kernel("conv2d", attrs, inputs, kernel_set=kset, threads=t)[0], ref)
    _near_portable(ref, attrs, inputs)


# Rows whose tiles would leave many positions unused pair up: a channel-major tile takes up to half a tile of
# positions of a row and the same columns of the next (its halves read two source rows and go to two output rows),
# an odd last row alone. avx512's tiles are 14 positions (rows of 7 pair whole, rows of 16 pair as 8 + 8), avx2's 6
# (rows of 7 as 2 + 2 + 3, rows of 14 as 2 + 3 + 3 + 3 + 3). With O = 16 the NCHW run of either set takes the GEMM,
# which does not pair rows, so the blocked runs are checked against it; O = 48 is checked against portable too.
PAIRS = [
    (1, 32, 7, 7, 16, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), "relu"),      # ResNet's 7 x 7: 3 pairs + 1 row
    (1, 16, 6, 5, 16, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), "none"),      # an even number of 5-position rows
    (1, 32, 14, 13, 16, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), "relu6"),   # stride 2 into 7 x 7: rows 2 apart
    (2, 64, 7, 7, 48, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), "none"),      # two panels, batch 2
    (1, 32, 9, 4, 16, 3, 3, (1, 1), (0, 0, 0, 0), (1, 1), "none"),      # unpadded: in place, 7 x 2 outputs
    (1, 16, 14, 14, 16, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), "hardswish"),  # 14 x 14: avx2 pairs in column tiles
    (1, 32, 9, 16, 48, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), "sigmoid"),  # rows of 16: avx512 pairs as 8 + 8
]


@fma_sets
@pytest.mark.parametrize("case", PAIRS, ids=lambda c: f"{c[1]}x{c[2]}x{c[3]}-o{c[4]}-s{c[7][0]}")
def test_conv2d_short_rows_pair_up(case, kset):
    attrs, inputs = _conv(case)
    ref = _all_layouts("conv2d", attrs, inputs, kset, DENSE_COMBOS)
    _near_portable(ref, attrs, inputs)


# Blocked inputs into outputs whose channel count is not a multiple of 16 (NCHW Y): the last panel holds fewer than a
# tile's channels (avx2: 8 of 16, one vector of FMAs; avx512: 24 of 32), rows of any length, pairs too.
NCHW_OUT = [
    (1, 96, 14, 14, 24, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), "none"),    # MobileNetV2's projection to 24
    (1, 32, 7, 7, 8, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), "relu6"),      # one panel of 8 channels, 7 x 7 pairs
    (2, 16, 9, 23, 40, 3, 3, (2, 1), (1, 1, 1, 1), (1, 1), "hardswish"),  # 40 = 16 + 16 + 8, mixed strides
]


@fma_sets
@pytest.mark.parametrize("case", NCHW_OUT, ids=lambda c: f"{c[1]}x{c[2]}x{c[3]}-o{c[4]}-k{c[5]}")
def test_conv2d_blocked_input_into_nchw_output(case, kset):
    attrs, inputs = _conv(case)
    ref = _all_layouts("conv2d", attrs, inputs, kset, [([0], [])])
    _near_portable(ref, attrs, inputs)


DEPTHWISE = [  # (C, H, W, k, stride, padding, dilation, activation)
    (32, 13, 21, 3, (1, 1), (1, 1, 1, 1), (1, 1), "relu6"),
    (16, 14, 14, 3, (2, 2), (1, 1, 1, 1), (1, 1), "none"),   # stride 2
    (48, 7, 7, 3, (1, 1), (1, 1, 1, 1), (1, 1), "relu"),     # a 7 x 7 map: one 8-position step, borders
    (16, 11, 30, 5, (1, 2), (2, 2, 2, 2), (1, 1), "none"),   # 5x5, column stride 2
    (16, 9, 9, 3, (1, 1), (2, 0, 2, 0), (2, 2), "hardswish"),  # dilated, padding on one side only
    (32, 4, 5, 7, (1, 1), (3, 3, 3, 3), (1, 1), "none"),     # 7x7 wider than the map: every position a border
]


@fma_sets
@pytest.mark.parametrize("case", DEPTHWISE, ids=lambda c: f"c{c[0]}-{c[1]}x{c[2]}-k{c[3]}s{c[4][1]}")
def test_depthwise_blocked_gives_the_nchw_bits(case, kset):
    c, h, w, k, s, p, d, act = case
    attrs, inputs = _conv((2, c, h, w, c, k, k, s, p, d, act), groups=c)
    _all_layouts("conv2d", attrs, inputs, kset, [([0], [0])])
    # X and Y only together.
    with pytest.raises(RuntimeError, match="takes its tensors blocked all together or not at all"):
        _C.run_kernel("conv2d", attrs, inputs, kernel_set=kset, blocked_inputs=[0])


@fma_sets
def test_depthwise_blocked_skips_rows_outside_the_image(kset):
    """Rows outside the image are skipped (no product) and columns outside add a +0 product, as the NCHW depthwise
    kernels do. With x = -0, w = +1 and a -0 bias every product inside the image is -0: a position whose window
    leaves the image only through rows stays -0, one that leaves it through columns becomes +0."""
    c = 16
    x = np.full((1, c, 6, 6), -0.0, np.float32)
    wt = np.ones((c, 1, 3, 3), np.float32)
    b = np.full((c,), -0.0, np.float32)
    attrs = {"stride": [1, 1], "padding": [1, 1, 1, 1], "groups": c}
    ref = _all_layouts("conv2d", attrs, [x, wt, b], kset, [([0], [0])], threads=(1,))
    assert np.signbit(ref[:, :, 0, 2]).all() and np.signbit(ref[:, :, 5, 3]).all() and np.signbit(ref[:, :, 3, 3]).all()
    assert not np.signbit(ref[:, :, 2, 0]).any() and not np.signbit(ref[:, :, 0, 0]).any()


@fma_sets
def test_conv2d_refuses_layouts_it_does_not_offer(kset):
    attrs, inputs = _conv((1, 32, 8, 8, 32, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), "none"), groups=2)
    with pytest.raises(RuntimeError, match=rf"kernel conv2d \({kset}\) does not take these tensors blocked here"):
        _C.run_kernel("conv2d", attrs, inputs, kernel_set=kset, blocked_inputs=[0], blocked_outputs=[0])
    attrs, inputs = _conv((1, 32, 8, 8, 24, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), "none"))
    with pytest.raises(ValueError, match="blocked_outputs: output 0 is not a 4-D float32 tensor with C % 16 == 0"):
        _C.run_kernel("conv2d", attrs, inputs, kernel_set=kset, blocked_outputs=[0])
    # The portable kernel offers none.
    attrs, inputs = _conv((1, 16, 8, 8, 16, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), "none"))
    with pytest.raises(RuntimeError, match=r"kernel conv2d \(portable\) does not take these tensors blocked here"):
        _C.run_kernel("conv2d", attrs, inputs, kernel_set="portable", blocked_inputs=[0])


@needs_x86
@pytest.mark.parametrize("act", [None, "relu"])
def test_x86_add_blocked_all_together(act):
    a, b = rand((2, 32, 5, 7), seed=1), rand((2, 32, 5, 7), seed=2)
    attrs = {} if act is None else {"activation": act}
    _all_layouts("add", attrs, [a, b], "x86", [([0, 1], [0])])
    with pytest.raises(RuntimeError, match="takes its tensors blocked all together or not at all"):
        _C.run_kernel("add", attrs, [a, b], kernel_set="x86", blocked_inputs=[0], blocked_outputs=[0])
    # Broadcasting is not element by element: refused.
    with pytest.raises(RuntimeError, match="does not take these tensors blocked here"):
        _C.run_kernel("add", attrs, [a, rand((1, 32, 1, 1))], kernel_set="x86", blocked_inputs=[0, 1],
                      blocked_outputs=[0])


@needs_x86
def test_x86_mul_blocked_forms():
    """Same shapes: all three blocked together. A map times a channel scale (either side) or a single value: the map
    and the output together, the scale or value never (it is read as C floats or one)."""
    m, m2 = rand((2, 32, 5, 7), seed=1), rand((2, 32, 5, 7), seed=2)
    s, s1 = rand((2, 32, 1, 1), seed=3), rand((1, 48, 1, 1), seed=4)
    m48 = rand((1, 48, 3, 9), seed=5)
    _same(_all_layouts("mul", {}, [m, m2], "x86", [([0, 1], [0])], threads=(1, 2, 3)), m * m2)
    _same(_all_layouts("mul", {}, [m, s], "x86", [([0], [0])], threads=(1, 2, 3)), m * s)
    _same(_all_layouts("mul", {}, [s1, m48], "x86", [([1], [0])], threads=(1, 2, 3)), s1 * m48)
    v = np.array([0.125], np.float32)
    _same(_all_layouts("mul", {}, [m, v], "x86", [([0], [0])], threads=(1, 2)), m * v)
    with pytest.raises(RuntimeError, match="takes its tensors blocked all together or not at all"):
        _C.run_kernel("mul", {}, [m, s], kernel_set="x86", blocked_inputs=[0])
    with pytest.raises(RuntimeError, match="does not take these tensors blocked here"):
        _C.run_kernel("mul", {}, [m, s], kernel_set="x86", blocked_inputs=[0, 1], blocked_outputs=[0])


@needs_x86
@pytest.mark.parametrize("case", [((3, 3), (2, 2), (1, 1), (1, 1)), ((2, 2), (2, 2), (0, 0), (1, 1)),
                                  ((3, 2), (1, 2), (1, 0), (2, 1))], ids=["3x3s2p1", "2x2s2", "dilated"])
def test_x86_max_pool_blocked(case):
    k, s, p, d = case
    x = rand((2, 32, 13, 12), seed=3)
    x[0, 3, 4, 5] = np.nan  # a NaN wins its windows, lane by lane
    # NaNs of two payloads in one window, in the upper 8 channels of a block: the last one (row-major) wins. The rows
    # whose windows hold a NaN are redone tap by tap (max_pool2d.cc blocked_row<true> finds them).
    bits = x.view(np.uint32)
    bits[1, 27, 6, 7], bits[1, 27, 7, 7] = 0x7FC00001, 0xFFC00002
    x[1, 17, 0, 0] = -0.0
    x[1, 17, 0, 1] = 0.0
    x[0, 20, 9, 2:5] = [np.inf, -np.inf, np.inf]  # infinities are no NaN
    attrs = {"kernel": list(k), "stride": list(s), "padding": list(p), "dilation": list(d)}
    # With threads, blocks of output rows over every plane (kernels/common/util.h PlaneRows): 7 or 13 rows, 2 images.
    ref = _all_layouts("max_pool2d", attrs, [x], "x86", [([0], [0])], threads=(1, 2, 3, 5))
    exact = _C.run_kernel("max_pool2d", attrs, [x], kernel_set="portable")[0]
    _same(ref, exact)
    np.testing.assert_array_equal(ref.view(np.uint32), exact.view(np.uint32))  # NaN payloads too


@needs_x86
@pytest.mark.parametrize("keepdim", [0, 1])
@pytest.mark.parametrize("shape", [(2, 48, 7, 9), (1, 48, 5, 3), (3, 16, 1, 1)])  # 6, 3 (odd: a lone block), 3 blocks
def test_x86_mean_of_a_blocked_input(keepdim, shape):
    x = rand(shape, seed=4) * 100
    attrs = {"axes": [2, 3], "keepdim": keepdim}
    ref = _all_layouts("mean", attrs, [x], "x86", [([0], [])])
    _same(ref, _C.run_kernel("mean", attrs, [x], kernel_set="portable")[0])
    # Other reductions are not offered.
    with pytest.raises(RuntimeError, match=r"kernel mean \(x86\) does not take these tensors blocked here"):
        _C.run_kernel("mean", {"axes": [1, 2, 3]}, [x], kernel_set="x86", blocked_inputs=[0])


_WHY_AVX512_MEAN = _why("avx512", "mean")
if _WHY_AVX512_MEAN:
    print(f"test_blocked_layouts: avx512 mean cases skipped: {_WHY_AVX512_MEAN}")


@pytest.mark.skipif(bool(_WHY_AVX512_MEAN), reason=_WHY_AVX512_MEAN)
@pytest.mark.parametrize("keepdim", [0, 1])
# 4 blocks (one unit of work), 3 + 4 (a short last unit), 5 x 2 images (units across images), 1 x 1 maps
@pytest.mark.parametrize("shape", [(1, 64, 28, 28), (1, 112, 7, 9), (2, 80, 5, 3), (3, 16, 1, 1)])
def test_avx512_mean_of_a_blocked_input_has_portables_bits(keepdim, shape):
    x = rand(shape, seed=5) * 100
    if shape[2] * shape[3] >= 3:  # large values cancelling and a subnormal in one channel: the sums' order shows
        x[0, 3].reshape(-1)[:3] = [1e30, 1e-40, -1e30]
    x[-1, -1, -1, -1] = np.inf
    attrs = {"axes": [2, 3], "keepdim": keepdim}
    exact = _C.run_kernel("mean", attrs, [x], kernel_set="portable")[0]
    for t in (1, 2, 3):
        got = _C.run_kernel("mean", attrs, [x], kernel_set="avx512", threads=t, blocked_inputs=[0])[0]
        np.testing.assert_array_equal(got.view(np.uint32), exact.view(np.uint32))
    # An NCHW input runs the portable kernel; other reductions are not offered blocked.
    _same(_C.run_kernel("mean", attrs, [x], kernel_set="avx512")[0], exact)
    with pytest.raises(RuntimeError, match=r"kernel mean \(avx512\) does not take these tensors blocked here"):
        _C.run_kernel("mean", {"axes": [1, 2, 3]}, [x], kernel_set="avx512", blocked_inputs=[0])


# With threads, convolutions whose weights fit in half a core's L2, blocked depthwise convolutions and x86 adds split
# an image's positions among the threads (blocks of rows, each over every channel plane: kernels/common/
# channel_conv.h for_units and DwRows, kernels/x86/add.cc) so that a thread reads what its core wrote. Fewer
# positions than blocks, blocks of uneven rows, border rows and edge columns in the last block: the bits of 1 thread.
ROW_SPLIT_CONV = [
    (1, 32, 1, 1, 32, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), "none"),      # one position: one block
    (1, 16, 2, 3, 48, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), "relu"),      # 6 positions, fewer than the blocks
    (1, 32, 13, 13, 64, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), "none"),    # rows paired: 7 units per panel
    (1, 32, 112, 112, 64, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), "relu"),  # bands and strips (Halo)
]


@fma_sets
@pytest.mark.parametrize("case", ROW_SPLIT_CONV, ids=lambda c: f"{c[1]}x{c[2]}x{c[3]}-o{c[4]}-k{c[5]}s{c[7][0]}")
def test_conv2d_threads_split_positions_with_the_same_bits(case, kset):
    attrs, inputs = _conv(case)
    _all_layouts("conv2d", attrs, inputs, kset, [([0], [0]), ([0], []), ([], [0]), ([], [])], threads=(2, 3, 5, 8))


@fma_sets
@pytest.mark.parametrize("hw", [(1, 9), (3, 5), (7, 7), (13, 6), (17, 4)])
def test_depthwise_blocked_threads_split_rows_with_the_same_bits(hw, kset):
    attrs, inputs = _conv((2, 48, hw[0], hw[1], 48, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), "relu"), groups=48)
    _all_layouts("conv2d", attrs, inputs, kset, [([0], [0])], threads=(2, 3, 5, 8))


@needs_x86
@pytest.mark.parametrize("shape", [(1, 32, 1, 1), (2, 16, 1, 3), (1, 48, 7, 7), (2, 32, 28, 28), (1, 24, 5, 9)])
def test_x86_add_threads_split_positions_with_the_same_bits(shape):
    a, b = rand(shape, seed=3), rand(shape, seed=4)
    want = np.maximum(a + b, 0)
    combos = [([0, 1], [0]), ([], [])] if shape[1] % 16 == 0 else [([], [])]
    _same(_all_layouts("add", {"activation": "relu"}, [a, b], "x86", combos, threads=(2, 3, 5, 8)), want)
