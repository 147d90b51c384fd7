"""dtorch.nn.utils gradient clipping and parameter/vector helpers against torch.nn.utils."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch

import dtorch as dt
from dtorch.nn.utils import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
    parameters_to_vector,
    vector_to_parameters,
)

SHAPES = [(4, 3), (5,), (2, 2, 2)]


def pair(seed: int = 0, scale: float = 1.0, none_at: int | None = None) -> tuple[list[Any], list[Any]]:
    rng = np.random.default_rng(seed)
    dps, tps = [], []
    for i, s in enumerate(SHAPES):
        w = rng.standard_normal(s).astype(np.float32)
        g = (rng.standard_normal(s) * scale).astype(np.float32)
        p, tp = dt.nn.Parameter(w.copy()), torch.nn.Parameter(torch.from_numpy(w.copy()))
        if i != none_at:
            p.grad, tp.grad = dt.tensor(g.copy()), torch.from_numpy(g.copy())
        dps.append(p)
        tps.append(tp)
    return dps, tps


def assert_grads_equal(dps: list[Any], tps: list[Any]) -> None:
    for p, tp in zip(dps, tps):
        if tp.grad is None:
            assert p.grad is None
        else:
            np.testing.assert_allclose(p.grad._data, tp.grad.numpy(), rtol=1e-6, atol=1e-7, equal_nan=True)


@pytest.mark.parametrize("norm_type", [2.0, 1, math.inf, "inf", 3.5, 0.5, -math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_matches_torch(norm_type: Any, max_norm: float) -> None:
    dps, tps = pair(none_at=1)
    kept = [p.grad for p in dps]
    total = clip_grad_norm_(dps, max_norm, norm_type=norm_type)
    ttotal = torch.nn.utils.clip_grad_norm_(tps, max_norm, norm_type=norm_type)
    assert isinstance(total, dt.Tensor) and total.shape == () and total.dtype is dt.float32
    np.testing.assert_allclose(float(total), float(ttotal), rtol=1e-6)
    assert_grads_equal(dps, tps)
    assert all(p.grad is g for p, g in zip(dps, kept))  # clipped in place


def test_clip_grad_norm_clips_to_max_norm() -> None:
    dps, _ = pair(scale=10.0)
    before = clip_grad_norm_(dps, 1.0)
    assert float(before) > 1.0
    after = clip_grad_norm_(dps, 1.0)
    assert float(after) == pytest.approx(1.0, rel=1e-5)


def test_single_tensor_and_generator_arguments() -> None:
    dps, tps = pair(1)
    total = clip_grad_norm_(dps[0], 0.1)
    ttotal = torch.nn.utils.clip_grad_norm_(tps[0], 0.1)
    np.testing.assert_allclose(float(total), float(ttotal), rtol=1e-6)
    clip_grad_norm_((p for p in dps[1:]), 0.1, foreach=True)
    torch.nn.utils.clip_grad_norm_((p for p in tps[1:]), 0.1)
    assert_grads_equal(dps, tps)


def test_no_gradients() -> None:
    p = dt.nn.Parameter(np.ones(3, dtype=np.float32))
    total = clip_grad_norm_([p], 1.0)
    assert float(total) == 0.0 and total.shape == () and p.grad is None
    with pytest.warns(UserWarning, match="empty generator"):
        assert float(clip_grad_norm_((q for q in []), 1.0)) == 0.0


def test_nonfinite_norm() -> None:
    dps, tps = pair(2)
    dps[0].grad._data[0, 0] = np.inf
    tps[0].grad[0, 0] = math.inf
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is non-finite"):
        clip_grad_norm_(dps, 1.0, error_if_nonfinite=True)
    with pytest.raises(RuntimeError, match="non-finite"):
        torch.nn.utils.clip_grad_norm_(tps, 1.0, error_if_nonfinite=True)
    total = clip_grad_norm_(dps, 1.0)
    ttotal = torch.nn.utils.clip_grad_norm_(tps, 1.0)
    assert math.isinf(float(total)) and math.isinf(float(ttotal))
    assert_grads_equal(dps, tps)  # scaled by 0: the inf entry becomes nan, as in torch
    dps, _ = pair(3)
    dps[2].grad._data[0, 0, 0] = np.nan
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(dps, 1.0, norm_type=1, error_if_nonfinite=True)


def test_bad_norm_type() -> None:
    with pytest.raises(ValueError, match="norm_type must be a number or 'inf'"):
        clip_grad_norm_(pair()[0], 1.0, norm_type="fro")


def test_deprecated_clip_grad_norm() -> None:
    dps, tps = pair(4)
    with pytest.warns(FutureWarning, match="deprecated"):
        clip_grad_norm(dps, 0.5)
    torch.nn.utils.clip_grad_norm_(tps, 0.5)
    assert_grads_equal(dps, tps)


def test_get_total_norm_and_clip_grads_with_norm_match_torch() -> None:
    dps, tps = pair(5)
    grads, tgrads = [p.grad for p in dps], [p.grad for p in tps]
    total = get_total_norm(grads, 3.0)
    ttotal = torch.nn.utils.get_total_norm(tgrads, 3.0)
    np.testing.assert_allclose(float(total), float(ttotal), rtol=1e-6)
    clip_grads_with_norm_(dps, 0.2, total)
    torch.nn.utils.clip_grads_with_norm_(tps, 0.2, ttotal)
    assert_grads_equal(dps, tps)
    clip_grads_with_norm_(dps, 0.2, 2.5)  # a plain number works as the norm too
    assert float(get_total_norm(dt.tensor([3.0, 4.0]))) == pytest.approx(5.0)


@pytest.mark.parametrize("clip_value", [0.3, 1, 5.0])
def test_clip_grad_value_matches_torch(clip_value: float) -> None:
    dps, tps = pair(6, scale=2.0, none_at=2)
    assert clip_grad_value_(dps, clip_value) is None
    torch.nn.utils.clip_grad_value_(tps, clip_value)
    assert_grads_equal(dps, tps)
    assert all(np.abs(p.grad._data).max() <= clip_value for p in dps if p.grad is not None)


def test_clip_grad_value_single_tensor() -> None:
    p = dt.nn.Parameter(np.zeros(3, dtype=np.float32))
    p.grad = dt.tensor([-3.0, 0.5, 9.0])
    clip_grad_value_(p, 1.0, foreach=False)
    np.testing.assert_array_equal(p.grad._data, [-1.0, 0.5, 1.0])


def test_parameters_to_vector_round_trip() -> None:
    dps, tps = pair(7)
    vec = parameters_to_vector(dps)
    tvec = torch.nn.utils.parameters_to_vector(tps)
    np.testing.assert_array_equal(vec.detach().numpy(), tvec.detach().numpy())
    assert vec.requires_grad  # differentiable, like torch's
    new = dt.tensor(np.arange(vec.numel(), dtype=np.float32))
    vector_to_parameters(new, dps)
    torch.nn.utils.vector_to_parameters(torch.arange(tvec.numel(), dtype=torch.float32), tps)
    for p, tp in zip(dps, tps):
        np.testing.assert_array_equal(p._data, tp.detach().numpy())
        assert isinstance(p, dt.nn.Parameter) and p.requires_grad


def test_vector_helpers_errors() -> None:
    dps, _ = pair()
    with pytest.raises(TypeError, match="expected dtorch.Tensor"):
        vector_to_parameters(np.zeros(3), dps)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs a 1-D vector of 25 elements"):
        vector_to_parameters(dt.zeros(3), dps)
    with pytest.raises(TypeError, match="expected dtorch.Tensor"):
        parameters_to_vector([np.zeros(3)])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="empty"):
        parameters_to_vector([])
