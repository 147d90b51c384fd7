"""Random number generation: `dt.manual_seed`, `dt.Generator` and the default generator."""

from __future__ import annotations

import numpy as np


class Generator:
    """A seeded source of random numbers (a NumPy PCG64 generator underneath, as `.np_rng`)."""

    def __init__(self, device: str = "cpu") -> None:
        from .device import check_device

        check_device(device)
        self._seed = int(np.random.SeedSequence().entropy % (2**63))  # type: ignore[operator]
        self.np_rng = np.random.Generator(np.random.PCG64(self._seed))

    def manual_seed(self, seed: int) -> Generator:
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
            raise TypeError(f"manual_seed expected an int, got {type(seed).__name__}")
        self._seed = int(seed) % (2**64)
        self.np_rng = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def seed(self) -> int:
        self._seed = int(np.random.SeedSequence().entropy % (2**63))  # type: ignore[operator]
        self.np_rng = np.random.Generator(np.random.PCG64(self._seed))
        return self._seed

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> dict:
        return {"seed": self._seed, "state": self.np_rng.bit_generator.state}

    def set_state(self, state: dict) -> Generator:
        self._seed = int(state["seed"])
        self.np_rng.bit_generator.state = state["state"]
        return self


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (all of dtorch's randomness that is not given its own generator)."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state() -> dict:
    return default_generator.get_state()


def set_rng_state(state: dict) -> None:
    default_generator.set_state(state)


def rng(generator: Generator | None = None) -> np.random.Generator:
    if generator is None:
        return default_generator.np_rng
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be a dtorch.Generator, got {type(generator).__name__}")
    return generator.np_rng
