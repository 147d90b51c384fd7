"""The portable kernels' own transcendental functions (runtime/kernels/common/scalar_math.h): exp, expm1, log,
log1p, tanh, erf, sin and cos of a float32.

They replace <cmath> in the portable kernels because the C libraries disagree in the last bit (glibc on the host,
musl in the boards' static builds): the "exact" policy promises the same bits on the host and on every board.
tests/runtime/scalar_math_probe.cc runs the functions over a fixed set of inputs; it is built here for the host
and, with each board's own toolchain and flags, for the boards' architectures, and run under their emulators:
every build must give the host's bits. The host's results are held against float64 (PyTorch) within the ulp
bounds scalar_math.h documents, and the kernels that call the functions must give the probe's bits."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from dtorch.edge.boards import load_board
from dtorch.edge.build_plan import LANGUAGE_FLAGS
from dtorch.edge.toolchains import ToolchainMissing, command_line, select_toolchain

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))  # the ulp measure is the benchmark's (benchmarks/bench_scalar_math.py)
from bench_scalar_math import float32_ulps  # noqa: E402
PROBE = Path(__file__).with_name("scalar_math_probe.cc")
FUNCS = ("exp", "expm1", "log", "log1p", "tanh", "erf", "sin", "cos")
# The bounds scalar_math.h documents (measured maxima: 0.93, 1.35, 0.81, 1.99, 1.72, 1.12, 0.50, 0.50).
MAX_ULP = {"exp": 1.0, "expm1": 1.4, "log": 0.9, "log1p": 2.1, "tanh": 1.8, "erf": 1.3, "sin": 0.501, "cos": 0.501}
TORCH = {"exp": torch.exp, "expm1": torch.expm1, "log": torch.log, "log1p": torch.log1p, "tanh": torch.tanh,
         "erf": torch.erf, "sin": torch.sin, "cos": torch.cos}


def _bits(*words: int) -> np.ndarray:
    return np.array(words, dtype=np.uint32).view(np.float32)


def _inputs() -> np.ndarray:
    """Special values, every function's range boundaries, dense grids over the ranges that matter, wide ranges,
    and random bit patterns (NaNs with payloads, subnormals, huge values for the trigonometric reduction)."""
    rng = np.random.default_rng(20261207)
    special = np.concatenate([
        _bits(0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00001, 0x7fa00123, 0x00000001,
              0x80000001, 0x007fffff, 0x00800000, 0x7f7fffff, 0xff7fffff, 0x3f800000, 0xbf800000),
        np.array([88.7228317, 88.7228394, -103.972, -104.0, -17.5, -17.33, 0.34657359, -0.34657359, 0.55, 1.0,
                  -1.0, 0.29289322, -0.29289322, 0.41421356, 4.0, 3.92, 9.0, 0.78539816, 1.5707964, 3.1415927,
                  2.0 ** -12, 2.0 ** -25, 1e5, 1e10, 3.4e38, -3.4e38], np.float32)])
    finite = special[np.isfinite(special)]
    with np.errstate(over="ignore"):
        around = np.nextafter(np.repeat(finite, 2), np.tile(np.array([-np.inf, np.inf], np.float32), finite.size))
    dense = [np.linspace(lo, hi, n, dtype=np.float32) for lo, hi, n in
             ((-12, 12, 120001), (-1.1, 1.1, 60001), (-105, 90, 40001), (0, 8, 40001), (-1, 1e-3, 20001))]
    wide = [rng.uniform(-1e4, 1e4, 40000).astype(np.float32),
            (np.exp(rng.uniform(-100, 88, 40000)) * rng.choice([-1, 1], 40000)).astype(np.float32)]
    raw = rng.integers(0, 2 ** 32, 120000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.concatenate([special, around, *dense, *wide, raw]).astype(np.float32)


INPUTS = _inputs()


def _build(board_name: str, out: Path, family: str | None = None) -> list[str]:
    """The probe built with the board's toolchain and flags (the runtime's language flags); the argv that runs it."""
    board = load_board(board_name)
    try:
        tc, found = select_toolchain(board, family)
    except ToolchainMissing as e:
        pytest.fail(f"{e} (scripts/setup.sh installs the toolchains)")
    flags = tc.flags(found, board, lto=False)
    # the probe needs no C++ library: zig links it without one instead of building libc++ for these flags
    extra = ["-nostdlib++"] if found.kind == "zig" else []
    argv = command_line(found, flags, [PROBE], out, extra_cxxflags=[*LANGUAGE_FLAGS, *extra, f"-I{ROOT / 'runtime'}"])
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"building the probe for {board_name} failed: {' '.join(argv)}\n{r.stderr[-3000:]}"
    emu = board.emulator
    return [str(out)] if emu.kind == "native" else [emu.binary, "-cpu", emu.cpu, str(out)]


def _run(argv: list[str], x: np.ndarray, tmp: Path) -> np.ndarray:
    src, dst = tmp / "in.bin", tmp / "out.bin"
    x.tofile(src)
    r = subprocess.run([*argv, str(src), str(dst)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return np.fromfile(dst, dtype=np.float32).reshape(len(FUNCS), x.size)


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> np.ndarray:
    tmp = tmp_path_factory.mktemp("smath_host")
    return _run(_build("host", tmp / "probe"), INPUTS, tmp)


@pytest.mark.parametrize("fn", FUNCS)
def test_within_the_documented_ulps_of_float64(host, fn):
    got = host[FUNCS.index(fn)]
    with np.errstate(invalid="ignore"):
        ref = TORCH[fn](torch.from_numpy(INPUTS.astype(np.float64))).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref), err_msg=f"{fn}: NaN where float64 has none or back")
    u = float32_ulps(got, ref)
    i = int(np.argmax(u))
    assert u[i] <= MAX_ULP[fn], f"{fn}({INPUTS[i]!r}) = {got[i]!r}, float64 {ref[i]!r}: {u[i]:.3f} ulp"


def _at(host: np.ndarray, fn: str, v: float) -> np.float32:
    idx = np.nonzero(INPUTS.view(np.uint32) == np.float32(v).view(np.uint32))[0]
    return host[FUNCS.index(fn), idx[0]]


def test_special_values_follow_c99_annex_f(host):
    inf, nan = float("inf"), float("nan")
    cases = [("exp", -inf, 0.0), ("exp", inf, inf), ("exp", 88.7228317, 3.4027985e38), ("exp", 88.7228394, inf),
             ("exp", -104.0, 0.0), ("exp", 0.0, 1.0), ("exp", -0.0, 1.0),
             ("expm1", -inf, -1.0), ("expm1", inf, inf), ("expm1", -17.5, -1.0),
             ("log", 0.0, -inf), ("log", -0.0, -inf), ("log", -1.0, nan), ("log", inf, inf), ("log", 1.0, 0.0),
             ("log", -inf, nan), ("log1p", -1.0, -inf), ("log1p", -1.5, nan), ("log1p", inf, inf),
             ("tanh", inf, 1.0), ("tanh", -inf, -1.0), ("tanh", 9.0, 1.0), ("erf", inf, 1.0), ("erf", -inf, -1.0),
             ("erf", 4.0, 1.0), ("sin", inf, nan), ("sin", -inf, nan), ("cos", inf, nan), ("cos", 0.0, 1.0)]
    for fn, x, want in cases:
        got = _at(host, fn, x)
        if np.isnan(want):
            assert np.isnan(got), (fn, x, got)
        else:
            assert got == np.float32(want), (fn, x, got, want)
    # signed zeros are kept where Annex F keeps them
    for fn in ("expm1", "log1p", "tanh", "erf", "sin"):
        for z in (0.0, -0.0):
            got = _at(host, fn, z)
            assert got == 0.0 and np.signbit(got) == np.signbit(np.float32(z)), (fn, z, got)
    assert np.signbit(_at(host, "log", 1.0)) == 0
    # a NaN input comes back with its payload
    for fn in FUNCS:
        for word in (0x7fc00000, 0xffc00001, 0x7fa00123):
            got = _at(host, fn, _bits(word)[0])
            assert got.view(np.uint32) == word, (fn, hex(word), hex(int(got.view(np.uint32))))


def test_the_portable_kernels_give_the_probes_bits(host):
    """exp, log, erf, sin, cos and tanh kernels (and elu with alpha 1, expm1 below 0) call these functions, on either
    kernel policy (no SIMD set replaces these element-wise kernels)."""
    _C = pytest.importorskip("dtorch.runtime._C", reason="the runtime extension is not built (pip install -e .)")
    x = INPUTS[np.isfinite(INPUTS) | np.isinf(INPUTS)]
    for fn in ("exp", "log", "erf", "sin", "cos", "tanh"):
        want = host[FUNCS.index(fn)][np.isfinite(INPUTS) | np.isinf(INPUTS)]
        for policy in ("exact", "fast"):
            got = _C.run_kernel(fn, {}, [x], threads=2, kernels=policy)[0]
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=f"{fn} ({policy})")
    neg = INPUTS < 0
    got = _C.run_kernel("elu", {"alpha": 1.0}, [INPUTS[neg]], kernels="exact")[0]
    np.testing.assert_array_equal(got.view(np.uint32), host[FUNCS.index("expm1")][neg].view(np.uint32))


# Each board architecture with the toolchain its bundles use (zig: static musl), and glibc's cross compiler too.
BOARD_BUILDS = [("rk3588", "zig"), ("rk3588", "gcc-cross"), ("rv1126", "zig"), ("k230", "zig")]


@pytest.mark.parametrize(("board", "family"), BOARD_BUILDS, ids=[f"{b}-{f}" for b, f in BOARD_BUILDS])
def test_every_board_build_gives_the_hosts_bits(host, board, family, tmp_path):
    got = _run(_build(board, tmp_path / "probe", family), INPUTS, tmp_path)
    for i, fn in enumerate(FUNCS):
        diff = np.nonzero(got[i].view(np.uint32) != host[i].view(np.uint32))[0]
        assert diff.size == 0, (f"{board} ({family}) {fn}: {diff.size} values differ from the host's, e.g. "
                                f"{fn}({INPUTS[diff[0]]!r}) = {got[i][diff[0]]!r} vs {host[i][diff[0]]!r}")
