"""Shared helpers of the kernel tests: run one kernel through `dtorch.runtime._C.run_kernel` and compare
with a reference (dtorch eager or PyTorch) at the portable kernels' float32 tolerance."""

from __future__ import annotations

import numpy as np
import pytest

_C = pytest.importorskip("dtorch.runtime._C", reason="the runtime extension is not built (pip install -e .)")

TOL = 1e-5  # max abs error relative to the output scale


def run(op: str, attrs: dict, inputs: list, threads: int = 1, kernels: str = "fast") -> np.ndarray:
    """The kernel a session with kernel policy `kernels` runs ("fast": the best this CPU has)."""
    return _C.run_kernel(op, attrs, inputs, threads=threads, kernels=kernels)[0]


def assert_close(got: np.ndarray, ref: np.ndarray, tol: float = TOL, scale: float | None = None) -> None:
    """`scale`: the output scale the tolerance is relative to (default: that of `ref`; a clamping activation's
    caller passes the scale of the values before it)."""
    ref = np.asarray(ref, dtype=np.float32)
    assert got.dtype == np.float32
    assert got.shape == ref.shape, f"shape {got.shape} != reference {ref.shape}"
    if ref.size == 0:
        return
    scale = max(1.0, float(np.nanmax(np.abs(ref))) if scale is None else scale)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    err = float(np.nanmax(np.abs(got.astype(np.float64) - ref.astype(np.float64)))) / scale
    assert err <= tol, f"max abs error {err:.3g} (relative to output scale {scale:.3g}) > {tol}"


def rand(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)
