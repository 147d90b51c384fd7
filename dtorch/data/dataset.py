"""Datasets: the map-style and iterable base classes, and the ways to combine and split them."""

from __future__ import annotations

import bisect
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import dtorch as dt

from ._random import check_generator, np_rng

if TYPE_CHECKING:
    from dtorch.random import Generator
    from dtorch.tensor import Tensor

__all__ = [
    "ChainDataset",
    "ConcatDataset",
    "Dataset",
    "IterableDataset",
    "Subset",
    "TensorDataset",
    "random_split",
]

T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map-style dataset: subclasses define `__getitem__(index)` and, usually, `__len__()`.

    `DataLoader` asks it for samples by index; `a + b` concatenates two datasets.
    """

    def __getitem__(self, index: Any) -> T_co:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__(index)")

    def __add__(self, other: Dataset[T_co]) -> ConcatDataset[T_co]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co]):
    """A dataset that is a stream: subclasses define `__iter__()`.

    With `num_workers > 0` every worker holds its own copy and iterates it; call
    `dtorch.data.get_worker_info()` inside `__iter__` to give each worker its own shard.
    """

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__()")

    def __add__(self, other: Dataset[T_co]) -> ChainDataset:  # type: ignore[override]
        return ChainDataset([self, other])


class TensorDataset(Dataset[tuple["Tensor", ...]]):
    """Wraps tensors that share their first dimension; item `i` is `tuple(t[i] for t in tensors)`."""

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        for i, t in enumerate(tensors):
            if not dt.is_tensor(t):
                raise TypeError(f"TensorDataset expects dt.Tensor arguments, but argument {i} is a "
                                f"{type(t).__name__}; convert it with dt.tensor(...) first")
            if len(t.shape) == 0:
                raise ValueError(f"TensorDataset argument {i} is a 0-d tensor; each tensor needs a first "
                                 "dimension to index samples along")
        sizes = [t.shape[0] for t in tensors]
        if any(s != sizes[0] for s in sizes):
            raise ValueError(f"Size mismatch between tensors: TensorDataset needs the same first dimension "
                             f"in every tensor, got {sizes}")
        self.tensors: tuple[Tensor, ...] = tuple(tensors)

    def __getitem__(self, index: Any) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)  # type: ignore[index]

    def __len__(self) -> int:
        return int(self.tensors[0].shape[0])


class Subset(Dataset[T_co]):
    """The items of `dataset` at positions `indices`, in that order."""

    def __init__(self, dataset: Dataset[T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]  # type: ignore[index]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list[T_co]:
        inner = getattr(self.dataset, "__getitems__", None)
        if callable(inner):
            return inner([self.indices[i] for i in indices])  # type: ignore[no-any-return]
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset[T_co]):
    """Several map-style datasets one after the other."""

    datasets: list[Dataset[T_co]]
    cumulative_sizes: list[int]

    @staticmethod
    def cumsum(sequence: Iterable[Dataset[Any]]) -> list[int]:
        out, total = [], 0
        for d in sequence:
            total += len(d)  # type: ignore[arg-type]
            out.append(total)
        return out

    def __init__(self, datasets: Iterable[Dataset[T_co]]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for i, d in enumerate(self.datasets):
            if isinstance(d, IterableDataset):
                raise TypeError(f"ConcatDataset does not support IterableDataset (dataset {i}); "
                                "use ChainDataset to chain iterable datasets")
            if not hasattr(d, "__len__"):
                raise TypeError(f"ConcatDataset needs datasets with a length, but dataset {i} "
                                f"({type(d).__name__}) has no __len__")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> T_co:
        if idx < 0:
            if -idx > len(self):
                raise IndexError(f"index {idx} is out of range for a ConcatDataset of length {len(self)}")
            idx = len(self) + idx
        if idx >= len(self):
            raise IndexError(f"index {idx} is out of range for a ConcatDataset of length {len(self)}")
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]


class ChainDataset(IterableDataset[Any]):
    """Several iterable datasets streamed one after the other."""

    def __init__(self, datasets: Iterable[Dataset[Any]]) -> None:
        self.datasets = list(datasets)

    def __iter__(self) -> Iterator[Any]:
        for i, d in enumerate(self.datasets):
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset only supports IterableDataset, but dataset {i} is a "
                                f"{type(d).__name__}")
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)  # type: ignore[arg-type,misc]


def _lengths_from_fractions(fractions: Sequence[float], n: int) -> list[int]:
    if any(f < 0 or f > 1 for f in fractions):
        raise ValueError(f"random_split: fractions must lie in [0, 1], got {list(fractions)}")
    if not math.isclose(sum(fractions), 1.0, abs_tol=1e-6):
        raise ValueError(f"random_split: fractional lengths must sum to 1, got {list(fractions)} "
                         f"(sum {sum(fractions)})")
    lengths = [math.floor(n * f) for f in fractions]
    for i in range(n - sum(lengths)):  # hand the remainder out round-robin, as PyTorch does
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warnings.warn(f"random_split: length of split at index {i} is 0; this split will be empty",
                          stacklevel=3)
    return lengths


def random_split(dataset: Dataset[T_co], lengths: Sequence[int | float],
                 generator: Generator | None = None) -> list[Subset[T_co]]:
    """Split `dataset` at random into non-overlapping `Subset`s of the given `lengths`.

    `lengths` are item counts that add up to `len(dataset)`, or fractions that add up to 1 (the
    remainder of the rounding goes one item at a time to the first splits). The permutation comes
    from `generator`, or the default generator, so a seeded generator gives the same split every run.
    """
    check_generator(generator, "random_split")
    if not hasattr(dataset, "__len__"):
        raise TypeError(f"random_split needs a dataset with a length, got {type(dataset).__name__}")
    n = len(dataset)  # type: ignore[arg-type]
    lengths = list(lengths)
    if not lengths:
        raise ValueError("random_split: lengths must not be empty")
    if all(isinstance(x, int) and not isinstance(x, bool) for x in lengths):
        int_lengths = [int(x) for x in lengths]
        if any(x < 0 for x in int_lengths):
            raise ValueError(f"random_split: lengths must be non-negative, got {int_lengths}")
    elif all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in lengths):
        int_lengths = _lengths_from_fractions([float(x) for x in lengths], n)
    else:
        raise TypeError(f"random_split: lengths must be ints or floats, got {lengths}")
    if sum(int_lengths) != n:
        raise ValueError(f"random_split: sum of input lengths ({sum(int_lengths)}) does not equal the "
                         f"length of the input dataset ({n})")
    indices = np_rng(generator).permutation(n).tolist()
    out, offset = [], 0
    for length in int_lengths:
        out.append(Subset(dataset, indices[offset:offset + length]))
        offset += length
    return out
