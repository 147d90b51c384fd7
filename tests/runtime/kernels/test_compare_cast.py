"""The comparison, selection and conversion kernels (equal, less, greater, where, cast) against PyTorch and dtorch
eager: every signature, broadcasting, NaN, integers at the edges of their range, zero-size tensors, the same bits on
any thread count, and the errors (through run_kernel and in a model the loader refuses)."""

from __future__ import annotations

import numpy as np
import pytest
from dtm_builder import DtmBuilder

import dtorch as dt
import dtorch.runtime as rt
from dtorch.catalogue import CATALOGUE, signature_for

from .helpers import _C, run

torch = pytest.importorskip("torch")

_NP = {"float32": np.float32, "int64": np.int64, "int32": np.int32, "bool": np.bool_}
_SHAPES = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((3, 1), (1, 5)), ((), (2, 3)), ((2, 1, 4), (3, 1)),
           ((0, 3), (1, 3)), ((1,), ())]


def _data(rng: np.random.Generator, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """Values with ties, extremes and (float) NaN / inf / -0, so comparisons and selections meet every case."""
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype == "float32":
        pool = np.array([0.0, -0.0, 1.0, -1.5, 2.5, np.nan, np.inf, -np.inf, 3e38, 1e-40], np.float32)
    else:
        info = np.iinfo(_NP[dtype])
        pool = np.array([0, 1, -1, 7, info.max, info.min, info.max - 1, info.min + 1], _NP[dtype])
    return np.asarray(pool[rng.integers(0, len(pool), size=shape)])


@pytest.mark.parametrize("op,ref", [("equal", torch.eq), ("less", torch.lt), ("greater", torch.gt)])
@pytest.mark.parametrize("dtype", ["float32", "int64", "int32"])
@pytest.mark.parametrize("sa,sb", _SHAPES)
def test_comparisons_match_pytorch(op, ref, dtype, sa, sb) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(7)
    a, b = _data(rng, dtype, sa), _data(rng, dtype, sb)
    got = run(op, {}, [a, b])
    assert got.dtype == np.bool_  # the signature's output: run_kernel's default
    want = ref(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name,op", [("eq", "equal"), ("lt", "less"), ("gt", "greater")])
def test_comparisons_match_dtorch_eager(name, op) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(8)
    a, b = _data(rng, "float32", (3, 4)), _data(rng, "float32", (4,))
    eager = getattr(dt, name)(dt.from_numpy(a), dt.from_numpy(b)).numpy()
    np.testing.assert_array_equal(run(op, {}, [a, b]), eager)


@pytest.mark.parametrize("dtype", ["float32", "int64", "int32", "bool"])
@pytest.mark.parametrize("sc,sx,sy", [((2, 3), (2, 3), (2, 3)), ((2, 1), (1, 3), ()), ((4,), (3, 1), (1, 4)),
                                      ((), (2, 2), (2, 2)), ((0, 2), (1, 2), (2,)), ((2, 1, 3), (1, 4, 1), (3,))])
def test_where_matches_pytorch(dtype, sc, sx, sy) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(9)
    c, x, y = _data(rng, "bool", sc), _data(rng, dtype, sx), _data(rng, dtype, sy)
    got = run("where", {}, [c, x, y])
    want = torch.where(torch.from_numpy(c), torch.from_numpy(x), torch.from_numpy(y))
    assert got.dtype == _NP[dtype]
    np.testing.assert_array_equal(got, want.numpy())
    if dtype == "float32" and got.size:  # a copy of the chosen element: -0.0 and NaN keep their bits
        np.testing.assert_array_equal(got.view(np.uint32), want.numpy().view(np.uint32))


def test_where_matches_dtorch_eager() -> None:
    rng = np.random.default_rng(10)
    c, x = rng.random((3, 4)) < 0.5, rng.standard_normal((3, 4)).astype(np.float32)
    eager = dt.where(dt.from_numpy(c), dt.from_numpy(x), dt.zeros(4)).numpy()
    np.testing.assert_array_equal(run("where", {}, [c, x, np.zeros(4, np.float32)]), eager)


@pytest.mark.parametrize("op,inputs", [
    ("where", lambda r: [r.random((64, 300)) < 0.5, r.standard_normal((64, 300)).astype(np.float32),
                         r.standard_normal((300,)).astype(np.float32)]),
    ("less", lambda r: [r.integers(-5, 5, (64, 1, 300)), r.integers(-5, 5, (7, 1))]),
    ("cast", lambda r: [r.standard_normal((64, 3000)).astype(np.float32) * 1e10]),
])
def test_threads_give_the_same_bits(op, inputs) -> None:  # type: ignore[no-untyped-def]
    xs = inputs(np.random.default_rng(11))
    attrs = {"to": "int32"} if op == "cast" else {}
    one = run(op, attrs, xs, threads=1)
    for threads in (2, 3, 8):
        np.testing.assert_array_equal(run(op, attrs, xs, threads=threads), one)


def _cast_pairs() -> list[tuple[str, str]]:
    return [(s.inputs[0], s.outputs[0]) for s in CATALOGUE["cast"].signatures]


@pytest.mark.parametrize("src,to", _cast_pairs())
def test_cast_matches_pytorch_in_range(src, to) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(12)
    if src == "float32":  # inside every integer range: truncation toward zero, as torch and numpy
        x = (rng.standard_normal((5, 7)) * 1000).astype(np.float32)
        x.reshape(-1)[:6] = [0.0, -0.0, 0.5, -0.5, 2.9999998, -2.9999998]
    else:
        x = _data(rng, src, (5, 7))
    got = _C.run_kernel("cast", {"to": to}, [x])[0]
    assert got.dtype == _NP[to] and got.shape == x.shape
    want = torch.from_numpy(np.asarray(x)).to(getattr(torch, to)).numpy()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, dt.from_numpy(np.asarray(x)).to(getattr(dt, to)).numpy())  # dtorch eager


@pytest.mark.parametrize("to", ["int64", "int32"])
def test_cast_float_to_int_saturates_and_nan_is_zero(to) -> None:  # type: ignore[no-untyped-def]
    info = np.iinfo(_NP[to])
    big = np.float32(2.0 ** (info.bits - 1))  # the first float32 above the range
    x = np.array([np.nan, -np.nan, np.inf, -np.inf, big, -big, big * 4, -big * 4, 3e38, -3e38,
                  np.nextafter(big, np.float32(0)), -np.nextafter(big, np.float32(0))], np.float32)
    got = _C.run_kernel("cast", {"to": to}, [x])[0]
    edge = int(np.nextafter(big, np.float32(0)))
    want = [0, 0, info.max, info.min, info.max, info.min, info.max, info.min, info.max, info.min, edge, -edge]
    np.testing.assert_array_equal(got, np.array(want, _NP[to]))


def test_cast_edges_of_the_documented_semantics() -> None:
    x = np.array([np.nan, -0.0, 0.0, 1e-45, -np.inf], np.float32)
    np.testing.assert_array_equal(run("cast", {"to": "bool"}, [x]), [True, False, False, True, True])
    big = np.array([2**53 + 1, -(2**62) - 1, 2**31 + 5, -(2**31) - 1, 16777217], np.int64)
    np.testing.assert_array_equal(run("cast", {"to": "float32"}, [big]), big.astype(np.float32))  # nearest even
    np.testing.assert_array_equal(run("cast", {"to": "int32"}, [big]), big.astype(np.int32))  # low 32 bits
    np.testing.assert_array_equal(run("cast", {"to": "int64"}, [np.array([True, False])]), [1, 0])


@pytest.mark.parametrize("src,to", [("float32", "bool"), ("int64", "float32"), ("bool", "int32")])
def test_cast_zero_size(src, to) -> None:  # type: ignore[no-untyped-def]
    got = run("cast", {"to": to}, [np.zeros((0, 3), _NP[src])])
    assert got.shape == (0, 3) and got.dtype == _NP[to]


def test_output_dtypes_follow_the_signature() -> None:
    assert signature_for("cast", ["float32"], {"to": "bool"}).outputs == ("bool",)  # type: ignore[union-attr]
    assert signature_for("where", ["bool", "int64", "int64"]).outputs == ("int64",)  # type: ignore[union-attr]
    assert signature_for("where", ["bool", "int64", "float32"]) is None
    assert signature_for("cast", ["int64"], {"to": "int64"}) is None


def test_kernel_errors() -> None:
    c, x = np.array([True, False]), np.ones(2, np.float32)
    with pytest.raises(ValueError, match=r"where: input 2 is int64, but where takes float32 there \(where's bool "
                                         r"signatures: \(bool, float32, float32\) -> float32; \(bool, int64, int64\)"):
        run("where", {}, [c, x, np.ones(2, np.int64)])
    with pytest.raises(ValueError, match=r"where: input 2 is bool, but where takes float32"):
        run("where", {}, [np.ones(2, np.float32).astype(bool), x, x.astype(bool)])
    with pytest.raises(ValueError, match=r"where: the shapes of cond \[2\], x \[3\] and y \[2\] cannot be broadcast"):
        run("where", {}, [c, np.ones(3, np.float32), x])
    with pytest.raises(NotImplementedError, match=r"no kernel for operator 'where' \(float32\)"):
        run("where", {}, [x, x, x])
    with pytest.raises(ValueError, match=r"equal: input 1 is int64, but equal takes float32 there"):
        run("equal", {}, [x, np.ones(2, np.int64)])
    with pytest.raises(ValueError, match=r"less: shapes \[2\] and \[3\] cannot be broadcast together"):
        run("less", {}, [x, np.ones(3, np.float32)])
    with pytest.raises(ValueError, match=r"greater: output 0 is declared float32, but the greater kernel writes bool"):
        _C.run_kernel("greater", {}, [x, x], output_dtypes=["float32"])
    with pytest.raises(ValueError, match=r"cast attribute 'to' is \"float64\", expected one of \"float32\", "
                                         r"\"int64\", \"int32\", \"bool\""):
        run("cast", {"to": "float64"}, [x])
    with pytest.raises(ValueError, match=r"missing required attribute 'to'"):
        run("cast", {}, [x])
    with pytest.raises(ValueError, match=r"cast: \(float32\) -> float32 is not a signature of cast"):
        run("cast", {"to": "float32"}, [x])
    with pytest.raises(ValueError, match=r"cast: output 0 is declared int32, but cast with to=\"int64\" writes int64"):
        _C.run_kernel("cast", {"to": "int64"}, [x], output_dtypes=["int32"])


def _one_node(op: str, in_dtypes: list[str], out_dtype: str, attrs: dict | None = None) -> bytes:
    g = DtmBuilder()
    ins = [g.input(f"in{i}", [2, 3], d) for i, d in enumerate(in_dtypes)]
    g.node(op, ins, [g.output("out", [2, 3], out_dtype)], attrs)
    return g.build()


@pytest.mark.parametrize("op,ins,out,attrs,match", [
    ("where", ["bool", "int64", "float32"], "float32", None,
     r"input 1 \(tensor 1 \('in1'\)\) is int64, but where takes float32 there \(where's bool signatures: "),
    ("where", ["bool", "int64", "int64"], "float32", None,
     r"output 0 \(tensor 3 \('out'\)\) is declared float32, but the where kernel writes int64"),
    ("equal", ["int64", "int64"], "int64", None, r"output 0 .* is declared int64, but the equal kernel writes bool"),
    ("cast", ["float32"], "int32", {"to": "int64"},
     r"output 0 \(tensor 1 \('out'\)\) is declared int32, but cast with to=\"int64\" writes int64"),
    ("cast", ["int64"], "int64", {"to": "int64"}, r"\(int64\) -> int64 is not a signature of cast \(cast's int64 "
                                                   r"signatures: \(int64\) -> float32; "),
    ("cast", ["float32"], "float32", {"to": "float16"}, r"cast attribute 'to' is \"float16\", expected one of"),
])
def test_loader_refuses_wrong_dtype_combinations(op, ins, out, attrs, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(rt.InvalidModelError, match=match):
        rt.InferenceSession(_one_node(op, ins, out, attrs))


def test_in_a_model_bool_in_and_out() -> None:
    """x > t, where(mask, x, 0), the mask cast to int64: bool and int64 tensors through a session."""
    g = DtmBuilder()
    x, t = g.input("x", ["n", 4]), g.input("t", [4])
    mask, sel = g.output("mask", ["n", 4], "bool"), g.output("sel", ["n", 4])
    cnt, zero = g.output("count", ["n", 4], "int64"), g.const("zero", np.zeros((), np.float32))
    g.node("greater", [x, t], [mask])
    g.node("where", [mask, x, zero], [sel])
    g.node("cast", [mask], [cnt], {"to": "int64"})
    s = rt.InferenceSession(g.build())
    xv = np.random.default_rng(13).standard_normal((3, 4)).astype(np.float32)
    tv = np.array([0.0, 0.5, -0.5, np.nan], np.float32)
    got_mask, got_sel, got_cnt = s.run(None, {"x": xv, "t": tv})
    m = torch.from_numpy(xv) > torch.from_numpy(tv)
    np.testing.assert_array_equal(got_mask, m.numpy())
    np.testing.assert_array_equal(got_sel, torch.where(m, torch.from_numpy(xv), 0.0).numpy())
    np.testing.assert_array_equal(got_cnt, m.long().numpy())
    g2 = DtmBuilder()
    b = g2.input("b", [5], "bool")
    g2.node("cast", [b], [g2.output("f", [5])], {"to": "float32"})
    bv = np.array([True, False, False, True, True])
    np.testing.assert_array_equal(rt.InferenceSession(g2.build()).run(None, {"b": bv})[0], bv.astype(np.float32))
