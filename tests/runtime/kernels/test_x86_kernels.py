"""The x86-64 kernel set (runtime/kernels/x86, AVX2): registered above portable on CPUs with AVX2 and FMA, and
bit-identical to the portable kernels (same per-output accumulation order) on shapes that hit every edge tile
(6 x 16 register tiles, 48 x 128 work units, 16-column packed panels), for 1, 2 and 3 threads."""

from __future__ import annotations

import platform

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from .helpers import _C, assert_close, rand

X86_OPS = ("add", "conv2d", "linear", "matmul", "max_pool2d", "mul")


def _x86_active() -> tuple[bool, str]:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False, f"not an x86-64 machine ({platform.machine()}): the x86 kernel set is not built"
    sets = {(op, ks) for op, dt, ks, _ in _C.registered_kernel_sets() if dt == "float32"}
    missing = [op for op in X86_OPS if (op, "x86") not in sets]
    if missing:
        return False, f"this CPU lacks AVX2/FMA (or the build lacks kernels/x86): no x86 kernel for {missing}"
    return True, ""


_ACTIVE, _WHY = _x86_active()
if not _ACTIVE:
    print(f"test_x86_kernels: skipped: {_WHY}")
pytestmark = pytest.mark.skipif(not _ACTIVE, reason=_WHY)


def _both(op: str, attrs: dict, inputs: list, threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
    x86 = _C.run_kernel(op, attrs, inputs, threads=threads, kernel_set="x86")[0]
    ref = _C.run_kernel(op, attrs, inputs, threads=threads, kernel_set="portable")[0]
    return x86, ref


def _check(op: str, attrs: dict, inputs: list) -> np.ndarray:
    one, ref = _both(op, attrs, inputs, threads=1)
    np.testing.assert_array_equal(one, ref)
    assert np.array_equal(np.signbit(one), np.signbit(ref))
    # The kernel a session with the bit-exact policy runs is the x86 one.
    np.testing.assert_array_equal(_C.run_kernel(op, attrs, inputs, kernels="exact")[0], one)
    for t in (2, 3):
        np.testing.assert_array_equal(_C.run_kernel(op, attrs, inputs, threads=t, kernel_set="x86")[0], one)
    return one


def test_x86_kernels_rank_above_portable() -> None:
    sets = {(op, ks): prio for op, dt, ks, prio in _C.registered_kernel_sets() if dt == "float32"}
    for op in X86_OPS:
        assert sets[(op, "x86")] > sets[(op, "portable")]
    assert len({k for k in _C.registered_kernels()}) == len(_C.registered_kernels())


MNK = [(1, 1, 1), (1, 16, 8), (5, 15, 3), (6, 16, 16), (7, 17, 9), (12, 33, 31), (13, 31, 64), (47, 129, 70),
       (48, 128, 5), (49, 257, 33), (96, 300, 17), (3, 1, 40), (2, 5, 0), (0, 4, 3)]


@pytest.mark.parametrize("m,n,k", MNK)
def test_matmul_x86_equals_portable(m, n, k):
    rng = np.random.default_rng(m * 100000 + n * 100 + k)
    a, b = rand(rng, m, k), rand(rng, k, n)
    got = _check("matmul", {}, [a, b])
    if m * n:
        assert_close(got, torch.matmul(torch.tensor(a), torch.tensor(b)).numpy())


@pytest.mark.parametrize("sa,sb", [((3, 7, 5), (5, 18)), ((2, 1, 4, 9), (3, 9, 17)), ((9,), (9, 20)), ((4, 9), (9,)),
                                   ((11,), (11,)), ((2, 3, 6, 13), (2, 3, 13, 16))])
def test_matmul_x86_batched_and_vectors(sa, sb):
    rng = np.random.default_rng(len(sa) * 10 + len(sb))
    a, b = rand(rng, *sa), rand(rng, *sb)
    got = _check("matmul", {}, [a, b])
    assert_close(got, torch.matmul(torch.tensor(a), torch.tensor(b)).numpy())


LINEAR = [(1, 1, 1), (1, 7, 3), (1, 8, 8), (1, 512, 77), (1, 1000, 10), (1, 33, 65), (3, 13, 9), (9, 8, 65),
          (37, 130, 67), (2, 17, 129)]


@pytest.mark.parametrize("rows,k,m", LINEAR)
@pytest.mark.parametrize("act", ["none", "relu", "gelu"])
def test_linear_x86_equals_portable(rows, k, m, act):
    rng = np.random.default_rng(rows * 1000 + k + m)
    x, w, b = rand(rng, rows, k), rand(rng, m, k), rand(rng, m)
    got = _check("linear", dict(activation=act), [x, w, b])
    _check("linear", {}, [x, w, None])
    if act == "none":
        assert_close(got, F.linear(torch.tensor(x), torch.tensor(w), torch.tensor(b)).numpy())


CONV = [  # (N, C, H, W, O, kh, kw, stride, padding(t,b,l,r), dilation, groups)
    (1, 3, 224, 224, 16, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1),   # a stem: many full panels
    (2, 7, 11, 13, 9, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),      # OH*OW = 143: a partial last panel
    (3, 5, 9, 9, 37, 2, 2, (2, 3), (1, 0, 0, 1), (1, 2), 1),       # O = 37: partial row tiles
    (1, 16, 17, 19, 49, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),    # pointwise: unpacked, masked right edge
    (1, 4, 9, 9, 6, 1, 1, (2, 2), (1, 1, 1, 1), (1, 1), 1),        # 1x1 strided and padded: im2col
    (1, 8, 20, 23, 50, 5, 3, (1, 2), (2, 0, 1, 3), (2, 1), 1),     # dilated, asymmetric padding
    (1, 1, 12, 12, 5, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),      # one input channel: portable's depthwise
    (1, 6, 15, 9, 10, 3, 5, (2, 1), (0, 2, 1, 3), (2, 1), 2),      # grouped: delegated to portable
    (2, 8, 19, 21, 8, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 8),      # depthwise: delegated to portable
    (1, 3, 5, 5, 4, 5, 5, (1, 1), (0, 0, 0, 0), (1, 1), 1),        # one output position
]


def _conv_ref(x, wt, b, stride, pad, dil, groups):
    xt = F.pad(torch.tensor(x), (pad[2], pad[3], pad[0], pad[1]))
    return F.conv2d(xt, torch.tensor(wt), None if b is None else torch.tensor(b), stride=stride, dilation=dil,
                    groups=groups).numpy()


@pytest.mark.parametrize("case", CONV)
@pytest.mark.parametrize("act", ["none", "relu", "relu6", "silu"])
def test_conv2d_x86_equals_portable(case, act):
    n, c, h, w, o, kh, kw, stride, pad, dil, groups = case
    rng = np.random.default_rng(n + c * 7 + h * 31 + o * 101 + kh)
    x, wt, b = rand(rng, n, c, h, w), rand(rng, o, c // groups, kh, kw), rand(rng, o)
    attrs = dict(stride=list(stride), padding=list(pad), dilation=list(dil), groups=groups, activation=act)
    got = _check("conv2d", attrs, [x, wt, b])
    _check("conv2d", dict(attrs, activation="none"), [x, wt, None])
    if act == "none":
        assert_close(got, _conv_ref(x, wt, b, stride, pad, dil, groups))


def test_x86_special_values_match_portable():
    rng = np.random.default_rng(3)
    a, b = rand(rng, 7, 20), rand(rng, 20, 19)
    a[0, 3], a[2, 5], b[4, 7], b[9, 18] = np.inf, np.nan, -np.inf, np.nan
    _check("matmul", {}, [a, b])
    z = np.zeros((5, 9), np.float32)
    z[1] = -0.0
    _check("matmul", {}, [z, -np.ones((9, 17), np.float32)])
    _check("linear", dict(activation="relu"), [a, b.T.copy(), None])


# (n, c, h, w, kernel, stride, padding, dilation, ceil_mode): stride 1 and 2 (plain loads), others (gathers), widths
# that leave a partial vector, padding on both edges, dilation, ceil_mode windows that run past the input.
POOL = [
    (1, 3, 112, 112, (3, 3), (2, 2), (1, 1), (1, 1), 0),   # ResNet's stem pool
    (2, 4, 17, 19, (3, 3), (1, 1), (1, 1), (1, 1), 0),
    (1, 2, 9, 37, (2, 2), (2, 2), (0, 0), (1, 1), 1),
    (1, 5, 13, 29, (3, 2), (3, 3), (1, 1), (2, 1), 1),
    (1, 2, 7, 8, (1, 1), (1, 1), (0, 0), (1, 1), 0),
    (3, 1, 11, 5, (5, 3), (2, 1), (2, 1), (1, 2), 0),
    (1, 1, 1, 1, (1, 1), (1, 1), (0, 0), (1, 1), 0),
    (1, 2, 6, 40, (2, 4), (1, 4), (1, 2), (1, 1), 1),
    (1, 1, 4, 9000, (3, 3), (1, 1), (1, 1), (1, 1), 0),    # rows too wide for the separable buffers: tap by tap
]


@pytest.mark.parametrize("case", POOL)
def test_max_pool2d_x86_equals_portable(case):
    n, c, h, w, k, s, p, d, ceil = case
    rng = np.random.default_rng(h * 100 + w)
    x = rand(rng, n, c, h, w)
    attrs = dict(kernel=list(k), stride=list(s), padding=list(p), dilation=list(d), ceil_mode=ceil)
    got = _check("max_pool2d", attrs, [x])
    assert_close(got, F.max_pool2d(torch.tensor(x), k, s, p, d, ceil_mode=bool(ceil)).numpy())


def test_max_pool2d_x86_keeps_portable_ties_and_nans():
    # ties keep the first tap (-0 before +0 and +0 before -0); a window's last NaN wins, payload included
    x = np.zeros((1, 2, 6, 20), np.float32)
    x[0, 0, :, ::2] = -0.0
    x[0, 1, ::3, 1::3] = -0.0
    bits = x.view(np.uint32)
    bits[0, 0, 2, 5] = 0x7FC00001
    bits[0, 0, 3, 5] = 0xFFC00002
    bits[0, 1, 4, 9] = 0x7FA00003
    x[0, 1, 0, 0] = -np.inf
    for attrs in (dict(kernel=[3, 3], stride=[1, 1], padding=[1, 1], dilation=[1, 1], ceil_mode=0),
                  dict(kernel=[2, 3], stride=[2, 2], padding=[1, 1], dilation=[1, 1], ceil_mode=1),
                  dict(kernel=[3, 3], stride=[3, 3], padding=[0, 1], dilation=[1, 1], ceil_mode=0)):
        one, ref = _both("max_pool2d", attrs, [x])
        assert one.tobytes() == ref.tobytes()


@pytest.mark.parametrize("stride", [1, 2])
def test_max_pool2d_x86_separable_keeps_ties_without_nans(stride):
    """Planes without a NaN run the separable path (row folds, then column folds, plain maxps): ties still keep the
    row-major first tap (-0 before +0 and the reverse, across rows and columns) and all -inf windows stay -inf. A NaN in
    one plane sends that plane alone back to the tap-by-tap path."""
    rng = np.random.default_rng(stride)
    x = np.where(rng.random((2, 4, 15, 37)) < 0.5, np.float32(-0.0), np.float32(0.0)).astype(np.float32)
    x[0, 1] = -np.inf
    x[1, 2] = rng.standard_normal((15, 37)).astype(np.float32).round(0)  # many ties of equal values
    x[1, 3, 7, 11] = np.nan
    for k, p, d, ceil in (((3, 3), (1, 1), (1, 1), 0), ((2, 3), (1, 1), (1, 2), 1), ((4, 2), (2, 1), (1, 1), 1)):
        attrs = dict(kernel=list(k), stride=[stride, stride], padding=list(p), dilation=list(d), ceil_mode=ceil)
        one, ref = _both("max_pool2d", attrs, [x])
        assert one.tobytes() == ref.tobytes()
        assert np.isnan(one[1, 3]).any() and not np.isnan(one[:, :3]).any()


def test_max_pool2d_x86_errors_are_portables():
    x = np.zeros((1, 1, 2, 2), np.float32)
    for attrs, words in ((dict(kernel=[5, 5], stride=[1, 1], padding=[0, 0], dilation=[1, 1], ceil_mode=0), "too small"),
                         (dict(kernel=[2, 2], stride=[0, 1], padding=[0, 0], dilation=[1, 1], ceil_mode=0), "'stride' is 0")):
        with pytest.raises(Exception, match=words):
            _C.run_kernel("max_pool2d", attrs, [x], kernel_set="x86")


ADD = [((7,), (7,)), ((3, 5), (3, 5)), ((1, 64, 56, 56), (1, 64, 56, 56)), ((2, 3, 40001), (2, 3, 40001)),
       ((0, 4), (0, 4)), ((1, 8, 5, 5), (1, 8, 1, 1)), ((4, 1), (1, 6)), ((), ())]


@pytest.mark.parametrize("shapes", ADD)
@pytest.mark.parametrize("act", ["none", "relu", "relu6"])
def test_add_x86_equals_portable(shapes, act):
    """Same shapes (a residual connection) run the vector loop, with or without its ReLU; broadcasting and other
    activations run portable's: the same bits either way, for any thread count."""
    rng = np.random.default_rng(len(shapes[0]) * 10 + sum(shapes[1]))
    a, b = rng.standard_normal(shapes[0], dtype=np.float32), rng.standard_normal(shapes[1], dtype=np.float32)
    got = _check("add", {"activation": act}, [a, b])
    ref = a + b
    ref = {"none": ref, "relu": np.maximum(ref, 0), "relu6": np.clip(ref, 0, 6)}[act]
    np.testing.assert_array_equal(got, ref)


def test_add_x86_keeps_portable_nan_signed_zero_and_inf():
    a = np.array([np.nan, -0.0, -0.0, 0.0, np.inf, -np.inf, 1e38, -3.0, 2.0] * 3, np.float32)
    b = np.array([1.0, -0.0, 0.0, -0.0, -np.inf, -np.inf, 1e38, 1.0, -5.0] * 3, np.float32)
    a.view(np.uint32)[18] = 0x7FC00123  # a NaN payload
    for act in ("none", "relu"):
        one, ref = _both("add", {"activation": act}, [a, b])
        assert one.tobytes() == ref.tobytes()


def test_add_x86_errors_are_portables():
    with pytest.raises(Exception, match="add"):
        _C.run_kernel("add", {}, [np.zeros((2, 3), np.float32), np.zeros((4,), np.float32)], kernel_set="x86")
    with pytest.raises(Exception, match="activation"):
        _C.run_kernel("add", {"activation": "swish9"}, [np.zeros(3, np.float32)] * 2, kernel_set="x86")


MUL = [((3, 5), (3, 5)), ((2, 3, 40001), (2, 3, 40001)), ((1, 3, 197, 64), (1,)), ((1, 3, 197, 64), ()),
       ((), (5, 7)), ((1, 32, 7, 7), (1, 32, 1, 1)), ((2, 48, 5, 5), (2, 48, 1, 1)), ((2, 40, 9, 9), (1, 40, 1, 1)),
       ((1, 24, 6, 6), (24, 1, 1)), ((2, 16, 1, 1), (2, 16, 3, 3)), ((4, 1), (1, 6)), ((0, 4), (0, 4)),
       ((1, 32, 0, 5), (1, 32, 1, 1)), ((2, 5, 3, 3), (2, 1, 1, 1))]


@pytest.mark.parametrize("shapes", MUL)
def test_mul_x86_equals_portable(shapes):
    """Same shapes, a single value either side and a map times a channel scale (N or 1, C, 1, 1) either side run the
    vector loops; other broadcasts run portable's: one multiply per element, the same bits, any thread count."""
    rng = np.random.default_rng(len(shapes[0]) * 10 + sum(shapes[1]))
    a, b = rng.standard_normal(shapes[0], dtype=np.float32), rng.standard_normal(shapes[1], dtype=np.float32)
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    np.testing.assert_array_equal(_check("mul", {}, [a, b]), a * b)


def test_mul_x86_keeps_portable_nan_signed_zero_and_inf():
    a = np.array([np.nan, -0.0, -0.0, 0.0, np.inf, -np.inf, 1e38, -3.0, 2.0, 1e-40] * 3, np.float32)
    b = np.array([1.0, -0.0, 0.0, -0.0, 0.0, -np.inf, 1e38, 1.0, -5.0, 0.5] * 3, np.float32)
    a.view(np.uint32)[20] = 0x7FC00123  # a NaN payload
    one, ref = _both("mul", {}, [a, b])
    assert one.tobytes() == ref.tobytes()
    maps = np.array([-0.0, np.inf, np.nan, 3.0], np.float32).reshape(1, 4, 1, 1) * np.ones((1, 4, 2, 3), np.float32)
    scale = np.array([0.0, 0.0, 2.0, -np.inf], np.float32).reshape(1, 4, 1, 1)
    for inputs in ([maps, scale], [scale, maps], [maps, np.array(-0.0, np.float32)], [np.array([np.inf], np.float32), maps]):
        one, ref = _both("mul", {}, inputs)
        assert one.tobytes() == ref.tobytes()


def test_mul_x86_errors_are_portables():
    for inputs in ([np.zeros((2, 3), np.float32), np.zeros((4,), np.float32)],
                   [np.zeros((1, 4, 2, 2), np.float32), np.zeros((1, 3, 1, 1), np.float32)]):
        with pytest.raises(ValueError) as fast:
            _C.run_kernel("mul", {}, inputs, kernel_set="x86")
        with pytest.raises(ValueError) as ref:
            _C.run_kernel("mul", {}, inputs, kernel_set="portable")
        assert str(fast.value) == str(ref.value)


def test_unknown_kernel_set_is_an_error():
    with pytest.raises(NotImplementedError, match="kernel set 'nope'"):
        _C.run_kernel("relu", {}, [np.zeros(2, np.float32)], kernel_set="nope")
