"""The numerics contract of the fast GEMM paths (kernels/common/gemm.h): results are bit-identical for any
thread count, on sizes that hit every edge tile, and every output's sum runs over k in increasing order,
so the packed (im2col) conv path, the unpacked gemm_nn path and matmul agree bit for bit. That is the contract
of the bit-exact kernel sets (portable, x86), so these run under the "exact" kernel policy; the avx512 set's own
contract is tested in test_avx512_kernels.py."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from .helpers import assert_close, rand
from .helpers import run as _run


def run(op: str, attrs: dict, inputs: list, threads: int = 1) -> np.ndarray:
    return _run(op, attrs, inputs, threads=threads, kernels="exact")

# Register tile 4 x 8, work unit 32 x 64: sizes below are not multiples of any of them (and some smaller).
ODD_MNK = [(1, 1, 1), (3, 7, 5), (5, 9, 13), (33, 65, 17), (37, 130, 70), (67, 201, 129), (4, 8, 0)]


@pytest.mark.parametrize("m,n,k", ODD_MNK)
def test_matmul_threads_bit_identical_on_edge_tiles(m, n, k):
    rng = np.random.default_rng(m * 10000 + n * 100 + k)
    a, b = rand(rng, m, k), rand(rng, k, n)
    one = run("matmul", {}, [a, b], threads=1)
    assert_close(one, torch.matmul(torch.tensor(a), torch.tensor(b)).numpy())
    for t in (2, 3):
        np.testing.assert_array_equal(one, run("matmul", {}, [a, b], threads=t))


@pytest.mark.parametrize("m,n,k", ODD_MNK[:-1])
def test_matmul_sums_k_in_increasing_order(m, n, k):
    rng = np.random.default_rng(k)
    a, b = rand(rng, m, k), rand(rng, k, n)
    ref = np.zeros((m, n), np.float32)
    for kk in range(k):  # float32, k ascending, one accumulator per output
        ref = ref + np.outer(a[:, kk], b[kk, :]).astype(np.float32)
    np.testing.assert_array_equal(run("matmul", {}, [a, b]), ref)


@pytest.mark.parametrize("rows,k,m", [(1, 512, 77), (3, 13, 9), (2, 7, 5), (37, 130, 67), (9, 8, 65)])
def test_linear_threads_bit_identical(rows, k, m):
    rng = np.random.default_rng(rows + k + m)
    x, w, b = rand(rng, rows, k), rand(rng, m, k), rand(rng, m)
    one = run("linear", {}, [x, w, b], threads=1)
    assert_close(one, F.linear(torch.tensor(x), torch.tensor(w), torch.tensor(b)).numpy())
    for t in (2, 3):
        np.testing.assert_array_equal(one, run("linear", {}, [x, w, b], threads=t))


CONV_CASES = [  # (N, C, H, W, O, kh, kw, stride, padding(t,b,l,r), dilation, groups)
    (2, 7, 11, 13, 9, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),     # OH*OW = 143: a partial last panel
    (1, 6, 15, 9, 10, 3, 5, (2, 1), (0, 2, 1, 3), (2, 1), 2),     # grouped, dilated, asymmetric
    (3, 5, 9, 9, 37, 2, 2, (2, 3), (1, 0, 0, 1), (1, 2), 1),      # O = 37: partial row tiles and units
    (1, 3, 23, 23, 5, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),     # pointwise, unpacked gemm_nn
    (1, 4, 9, 9, 6, 1, 1, (2, 2), (1, 1, 1, 1), (1, 1), 2),       # 1x1 but strided and padded: im2col
    (2, 8, 19, 21, 8, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 8),     # depthwise, interior blocks + edges
    (1, 6, 20, 37, 12, 3, 3, (2, 2), (1, 1, 1, 1), (2, 2), 6),    # depthwise x2, dilated, strided
    (1, 3, 13, 40, 3, 5, 3, (1, 3), (2, 2, 0, 4), (1, 1), 3),     # depthwise, stride 3 columns
    (1, 2, 6, 6, 2, 7, 7, (1, 1), (3, 3, 3, 3), (1, 1), 2),       # depthwise, kernel wider than interior
]


def _ref(x, wt, b, stride, pad, dil, groups):
    xt = F.pad(torch.tensor(x), (pad[2], pad[3], pad[0], pad[1]))
    return F.conv2d(xt, torch.tensor(wt), None if b is None else torch.tensor(b), stride=stride, dilation=dil,
                    groups=groups).numpy()


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_threads_bit_identical_and_close(case):
    n, c, h, w, o, kh, kw, stride, pad, dil, groups = case
    rng = np.random.default_rng(abs(hash(case)) % 2**32)
    x, wt, b = rand(rng, n, c, h, w), rand(rng, o, c // groups, kh, kw), rand(rng, o)
    attrs = dict(stride=list(stride), padding=list(pad), dilation=list(dil), groups=groups, activation="relu6")
    one = run("conv2d", attrs, [x, wt, b], threads=1)
    assert_close(one, np.clip(_ref(x, wt, b, stride, pad, dil, groups), 0, 6))
    for t in (2, 3):
        np.testing.assert_array_equal(one, run("conv2d", attrs, [x, wt, b], threads=t))


@pytest.mark.parametrize("case", [CONV_CASES[0], CONV_CASES[1], CONV_CASES[2], CONV_CASES[4]])
def test_conv2d_packed_path_equals_matmul_on_im2col(case):
    """The packed im2col GEMM sums over (channel, tap row, tap column) ascending, exactly as matmul does."""
    n, c, h, w, o, kh, kw, stride, pad, dil, groups = case
    rng = np.random.default_rng(5)
    x, wt = rand(rng, n, c, h, w), rand(rng, o, c // groups, kh, kw)
    got = run("conv2d", dict(stride=list(stride), padding=list(pad), dilation=list(dil), groups=groups), [x, wt, None])
    xt = F.pad(torch.tensor(x), (pad[2], pad[3], pad[0], pad[1]))
    cols = F.unfold(xt, (kh, kw), dilation=dil, stride=stride).numpy()  # (N, C*kh*kw, L), channel-major rows
    cg, og, kg = c // groups, o // groups, (c // groups) * kh * kw
    for ni in range(n):
        for gi in range(groups):
            a = np.ascontiguousarray(wt[gi * og:(gi + 1) * og].reshape(og, kg))
            bm = np.ascontiguousarray(cols[ni, gi * kg:(gi + 1) * kg])
            ref = run("matmul", {}, [a, bm]).reshape(og, *got.shape[2:])
            np.testing.assert_array_equal(got[ni, gi * og:(gi + 1) * og], ref)
    assert cg * groups == c


@pytest.mark.parametrize("case", [CONV_CASES[5], CONV_CASES[6], CONV_CASES[7], CONV_CASES[8]])
def test_depthwise_sums_taps_in_order(case):
    """Each depthwise output adds its in-bounds taps (row, then column) to a float32 accumulator in order."""
    n, c, h, w, o, kh, kw, stride, pad, dil, groups = case
    rng = np.random.default_rng(6)
    x, wt = rand(rng, n, c, h, w), rand(rng, o, 1, kh, kw)
    got = run("conv2d", dict(stride=list(stride), padding=list(pad), dilation=list(dil), groups=groups), [x, wt, None])
    oh, ow = got.shape[2:]
    mult = o // c
    acc = np.zeros((n, o, oh, ow), np.float32)
    ys, xs = np.arange(oh) * stride[0] - pad[0], np.arange(ow) * stride[1] - pad[2]
    xo = x[:, np.arange(o) // mult]  # (N, O, H, W): each output channel's input plane
    for i in range(kh):
        for j in range(kw):
            iy, ix = ys + i * dil[0], xs + j * dil[1]
            vy, vx = (iy >= 0) & (iy < h), (ix >= 0) & (ix < w)
            tap = xo[:, :, np.clip(iy, 0, h - 1)][:, :, :, np.clip(ix, 0, w - 1)]
            prod = (wt[:, 0, i, j][None, :, None, None] * tap).astype(np.float32)
            valid = vy[:, None] & vx[None, :]
            acc = np.where(valid, acc + prod, acc).astype(np.float32)  # skipped taps add nothing
    np.testing.assert_array_equal(got, acc)
