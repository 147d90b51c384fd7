"""Helpers for comparing dtorch with PyTorch (the test oracle): paired tensors, layouts, assertions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import dtorch as dt

DTYPES = ["float32", "float16", "bfloat16", "float64", "int64", "int32", "int8", "uint8", "bool"]
FLOATS = ["float32", "float16", "bfloat16", "float64"]

# (rtol, atol) per result dtype: reduced-precision results may differ by one rounding step.
TOL = {"float64": (1e-10, 1e-12), "float32": (1e-5, 1e-6), "float16": (2e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2)}


def tdtype(name: str) -> torch.dtype:
    return getattr(torch, name)


def ddtype(name: str) -> dt.dtype:
    return getattr(dt, name)


def to_torch(x: dt.Tensor) -> torch.Tensor:
    arr = x.detach().numpy()
    if x.dtype is dt.bfloat16:
        return torch.from_numpy(arr.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(np.array(arr))


def to_numpy(x: Any) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach()
        return (x.float() if x.dtype == torch.bfloat16 else x).numpy()
    arr = x.detach().numpy()
    return arr.astype(np.float32) if x.dtype is dt.bfloat16 else arr


def sample(shape: tuple[int, ...], dtype: str, rng: np.random.Generator, low: float = -3, high: float = 3,
           positive: bool = False) -> np.ndarray:
    """Random values that are exact in every dtype (halves for floats), as a float64/int/bool array."""
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype == "uint8":
        return rng.integers(0, 10, shape).astype(np.uint8)
    if dtype.startswith("int"):
        lo = 1 if positive else -5
        return rng.integers(lo, 6, shape).astype(getattr(np, dtype))
    v = rng.uniform(low, high, shape)
    if positive:
        v = np.abs(v) + 0.25
    return v


def pair(arr: np.ndarray, dtype: str, layout: str = "contiguous",
         requires_grad: bool = False) -> tuple[dt.Tensor, torch.Tensor]:
    """The same values as a dtorch and a torch tensor of `dtype`, in the given memory layout.

    layout: "contiguous", "transposed" (a permuted view of a contiguous buffer) or "strided" (every
    second element of a larger buffer along the last dim).
    """
    base = np.asarray(arr)
    if layout == "transposed" and base.ndim >= 2:
        buf = np.ascontiguousarray(np.swapaxes(base, -1, -2))
        d = dt.tensor(buf, dtype=ddtype(dtype)).transpose(-1, -2)
        t = torch.tensor(buf, dtype=torch.float64 if dtype == "bfloat16" else None).to(tdtype(dtype)).transpose(-1, -2)
    elif layout == "strided" and base.ndim >= 1:
        buf = np.repeat(base, 2, axis=-1)
        d = dt.tensor(buf, dtype=ddtype(dtype))[..., ::2]
        t = torch.tensor(buf).to(tdtype(dtype))[..., ::2]
    else:
        d = dt.tensor(base, dtype=ddtype(dtype))
        t = torch.tensor(base).to(tdtype(dtype))
    if requires_grad:
        d = d.detach().requires_grad_()
        t = t.detach().requires_grad_()
    return d, t


def assert_close(d: Any, t: Any, rtol: float | None = None, atol: float | None = None,
                 check_dtype: bool = True, equal_nan: bool = True) -> None:
    """dtorch result `d` equals torch result `t`: same shape, same dtype, values within the dtype's tolerance."""
    if isinstance(t, (tuple, list)):
        assert isinstance(d, (tuple, list)) and len(d) == len(t), f"{type(d)} vs {type(t)}"
        for a, b in zip(d, t):
            assert_close(a, b, rtol, atol, check_dtype, equal_nan)
        return
    if not isinstance(t, torch.Tensor):
        assert not isinstance(d, dt.Tensor), f"dtorch returned a Tensor where torch returned {t!r}"
        if isinstance(t, float):
            np.testing.assert_allclose(d, t, rtol=rtol or 1e-6)
        else:
            assert d == t
        return
    assert isinstance(d, dt.Tensor), f"expected a dtorch Tensor, got {type(d).__name__}"
    tname = str(t.dtype).replace("torch.", "")
    if check_dtype:
        assert d.dtype.name == tname, f"dtype: dtorch {d.dtype} vs torch {t.dtype}"
    assert tuple(d.shape) == tuple(t.shape), f"shape: dtorch {tuple(d.shape)} vs torch {tuple(t.shape)}"
    r0, a0 = TOL.get(tname, (0.0, 0.0))
    a, b = to_numpy(d), to_numpy(t)
    if a.dtype.kind in "biu" and b.dtype.kind in "biu":
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=r0 if rtol is None else rtol,
                                   atol=a0 if atol is None else atol, equal_nan=equal_nan)


def assert_grads(dts: list[dt.Tensor], ts: list[torch.Tensor], rtol: float | None = None,
                 atol: float | None = None) -> None:
    for i, (a, b) in enumerate(zip(dts, ts)):
        if b.grad is None:
            assert a.grad is None or not np.any(to_numpy(a.grad)), f"input {i}: torch has no grad, dtorch has one"
            continue
        assert a.grad is not None, f"input {i}: dtorch produced no gradient"
        assert_close(a.grad, b.grad, rtol, atol)


def torch_outcome(ft: Callable[[], Any]) -> tuple[Any, Exception | None]:
    """Run the torch side: its result, or the exception it raised (what dtorch must then raise too)."""
    try:
        return ft(), None
    except Exception as e:
        return None, e


def same_outcome(fd: Callable[[], Any], ft: Callable[[], Any], **tol: Any) -> None:
    """dtorch's `fd()` gives torch's `ft()` result (see assert_close), or raises the same exception type."""
    expected, err = torch_outcome(ft)
    if err is not None:
        with pytest.raises(type(err)):
            fd()
        return
    assert_close(fd(), expected, **tol)
