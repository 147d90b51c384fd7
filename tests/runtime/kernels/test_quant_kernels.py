"""The int8 kernels (quantize, dequantize, qconv2d, qlinear) bit for bit against the NumPy reference of
dtorch/quant/_fixed_point.py, with PyTorch computing the exact integer accumulators (float64 convolutions of small
integers are exact); against PyTorch's float convolution of the dequantized operands within one output step; every
thread count; the clamps of the fused activations; and the errors a hand-written file can cause."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dtorch.quant import _fixed_point as fp

from .helpers import _C, run


def _rng(*key: object) -> np.random.Generator:
    return np.random.default_rng(abs(hash(key)) % 2**32)


# --- the fixed-point arithmetic itself ---------------------------------------------------------------------------

@pytest.mark.parametrize("real", [1e-12, 2.0**-33, 2.0**-32, 3.7e-5, 0.0123, 0.5, 0.75, 0.999999999, 1.0, 1.5, 1234.5])
def test_quantize_multiplier_represents_the_real_multiplier(real):
    m, e = fp.quantize_multiplier(real)
    if real < 2.0**-32:
        assert (m, e) == (0, 0)
        return
    assert 2**30 <= m < 2**31
    assert abs(m * 2.0 ** (e - 31) - real) <= real * 2.0**-31


def test_quantize_multiplier_refuses_what_no_shift_holds():
    for bad in (-1.0, math.inf, math.nan, 2.0**31):
        with pytest.raises(ValueError):
            fp.quantize_multiplier(bad)


def test_multiply_rounds_ties_up_and_saturates():
    m, e = fp.quantize_multiplier(0.5)  # m = 2^30, e = 0: x * 0.5 exactly, ties toward +inf
    got = fp.multiply_by_multiplier(np.array([3, -3, 5, -5, 0, 1, -1]), m, e)
    np.testing.assert_array_equal(got, [2, -1, 3, -2, 0, 1, 0])
    m, e = fp.quantize_multiplier(1024.0)
    assert fp.multiply_by_multiplier(np.array([2**30]), m, e)[0] == 2**31 - 1


# --- quantize / dequantize ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("scale,zp", [(0.05, 0), (0.0173, -17), (1.0, 127), (3e-4, -128), (0.5, 3)])
def test_quantize_matches_reference_and_onnx_rounding(scale, zp):
    rng = _rng("q", scale, zp)
    x = (rng.standard_normal(4000) * 200 * scale).astype(np.float32)
    ties = (np.arange(-40, 40, dtype=np.float32) + 0.5) * np.float32(scale)  # x / scale lands on .5 when exact
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e38, -1e38, 1e-45], np.float32)
    x = np.concatenate([x, ties, special]).reshape(2, -1)
    want = fp.quantize(x, scale, zp)
    for threads in (1, 3):
        got = run("quantize", {"scale": scale, "zero_point": zp}, [x], threads=threads)
        assert got.dtype == np.int8
        np.testing.assert_array_equal(got, want)
    # ONNX QuantizeLinear's definition, spelled out: ties to even, saturate.
    with np.errstate(over="ignore"):
        q = np.rint(x[np.isfinite(x)] / np.float32(scale)).astype(np.float64) + zp
    np.testing.assert_array_equal(want[np.isfinite(x)], np.clip(q, -128, 127).astype(np.int8))
    assert (want[np.isnan(x)] == zp).all()


def test_dequantize_matches_reference():
    q = np.arange(-128, 128, dtype=np.int8).reshape(16, 16)
    for scale, zp in ((0.1, 0), (0.0371, -5), (2.5, 127)):
        got = run("dequantize", {"scale": scale, "zero_point": zp}, [q], threads=2)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, fp.dequantize(q, scale, zp))
        np.testing.assert_array_equal(got, (q.astype(np.float32) - zp) * np.float32(scale))


def test_quantize_dequantize_round_trip_is_within_half_a_step():
    x = np.linspace(-2.9, 2.9, 1001, dtype=np.float32)  # inside the int8 range: no saturation
    scale, zp = 6.0 / 255, -1
    q = run("quantize", {"scale": scale, "zero_point": zp}, [x])
    back = run("dequantize", {"scale": scale, "zero_point": zp}, [q])
    assert np.max(np.abs(back - x)) <= scale / 2 * (1 + 1e-6)


# --- the products ------------------------------------------------------------------------------------------------

def _io(rng: np.random.Generator) -> dict:
    return {"x_scale": float(np.float32(rng.uniform(0.01, 0.05))), "x_zero_point": int(rng.integers(-20, 20)),
            "y_scale": float(np.float32(rng.uniform(0.05, 0.3))), "y_zero_point": int(rng.integers(-10, 10))}


def _operands(rng, x_shape, w_shape):
    x = rng.integers(-128, 128, size=x_shape).astype(np.int8)
    w = rng.integers(-127, 128, size=w_shape).astype(np.int8)
    ws = rng.uniform(0.002, 0.02, size=w_shape[0]).astype(np.float32)
    b = rng.integers(-3000, 3000, size=w_shape[0]).astype(np.int32)
    return x, w, ws, b


def _requantize(acc: np.ndarray, attrs: dict, ws: np.ndarray, axis: int) -> np.ndarray:
    ms, es = zip(*(fp.quantize_multiplier(attrs["x_scale"] * float(s) / attrs["y_scale"]) for s in ws))
    shape = [1] * acc.ndim
    shape[axis] = -1
    lo, hi = fp.QMIN, fp.QMAX
    act = attrs.get("activation", "none")
    if act in ("relu", "relu6"):
        lo = max(lo, attrs["y_zero_point"])
    if act == "relu6":
        hi = min(hi, int(fp.quantize(np.float32(6.0), attrs["y_scale"], attrs["y_zero_point"])))
    return fp.requantize(acc, np.array(ms).reshape(shape), np.array(es).reshape(shape), attrs["y_zero_point"], lo,
                         max(lo, hi))


def _conv_acc(x, w, b, attrs) -> np.ndarray:
    pt, pb, pl, pr = attrs.get("padding", [0, 0, 0, 0])
    xs = torch.tensor(x.astype(np.float64) - attrs["x_zero_point"])
    xs = F.pad(xs, (pl, pr, pt, pb))  # a padding tap holds the real 0: x - zp = 0
    acc = F.conv2d(xs, torch.tensor(w.astype(np.float64)), None if b is None else torch.tensor(b.astype(np.float64)),
                   stride=attrs.get("stride", [1, 1]), dilation=attrs.get("dilation", [1, 1]),
                   groups=attrs.get("groups", 1)).numpy()
    assert np.all(np.abs(acc) < 2**31)
    return acc.astype(np.int64)


CONV_CASES = [
    # (N, C, H, W), (O, C/g, kh, kw), attrs
    ((1, 3, 17, 19), (8, 3, 3, 3), {"stride": [2, 2], "padding": [1, 1, 1, 1]}),
    ((2, 16, 9, 9), (16, 1, 3, 3), {"groups": 16, "padding": [1, 1, 1, 1]}),  # depthwise
    ((1, 12, 7, 11), (6, 4, 3, 1), {"groups": 3, "padding": [2, 0, 1, 3], "dilation": [2, 1]}),
    ((1, 32, 6, 6), (24, 32, 1, 1), {}),  # pointwise
    ((1, 4, 5, 300), (5, 4, 1, 3), {"stride": [1, 3], "padding": [0, 0, 1, 1]}),  # rows longer than one strip
    ((1, 8, 14, 14), (16, 1, 5, 5), {"groups": 8, "stride": [2, 2], "padding": [2, 2, 2, 2]}),  # channel multiplier 2
]


@pytest.mark.parametrize("case", range(len(CONV_CASES)))
@pytest.mark.parametrize("activation", ["none", "relu", "relu6"])
def test_qconv2d_is_bit_exact_with_the_reference(case, activation):
    xs, wsh, extra = CONV_CASES[case]
    rng = _rng("conv", case, activation)
    x, w, ws, b = _operands(rng, xs, wsh)
    attrs = {**_io(rng), **extra, "activation": activation}
    want = _requantize(_conv_acc(x, w, b, attrs), attrs, ws, axis=1)
    for threads in (1, 2, 5):
        got = run("qconv2d", attrs, [x, w, ws, b], threads=threads)
        assert got.dtype == np.int8 and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    no_bias = run("qconv2d", attrs, [x, w, ws, None])
    np.testing.assert_array_equal(no_bias, _requantize(_conv_acc(x, w, None, attrs), attrs, ws, axis=1))


def test_qconv2d_follows_torch_float_conv_within_one_step():
    """The real-valued meaning: dequantized operands through PyTorch's float convolution, quantized once, differ
    from the int8 kernel by at most one output step (the accumulation is exact; only the requantization rounds)."""
    rng = _rng("conv-float")
    x, w, ws, b = _operands(rng, (1, 8, 12, 12), (16, 8, 3, 3))
    attrs = {**_io(rng), "padding": [1, 1, 1, 1]}
    xf = (x.astype(np.float64) - attrs["x_zero_point"]) * attrs["x_scale"]
    wf = w.astype(np.float64) * ws[:, None, None, None]
    bf = b.astype(np.float64) * attrs["x_scale"] * ws
    ref = F.conv2d(torch.tensor(xf), torch.tensor(wf), torch.tensor(bf), padding=1).numpy()
    want = np.clip(np.floor(ref / attrs["y_scale"] + 0.5) + attrs["y_zero_point"], -128, 127)
    got = run("qconv2d", attrs, [x, w, ws, b]).astype(np.float64)
    assert np.max(np.abs(got - want)) <= 1
    assert np.mean(got == want) > 0.99


@pytest.mark.parametrize("x_shape", [(5, 40), (2, 3, 17), (1, 1000)])
@pytest.mark.parametrize("activation", ["none", "relu", "relu6"])
def test_qlinear_is_bit_exact_with_the_reference(x_shape, activation):
    rng = _rng("linear", x_shape, activation)
    m = 13
    x, w, ws, b = _operands(rng, x_shape, (m, x_shape[-1]))
    attrs = {**_io(rng), "activation": activation}
    acc = (x.astype(np.int64) - attrs["x_zero_point"]) @ w.astype(np.int64).T + b
    want = _requantize(acc, attrs, ws, axis=-1)
    for threads in (1, 4):
        got = run("qlinear", attrs, [x, w, ws, b], threads=threads)
        assert got.dtype == np.int8 and got.shape == (*x_shape[:-1], m)
        np.testing.assert_array_equal(got, want)


def test_zero_weight_scale_gives_the_zero_point():
    rng = _rng("zero-scale")
    x, w, ws, b = _operands(rng, (3, 8), (4, 8))
    ws[1] = 0.0
    attrs = {**_io(rng)}
    got = run("qlinear", attrs, [x, w, ws, b])
    assert (got[:, 1] == attrs["y_zero_point"]).all()


# --- errors ------------------------------------------------------------------------------------------------------

def _conv_args():
    rng = _rng("errors")
    x, w, ws, b = _operands(rng, (1, 4, 6, 6), (8, 4, 3, 3))
    return {**_io(rng)}, [x, w, ws, b]


@pytest.mark.parametrize("change,match", [
    (lambda a, i: a.update(x_scale=0.0), "x_scale must be a finite number > 0"),
    (lambda a, i: a.update(activation="sigmoid"), "activation"),
    (lambda a, i: i.__setitem__(2, -i[2]), r"w_scale\[0\] must be a finite number >= 0"),
    (lambda a, i: i.__setitem__(2, i[2][:5]), "w_scale"),
    (lambda a, i: i.__setitem__(3, i[3].astype(np.float32)), "bias"),
    (lambda a, i: i.__setitem__(1, i[1].astype(np.float32)), "weight"),
    (lambda a, i: i.__setitem__(1, i[1][:, :3]), "channels"),
    (lambda a, i: a.update(y_scale=1e-30), "too large for a requantization multiplier"),
    (lambda a, i: a.update(x_zero_point=300), "x_zero_point"),
])
def test_qconv2d_errors_name_the_problem(change, match):
    attrs, inputs = _conv_args()
    change(attrs, inputs)
    with pytest.raises(Exception, match=match):
        run("qconv2d", attrs, inputs)


def test_quantize_refuses_a_zero_scale_and_non_float_input():
    with pytest.raises(Exception, match="scale must be a finite number > 0"):
        run("quantize", {"scale": 0.0, "zero_point": 0}, [np.zeros(3, np.float32)])
    with pytest.raises(Exception, match="quantize"):
        run("quantize", {"scale": 0.1, "zero_point": 0}, [np.zeros(3, np.int32)])


def test_registered_in_the_portable_set():
    have = set(_C.registered_kernels())
    for op, dt in (("quantize", "float32"), ("dequantize", "int8"), ("qconv2d", "int8"), ("qlinear", "int8")):
        assert (op, dt) in have


# --- qadd, qmean, int8 max_pool2d --------------------------------------------------------------------------------

@pytest.mark.parametrize("shapes", [((2, 8, 5, 5), (2, 8, 5, 5)), ((1, 16, 3, 7), (1, 16, 1, 1)), ((4, 9), (9,))])
@pytest.mark.parametrize("activation", ["none", "relu", "relu6"])
def test_qadd_is_bit_exact_and_adds_the_real_values(shapes, activation):
    rng = _rng("add", shapes, activation)
    a = rng.integers(-128, 128, size=shapes[0]).astype(np.int8)
    b = rng.integers(-128, 128, size=shapes[1]).astype(np.int8)
    attrs = {"a_scale": float(np.float32(0.031)), "a_zero_point": -7, "b_scale": float(np.float32(0.017)),
             "b_zero_point": 12, "y_scale": float(np.float32(0.05)), "y_zero_point": -3, "activation": activation}
    want = fp.qadd(a, b, attrs["a_scale"], -7, attrs["b_scale"], 12, attrs["y_scale"], -3, activation)
    for threads in (1, 3):
        got = run("qadd", attrs, [a, b], threads=threads)
        assert got.dtype == np.int8
        np.testing.assert_array_equal(got, want)
    real = fp.dequantize(a, attrs["a_scale"], -7) + fp.dequantize(b, attrs["b_scale"], 12)
    if activation != "none":
        real = np.maximum(real, 0)
    if activation == "relu6":
        real = np.minimum(real, 6)
    ideal = np.clip(np.rint(real / np.float32(0.05)) - 3, -128, 127)
    assert np.max(np.abs(got.astype(np.int64) - ideal)) <= 1


@pytest.mark.parametrize("axes,keepdim", [((2, 3), True), ((2, 3), False), ((1,), False), ((0, 1, 2, 3), False)])
def test_qmean_is_bit_exact(axes, keepdim):
    rng = _rng("mean", axes, keepdim)
    x = rng.integers(-128, 128, size=(2, 6, 7, 9)).astype(np.int8)
    attrs = {"axes": list(axes), "keepdim": int(keepdim), "x_scale": float(np.float32(0.02)), "x_zero_point": 5,
             "y_scale": float(np.float32(0.011)), "y_zero_point": -9}
    want = fp.qmean(x, axes, keepdim, attrs["x_scale"], 5, attrs["y_scale"], -9)
    got = run("qmean", attrs, [x], threads=2)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, want)
    real = fp.dequantize(x, attrs["x_scale"], 5).astype(np.float64).mean(axis=axes, keepdims=keepdim)
    inside = (got > -128) & (got < 127)  # saturated outputs aside
    assert inside.mean() > 0.5
    err = np.abs(fp.dequantize(got, attrs["y_scale"], -9) - real)[inside]
    assert np.max(err) <= attrs["y_scale"] * 0.5001


def test_int8_max_pool_is_the_max_of_each_window():
    rng = _rng("maxpool")
    x = rng.integers(-128, 128, size=(2, 3, 9, 11)).astype(np.int8)
    attrs = {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1]}
    got = run("max_pool2d", attrs, [x], threads=2)
    want = F.max_pool2d(torch.tensor(x.astype(np.float32)), 3, 2, 1).numpy().astype(np.int8)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, want)


def test_int8_moves_through_the_data_movement_kernels():
    x = np.arange(-60, 60, dtype=np.int8).reshape(2, 3, 4, 5)
    np.testing.assert_array_equal(run("reshape", {"shape": [2, 60]}, [x, None]), x.reshape(2, 60))
    np.testing.assert_array_equal(run("permute", {"perm": [0, 2, 3, 1]}, [x]), x.transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(run("concat", {"axis": 1}, [x, x]), np.concatenate([x, x], axis=1))


def test_qmean_and_qadd_errors():
    x = np.zeros((1, 2, 3, 3), np.int8)
    with pytest.raises(Exception, match="y_scale must be a finite number > 0"):
        run("qmean", {"axes": [2, 3], "x_scale": 0.1, "x_zero_point": 0, "y_scale": 0.0, "y_zero_point": 0}, [x])
    with pytest.raises(Exception, match="cannot be broadcast"):
        run("qadd", {"a_scale": 0.1, "a_zero_point": 0, "b_scale": 0.1, "b_zero_point": 0, "y_scale": 0.1,
                     "y_zero_point": 0}, [x, np.zeros((1, 3, 3, 3), np.int8)])
    with pytest.raises(Exception, match="too large for a requantization multiplier"):
        run("qadd", {"a_scale": 1e20, "a_zero_point": 0, "b_scale": 0.1, "b_zero_point": 0, "y_scale": 1e-20,
                     "y_zero_point": 0}, [x, x])


# --- the optimized int8 sets: the portable bits -----------------------------------------------------------------

def _sets_with(op: str) -> list[str]:
    return sorted({s for o, d, s, _ in _C.registered_kernel_sets() if o == op and d == "int8" and s != "portable"})


VNNI_CASES = CONV_CASES + [
    ((1, 32, 56, 56), (64, 32, 3, 3), {"stride": [2, 2], "padding": [1, 1, 1, 1]}),  # SimpleNet's middle layer
    ((2, 24, 10, 13), (40, 24, 1, 1), {}),
    ((1, 6, 9, 9), (6, 2, 3, 3), {"groups": 3, "padding": [1, 1, 1, 1]}),  # K = 18: padded to 20
    ((1, 3, 33, 35), (13, 3, 5, 3), {"stride": [3, 2], "padding": [2, 1, 0, 2], "dilation": [1, 2]}),
    ((1, 24, 20, 300), (24, 1, 3, 3), {"groups": 24, "stride": [2, 2], "padding": [1, 1, 1, 1]}),  # depthwise
    ((2, 8, 11, 13), (8, 1, 5, 5), {"groups": 8, "dilation": [2, 2], "padding": [4, 3, 4, 2]}),
    ((1, 8, 11, 13), (8, 1, 3, 3), {"groups": 8, "stride": [1, 3]}),  # column stride 3: the portable kernel
]


@pytest.mark.parametrize("case", range(len(VNNI_CASES)))
def test_optimized_qconv2d_sets_give_the_portable_bits(case):
    sets = _sets_with("qconv2d")
    if not sets:
        pytest.skip("this CPU has no optimized int8 convolution set (the vnni set needs AVX-512 VNNI)")
    xs, wsh, extra = VNNI_CASES[case]
    rng = _rng("opt-conv", case)
    x, w, ws, b = _operands(rng, xs, wsh)
    for activation in ("none", "relu6"):
        attrs = {**_io(rng), **extra, "activation": activation}
        want = run("qconv2d", attrs, [x, w, ws, b], kernels="portable")
        for s in sets:
            for threads in (1, 3):
                got = _C.run_kernel("qconv2d", attrs, [x, w, ws, b], threads=threads, kernel_set=s)[0]
                np.testing.assert_array_equal(got, want, err_msg=f"set {s}, {threads} threads")
            got = _C.run_kernel("qconv2d", attrs, [x, w, ws, None], kernel_set=s)[0]
            np.testing.assert_array_equal(got, run("qconv2d", attrs, [x, w, ws, None], kernels="portable"))


def test_vnni_set_is_chosen_only_where_the_cpu_has_it():
    flags = open("/proc/cpuinfo").read().split()
    has = "avx512_vnni" in flags and "avx512bw" in flags and "avx512vl" in flags
    assert ("vnni" in _sets_with("qconv2d")) == has


def test_optimized_quantize_sets_give_the_portable_bits():
    sets = sorted({s for o, d, s, _ in _C.registered_kernel_sets() if o == "quantize" and s != "portable"})
    if not sets:
        pytest.skip("this CPU has no optimized quantize set (the x86 set needs AVX2)")
    rng = _rng("opt-quantize")
    for n in (1, 31, 32, 33, 1000, 40_001):
        for scale, zp in ((0.0173, -17), (0.5, 127), (3e-4, -128)):
            x = (rng.standard_normal(n) * 150 * scale).astype(np.float32)
            x[::7] = (np.round(x[::7] / np.float32(scale)) + 0.5) * np.float32(scale)  # ties
            x[:min(n, 6)] = np.array([np.nan, np.inf, -np.inf, -0.0, 1e38, -1e38], np.float32)[:min(n, 6)]
            want = run("quantize", {"scale": scale, "zero_point": zp}, [x], kernels="portable")
            for s in sets:
                got = _C.run_kernel("quantize", {"scale": scale, "zero_point": zp}, [x], threads=2, kernel_set=s)[0]
                np.testing.assert_array_equal(got, want, err_msg=f"set {s}, n={n}, scale={scale}")
