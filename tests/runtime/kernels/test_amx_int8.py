"""The amx set's qconv2d (kernels/amx/qconv2d.cc: AMX tiles, tdpbsud) bit for bit against the portable kernel, run by
name (`run_kernel(..., kernel_set="amx")`, 1, 2 and 3 threads and unprepared): pointwise layers across the K chunking
(K = 1 to 1000: one chunk of 4 to 64 bytes, equal chunks, a padded last chunk), output channels around the 16-row
panels, positions around the 64-position blocks, batches, every activation, operands and zero points at the int8
extremes with biases that wrap, both requantization paths (store64's packs and requantize16) at their boundaries,
and run-time scales. Dense and grouped convolutions with 16 or more channels a group (strides, padding, dilation,
chunks of 4 to 16 channel blocks a tap, virtual output columns, up to 64 taps). Depthwise and narrow convolutions
are handed to the vnni set's kernel and still give the portable bits. Then which CPUs register the set (AMX-TILE + AMX-INT8 + AVX-512
VNNI) and what a session picks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from .helpers import _C
from .test_vnni_int8 import MULTIPLIERS
from .test_x86_int8 import CONV, _conv, _io, _operands, _rng, _threshold_cases
from .test_x86_int8 import _same_as_portable as _same_in_set


def _amx_has() -> bool:
    return any(o == "qconv2d" and d == "int8" and s == "amx" for o, d, s, _ in _C.registered_kernel_sets())


def _cpu_flags() -> set[str]:
    text = Path("/proc/cpuinfo").read_text()
    return set(next((ln.split(":", 1)[1].split() for ln in text.splitlines() if ln.startswith("flags")), []))


needs_amx = pytest.mark.skipif(not _amx_has(), reason="this CPU has no AMX-INT8 (Sapphire Rapids or later): the amx "
                                                      "set is absent")


def _same_as_portable(attrs: dict, inputs: list, what: str) -> np.ndarray:
    return _same_in_set("qconv2d", attrs, inputs, what, kernel_set="amx")


POINTWISE = [  # (N, C, H, W), O
    ((1, 16, 20, 20), 96),    # MobileNetV2's 16 -> 96: one 16-byte chunk, 7 blocks (the last of 16 positions)
    ((1, 1, 9, 9), 5),        # K = 1: one 4-byte chunk, 3 zero channels; 81 positions
    ((1, 3, 8, 8), 17),       # K = 3; 17 channels: a panel of 1
    ((1, 64, 8, 8), 16),      # K = 64: one full chunk, one full block, one full panel
    ((1, 65, 5, 13), 33),     # K = 65: two chunks of 36 (7 zero channels)
    ((1, 96, 7, 7), 24),      # two chunks of 48; 49 positions
    ((1, 160, 7, 7), 40),     # three chunks of 56
    ((1, 1000, 2, 3), 7),     # 16 chunks of 64 (24 zero channels), 6 positions
    ((2, 24, 11, 11), 144),   # a batch of 2
    ((1, 320, 1, 1), 130),    # one position
    ((3, 40, 16, 8), 15),     # 128 positions: two full blocks, 3 images
]


@needs_amx
@pytest.mark.parametrize("case", range(len(POINTWISE)))
@pytest.mark.parametrize("activation", ["none", "relu", "relu6"])
def test_pointwise_gives_the_portable_bits(case, activation):
    xs, o = POINTWISE[case]
    rng = _rng("amx-pw", case, activation)
    x, w, ws, b = _operands(rng, xs, (o, xs[1], 1, 1))
    attrs = {**_io(rng), **_conv(), "activation": activation}
    _same_as_portable(attrs, [x, w, ws, b], f"case {case}")
    _same_as_portable(attrs, [x, w, ws, None], f"case {case}, no bias")


DENSE = [  # (N, C, H, W), (O, C / groups, kh, kw), geometry: the dense path (16 or more channels a group)
    ((1, 16, 12, 12), (24, 16, 3, 3), _conv(padding=(1, 1, 1, 1))),                  # 9 taps of one 16-byte chunk
    ((1, 32, 29, 31), (64, 32, 3, 3), _conv((2, 2), (1, 1, 1, 1))),                  # SimpleNet's: the phase split
    ((1, 64, 14, 14), (20, 64, 3, 3), _conv(padding=(1, 1, 1, 1))),                  # one full 64-byte chunk a tap
    ((1, 80, 9, 10), (33, 80, 3, 3), _conv(padding=(0, 1, 1, 0))),                   # 2 chunks of 10 blocks a tap
    ((2, 17, 7, 23), (5, 17, 3, 2), _conv((1, 2), (1, 1, 0, 1), (2, 1))),             # 17 channels, dilation, batch
    ((1, 32, 16, 16), (48, 16, 3, 3), _conv((2, 2), (1, 1, 1, 1), groups=2)),        # grouped
    ((1, 32, 16, 16), (40, 32, 1, 1), _conv((2, 2))),                                # 1x1 stride 2
    ((1, 24, 10, 10), (16, 24, 1, 1), _conv(padding=(1, 1, 1, 1))),                  # 1x1 padded
    ((1, 16, 20, 4), (8, 16, 5, 5), _conv(padding=(2, 2, 2, 2))),                    # 4 columns: a vector over rows
    ((1, 16, 11, 11), (4, 16, 8, 8), _conv(padding=(3, 4, 3, 4))),                   # 64 taps: the most it takes
    ((1, 16, 11, 11), (4, 16, 9, 9), _conv(padding=(4, 4, 4, 4))),                   # 81 taps: vnni's
    ((1, 8, 12, 12), (24, 8, 3, 3), _conv(padding=(1, 1, 1, 1))),                    # 8 channels: vnni's
]


@needs_amx
@pytest.mark.parametrize("case", range(len(DENSE)))
@pytest.mark.parametrize("activation", ["none", "relu6"])
def test_dense_convolutions_give_the_portable_bits(case, activation):
    xs, wsh, geo = DENSE[case]
    rng = _rng("amx-dense", case, activation)
    x, w, ws, b = _operands(rng, xs, wsh)
    attrs = {**_io(rng), **geo, "activation": activation}
    _same_as_portable(attrs, [x, w, ws, b], f"case {case}")
    _same_as_portable(attrs, [x, w, ws, None], f"case {case}, no bias")


@needs_amx
@pytest.mark.parametrize("case", range(len(CONV)))
def test_x86_cases_give_the_portable_bits(case):
    """The x86 set's convolution cases (3x3, strides, padding, dilation, groups, depthwise, 1x1 strided): the dense
    path where a group has 16 channels or more, the vnni set's kernel for the rest."""
    xs, wsh, geo = CONV[case]
    rng = _rng("amx-other", case)
    x, w, ws, b = _operands(rng, xs, wsh)
    _same_as_portable({**_io(rng), **geo, "activation": "relu6"}, [x, w, ws, b], f"case {case}")


@needs_amx
@pytest.mark.parametrize("x_zp,y_zp", [(-128, -128), (127, 127), (-128, 127), (127, -128)])
@pytest.mark.parametrize("case", ["pw0", "pw4", "pw7", "dense1", "dense3"])
def test_extremes(case, x_zp, y_zp):
    """Weights and inputs at -128 and 127, the zero points at either end, biases that wrap past int32."""
    if case.startswith("pw"):
        xs, o = POINTWISE[int(case[2:])]
        wsh, geo = (o, xs[1], 1, 1), _conv()
    else:
        xs, wsh, geo = DENSE[int(case[5:])]
    rng = _rng("amx-extreme", case, x_zp, y_zp)
    x = np.where(rng.random(xs) < 0.5, -128, 127).astype(np.int8)
    w = np.where(rng.random(wsh) < 0.5, -128, 127).astype(np.int8)
    w[0] = -128
    ws = rng.uniform(1e-5, 1e-3, size=wsh[0]).astype(np.float32)
    b = rng.integers(-2**31, 2**31, size=wsh[0], dtype=np.int64).astype(np.int32)
    for activation in ("none", "relu6"):
        attrs = {**_io(rng, x_zp, y_zp), **geo, "activation": activation}
        _same_as_portable(attrs, [x, w, ws, b], f"case {case}")


@needs_amx
@pytest.mark.parametrize("multiplier", MULTIPLIERS)
def test_requantization_on_every_accumulator_near_the_clamps(multiplier):
    """w = 1 over all 256 input values: each channel's bias puts its 256 accumulators across one of the clamp
    thresholds (both store64 paths: the packed narrowing for shifts 32 to 54, requantize16 for the rest)."""
    x = np.arange(-128, 128, dtype=np.int8).reshape(1, 1, 16, 16)
    for act, attrs, ws, b in _threshold_cases(_rng("amx-thresholds", multiplier), multiplier):
        _same_as_portable({**attrs, **_conv()}, [x, np.ones((len(ws), 1, 1, 1), np.int8), ws, b],
                          f"{multiplier} {act}")


@needs_amx
def test_sessions_take_amx_for_pointwise_layers_with_runtime_scales():
    """A session picks amx for int8 qconv2d; with the scales a graph input, prepare packs the weights only and the
    channel records are made at run time. Excluding amx gives vnni the node, with the same bits."""
    from dtm_builder import DtmBuilder

    import dtorch.runtime as rt

    rng = _rng("amx-session")
    g = DtmBuilder()
    x = g.input("x", [2, 40, 9, 11], "int8")
    ws_in = g.input("ws", [70], "float32")
    y = g.output("y", [2, 70, 9, 11], "int8")
    w = g.const("w", rng.integers(-128, 128, (70, 40, 1, 1)).astype(np.int8))
    b = g.const("b", rng.integers(-5000, 5000, 70).astype(np.int32))
    attrs = {"x_scale": 0.05, "x_zero_point": -3, "y_scale": 0.1, "y_zero_point": 4, "activation": "relu",
             **_conv()}
    g.node("qconv2d", [x, w, ws_in, b], [y], attrs)
    feeds = {"x": rng.integers(-128, 128, (2, 40, 9, 11)).astype(np.int8),
             "ws": rng.uniform(0.002, 0.01, 70).astype(np.float32)}
    data = g.build()
    want = rt.InferenceSession(data, kernels="portable").run(None, feeds)[0]
    s = rt.InferenceSession(data, threads=2)
    assert s.node_kernels() == [("qconv2d", "int8", "amx")]
    np.testing.assert_array_equal(s.run(None, feeds)[0], want)
    v = rt.InferenceSession(data, exclude_kernel_sets=["amx"])
    assert v.node_kernels() == [("qconv2d", "int8", "vnni")]
    np.testing.assert_array_equal(v.run(None, feeds)[0], want)


def test_amx_set_is_registered_only_where_the_cpu_has_it():
    flags = _cpu_flags()
    has = {"amx_tile", "amx_int8", "avx512_vnni", "avx512bw", "avx512vl", "avx512dq"} <= flags
    assert _amx_has() == has
