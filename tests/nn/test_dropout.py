"""Dropout: statistics, scaling, gradients, channel-wise variants, determinism, modes, reprs and errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import dtorch as dt
import dtorch.nn.functional as F
from dtorch import nn


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_statistics_scaling_and_grad(p: float) -> None:
    dt.manual_seed(0)
    x = dt.ones(200, 300, requires_grad=True)
    y = F.dropout(x, p)
    out = y.detach().numpy()
    zero = out == 0
    assert zero.mean() == pytest.approx(p, abs=0.01)
    np.testing.assert_allclose(out[~zero], 1.0 / (1.0 - p), rtol=1e-6)
    (y * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * out, rtol=1e-6)


def test_dropout_edge_probabilities_and_eval() -> None:
    x = dt.randn(4, 5, requires_grad=True)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    y = F.dropout(x, 1.0)
    assert not y.detach().numpy().any()
    y.sum().backward()
    assert not x.grad.numpy().any()
    m = nn.Dropout(0.5)
    m.eval()
    assert m(x) is x
    i = dt.tensor([1, 2, 3])
    assert F.dropout(i, training=False) is i


def test_dropout_determinism_and_generator() -> None:
    x = dt.ones(50, 50)
    dt.manual_seed(5)
    a = F.dropout(x, 0.3).numpy()
    dt.manual_seed(5)
    b = F.dropout(x, 0.3).numpy()
    np.testing.assert_array_equal(a, b)
    g1, g2 = dt.Generator().manual_seed(1), dt.Generator().manual_seed(1)
    np.testing.assert_array_equal(F.dropout(x, 0.3, generator=g1).numpy(), F.dropout(x, 0.3, generator=g2).numpy())


@pytest.mark.parametrize("fn,shape", [("dropout1d", (8, 16, 5)), ("dropout1d", (16, 5)), ("dropout2d", (8, 16, 3, 3)),
                                      ("dropout2d", (16, 3, 3)), ("dropout3d", (4, 16, 2, 2, 2))])
def test_channel_dropout(fn: str, shape: tuple[int, ...]) -> None:
    dt.manual_seed(1)
    y = getattr(F, fn)(dt.ones(*shape), 0.5).numpy()
    batched = y if len(shape) in (3, 4, 5) and not (fn == "dropout2d" and len(shape) == 3) and not (
        fn == "dropout1d" and len(shape) == 2) else y[None]
    flat = batched.reshape(batched.shape[0], batched.shape[1], -1)
    per_channel = flat.min(axis=2) == flat.max(axis=2)  # each channel is all kept or all dropped
    assert per_channel.all()
    assert set(np.unique(flat)) <= {0.0, 2.0} and 0.2 < (flat == 0).mean() < 0.8


def test_dropout_inplace_and_reduced_precision() -> None:
    x = dt.ones(10, 10)
    out = F.dropout(x, 0.5, inplace=True)
    assert out is x and set(np.unique(x.numpy())) <= {0.0, 2.0}
    h = F.dropout(dt.ones(10, dtype=dt.float16), 0.5)
    assert h.dtype is dt.float16
    nn.Dropout2d(0.5, inplace=True)(dt.ones(2, 3, 2, 2))


def test_dropout_modules_repr_and_errors() -> None:
    for cls, args in [("Dropout", ()), ("Dropout", (0.2, True)), ("Dropout1d", (0.3,)), ("Dropout2d", ()),
                      ("Dropout3d", (0.1,))]:
        assert repr(getattr(nn, cls)(*args)) == repr(getattr(torch.nn, cls)(*args))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout(dt.ones(3), 1.5)
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(-0.1)
    with pytest.raises(RuntimeError, match="floating point"):
        F.dropout(dt.tensor([1, 2, 3]))
    with pytest.raises(RuntimeError, match="Expected 2D or 3D input"):
        F.dropout1d(dt.ones(2, 3, 4, 5))
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        F.dropout2d(dt.ones(3, 3))
    with pytest.raises(TypeError, match="must be Tensor"):
        F.dropout([1.0])  # type: ignore[arg-type]


def test_dropout_gradcheck_with_fixed_mask() -> None:
    from dtorch.autograd import gradcheck

    x = dt.randn(3, 4, 2, dtype=dt.float64, requires_grad=True)
    # a freshly seeded generator per call draws the same mask every time, so the function is deterministic
    assert gradcheck(lambda v: F.dropout(v, 0.4, generator=dt.Generator().manual_seed(2)), (x,))
    assert gradcheck(lambda v: F.dropout1d(v, 0.4, generator=dt.Generator().manual_seed(3)), (x,))
