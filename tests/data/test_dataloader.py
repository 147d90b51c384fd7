"""DataLoader: batching semantics against torch.utils.data, worker processes, errors and shutdown."""

from __future__ import annotations

import collections
import gc
import multiprocessing
import os
import signal
import time

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import dtorch as dt
from dtorch.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    IterableDataset,
    SequentialSampler,
    TensorDataset,
    get_worker_info,
)

Pair = collections.namedtuple("Pair", ["features", "label"])


class Rows(Dataset):
    """Item i: (float32 row [i, i + 0.5], i)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __getitem__(self, i: int):
        return np.array([i, i + 0.5], dtype=np.float32), i

    def __len__(self) -> int:
        return self.n


class Range(IterableDataset):
    """0..n-1, sharded across workers by worker id (each worker takes every num_workers-th item)."""

    def __init__(self, n: int, with_len: bool = True) -> None:
        self.n = n
        self.with_len = with_len

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))

    def __len__(self) -> int:
        if not self.with_len:
            raise TypeError("no length")
        return self.n


class TorchRange(tud.IterableDataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        info = tud.get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))


class SlowEarly(Dataset):
    """Early items are the slowest, so workers finish out of order."""

    def __getitem__(self, i: int) -> int:
        time.sleep(0.02 * (8 - i) if i < 8 else 0)
        return i

    def __len__(self) -> int:
        return 16


class FailsAt(Dataset):
    def __init__(self, bad: int) -> None:
        self.bad = bad

    def __getitem__(self, i: int) -> int:
        if i == self.bad:
            raise ValueError(f"sample {i} is corrupt")
        return i

    def __len__(self) -> int:
        return 8


class KillsWorkerAt(Dataset):
    def __getitem__(self, i: int) -> int:
        if i == 5 and get_worker_info() is not None:  # never kill the test process itself
            os.kill(os.getpid(), signal.SIGKILL)
        return i

    def __len__(self) -> int:
        return 12


class Sleepy(Dataset):
    def __getitem__(self, i: int) -> int:
        if get_worker_info() is not None:
            time.sleep(3.0)
        return i

    def __len__(self) -> int:
        return 4


class WorkerFacts(Dataset):
    """Reports the worker's id, seed, pid and random draws from NumPy and dtorch."""

    def __getitem__(self, i: int):
        info = get_worker_info()
        return {"id": info.id, "seed": info.seed, "pid": os.getpid(), "dt_seed": dt.initial_seed(),
                "np": float(np.random.rand()), "dt": float(dt.rand(1).item())}

    def __len__(self) -> int:
        return 8


class Unpicklable(Dataset):
    def __getitem__(self, i: int):
        return {"x": i, "fn": lambda: i}

    def __len__(self) -> int:
        return 4


def _flat(batches) -> list:
    return [v for b in batches for v in b.tolist()]


def _no_children(deadline: float = 5.0) -> bool:
    end = time.monotonic() + deadline
    while multiprocessing.active_children():
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


@pytest.fixture(autouse=True)
def _check_no_orphans():
    yield
    if multiprocessing.active_children():
        gc.collect()
    assert _no_children(), f"worker processes left behind: {multiprocessing.active_children()}"


# ----- batching semantics (torch as the oracle) -----

@pytest.mark.parametrize("n", [0, 1, 10, 11])
@pytest.mark.parametrize("batch_size", [1, 3, 10])
@pytest.mark.parametrize("drop_last", [False, True])
def test_len_and_batches_match_torch(n: int, batch_size: int, drop_last: bool) -> None:
    ours = DataLoader(Rows(n), batch_size=batch_size, drop_last=drop_last)
    theirs = tud.DataLoader(Rows(n), batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(theirs)
    got, want = list(ours), list(theirs)
    assert len(got) == len(want) == len(ours)
    for (gx, gy), (wx, wy) in zip(got, want):
        assert gx.dtype == dt.float32 and gy.dtype == dt.int64
        np.testing.assert_array_equal(gx.numpy(), wx.numpy())
        assert gy.tolist() == wy.tolist()


@pytest.mark.parametrize("num_workers", [0, 2])
def test_structures_survive_collation_and_transfer(num_workers: int) -> None:
    class Structured(Dataset):
        def __getitem__(self, i):
            return {"pair": Pair(dt.tensor([i, i]), i), "name": f"s{i}", "arr": np.full((2,), i, np.uint8)}

        def __len__(self):
            return 5

    batches = list(DataLoader(Structured(), batch_size=2, num_workers=num_workers))
    b = batches[0]
    assert isinstance(b["pair"], Pair) and b["pair"].features.tolist() == [[0, 0], [1, 1]]
    assert b["pair"].label.dtype == dt.int64 and b["name"] == ["s0", "s1"]
    assert dt.is_tensor(b["arr"]) and b["arr"].dtype == dt.uint8
    b["arr"].numpy()[0, 0] = 9  # batches from workers are ordinary, writable tensors
    assert len(batches) == 3 and batches[-1]["name"] == ["s4"]


@pytest.mark.parametrize("num_workers", [0, 2])
def test_no_auto_batching_matches_torch(num_workers: int) -> None:
    ours = list(DataLoader(Rows(4), batch_size=None, num_workers=num_workers))
    theirs = list(tud.DataLoader(Rows(4), batch_size=None))
    assert len(ours) == len(theirs) == 4
    assert ours[2][0].tolist() == theirs[2][0].tolist() and ours[2][1] == theirs[2][1] == 2


def test_batch_sampler_and_custom_collate() -> None:
    sampler = BatchSampler(SequentialSampler(range(7)), 3, drop_last=False)
    loader = DataLoader(Rows(7), batch_sampler=sampler, collate_fn=lambda items: [y for _, y in items])
    assert list(loader) == [[0, 1, 2], [3, 4, 5], [6]] and len(loader) == 3
    assert list(DataLoader(Rows(5), sampler=[4, 2], batch_size=2, collate_fn=len)) == [2]


def test_tensor_dataset_loader() -> None:
    x = dt.from_numpy(np.arange(20, dtype=np.float32).reshape(10, 2))
    y = dt.from_numpy(np.arange(10))
    xb, yb = next(iter(DataLoader(TensorDataset(x, y), batch_size=4)))
    assert xb.shape == (4, 2) and yb.tolist() == [0, 1, 2, 3]


# ----- shuffling and seeds -----

def _epochs(num_workers: int, seed: int, epochs: int = 2) -> list[list[int]]:
    loader = DataLoader(Rows(23), batch_size=4, shuffle=True, num_workers=num_workers,
                        generator=dt.Generator().manual_seed(seed))
    return [[y for _, ys in loader for y in ys.tolist()] for _ in range(epochs)]


def test_seeded_shuffle_is_reproducible_and_same_with_workers() -> None:
    a, b, w = _epochs(0, 0), _epochs(0, 0), _epochs(2, 0)
    assert a == b == w
    assert sorted(a[0]) == list(range(23)) and a[0] != a[1] and a[0] != list(range(23))
    assert _epochs(0, 1) != a


def test_shuffle_follows_global_seed() -> None:
    loader = DataLoader(Rows(10), batch_size=5, shuffle=True)
    dt.manual_seed(7)
    first = [ys.tolist() for _, ys in loader]
    dt.manual_seed(7)
    assert [ys.tolist() for _, ys in loader] == first


def test_worker_seeds_are_base_seed_plus_id_and_reproducible() -> None:
    def run() -> list[dict]:
        loader = DataLoader(WorkerFacts(), batch_size=2, num_workers=2, generator=dt.Generator().manual_seed(3))
        return [{k: v.tolist() for k, v in b.items()} for b in loader]

    first, second = run(), run()
    for b1, b2 in zip(first, second):
        assert b1["np"] == b2["np"] and b1["dt"] == b2["dt"] and b1["seed"] == b2["seed"]
    seeds = {i: s for b in first for i, s in zip(b["id"], b["seed"])}
    assert set(seeds) == {0, 1} and seeds[1] == seeds[0] + 1
    assert all(b["dt_seed"] == b["seed"] for b in first)  # dtorch's default generator is seeded with it
    assert [b["id"][0] for b in first] == [0, 1, 0, 1]  # batches handed to workers round-robin
    assert first[0]["np"] != first[1]["np"]  # the two workers draw different numbers


def test_worker_init_fn_runs_in_each_worker() -> None:
    class Marked(Dataset):
        def __getitem__(self, i):
            return os.environ.get("DT_TEST_WORKER_MARK", "unset")

        def __len__(self):
            return 4

    def init(worker_id: int) -> None:
        os.environ["DT_TEST_WORKER_MARK"] = f"w{worker_id}"

    out = [v for b in DataLoader(Marked(), batch_size=2, num_workers=2, worker_init_fn=init) for v in b]
    assert out == ["w0", "w0", "w1", "w1"]
    assert "DT_TEST_WORKER_MARK" not in os.environ


# ----- workers: order, iterable datasets, persistence -----

def test_workers_keep_sampler_order() -> None:
    out = _flat(DataLoader(SlowEarly(), batch_size=2, num_workers=3, prefetch_factor=2))
    assert out == list(range(16))


def test_iterable_dataset_single_process() -> None:
    loader = DataLoader(Range(10), batch_size=4)
    assert [b.tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert len(loader) == 3
    assert len(DataLoader(Range(10), batch_size=4, drop_last=True)) == 2
    assert [b.tolist() for b in DataLoader(Range(10), batch_size=4, drop_last=True)] == [[0, 1, 2, 3],
                                                                                        [4, 5, 6, 7]]
    assert list(DataLoader(Range(3), batch_size=None)) == [0, 1, 2]  # default_convert keeps Python ints
    with pytest.raises(TypeError, match="no __len__|len"):
        len(DataLoader(Range(3, with_len=False)))


@pytest.mark.parametrize("drop_last", [False, True])
def test_iterable_dataset_with_workers_interleaves_like_torch(drop_last: bool) -> None:
    ours = [b.tolist() for b in DataLoader(Range(11), batch_size=2, num_workers=2, drop_last=drop_last)]
    theirs = [b.tolist() for b in tud.DataLoader(TorchRange(11), batch_size=2, num_workers=2,
                                                 drop_last=drop_last)]
    assert ours == theirs


def test_persistent_workers_reuse_processes_across_epochs() -> None:
    loader = DataLoader(WorkerFacts(), batch_size=2, num_workers=2, persistent_workers=True)
    first = [pid for b in loader for pid in b["pid"].tolist()]
    for _ in loader:  # an epoch cut short: its leftovers must not leak into the next one
        break
    second = [pid for b in loader for pid in b["pid"].tolist()]
    assert len(first) == len(second) == 8
    assert set(first) == set(second) and len(set(first)) == 2
    assert len(multiprocessing.active_children()) == 2
    del loader


def test_persistent_workers_iterable_dataset_restarts_each_epoch() -> None:
    loader = DataLoader(Range(6), batch_size=2, num_workers=2, persistent_workers=True)
    assert [b.tolist() for b in loader] == [[0, 2], [1, 3], [4], [5]]
    assert [b.tolist() for b in loader] == [[0, 2], [1, 3], [4], [5]]
    del loader


# ----- errors from workers -----

def test_worker_exception_names_worker_and_original_error() -> None:
    loader = DataLoader(FailsAt(5), batch_size=2, num_workers=2)
    with pytest.raises(ValueError) as info:
        list(loader)
    msg = str(info.value)
    assert "Caught ValueError in DataLoader worker process 0" in msg  # batch [4, 5] went to worker 0
    assert "sample 5 is corrupt" in msg and "Traceback" in msg and "__getitem__" in msg
    del info


def test_worker_exception_same_as_single_process_error_type() -> None:
    with pytest.raises(ValueError, match="sample 1 is corrupt"):
        list(DataLoader(FailsAt(1), batch_size=2))


def test_worker_init_fn_error_is_reported() -> None:
    def bad_init(worker_id: int) -> None:
        raise KeyError(f"no config for worker {worker_id}")

    with pytest.raises(KeyError, match="no config for worker"):
        list(DataLoader(Rows(4), batch_size=2, num_workers=2, worker_init_fn=bad_init))


def test_unpicklable_batch_is_an_error_not_a_hang() -> None:
    loader = DataLoader(Unpicklable(), batch_size=2, num_workers=1, collate_fn=lambda b: b, timeout=20)
    with pytest.raises(Exception, match="while sending a batch"):
        list(loader)


def test_killed_worker_raises_instead_of_hanging() -> None:
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker \d \(pid \d+\) exited unexpectedly.*SIGKILL"):
        list(DataLoader(KillsWorkerAt(), batch_size=2, num_workers=2))
    assert time.monotonic() - start < 10
    assert _no_children()


def test_timeout_raises() -> None:
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="timed out after 0.3 seconds"):
        list(DataLoader(Sleepy(), batch_size=2, num_workers=1, timeout=0.3))
    assert time.monotonic() - start < 2.5
    assert _no_children()


# ----- shutdown -----

def test_workers_exit_when_exhausted() -> None:
    it = iter(DataLoader(Rows(6), batch_size=2, num_workers=2))
    assert len(multiprocessing.active_children()) == 2
    assert len(list(it)) == 3
    assert multiprocessing.active_children() == []


def test_workers_exit_on_early_break() -> None:
    for _ in DataLoader(Rows(100), batch_size=2, num_workers=2):
        break
    assert _no_children()


def test_workers_exit_when_iterator_is_garbage_collected() -> None:
    it = iter(DataLoader(Rows(100), batch_size=2, num_workers=2))
    next(it)
    pids = [p.pid for p in multiprocessing.active_children()]
    assert len(pids) == 2
    del it
    gc.collect()
    assert _no_children()


def test_spawn_context_works() -> None:
    loader = DataLoader(Rows(5), batch_size=2, num_workers=1, multiprocessing_context="spawn")
    assert [ys.tolist() for _, ys in loader] == [[0, 1], [2, 3], [4]]


# ----- argument checks -----

@pytest.mark.parametrize(("kwargs", "exc", "pattern"), [
    ({"num_workers": -1}, ValueError, "num_workers"),
    ({"num_workers": 1.5}, TypeError, "num_workers"),
    ({"batch_size": 0}, ValueError, "batch_size"),
    ({"batch_size": -2}, ValueError, "batch_size"),
    ({"batch_size": 2.0}, TypeError, "batch_size"),
    ({"batch_size": True}, TypeError, "batch_size"),
    ({"shuffle": True, "sampler": [0, 1]}, ValueError, "sampler option is mutually exclusive with shuffle"),
    ({"batch_sampler": [[0]], "batch_size": 2}, ValueError, "batch_sampler option is mutually exclusive"),
    ({"batch_sampler": [[0]], "shuffle": True}, ValueError, "batch_sampler option is mutually exclusive"),
    ({"batch_sampler": [[0]], "sampler": [0]}, ValueError, "batch_sampler option is mutually exclusive"),
    ({"batch_sampler": [[0]], "drop_last": True}, ValueError, "batch_sampler option is mutually exclusive"),
    ({"batch_size": None, "drop_last": True}, ValueError, "drop_last"),
    ({"timeout": -1}, ValueError, "timeout"),
    ({"timeout": "5"}, TypeError, "timeout"),
    ({"prefetch_factor": 2}, ValueError, "prefetch_factor"),
    ({"num_workers": 1, "prefetch_factor": 0}, ValueError, "prefetch_factor"),
    ({"persistent_workers": True}, ValueError, "persistent_workers"),
    ({"collate_fn": 3}, TypeError, "collate_fn"),
    ({"worker_init_fn": "f"}, TypeError, "worker_init_fn"),
    ({"generator": np.random.default_rng(0)}, TypeError, "generator"),
    ({"drop_last": None}, TypeError, "drop_last"),
])
def test_bad_arguments(kwargs: dict, exc: type[Exception], pattern: str) -> None:
    with pytest.raises(exc, match=pattern):
        DataLoader(Rows(4), **kwargs)


@pytest.mark.parametrize("kwargs", [{"shuffle": True}, {"sampler": [0]}, {"batch_sampler": [[0]]}])
def test_bad_arguments_for_iterable_dataset(kwargs: dict) -> None:
    with pytest.raises(ValueError, match="IterableDataset"):
        DataLoader(Range(4), **kwargs)


def test_not_a_dataset() -> None:
    with pytest.raises(TypeError, match="dataset"):
        DataLoader(42)


def test_settings_frozen_after_init_and_pin_memory_accepted() -> None:
    loader = DataLoader(Rows(4), batch_size=2, pin_memory=True)
    with pytest.raises(ValueError, match="batch_size attribute should not be set"):
        loader.batch_size = 3
    assert len(list(loader)) == 2 and loader.pin_memory is True
    assert "batch_size=2" in repr(loader)


def test_torch_is_only_the_oracle() -> None:
    # the loader never produces torch tensors
    xb, yb = next(iter(DataLoader(Rows(2), batch_size=2)))
    assert not isinstance(xb, torch.Tensor) and dt.is_tensor(yb)
