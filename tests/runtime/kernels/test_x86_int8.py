"""The x86 set's int8 kernels (kernels/x86/qconv2d.cc, qlinear.cc: AVX2 vpmaddwd; qadd.cc; qmean.cc) bit for bit
against the portable kernels, run by name (`run_kernel(..., kernel_set="x86")`: on an AVX-512 VNNI CPU the vnni set
outranks x86 for qconv2d, so the fast policy alone would not reach them). Shapes that exercise every path: dense, grouped and
depthwise convolutions, column strides 1, 2 (the phase-split copy) and 3, dilation, asymmetric padding, 1x1 (the
merged rows), odd channel counts (a pair with a zero), output rows that end inside a vector, large K, batch > 1;
every int8 weight (-128 included) and the extreme zero points; the requantization at its edges (multipliers above 1,
below 2^-32, zero scales, accumulators across the clamp thresholds and wrapping past int32); thread counts 1, 2 and 3
and the unprepared path. qadd: sizes around its 16-value step, scale ratios (tiny, equal, ties at both roundings,
an output multiplier above 1), the extreme zero points, every pair of int8 values, and the broadcasts it runs itself
(scalar, per channel) or leaves to the portable kernel. Then which CPUs select the set: never one without AVX2 + FMA
(dtorch-run under QEMU)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from dtm_builder import DtmBuilder
from host_build import scons_host

from .helpers import _C

ROOT = Path(__file__).resolve().parents[3]


def _x86_has(op: str) -> bool:
    return any(o == op and d == "int8" and s == "x86" for o, d, s, _ in _C.registered_kernel_sets())


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    return set(next((ln.split(":", 1)[1].split() for ln in text.splitlines() if ln.startswith("flags")), []))


needs_x86 = pytest.mark.skipif(not _x86_has("qconv2d"), reason="this CPU has no AVX2 + FMA: the x86 set is absent")


def _rng(*key: object) -> np.random.Generator:
    return np.random.default_rng(abs(hash(key)) % 2**32)


def _same_as_portable(op: str, attrs: dict, inputs: list, what: str, kernel_set: str = "x86") -> np.ndarray:
    """`kernel_set`'s kernel (1, 2, 3 threads, and unprepared) gives the portable kernel's bits."""
    want = _C.run_kernel(op, attrs, inputs, kernel_set="portable")[0]
    for threads in (1, 2, 3):
        got = _C.run_kernel(op, attrs, inputs, threads=threads, kernel_set=kernel_set)[0]
        np.testing.assert_array_equal(got, want, err_msg=f"{what}, {threads} thread(s)")
    got = _C.run_kernel(op, attrs, inputs, threads=2, kernel_set=kernel_set, prepare=False)[0]
    np.testing.assert_array_equal(got, want, err_msg=f"{what}, unprepared")
    return want


def _io(rng: np.random.Generator, x_zp: int | None = None, y_zp: int | None = None) -> dict:
    return {"x_scale": float(np.float32(rng.uniform(0.01, 0.05))),
            "x_zero_point": int(rng.integers(-128, 128)) if x_zp is None else x_zp,
            "y_scale": float(np.float32(rng.uniform(0.05, 0.4))),
            "y_zero_point": int(rng.integers(-128, 128)) if y_zp is None else y_zp}


def _operands(rng: np.random.Generator, x_shape: tuple, w_shape: tuple, w_lo: int = -128):
    x = rng.integers(-128, 128, size=x_shape).astype(np.int8)
    w = rng.integers(w_lo, 128, size=w_shape).astype(np.int8)
    ws = rng.uniform(0.001, 0.02, size=w_shape[0]).astype(np.float32)
    b = rng.integers(-20000, 20000, size=w_shape[0]).astype(np.int32)
    return x, w, ws, b


def _conv(stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1) -> dict:
    return {"stride": list(stride), "padding": list(padding), "dilation": list(dilation), "groups": groups}


CONV = [
    # (N, C, H, W), (O, C/g, kh, kw), geometry
    ((1, 3, 23, 29), (8, 3, 3, 3), _conv((2, 2), (1, 1, 1, 1))),                    # a stem: 3 channels, one pair + 1
    ((1, 5, 9, 17), (7, 5, 3, 3), _conv(padding=(1, 1, 1, 1))),                     # odd C and O
    ((2, 6, 8, 9), (10, 6, 1, 1), _conv()),                                         # 1x1: merged rows, batch 2
    ((1, 16, 7, 7), (24, 16, 1, 1), _conv()),                                       # 49 positions: 6 slots + 1
    ((1, 8, 12, 13), (16, 8, 1, 1), _conv((2, 2))),                                 # 1x1 stride 2
    ((1, 12, 7, 11), (6, 4, 3, 1), _conv(padding=(2, 0, 1, 3), dilation=(2, 1), groups=3)),
    ((1, 6, 9, 9), (6, 2, 3, 3), _conv(padding=(1, 1, 1, 1), groups=3)),           # grouped, 2 outputs a group
    ((1, 8, 10, 10), (16, 1, 3, 3), _conv(padding=(1, 1, 1, 1), groups=8)),        # channel multiplier 2: dense
    ((1, 4, 5, 67), (5, 4, 1, 3), _conv((1, 3), (0, 0, 1, 1))),                     # column stride 3
    ((1, 3, 33, 35), (13, 3, 5, 3), _conv((3, 2), (2, 1, 0, 2), (1, 2))),          # odd left padding, stride 2
    ((1, 7, 19, 40), (9, 7, 3, 3), _conv((2, 2), (0, 1, 1, 0))),                    # even left padding, stride 2
    ((1, 64, 6, 6), (12, 64, 3, 3), _conv(padding=(1, 1, 1, 1))),                   # K = 576
    ((1, 300, 3, 4), (5, 300, 3, 3), _conv(padding=(1, 1, 1, 1))),                  # K = 2700, odd pairs
    ((1, 2, 1, 1), (3, 2, 1, 1), _conv()),                                          # one position
    ((1, 4, 2, 3), (4, 4, 3, 3), _conv(padding=(2, 2, 2, 2))),                      # more padding than input
    # depthwise
    ((2, 16, 9, 9), (16, 1, 3, 3), _conv(padding=(1, 1, 1, 1), groups=16)),
    ((1, 24, 20, 37), (24, 1, 3, 3), _conv((2, 2), (1, 1, 1, 1), groups=24)),
    ((1, 8, 14, 14), (8, 1, 5, 5), _conv((2, 2), (2, 2, 2, 2), groups=8)),
    ((1, 5, 11, 13), (5, 1, 5, 5), _conv(padding=(4, 3, 4, 2), dilation=(2, 2), groups=5)),
    ((1, 8, 11, 13), (8, 1, 3, 3), _conv((1, 3), groups=8)),                        # column stride 3
    ((1, 4, 7, 7), (4, 1, 3, 3), _conv(padding=(1, 1, 1, 1), groups=4)),            # rows shorter than a vector
    ((1, 3, 6, 70), (3, 1, 1, 7), _conv(padding=(0, 0, 3, 3), groups=3)),           # 7 taps: a lone last tap
    ((1, 2, 40, 33), (2, 1, 2, 2), _conv((2, 2), (1, 0, 1, 0), groups=2)),          # 4 taps, 33 columns
]


@needs_x86
@pytest.mark.parametrize("case", range(len(CONV)))
@pytest.mark.parametrize("activation", ["none", "relu", "relu6"])
def test_qconv2d_gives_the_portable_bits(case, activation):
    xs, wsh, geo = CONV[case]
    rng = _rng("x86-conv", case, activation)
    x, w, ws, b = _operands(rng, xs, wsh)
    attrs = {**_io(rng), **geo, "activation": activation}
    _same_as_portable("qconv2d", attrs, [x, w, ws, b], f"case {case}")
    _same_as_portable("qconv2d", attrs, [x, w, ws, None], f"case {case}, no bias")


@needs_x86
@pytest.mark.parametrize("x_zp,y_zp", [(-128, -128), (127, 127), (-128, 127), (127, -128)])
@pytest.mark.parametrize("case", [0, 2, 11, 15, 17])
def test_qconv2d_at_the_extremes(case, x_zp, y_zp):
    """Weights at -128 and 127, inputs at -128 and 127 with the zero points at the other end: |x - zp| = 255 and
    |w| = 128 in every product, the largest pair sums vpmaddwd sees (a saturating vpmaddubsw would clip them)."""
    xs, wsh, geo = CONV[case]
    rng = _rng("x86-extreme", case, x_zp, y_zp)
    x = np.where(rng.random(xs) < 0.5, -128, 127).astype(np.int8)
    w = np.where(rng.random(wsh) < 0.5, -128, 127).astype(np.int8)
    w.reshape(wsh[0], -1)[0] = -128  # one channel entirely at -128
    ws = rng.uniform(1e-5, 1e-3, size=wsh[0]).astype(np.float32)
    b = rng.integers(-2**31, 2**31, size=wsh[0], dtype=np.int64).astype(np.int32)  # sums wrap past int32
    for activation in ("none", "relu6"):
        attrs = {**_io(rng, x_zp, y_zp), **geo, "activation": activation}
        _same_as_portable("qconv2d", attrs, [x, w, ws, b], f"case {case}")


@needs_x86
def test_qconv2d_requantization_edges():
    """Multipliers above 1 (f skips output values: the final clamp is needed), below 2^-32 (m = 0), a zero weight
    scale, and relu with the zero point at 127 (lo == hi)."""
    rng = _rng("x86-requant")
    x, w, ws, b = _operands(rng, (1, 6, 8, 8), (20, 6, 3, 3))
    ws[:5] = np.float32(3.0)          # x_scale * 3 / y_scale >> 1
    ws[5:8] = np.float32(1e-30)       # far below 2^-32
    ws[8] = 0.0
    for y_scale, y_zp, act in ((1e-4, 0, "none"), (1e-3, -7, "relu6"), (0.07, 127, "relu"), (0.07, -128, "relu")):
        attrs = {"x_scale": 0.03, "x_zero_point": 3, "y_scale": y_scale, "y_zero_point": y_zp, "activation": act,
                 **_conv(padding=(1, 1, 1, 1))}
        _same_as_portable("qconv2d", attrs, [x, w, ws, b], f"y_scale {y_scale} {act}")


def _threshold_cases(rng: np.random.Generator, multiplier: float, m: int = 24):
    """For each activation: the quantization attrs, m channel scales giving `multiplier` and m biases that place the
    accumulators of w = 1 times x in [-128, 127] across one of the output's clamp thresholds each."""
    for act, y_zp in (("none", 0), ("relu", -5), ("relu6", 20)):
        x_scale, y_scale = 0.5, 0.25
        ws = np.full(m, np.float32(multiplier * y_scale / x_scale), np.float32)
        real = x_scale * float(ws[0]) / y_scale
        lo = y_zp if act != "none" else -128
        hi = 127 if act != "relu6" else min(127, y_zp + int(np.rint(6 / np.float32(y_scale))))
        targets = [lo - y_zp, hi - y_zp, lo - y_zp + 1, hi - y_zp - 1]
        centers = [int(round(t / real)) if real > 0 else 0 for t in targets for _ in range(m // len(targets))]
        b = np.array([c + int(rng.integers(-40, 40)) for c in centers], np.int64)
        b = np.clip(b, -2**31 + 300, 2**31 - 300).astype(np.int32)  # x - zp spans [-128, 127]: no wrap here
        attrs = {"x_scale": x_scale, "x_zero_point": 0, "y_scale": y_scale, "y_zero_point": y_zp, "activation": act}
        yield act, attrs, ws, b


@needs_x86
@pytest.mark.parametrize("multiplier", [2.0**-31, 3.7e-6, 0.0123, 0.4999, 0.5, 0.75, 1.0, 1.5, 3.1, 1000.0])
def test_requantization_across_the_clamp_thresholds(multiplier):
    """Accumulators on every integer around the values where the output meets lo and hi: qlinear with K = 1,
    w = 1 and x over all 256 values, each feature's bias placing the 256 accumulators across one threshold."""
    x = np.arange(-128, 128, dtype=np.int8).reshape(256, 1)
    for act, attrs, ws, b in _threshold_cases(_rng("x86-thresholds", multiplier), multiplier):
        _same_as_portable("qlinear", attrs, [x, np.ones((len(ws), 1), np.int8), ws, b],
                          f"multiplier {multiplier} {act}")


LINEAR = [(1, 1, 1), (1, 1280, 1000), (5, 40, 13), (3, 17, 16), (4, 33, 17), (9, 64, 40), (2, 7, 8), (13, 300, 3)]


@needs_x86
@pytest.mark.parametrize("rows,k,m", LINEAR)
@pytest.mark.parametrize("activation", ["none", "relu6"])
def test_qlinear_gives_the_portable_bits(rows, k, m, activation):
    rng = _rng("x86-linear", rows, k, m, activation)
    x, w, ws, b = _operands(rng, (rows, k), (m, k))
    attrs = {**_io(rng), "activation": activation}
    _same_as_portable("qlinear", attrs, [x, w, ws, b], f"{rows}x{k} -> {m}")
    _same_as_portable("qlinear", attrs, [x, w, ws, None], f"{rows}x{k} -> {m}, no bias")
    if rows > 1:  # (..., K) inputs
        _same_as_portable("qlinear", attrs, [x.reshape(1, rows, k), w, ws, b], "3-D input")


@needs_x86
def test_qlinear_at_the_extremes():
    rng = _rng("x86-linear-extreme")
    x = np.where(rng.random((6, 129)) < 0.5, -128, 127).astype(np.int8)
    w = np.where(rng.random((21, 129)) < 0.5, -128, 127).astype(np.int8)
    w[3] = -128
    ws = rng.uniform(1e-5, 1e-3, size=21).astype(np.float32)
    b = rng.integers(-2**31, 2**31, size=21, dtype=np.int64).astype(np.int32)
    for x_zp, y_zp in ((-128, 127), (127, -128)):
        attrs = {**_io(rng, x_zp, y_zp), "activation": "none"}
        _same_as_portable("qlinear", attrs, [x, w, ws, b], f"zero points {x_zp}, {y_zp}")


@needs_x86
def test_x86_errors_are_the_portable_kernels():
    """The x86 kernels leave their checks to the portable infer: the same messages."""
    rng = _rng("x86-errors")
    x, w, ws, b = _operands(rng, (1, 4, 6, 6), (8, 4, 3, 3))
    attrs = {**_io(rng), **_conv()}
    with pytest.raises(Exception, match=r"w_scale\[0\] must be a finite number >= 0"):
        _C.run_kernel("qconv2d", attrs, [x, w, -ws, b], kernel_set="x86")
    with pytest.raises(Exception, match="too large for a requantization multiplier"):
        _C.run_kernel("qconv2d", {**attrs, "y_scale": 1e-30}, [x, w, ws, b], kernel_set="x86")
    with pytest.raises(Exception, match="features"):
        _C.run_kernel("qlinear", _io(rng), [x.reshape(4, 36), w.reshape(8, 36)[:, :35], ws, b], kernel_set="x86")


# --- qadd (kernels/x86/qadd.cc) -------------------------------------------------------------------------------

def _qadd_attrs(scales: tuple, a_zp: int = -7, b_zp: int = 12, y_zp: int = -3, activation: str = "none") -> dict:
    a_scale, b_scale, y_scale = (float(np.float32(v)) for v in scales)
    return {"a_scale": a_scale, "a_zero_point": a_zp, "b_scale": b_scale, "b_zero_point": b_zp, "y_scale": y_scale,
            "y_zero_point": y_zp, "activation": activation}


def _i8(rng: np.random.Generator, shape) -> np.ndarray:
    return rng.integers(-128, 128, size=shape).astype(np.int8)


# (a_scale, b_scale, y_scale): each input's multiplier its_scale / (2 * max) and the output's 2 * max / (2^20 * y)
QADD_SCALES = [
    (0.031, 0.017, 0.05),   # typical
    (0.5, 1e-4, 0.1),       # a_scale >> b_scale: b's multiplier ~1e-4
    (1e-4, 0.5, 0.1),       # the other way round
    (0.02, 0.02, 0.02),     # equal: both input multipliers 1/2
    (0.05, 0.03, 1e-4),     # tiny y_scale: nearly every output saturates at the clamp
    (0.05, 0.03, 1e-8),     # the output multiplier ~9.5: above 1 (f skips output values)
    (1e5, 3e4, 0.05),       # ~3.8, with relu6's hi inside int8: the final clamp (not the packs' saturation)
    (0.05, 0.03, 1000.0),   # large y_scale: the output multiplier ~5e-11, every output the zero point
    (2.0**-25, 1.0, 1.0),   # a's multiplier 2^-26: (d << 20) * 2^-26 = d / 64, ties (+-32) at the input step
    (1.0, 1.0, 2.0),        # output multiplier 2^-20 of (da + db) << 19: a tie for every odd da + db
    (1e-12, 0.1, 0.1),      # a's multiplier below 2^-32: m = 0
]


@needs_x86
@pytest.mark.parametrize("n", [1, 15, 16, 17, 31, 33, 1000, 16387])
@pytest.mark.parametrize("activation", ["none", "relu", "relu6"])
def test_qadd_gives_the_portable_bits(n, activation):
    """Element by element, sizes around the 16-value step (the scalar tail) and across thread chunks."""
    rng = _rng("x86-qadd", n, activation)
    a, b = _i8(rng, n), _i8(rng, n)
    for i, scales in enumerate(QADD_SCALES):
        zps = [int(v) for v in rng.integers(-128, 128, size=3)]
        attrs = _qadd_attrs(scales, *zps, activation=activation)
        _same_as_portable("qadd", attrs, [a, b], f"n {n}, scales {i}, zero points {zps}")


@needs_x86
@pytest.mark.parametrize("zps", [(-128, -128, -128), (127, 127, 127), (-128, 127, 127), (127, -128, -128),
                                 (0, 0, 127), (127, -128, 0)])
@pytest.mark.parametrize("activation", ["none", "relu", "relu6"])
def test_qadd_at_the_extreme_zero_points(zps, activation):
    """Inputs at -128 and 127 with the zero points at either end: |q - zp| = 255, the largest input step; relu with
    y_zero_point 127 clamps every output to 127 (lo == hi)."""
    rng = _rng("x86-qadd-zp", zps, activation)
    shape = (2, 8, 11, 13)
    a = np.where(rng.random(shape) < 0.5, -128, 127).astype(np.int8)
    b = np.where(rng.random(shape) < 0.5, -128, 127).astype(np.int8)
    for i, scales in enumerate(QADD_SCALES):
        attrs = _qadd_attrs(scales, *zps, activation=activation)
        _same_as_portable("qadd", attrs, [a, b], f"scales {i}, extremes")
        _same_as_portable("qadd", attrs, [_i8(rng, shape), _i8(rng, shape)], f"scales {i}, random")


@needs_x86
@pytest.mark.parametrize("scales", [QADD_SCALES[i] for i in (0, 1, 4, 5, 6, 8, 9)])
def test_qadd_every_pair_of_int8_values(scales):
    """All 256 x 256 (a, b) pairs, for several zero points and every activation."""
    v = np.arange(-128, 128, dtype=np.int8)
    a, b = np.repeat(v, 256).reshape(4, 64, 256), np.tile(v, 256).reshape(4, 64, 256)
    for zps in ((0, 0, 0), (-128, 127, -5), (33, -90, 127)):
        for activation in ("none", "relu", "relu6"):
            attrs = _qadd_attrs(scales, *zps, activation=activation)
            _same_as_portable("qadd", attrs, [a, b], f"zero points {zps}, {activation}")


QADD_BROADCAST = [
    # a shape, b shape: the x86 paths
    ((2, 16, 9, 7), (1,)),               # b a scalar
    ((1,), (2, 16, 9, 7)),               # a a scalar
    ((3, 5, 7), (1, 1, 1, 1)),           # a scalar of higher rank: the output (1, 3, 5, 7)
    ((1,), (1, 1)),                      # one value
    ((2, 24, 7, 7), (24, 1, 1)),         # per channel, 49 values a run (3 steps + 1)
    ((1, 24, 7, 7), (1, 24, 1, 1)),
    ((24, 1, 1), (2, 24, 7, 7)),         # a per channel
    ((2, 5, 4, 4), (1, 5, 1, 1)),        # runs of exactly 16
    ((2, 6, 3, 17), (6, 3, 1)),          # b's two dimensions one block, runs of 17
    ((3, 40), (3, 1)),                   # rows
    # the portable kernel's cases
    ((4, 9), (9,)),                      # b varies along the last dimension
    ((3, 1), (1, 40)),                   # both broadcast
    ((2, 8, 3, 3), (8, 1, 1)),           # per channel, runs of 9 < 16
    ((2, 5, 3, 1, 6), (5, 3, 1, 1)),     # b's dimensions merged into one block, runs of 6 < 16
    ((2, 4, 5, 20), (1, 4, 1, 20)),      # b varies along two separate blocks of dimensions
    ((0, 4), (4,)),                      # no values
    ((0, 4), (0, 4)),
]


@needs_x86
@pytest.mark.parametrize("case", range(len(QADD_BROADCAST)))
@pytest.mark.parametrize("activation", ["none", "relu6"])
def test_qadd_broadcasts_give_the_portable_bits(case, activation):
    sa, sb = QADD_BROADCAST[case]
    rng = _rng("x86-qadd-broadcast", case, activation)
    a, b = _i8(rng, sa), _i8(rng, sb)
    for i, scales in enumerate(QADD_SCALES):
        zps = [int(v) for v in rng.integers(-128, 128, size=3)]
        want = _same_as_portable("qadd", _qadd_attrs(scales, *zps, activation=activation), [a, b],
                                 f"{sa} + {sb}, scales {i}")
        assert want.shape == np.broadcast_shapes(sa, sb)


@needs_x86
def test_qadd_errors_are_the_portable_kernels():
    a = np.zeros((1, 2, 3, 3), np.int8)
    attrs = _qadd_attrs(QADD_SCALES[0])
    bad = [(attrs, [a, np.zeros((1, 3, 3, 3), np.int8)], "cannot be broadcast"),
           ({**attrs, "a_scale": 1e20, "y_scale": 1e-20}, [a, a], "too large for a requantization multiplier"),
           ({**attrs, "b_scale": 0.0}, [a, a], "b_scale must be a finite number > 0"),
           (attrs, [a, a.astype(np.float32)], "b"),
           ({**attrs, "activation": "gelu"}, [a, a], "activation")]
    for node_attrs, inputs, match in bad:
        with pytest.raises(Exception, match=match) as portable:
            _C.run_kernel("qadd", node_attrs, inputs, kernel_set="portable")
        with pytest.raises(Exception, match=match) as x86:
            _C.run_kernel("qadd", node_attrs, inputs, kernel_set="x86")
        assert str(x86.value) == str(portable.value)


# --- qmean ------------------------------------------------------------------------------------------------------

QMEAN = [
    # input shape, axes, keepdim
    ((1, 128, 28, 28), [2, 3], 1),   # SimpleNet's global pool: runs of 784 (64-byte steps, a 16-byte tail)
    ((2, 5, 7, 7), [2, 3], 0),       # 49: one 32-byte step and a tail
    ((1, 3, 4, 8), [-1, -2], 1),     # 32 exactly, negative axes
    ((3, 6, 1, 1), [2, 3], 1),       # one value a run
    ((2, 9, 100), [2], 0),           # the last axis of a 3-D input
    ((4, 130), None, 0),             # every axis: one run of 520
    ((1, 2, 64, 65), [1, 2, 3], 1),  # three trailing axes: 8320
    ((2, 6, 5, 7), [1], 1),          # not trailing: the portable kernel
    ((2, 6, 5, 7), [0, 2, 3], 0),    # not contiguous: the portable kernel
    ((1, 4, 0, 3), [2, 3], 1),       # empty runs: the portable kernel
]


@needs_x86
@pytest.mark.parametrize("case", range(len(QMEAN)))
@pytest.mark.parametrize("x_zp,y_zp", [(0, 0), (-128, 127), (127, -128), (-7, 11)])
def test_qmean_gives_the_portable_bits(case, x_zp, y_zp):
    shape, axes, keepdim = QMEAN[case]
    rng = _rng("x86-qmean", case, x_zp, y_zp)
    x = rng.integers(-128, 128, size=shape).astype(np.int8)
    attrs = {"keepdim": keepdim, "x_scale": float(np.float32(rng.uniform(0.01, 0.1))), "x_zero_point": x_zp,
             "y_scale": float(np.float32(rng.uniform(0.002, 0.05))), "y_zero_point": y_zp}
    if axes is not None:
        attrs["axes"] = axes
    _same_as_portable("qmean", attrs, [x], f"{shape} over {axes}")
    _same_as_portable("qmean", attrs, [np.full(shape, 127 if x_zp < 0 else -128, np.int8)], "saturated")


@needs_x86
def test_qmean_errors_are_the_portable_kernels():
    x = np.zeros((1, 2, 3, 3), np.int8)
    base = {"axes": [2, 3], "x_scale": 0.1, "x_zero_point": 0, "y_zero_point": 0}
    with pytest.raises(Exception, match="y_scale must be a finite number > 0"):
        _C.run_kernel("qmean", {**base, "y_scale": 0.0}, [x], kernel_set="x86")
    with pytest.raises(Exception, match="too large for a requantization multiplier"):
        _C.run_kernel("qmean", {**base, "x_scale": 1e20, "y_scale": 1e-20}, [x], kernel_set="x86")
    with pytest.raises(Exception, match="appears more than once"):
        _C.run_kernel("qmean", {**base, "axes": [2, -2], "y_scale": 0.1}, [x], kernel_set="x86")


# --- which CPUs take the set -----------------------------------------------------------------------------------

def test_x86_int8_kernels_are_registered_exactly_where_the_cpu_has_avx2_and_fma():
    flags = _cpu_flags()
    if not flags:
        pytest.skip("no /proc/cpuinfo")
    has = {"avx2", "fma"} <= flags
    assert all(_x86_has(op) == has for op in ("qconv2d", "qlinear", "qadd", "qmean"))


def _int8_model(rng: np.random.Generator) -> tuple[bytes, np.ndarray]:
    """x (1, 6, 13, 15) int8 -> qconv2d 3x3 stride 2 -> depthwise qconv2d 3x3 -> 1x1 qconv2d -> reshape ->
    qlinear -> int8 (1, 5)."""
    g = DtmBuilder()
    x = g.input("x", [1, 6, 13, 15], "int8")
    io = {"x_scale": 0.05, "x_zero_point": -3, "y_scale": 0.1, "y_zero_point": 4}
    c1, c2, c3 = g.tensor("c1", [1, 8, 7, 8], "int8"), g.tensor("c2", [1, 8, 7, 8], "int8"), \
        g.tensor("c3", [1, 4, 7, 8], "int8")
    flat, y = g.tensor("flat", [1, 224], "int8"), g.output("y", [1, 5], "int8")

    def weights(name: str, shape: tuple) -> list[int]:
        return [g.const(f"{name}_w", rng.integers(-128, 128, shape).astype(np.int8)),
                g.const(f"{name}_s", rng.uniform(0.002, 0.01, shape[0]).astype(np.float32)),
                g.const(f"{name}_b", rng.integers(-500, 500, shape[0]).astype(np.int32))]

    g.node("qconv2d", [x, *weights("c1", (8, 6, 3, 3))], [c1],
           {**io, **_conv((2, 2), (1, 1, 1, 1)), "activation": "relu"})
    g.node("qconv2d", [c1, *weights("c2", (8, 1, 3, 3))], [c2],
           {**io, **_conv(padding=(1, 1, 1, 1), groups=8), "activation": "relu6"})
    g.node("qconv2d", [c2, *weights("c3", (4, 8, 1, 1))], [c3], {**io, **_conv(), "activation": "none"})
    g.node("reshape", [c3], [flat], {"shape": [1, 224]})
    g.node("qlinear", [flat, *weights("l", (5, 224))], [y], {**io, "activation": "none"})
    return g.build(), rng.integers(-128, 128, (1, 6, 13, 15)).astype(np.int8)


@needs_x86
def test_sessions_pick_x86_int8_kernels_when_vnni_and_amx_are_excluded(tmp_path: Path):
    import dtorch.runtime as rt

    data, x = _int8_model(_rng("x86-session"))
    want = rt.InferenceSession(data, kernels="portable").run(None, {"x": x})[0]
    s = rt.InferenceSession(data, threads=2, exclude_kernel_sets=["amx", "vnni"])
    chosen = {(op, ks) for op, _, ks in s.node_kernels() if op in ("qconv2d", "qlinear")}
    assert chosen == {("qconv2d", "x86"), ("qlinear", "x86")}
    np.testing.assert_array_equal(s.run(None, {"x": x})[0], want)


@pytest.mark.skipif(shutil.which("qemu-x86_64") is None or not _x86_has("qconv2d"),
                    reason="needs qemu-x86_64 (scripts/setup.sh) and an x86-64 host with the x86 set")
def test_only_cpus_with_avx2_and_fma_take_the_x86_int8_kernels(tmp_path: Path):
    """dtorch-run under QEMU's CPU models: qemu64 (no AVX) runs the portable int8 kernels; Haswell (AVX2 + FMA, no
    AVX-512: what an AVX2-only CPU runs) takes the x86 qconv2d and qlinear, never vnni or amx; both give the host's bits."""
    build = scons_host("dtorch-run")
    data, x = _int8_model(_rng("x86-qemu"))
    model, inp = tmp_path / "m.dtm", tmp_path / "x.npy"
    model.write_bytes(data)
    np.save(inp, x)
    outs = {}
    for cpu, want_sets in (("qemu64", {"portable"}), ("Haswell-v4", {"portable", "x86"}), (None, None)):
        out = tmp_path / f"y_{cpu}.npy"
        cmd = [str(build / "dtorch-run"), str(model), "--input", str(inp), "--output", str(out), "--info"]
        if cpu is None:
            cmd += ["--kernels", "portable"]
        else:
            cmd = ["qemu-x86_64", "-cpu", cpu, *cmd]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-1500:]
        kernels = next(line for line in r.stdout.splitlines() if line.startswith("kernels: ")).split()[1:]
        if want_sets is not None:
            assert {k.rsplit(":", 1)[1] for k in kernels} == want_sets, kernels
            if cpu == "Haswell-v4":
                assert {k for k in kernels if k.startswith(("qconv2d", "qlinear"))} >= {"qconv2d:x86", "qlinear:x86"}
        outs[cpu] = np.load(out)
    np.testing.assert_array_equal(outs["qemu64"], outs[None])
    np.testing.assert_array_equal(outs["Haswell-v4"], outs[None])
