"""Fixtures shared by the dt.quant tests: the bundled digits at a given size, and the training loop of the models
trained on them; the folder on sys.path for the models beside the tests (int8_blocks.py)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import dtorch as dt
from dtorch import nn
from dtorch.data import DataLoader

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:  # the shared models (int8_blocks.py) import from the tests beside them
    sys.path.insert(0, _HERE)


@pytest.fixture(scope="session")
def digit_splits() -> Callable[[int], tuple[Any, Any]]:
    """digit_splits(size): the bundled digits (train, test), RGB at size x size, normalized as the demo does."""
    from dtorch.edge.demo import MEAN, STD
    from dtorch.vision import transforms
    from dtorch.vision.datasets import Digits

    made: dict[int, tuple[Any, Any]] = {}

    def get(size: int) -> tuple[Any, Any]:
        if size not in made:
            tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
            made[size] = (Digits(train=True, rgb=True, size=size, transform=tf),
                          Digits(train=False, rgb=True, size=size, transform=tf))
        return made[size]

    return get


@pytest.fixture(scope="session")
def train_digits() -> Callable[..., Any]:
    """train_digits(model, train, optimizer, epochs): the model trained with cross entropy in batches of 64 (epoch k
    shuffled by a generator seeded with k), returned in eval mode."""

    def fit(model: Any, train: Any, opt: Any, epochs: int) -> Any:
        for epoch in range(epochs):
            model.train()
            for x, y in DataLoader(train, batch_size=64, shuffle=True, generator=dt.Generator().manual_seed(epoch)):
                opt.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                opt.step()
        return model.eval()

    return fit
