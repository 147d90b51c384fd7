"""`DataLoader`: batches from a dataset, in the main process or in worker processes."""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Callable, Iterable, Iterator, Sized
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ._fetch import make_fetcher
from ._random import check_generator, draw_seed
from .collate import default_collate, default_convert
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

if TYPE_CHECKING:
    from dtorch.random import Generator

__all__ = ["DataLoader"]


class _InfiniteConstantSampler(Sampler[None]):
    """The index sampler of an IterableDataset: `None` forever (each one means 'the next item')."""

    def __iter__(self) -> Iterator[None]:
        while True:
            yield None


def _check_int(value: Any, name: str, minimum: int, hint: str = "") -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise TypeError(f"DataLoader: {name} must be an int, got {value!r} ({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"DataLoader: {name} must be >= {minimum}, got {value}{hint}")
    return int(value)


def _default_context() -> Any:
    methods = multiprocessing.get_all_start_methods()
    if sys.platform.startswith("linux") and "fork" in methods:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


class DataLoader:
    """Iterates over `dataset` in batches, as `torch.utils.data.DataLoader` does.

    - map-style datasets are read in `sampler` order (sequential, or shuffled when `shuffle=True`), grouped
      `batch_size` at a time (or by `batch_sampler`) and merged with `collate_fn` (`default_collate`);
      `batch_size=None` turns batching off.
    - an `IterableDataset` is streamed; with workers, each worker streams its own replica (shard it with
      `get_worker_info()`) and batches from the workers are interleaved.
    - `num_workers > 0` loads in that many worker processes, `prefetch_factor` batches ahead per worker,
      and still yields batches in sampler order. A worker's error is raised here with its traceback;
      a worker that dies, or no batch within `timeout` seconds (when > 0), raises RuntimeError.
    - `generator` seeds the shuffle and the workers' base seed: worker `i` seeds Python, NumPy and dtorch
      with `base_seed + i`, so random transforms in workers are reproducible.
    - `pin_memory` is accepted and does nothing (there is no accelerator memory to pin on the host).
    """

    dataset: Any
    batch_size: int | None
    num_workers: int
    drop_last: bool
    timeout: float
    sampler: Any
    batch_sampler: Any
    prefetch_factor: int | None

    _frozen_after_init = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                          "persistent_workers")

    def __init__(self, dataset: Dataset[Any] | Any, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler[Any] | Iterable[Any] | None = None,
                 batch_sampler: Sampler[Any] | Iterable[list[Any]] | None = None, num_workers: int = 0,
                 collate_fn: Callable[[list[Any]], Any] | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context: Any = None, generator: Generator | None = None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "") -> None:
        num_workers = _check_int(num_workers, "num_workers", 0,
                                 "; use num_workers=0 to load in the main process")
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool):
            raise TypeError(f"DataLoader: timeout must be a number of seconds, got {timeout!r}")
        if timeout < 0:
            raise ValueError(f"DataLoader: timeout must be non-negative, got {timeout}")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("DataLoader: prefetch_factor only applies with num_workers > 0; leave it as None "
                             "or set num_workers > 0")
        if num_workers > 0:
            prefetch_factor = 2 if prefetch_factor is None else _check_int(prefetch_factor, "prefetch_factor", 1)
        if persistent_workers and num_workers == 0:
            raise ValueError("DataLoader: persistent_workers=True needs num_workers > 0")
        if collate_fn is not None and not callable(collate_fn):
            raise TypeError(f"DataLoader: collate_fn must be callable, got {type(collate_fn).__name__}")
        if worker_init_fn is not None and not callable(worker_init_fn):
            raise TypeError(f"DataLoader: worker_init_fn must be callable, got {type(worker_init_fn).__name__}")
        if not isinstance(drop_last, bool):
            raise TypeError(f"DataLoader: drop_last must be a bool, got {drop_last!r}")
        check_generator(generator, "DataLoader")
        if batch_size is not None:
            if not isinstance(batch_size, (int, np.integer)) or isinstance(batch_size, bool):
                raise TypeError(f"DataLoader: batch_size must be a positive int or None, got {batch_size!r} "
                                f"({type(batch_size).__name__})")
            if batch_size <= 0:
                raise ValueError(f"DataLoader: batch_size must be a positive int or None, got {batch_size}")
            batch_size = int(batch_size)
        if not isinstance(dataset, IterableDataset) and not hasattr(dataset, "__getitem__"):
            raise TypeError(f"DataLoader: dataset must be a Dataset (with __getitem__) or an IterableDataset, "
                            f"got {type(dataset).__name__}")

        is_iterable = isinstance(dataset, IterableDataset)
        if is_iterable:
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}; shuffle inside the dataset's __iter__ instead")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler!r}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                                 f"but got batch_sampler={batch_sampler!r}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle; shuffle in the "
                             "sampler (e.g. RandomSampler) instead")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("DataLoader: batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last; leave those at their defaults")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("DataLoader: batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None:
            if is_iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(cast(Sized, dataset), generator=generator)
            else:
                sampler = SequentialSampler(cast(Sized, dataset))
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(cast(Any, sampler), batch_size, drop_last)
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert
        if isinstance(multiprocessing_context, str):
            multiprocessing_context = multiprocessing.get_context(multiprocessing_context)

        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.collate_fn = collate_fn
        self.pin_memory = bool(pin_memory)
        self.pin_memory_device = pin_memory_device
        self.timeout = float(timeout)
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = bool(persistent_workers)
        self._is_iterable = is_iterable
        self._iterator: Any = None
        self._initialized = True

    def __setattr__(self, name: str, value: Any) -> None:
        if getattr(self, "_initialized", False) and name in self._frozen_after_init:
            raise ValueError(f"DataLoader: the {name} attribute should not be set after the DataLoader is "
                             "created; create a new DataLoader instead")
        super().__setattr__(name, value)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Any:
        return self.batch_sampler if self._auto_collation else self.sampler

    @property
    def mp_context(self) -> Any:
        return self.multiprocessing_context if self.multiprocessing_context is not None else _default_context()

    def _get_iterator(self) -> Any:
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        from ._multiprocess import MultiProcessIter

        return MultiProcessIter(self)

    def __iter__(self) -> Iterator[Any]:
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator.reset(self)
            return self._iterator  # type: ignore[no-any-return]
        return self._get_iterator()  # type: ignore[no-any-return]

    def __len__(self) -> int:
        if self._is_iterable:
            if not hasattr(self.dataset, "__len__"):
                raise TypeError(f"len(DataLoader) is undefined: the IterableDataset {type(self.dataset).__name__} "
                                "has no __len__")
            length = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else -(-length // self.batch_size)
            return length
        return len(self._index_sampler)

    def __repr__(self) -> str:
        kind = "IterableDataset" if self._is_iterable else "Dataset"
        return (f"DataLoader({kind} {type(self.dataset).__name__}, batch_size={self.batch_size}, "
                f"num_workers={self.num_workers}, drop_last={self.drop_last})")


class BaseIter:
    """What both iterators share: the loader's settings, the sampler pass and the base seed.

    The base seed is drawn from the loader's generator before the sampler draws its order, with or
    without workers, so a seeded generator gives the same batches either way.
    """

    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._is_iterable = loader._is_iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._batch_size = loader.batch_size
        self._collate_fn = loader.collate_fn
        self._index_sampler = loader._index_sampler
        self._base_seed = draw_seed(loader.generator)
        self._sampler_iter: Iterator[Any] = iter(self._index_sampler)
        self._num_yielded = 0

    def __iter__(self) -> BaseIter:
        return self

    def _next_data(self) -> Any:
        raise NotImplementedError

    def __next__(self) -> Any:
        data = self._next_data()
        self._num_yielded += 1
        return data


class _SingleProcessIter(BaseIter):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._fetcher = make_fetcher(self._dataset, self._is_iterable, self._auto_collation, self._collate_fn,
                                     self._drop_last, self._batch_size)

    def _next_data(self) -> Any:
        index = next(self._sampler_iter)  # StopIteration ends the pass
        return self._fetcher.fetch(index)
