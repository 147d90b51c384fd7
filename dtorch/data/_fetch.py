"""Fetchers: turn one entry of the index sampler into one batch (or one sample), in any process."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any


class MapFetcher:
    """For map-style datasets: `index` is a list of indices (auto-collation) or one index."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable[[Any], Any],
                 drop_last: bool) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last

    def fetch(self, index: Any) -> Any:
        if self.auto_collation:
            getitems = getattr(self.dataset, "__getitems__", None)
            data = getitems(index) if callable(getitems) else [self.dataset[i] for i in index]
        else:
            data = self.dataset[index]
        return self.collate_fn(data)


class IterableFetcher:
    """For iterable datasets: each call takes the next `batch_size` items (or one item) off the stream.

    Raises StopIteration once the stream is exhausted (or when only a short final batch is left and
    `drop_last` is set).
    """

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable[[Any], Any],
                 drop_last: bool, batch_size: int | None) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.batch_size = batch_size
        self.dataset_iter: Iterator[Any] = iter(dataset)
        self.ended = False

    def fetch(self, index: Any) -> Any:
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in range(self.batch_size or 1):
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if not data or (self.drop_last and len(data) < (self.batch_size or 1)):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


def make_fetcher(dataset: Any, is_iterable: bool, auto_collation: bool, collate_fn: Callable[[Any], Any],
                 drop_last: bool, batch_size: int | None) -> MapFetcher | IterableFetcher:
    if is_iterable:
        return IterableFetcher(dataset, auto_collation, collate_fn, drop_last, batch_size)
    return MapFetcher(dataset, auto_collation, collate_fn, drop_last)
