"""Where the data package draws its random numbers: a given `dt.Generator`, else the default one."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

import dtorch as dt

if TYPE_CHECKING:
    from dtorch.random import Generator


def check_generator(generator: object, who: str) -> None:
    """Raise a TypeError naming `who` unless `generator` is None or a `dt.Generator`."""
    if generator is not None and not isinstance(generator, dt.Generator):
        raise TypeError(f"{who}: generator must be a dt.Generator or None, got {type(generator).__name__}")


def np_rng(generator: Generator | None) -> np.random.Generator:
    """The NumPy generator behind `generator`, or behind the default generator when it is None.

    Looked up on every call: `dt.manual_seed` may replace the default generator's NumPy generator.
    """
    if generator is None:
        return dt.random.default_generator.np_rng  # type: ignore[no-any-return]
    return generator.np_rng  # type: ignore[no-any-return]


def draw_seed(generator: Generator | None) -> int:
    """A fresh seed in [0, 2**62) drawn from `generator` (or the default generator); small enough that
    seed + worker id still fits in an int64."""
    return int(np_rng(generator).integers(0, 2**62, dtype=np.int64))
