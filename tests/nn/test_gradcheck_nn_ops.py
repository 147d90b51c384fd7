"""Every differentiable nn primitive passes the float64 finite-difference gradcheck (one table, all ops)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import dtorch as dt
import dtorch._prims as prims
import dtorch.nn.functional as F
from dtorch.autograd import gradcheck
from dtorch.autograd.function import Function


def _t(*shape: int, seed: int = 0, lo: float = 0.2, hi: float = 1.5, signed: bool = True) -> dt.Tensor:
    """float64 values away from kinks (|x| in [lo, hi])."""
    rng = np.random.default_rng(seed)
    v = rng.uniform(lo, hi, shape)
    if signed:
        v = v * rng.choice([-1.0, 1.0], shape)
    return dt.tensor(v, dtype=dt.float64, requires_grad=True)


def _idx(n: int, high: int, seed: int = 0) -> dt.Tensor:
    return dt.tensor(np.random.default_rng(seed).integers(0, high, n))


def _distinct(*shape: int, seed: int = 0) -> dt.Tensor:
    """Values with no ties (max pooling is not differentiable at ties)."""
    v = np.random.default_rng(seed).permutation(int(np.prod(shape))).reshape(shape) / 7.0
    return dt.tensor(v, dtype=dt.float64, requires_grad=True)


def _dropout(x: dt.Tensor) -> dt.Tensor:
    dt.manual_seed(5)  # the same mask on every evaluation
    return F.dropout(x, 0.3, training=True)


_TARGET = dt.tensor(np.random.default_rng(9).uniform(0, 1, (3, 4)))  # float64 soft targets

# primitive name -> (function, inputs factory)
CASES: dict[str, tuple[Callable[..., Any], Callable[[], tuple[dt.Tensor, ...]]]] = {
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1),
               lambda: (_t(2, 3, 5, 5), _t(4, 3, 3, 3, seed=1), _t(4, seed=2))),
    "conv_transpose2d": (lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1),
                         lambda: (_t(1, 3, 3, 3), _t(3, 2, 3, 3, seed=1), _t(2, seed=2))),
    "max_pool2d": (lambda x: F.max_pool2d(x, 2), lambda: (_distinct(1, 2, 4, 4),)),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 3, stride=2, padding=1), lambda: (_t(1, 2, 5, 5),)),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, (2, 3)), lambda: (_t(1, 2, 5, 7),)),
    "adaptive_max_pool2d": (lambda x: F.adaptive_max_pool2d(x, 2), lambda: (_distinct(1, 2, 5, 5),)),
    "upsample_nearest2d": (lambda x: F.interpolate(x, scale_factor=2, mode="nearest"), lambda: (_t(1, 2, 3, 3),)),
    "upsample_bilinear2d": (lambda x: F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=False),
                            lambda: (_t(1, 2, 3, 4),)),
    # (padding_idx rows get no gradient by definition, so they are checked against torch, not here)
    "embedding": (lambda w: F.embedding(_idx(6, 5), w), lambda: (_t(5, 3),)),
    "batch_norm": (lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
                   lambda: (_t(4, 3, 2, 2), _t(3, seed=1), _t(3, seed=2))),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (4,), w, b), lambda: (_t(3, 4), _t(4, seed=1), _t(4, seed=2))),
    "group_norm": (lambda x, w, b: F.group_norm(x, 2, w, b), lambda: (_t(2, 4, 3), _t(4, seed=1), _t(4, seed=2))),
    "linear": (F.linear, lambda: (_t(3, 4), _t(5, 4, seed=1), _t(5, seed=2))),
    "softmax": (lambda x: F.softmax(x, dim=1), lambda: (_t(3, 4),)),
    "log_softmax": (lambda x: F.log_softmax(x, dim=0), lambda: (_t(3, 4),)),
    "gelu": (F.gelu, lambda: (_t(3, 4),)),
    "silu": (F.silu, lambda: (_t(3, 4),)),
    "hardswish": (F.hardswish, lambda: (_t(3, 4, lo=0.2, hi=2.5),)),
    "hardsigmoid": (F.hardsigmoid, lambda: (_t(3, 4, lo=0.2, hi=2.5),)),
    "hardtanh": (F.relu6, lambda: (_t(3, 4, lo=0.2, hi=5.0),)),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.1), lambda: (_t(3, 4),)),
    "elu": (F.elu, lambda: (_t(3, 4),)),
    "softplus": (F.softplus, lambda: (_t(3, 4),)),
    "mish": (F.mish, lambda: (_t(3, 4),)),
    "dropout": (_dropout, lambda: (_t(4, 5),)),
    "cross_entropy": (lambda x: F.cross_entropy(x, _idx(4, 3), label_smoothing=0.1), lambda: (_t(4, 3),)),
    "nll_loss": (lambda x: F.nll_loss(x, _idx(4, 3)), lambda: (_t(4, 3),)),
    "mse_loss": (F.mse_loss, lambda: (_t(3, 4), _t(3, 4, seed=1))),
    "l1_loss": (F.l1_loss, lambda: (_t(3, 4), _t(3, 4, seed=1))),
    "smooth_l1_loss": (F.smooth_l1_loss, lambda: (_t(3, 4), _t(3, 4, seed=1))),
    "huber_loss": (lambda a, b: F.huber_loss(a, b, delta=0.5), lambda: (_t(3, 4), _t(3, 4, seed=1))),
    "binary_cross_entropy": (lambda p: F.binary_cross_entropy(p, _TARGET),
                             lambda: (_t(3, 4, lo=0.1, hi=0.9, signed=False),)),
    "binary_cross_entropy_with_logits": (
        lambda x: F.binary_cross_entropy_with_logits(x, _TARGET,
                                                     pos_weight=dt.full((4,), 2.0, dtype=dt.float64)),
        lambda: (_t(3, 4),)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck(name: str) -> None:
    fn, make = CASES[name]
    dt.manual_seed(0)
    assert gradcheck(fn, make())


def test_every_differentiable_nn_primitive_is_gradchecked() -> None:
    names = set()
    core = {"pointwise", "linalg", "reduce", "shape"}  # gradchecked by tests/autograd/test_gradcheck_ops.py
    for info in pkgutil.iter_modules(prims.__path__):
        if info.name in core:
            continue
        mod = importlib.import_module(f"dtorch._prims.{info.name}")
        for _, cls in inspect.getmembers(mod, inspect.isclass):
            if issubclass(cls, Function) and cls.__module__ == mod.__name__ and cls.differentiable and cls.name:
                names.add(cls.name)
    assert names - set(CASES) == set(), "add a gradcheck case for these primitives"
