"""The vnni set's qconv2d (kernels/vnni/qconv2d.cc: AVX-512 VNNI) bit for bit against the portable kernel, run by
name (`run_kernel(..., kernel_set="vnni")`), on the x86 set's cases (test_x86_int8.py: every geometry, extreme
operands, requantization edges) and on the shapes the vnni kernel's own paths turn on: the virtual output columns of
padded and strided convolutions (rows narrower than a vector, one column wide, a vector across several rows), the
stride-2 phase split of 32-column chunks, panels of 1 to 6 channels and blocks of 1 to 4 vectors, MobileNetV2's
pointwise layers, the depthwise dot path (1 to 8 columns, strides 1 and 2, tall kernels, row and column padding,
passes of 4 rows and of 4 row pairs, the last pass short) and its fallbacks, and the two requantization paths (shift
32 to 54 and the rest) at their boundaries. Then qadd
(kernels/vnni/qadd.cc) on the x86 set's qadd cases: sizes around its 16-value step, every scale set (the fast path and
the scales that fall back), every pair of int8 values, the broadcasts (a scalar operand here, the rest falling back)."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import _C
from .test_x86_int8 import CONV, QADD_BROADCAST, QADD_SCALES, _conv, _i8, _io, _operands, _qadd_attrs, _rng, _threshold_cases
from .test_x86_int8 import _same_as_portable as _same_in_set


def _vnni_has() -> bool:
    return any(o == "qconv2d" and d == "int8" and s == "vnni" for o, d, s, _ in _C.registered_kernel_sets())


needs_vnni = pytest.mark.skipif(not _vnni_has(), reason="this CPU has no AVX-512 VNNI: the vnni set is absent")


def _same_as_portable(attrs: dict, inputs: list, what: str) -> np.ndarray:
    return _same_in_set("qconv2d", attrs, inputs, what, kernel_set="vnni")


VNNI = [
    ((1, 16, 20, 20), (96, 16, 1, 1), _conv()),                                     # MobileNetV2's 16 -> 96
    ((1, 96, 7, 7), (20, 96, 1, 1), _conv()),                                       # 49 positions: 4 vectors
    ((1, 32, 3, 3), (7, 32, 1, 1), _conv()),                                        # one vector, 9 lanes
    ((1, 8, 70, 1), (5, 8, 3, 1), _conv(padding=(1, 1, 0, 0))),                     # one column: a row a lane
    ((1, 8, 9, 2), (11, 8, 3, 3), _conv(padding=(1, 1, 1, 1))),                    # wq 4 > ow 2
    ((1, 5, 30, 75), (13, 5, 3, 3), _conv((2, 2), (1, 1, 1, 1))),                   # 32-column split + a tail
    ((1, 5, 30, 64), (4, 5, 3, 3), _conv((2, 2), (0, 1, 0, 1))),                    # even padding, 2 chunks
    ((1, 3, 37, 96), (32, 3, 3, 3), _conv((2, 2), (1, 1, 1, 1))),                   # a stem
    ((2, 12, 11, 17), (18, 4, 3, 3), _conv((2, 1), (1, 2, 0, 1), (1, 2), groups=3)),  # groups, dilation
    ((1, 13, 6, 6), (1, 13, 2, 2), _conv()),                                        # one output channel
    ((1, 4, 16, 16), (4, 4, 1, 1), _conv((2, 2))),                                  # 1x1 stride 2
    ((1, 9, 5, 40), (6, 9, 1, 5), _conv((1, 4), (0, 0, 2, 2))),                     # column stride 4: scalar copy
]

DEPTHWISE = [
    ((1, 3, 9, 40), 1, 1, 1, 0), ((1, 3, 9, 40), 3, 3, 1, 1), ((1, 3, 9, 40), 3, 3, 2, 1),
    ((2, 5, 17, 33), 3, 3, 2, 1), ((1, 4, 12, 31), 5, 5, 1, 2), ((1, 4, 12, 31), 5, 5, 2, 2),
    ((1, 2, 10, 50), 3, 7, 1, 3), ((1, 2, 10, 50), 2, 8, 2, 3), ((1, 2, 6, 6), 3, 4, 1, 0),
    ((1, 2, 4, 3), 3, 3, 1, 2),    # more padding than input columns
    ((1, 2, 40, 20), 16, 3, 1, 1),  # 16 kernel rows: the dot path's most
    ((1, 2, 40, 20), 17, 3, 1, 1),  # 17: the vpmulld path
    ((1, 2, 9, 70), 3, 9, 1, 4),    # 9 columns: the vpmulld path
    ((1, 3, 21, 7), 3, 3, 1, 1),    # pair mode, 8 rows a pass: 3 passes, the last of 5 rows
    ((1, 3, 19, 8), 5, 5, 2, 2),    # pair mode, 5x5, stride 2
    ((1, 2, 11, 23), 3, 3, 1, 1),   # 4 rows a pass: the last of 3; a 7-column tail
    ((1, 2, 14, 14), 3, 3, 2, 1),   # MobileNetV2's 14 x 14 stride 2: 7 rows
    ((1, 2, 3, 30), 3, 3, 1, 2),    # 3 input rows: most rows of a pass are padding
]


@needs_vnni
@pytest.mark.parametrize("case", range(len(CONV)))
@pytest.mark.parametrize("activation", ["none", "relu", "relu6"])
def test_x86_cases_give_the_portable_bits(case, activation):
    xs, wsh, geo = CONV[case]
    rng = _rng("vnni-x86case", case, activation)
    x, w, ws, b = _operands(rng, xs, wsh)
    attrs = {**_io(rng), **geo, "activation": activation}
    _same_as_portable(attrs, [x, w, ws, b], f"case {case}")
    _same_as_portable(attrs, [x, w, ws, None], f"case {case}, no bias")


@needs_vnni
@pytest.mark.parametrize("case", range(len(VNNI)))
@pytest.mark.parametrize("activation", ["none", "relu6"])
def test_vnni_paths_give_the_portable_bits(case, activation):
    xs, wsh, geo = VNNI[case]
    rng = _rng("vnni-case", case, activation)
    x, w, ws, b = _operands(rng, xs, wsh)
    attrs = {**_io(rng), **geo, "activation": activation}
    _same_as_portable(attrs, [x, w, ws, b], f"case {case}")


@needs_vnni
@pytest.mark.parametrize("case", range(len(DEPTHWISE)))
def test_depthwise_gives_the_portable_bits(case):
    xs, kh, kw, stride, pad = DEPTHWISE[case]
    c = xs[1]
    rng = _rng("vnni-dw", case)
    x, w, ws, b = _operands(rng, xs, (c, 1, kh, kw))
    for activation, geo in (("none", _conv((stride, stride), (pad, pad, pad, pad), groups=c)),
                            ("relu", _conv((1, stride), (pad, 0, 0, pad), groups=c)),
                            ("relu6", _conv((stride, stride), (0, pad, pad, 0), (2, 1), groups=c))):
        attrs = {**_io(rng), **geo, "activation": activation}
        _same_as_portable(attrs, [x, w, ws, b], f"case {case} {activation}")


@needs_vnni
@pytest.mark.parametrize("x_zp,y_zp", [(-128, -128), (127, 127), (-128, 127), (127, -128)])
@pytest.mark.parametrize("case", [0, 5, 7])
def test_extremes(case, x_zp, y_zp):
    """Weights and inputs at -128 and 127 with the zero points at either end, biases that wrap past int32."""
    xs, wsh, geo = VNNI[case]
    rng = _rng("vnni-extreme", case, x_zp, y_zp)
    x = np.where(rng.random(xs) < 0.5, -128, 127).astype(np.int8)
    w = np.where(rng.random(wsh) < 0.5, -128, 127).astype(np.int8)
    w.reshape(wsh[0], -1)[0] = -128
    ws = rng.uniform(1e-5, 1e-3, size=wsh[0]).astype(np.float32)
    b = rng.integers(-2**31, 2**31, size=wsh[0], dtype=np.int64).astype(np.int32)
    for activation in ("none", "relu6"):
        attrs = {**_io(rng, x_zp, y_zp), **geo, "activation": activation}
        _same_as_portable(attrs, [x, w, ws, b], f"case {case}")
        dw = {**attrs, **_conv(padding=(1, 1, 1, 1), groups=xs[1])}
        _same_as_portable(dw, [x, w[: xs[1], :1, :1, :1].repeat(3, 2).repeat(3, 3), ws[: xs[1]], b[: xs[1]]],
                          f"depthwise of case {case}")


# 2^-24 and 2^-1 bound the fast epilogue (shift 54 .. 32); 2^-31 .. 2^-32 the zero multiplier; above 1: s < 31.
MULTIPLIERS = [2.0**-33, 2.0**-31, 3.7e-9, 2.0**-24 * 0.999, 2.0**-24, 2.0**-24 * 1.001, 3.7e-6, 0.0123,
               0.4999, 0.5, 0.75, 1.0, 1.5, 3.1, 1000.0]


@needs_vnni
@pytest.mark.parametrize("multiplier", MULTIPLIERS)
def test_requantization_on_every_accumulator_near_the_clamps(multiplier):
    """A 1x1 convolution with w = 1 over all 256 input values (and a depthwise one): each output channel's bias
    places its 256 accumulators across one of the clamp thresholds, at every activation."""
    x = np.arange(-128, 128, dtype=np.int8).reshape(1, 1, 16, 16)
    m = 24
    for act, attrs, ws, b in _threshold_cases(_rng("vnni-thresholds", multiplier), multiplier, m):
        _same_as_portable({**attrs, **_conv()}, [x, np.ones((m, 1, 1, 1), np.int8), ws, b], f"{multiplier} {act}")
        xd = np.repeat(x, m, axis=1)
        _same_as_portable({**attrs, **_conv(groups=m)}, [xd, np.ones((m, 1, 1, 1), np.int8), ws, b],
                          f"depthwise {multiplier} {act}")


@needs_vnni
def test_constant_weights_with_runtime_scales_and_bias():
    """prepare keeps the channel records only where the scales and bias are constants: a node whose scales are a
    graph input runs on records made at run time."""
    from dtm_builder import DtmBuilder

    import dtorch.runtime as rt

    rng = _rng("vnni-runtime-scales")
    g = DtmBuilder()
    x = g.input("x", [1, 8, 9, 9], "int8")
    ws_in = g.input("ws", [12], "float32")
    y = g.output("y", [1, 12, 9, 9], "int8")
    wv, bv = rng.integers(-128, 128, (12, 8, 3, 3)).astype(np.int8), rng.integers(-500, 500, 12).astype(np.int32)
    w, b = g.const("w", wv), g.const("b", bv)
    attrs = {"x_scale": 0.05, "x_zero_point": -3, "y_scale": 0.1, "y_zero_point": 4, "activation": "relu",
             **_conv(padding=(1, 1, 1, 1))}
    g.node("qconv2d", [x, w, ws_in, b], [y], attrs)
    xv = rng.integers(-128, 128, (1, 8, 9, 9)).astype(np.int8)
    wsv = rng.uniform(0.002, 0.01, 12).astype(np.float32)
    data = g.build()
    want = rt.InferenceSession(data, kernels="portable").run(None, {"x": xv, "ws": wsv})[0]
    # amx (where present) outranks vnni and hands a 3x3 convolution to it: left out, the session names vnni.
    assert rt.InferenceSession(data, exclude_kernel_sets=["amx"]).node_kernels() == [("qconv2d", "int8", "vnni")]
    got = rt.InferenceSession(data, threads=2).run(None, {"x": xv, "ws": wsv})[0]
    np.testing.assert_array_equal(got, want)


# --- qadd ------------------------------------------------------------------------------------------------------


def _vnni_qadd() -> bool:
    return any(o == "qadd" and d == "int8" and s == "vnni" for o, d, s, _ in _C.registered_kernel_sets())


@needs_vnni
@pytest.mark.parametrize("n", [1, 15, 16, 17, 33, 1000, 16387, 40000])
@pytest.mark.parametrize("activation", ["none", "relu", "relu6"])
def test_qadd_gives_the_portable_bits(n, activation):
    assert _vnni_qadd()
    rng = _rng("vnni-qadd", n, activation)
    a, b = _i8(rng, n), _i8(rng, n)
    for i, scales in enumerate(QADD_SCALES):
        zps = [int(v) for v in rng.integers(-128, 128, size=3)]
        _same_in_set("qadd", _qadd_attrs(scales, *zps, activation=activation), [a, b], f"n {n}, scales {i}",
                     kernel_set="vnni")


@needs_vnni
@pytest.mark.parametrize("scales", QADD_SCALES)
def test_qadd_every_pair_of_int8_values(scales):
    v = np.arange(-128, 128, dtype=np.int8)
    a, b = np.repeat(v, 256).reshape(4, 64, 256), np.tile(v, 256).reshape(4, 64, 256)
    for zps in ((0, 0, 0), (-128, 127, -5), (127, -128, 127), (33, -90, -128)):
        for activation in ("none", "relu", "relu6"):
            _same_in_set("qadd", _qadd_attrs(scales, *zps, activation=activation), [a, b], f"{zps} {activation}",
                         kernel_set="vnni")


@needs_vnni
@pytest.mark.parametrize("case", range(len(QADD_BROADCAST)))
def test_qadd_broadcasts_give_the_portable_bits(case):
    sa, sb = QADD_BROADCAST[case]
    rng = _rng("vnni-qadd-broadcast", case)
    a, b = _i8(rng, sa), _i8(rng, sb)
    for i, scales in enumerate(QADD_SCALES):
        zps = [int(v) for v in rng.integers(-128, 128, size=3)]
        want = _same_in_set("qadd", _qadd_attrs(scales, *zps, activation="relu6"), [a, b], f"{sa} + {sb}, {i}",
                            kernel_set="vnni")
        assert want.shape == np.broadcast_shapes(sa, sb)


@needs_vnni
def test_qadd_errors_are_the_portable_kernels():
    a = np.zeros((1, 2, 3, 3), np.int8)
    attrs = _qadd_attrs(QADD_SCALES[0])
    with pytest.raises(Exception, match="cannot be broadcast"):
        _C.run_kernel("qadd", attrs, [a, np.zeros((1, 3, 3, 3), np.int8)], kernel_set="vnni")
    with pytest.raises(Exception, match="too large for a requantization multiplier"):
        _C.run_kernel("qadd", {**attrs, "a_scale": 1e20, "y_scale": 1e-20}, [a, a], kernel_set="vnni")
