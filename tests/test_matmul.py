"""`matmul` / `@` / mm / bmm / dot / outer against PyTorch: 1-D, 2-D, batched broadcasting, dtypes, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensor_oracle import assert_close, pair, same_outcome, sample

import dtorch as dt

SHAPES = [((4,), (4,)), ((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((2, 3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)),
          ((2, 1, 3, 4), (5, 4, 2)), ((4,), (2, 4, 5)), ((2, 3, 4), (4,)), ((0, 4), (4, 3)), ((3, 0), (0, 2)),
          ((2, 0, 3), (3, 4)), ((1, 3, 4), (7, 4, 1)), ((3, 4), (5, 6)), ((4,), (5,)), ((2, 3, 4), (3, 4, 5)),
          ((), (3,)), ((3,), ())]




@pytest.mark.parametrize(("sa", "sb"), SHAPES, ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_matmul_shapes(sa: tuple[int, ...], sb: tuple[int, ...], layout: str) -> None:
    rng = np.random.default_rng(0)
    da, ta = pair(sample(sa, "float64", rng), "float64", layout)
    db, tb = pair(sample(sb, "float64", rng), "float64", layout)
    same_outcome(lambda: da @ db, lambda: ta @ tb)
    same_outcome(lambda: dt.matmul(da, db), lambda: torch.matmul(ta, tb))


@pytest.mark.parametrize(("sa", "sb"), [s for s in SHAPES if () not in s and s != ((3, 4), (5, 6))
                                        and s != ((4,), (5,)) and s != ((2, 3, 4), (3, 4, 5))], ids=str)
def test_matmul_gradients(sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    rng = np.random.default_rng(1)
    da, ta = pair(sample(sa, "float64", rng), "float64", requires_grad=True)
    db, tb = pair(sample(sb, "float64", rng), "float64", requires_grad=True)
    out_t = ta @ tb
    w = rng.uniform(size=tuple(out_t.shape))
    ((da @ db) * dt.tensor(w)).sum().backward()
    (out_t * torch.tensor(w)).sum().backward()
    assert_close(da.grad, ta.grad)
    assert_close(db.grad, tb.grad)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int64", "int32", "uint8", "bool"])
def test_matmul_dtypes(dtype: str) -> None:
    rng = np.random.default_rng(2)
    da, ta = pair(sample((3, 8), dtype, rng), dtype)
    db, tb = pair(sample((8, 2), dtype, rng), dtype)
    same_outcome(lambda: da @ db, lambda: ta @ tb)
    same_outcome(lambda: da[0] @ db, lambda: ta[0] @ tb)


def test_matmul_errors() -> None:
    a32, a64 = dt.ones(2, 3), dt.ones(3, 2, dtype=dt.float64)
    with pytest.raises(RuntimeError, match="same dtype"):
        a32 @ a64
    with pytest.raises(RuntimeError):
        torch.ones(2, 3) @ torch.ones(3, 2, dtype=torch.float64)
    with pytest.raises(RuntimeError, match=r"cannot be multiplied \(2x3 and 4x2\)"):
        dt.ones(2, 3) @ dt.ones(4, 2)
    with pytest.raises(RuntimeError, match="at least 1D"):
        dt.tensor(2.0) @ dt.ones(2)
    with pytest.raises(TypeError):
        dt.ones(2) @ [1.0, 2.0]


def test_mm_bmm_dot_outer() -> None:
    rng = np.random.default_rng(3)
    a, ta = pair(sample((2, 3, 4), "float32", rng), "float32")
    b, tb = pair(sample((2, 4, 5), "float32", rng), "float32")
    assert_close(dt.bmm(a, b), torch.bmm(ta, tb))
    assert_close(a.bmm(b), ta.bmm(tb))
    assert_close(dt.mm(a[0], b[0]), torch.mm(ta[0], tb[0]))
    assert_close(a[0, 0].dot(b[0, :, 0]), ta[0, 0].dot(tb[0, :, 0]))
    assert_close(dt.outer(a[0, 0], b[0, 0]), torch.outer(ta[0, 0], tb[0, 0]))
    same_outcome(lambda: dt.mm(a, b), lambda: torch.mm(ta, tb))
    same_outcome(lambda: dt.bmm(a[0], b[0]), lambda: torch.bmm(ta[0], tb[0]))
    same_outcome(lambda: dt.dot(a[0], b[0]), lambda: torch.dot(ta[0], tb[0]))
    same_outcome(lambda: dt.dot(a[0, 0], b[0, 0]), lambda: torch.dot(ta[0, 0], tb[0, 0]))


def test_rmatmul_with_numpy_is_not_silently_wrong() -> None:
    x = dt.ones(2, 2)
    assert_close(x @ x.T, torch.ones(2, 2) @ torch.ones(2, 2).T)
