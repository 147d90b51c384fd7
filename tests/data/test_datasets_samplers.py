"""Datasets, random_split, samplers and default_collate, checked against torch.utils.data where it applies."""

from __future__ import annotations

import collections
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tud
from PIL import Image

import dtorch as dt
from dtorch.data import (
    BatchSampler,
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    default_convert,
    random_split,
)


class Squares(Dataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __getitem__(self, i: int) -> int:
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i * i

    def __len__(self) -> int:
        return self.n


class Stream(IterableDataset):
    def __init__(self, items: list[int]) -> None:
        self.items = items

    def __iter__(self):
        return iter(self.items)


# ----- datasets -----

def test_tensor_dataset_items_and_len() -> None:
    x = dt.from_numpy(np.arange(12, dtype=np.float32).reshape(6, 2))
    y = dt.from_numpy(np.arange(6))
    ds = TensorDataset(x, y)
    assert len(ds) == 6
    xi, yi = ds[4]
    assert xi.tolist() == [8.0, 9.0] and yi.item() == 4
    assert ds.tensors[0] is x


def test_tensor_dataset_errors() -> None:
    with pytest.raises(ValueError, match="Size mismatch"):
        TensorDataset(dt.zeros(3, 2), dt.zeros(4))
    with pytest.raises(TypeError, match="dt.Tensor"):
        TensorDataset(np.zeros(3))
    with pytest.raises(ValueError, match="at least one"):
        TensorDataset()


def test_subset_and_concat_match_torch() -> None:
    ours = ConcatDataset([Squares(3), Squares(4), Squares(0), Squares(2)])
    theirs = tud.ConcatDataset([[i * i for i in range(n)] for n in (3, 4, 0, 2)])
    assert len(ours) == len(theirs) == 9
    assert ours.cumulative_sizes == list(theirs.cumulative_sizes)
    assert [ours[i] for i in range(-9, 9)] == [theirs[i] for i in range(-9, 9)]
    with pytest.raises(IndexError):
        ours[9]
    with pytest.raises(IndexError):
        ours[-10]
    sub = Subset(Squares(10), [9, 0, 3])
    assert len(sub) == 3 and [sub[i] for i in range(3)] == [81, 0, 9]
    assert sub.__getitems__([2, 0]) == [9, 81]
    assert len(Squares(2) + Squares(3)) == 5


def test_concat_and_chain_errors() -> None:
    with pytest.raises(ValueError, match="empty"):
        ConcatDataset([])
    with pytest.raises(TypeError, match="ChainDataset"):
        ConcatDataset([Stream([1])])
    chained = Stream([1, 2]) + Stream([3])
    assert isinstance(chained, ChainDataset) and list(chained) == [1, 2, 3]
    with pytest.raises(TypeError, match="only supports IterableDataset"):
        list(ChainDataset([Squares(2)]))


def test_random_split_int_lengths_is_a_partition_and_reproducible() -> None:
    ds = Squares(10)
    a = random_split(ds, [3, 7], generator=dt.Generator().manual_seed(0))
    b = random_split(ds, [3, 7], generator=dt.Generator().manual_seed(0))
    assert [len(s) for s in a] == [3, 7]
    assert [s.indices for s in a] == [s.indices for s in b]
    assert sorted(a[0].indices + a[1].indices) == list(range(10))
    c = random_split(ds, [3, 7], generator=dt.Generator().manual_seed(1))
    assert [s.indices for s in c] != [s.indices for s in a]


@pytest.mark.parametrize(("n", "fractions"), [(10, [0.3, 0.7]), (11, [0.5, 0.5]), (7, [0.2, 0.2, 0.6]),
                                              (5, [1 / 3, 1 / 3, 1 / 3])])
def test_random_split_fraction_lengths_match_torch(n: int, fractions: list[float]) -> None:
    ours = random_split(Squares(n), fractions, generator=dt.Generator().manual_seed(0))
    theirs = tud.random_split(range(n), fractions, generator=torch.Generator().manual_seed(0))
    assert [len(s) for s in ours] == [len(s) for s in theirs]


def test_random_split_uses_default_generator() -> None:
    dt.manual_seed(3)
    a = random_split(Squares(8), [4, 4])
    dt.manual_seed(3)
    b = random_split(Squares(8), [4, 4])
    assert a[0].indices == b[0].indices


def test_random_split_errors() -> None:
    with pytest.raises(ValueError, match="does not equal the length"):
        random_split(Squares(10), [3, 3])
    with pytest.raises(ValueError, match="sum to 1"):
        random_split(Squares(10), [0.5, 0.6])
    with pytest.raises(ValueError, match="non-negative"):
        random_split(Squares(10), [-1, 11])
    with pytest.raises(TypeError, match="ints or floats"):
        random_split(Squares(10), ["a", "b"])
    with pytest.raises(TypeError, match="generator"):
        random_split(Squares(10), [5, 5], generator=np.random.default_rng(0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        random_split(Squares(1), [0.5, 0.5])
    assert any("will be empty" in str(w.message) for w in caught)


# ----- samplers -----

def test_sequential_sampler() -> None:
    assert list(SequentialSampler(range(5))) == [0, 1, 2, 3, 4]
    assert len(SequentialSampler(range(5))) == 5


def test_random_sampler_permutation_and_reproducibility() -> None:
    s = RandomSampler(range(20), generator=dt.Generator().manual_seed(0))
    first, second = list(s), list(s)
    assert sorted(first) == list(range(20)) and first != second  # a new order each epoch
    again = RandomSampler(range(20), generator=dt.Generator().manual_seed(0))
    assert list(again) == first and list(again) == second


@pytest.mark.parametrize(("replacement", "num_samples"), [(True, None), (True, 7), (True, 50), (False, 7),
                                                          (False, 25), (False, None)])
def test_random_sampler_lengths_match_torch(replacement: bool, num_samples: int | None) -> None:
    ours = RandomSampler(range(10), replacement=replacement, num_samples=num_samples,
                         generator=dt.Generator().manual_seed(0))
    theirs = tud.RandomSampler(range(10), replacement=replacement, num_samples=num_samples)
    drawn = list(ours)
    assert len(ours) == len(theirs) == len(drawn) == len(list(theirs))
    assert all(0 <= i < 10 for i in drawn)
    if not replacement and num_samples == 25:  # two full permutations, then 5 more
        assert sorted(drawn[:10]) == list(range(10)) and sorted(drawn[10:20]) == list(range(10))


def test_random_sampler_errors() -> None:
    with pytest.raises(ValueError, match="num_samples"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(TypeError, match="num_samples"):
        RandomSampler(range(3), num_samples=2.5)
    with pytest.raises(TypeError, match="replacement"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(TypeError, match="generator"):
        RandomSampler(range(3), generator=torch.Generator())


def test_subset_random_sampler() -> None:
    s = SubsetRandomSampler([10, 20, 30, 40], generator=dt.Generator().manual_seed(1))
    out = list(s)
    assert sorted(out) == [10, 20, 30, 40] and len(s) == 4


def test_weighted_random_sampler() -> None:
    s = WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], num_samples=400, generator=dt.Generator().manual_seed(0))
    out = list(s)
    assert len(out) == len(s) == 400 and set(out) <= {1, 3}
    assert 0.65 < out.count(3) / 400 < 0.85
    no_repl = list(WeightedRandomSampler([1, 1, 1, 0], 3, replacement=False,
                                         generator=dt.Generator().manual_seed(0)))
    assert sorted(no_repl) == [0, 1, 2]
    with pytest.raises(ValueError, match="without replacement"):
        WeightedRandomSampler([1, 0], 2, replacement=False)
    with pytest.raises(ValueError, match="non-negative"):
        WeightedRandomSampler([1, -1], 2)
    with pytest.raises(ValueError, match="num_samples"):
        WeightedRandomSampler([1, 1], 0)
    assert len(list(WeightedRandomSampler(dt.tensor([0.5, 0.5]), 5))) == 5


@pytest.mark.parametrize("n", [0, 1, 9, 10, 11])
@pytest.mark.parametrize("batch_size", [1, 3, 10])
@pytest.mark.parametrize("drop_last", [False, True])
def test_batch_sampler_matches_torch(n: int, batch_size: int, drop_last: bool) -> None:
    ours = BatchSampler(SequentialSampler(range(n)), batch_size, drop_last)
    theirs = tud.BatchSampler(tud.SequentialSampler(range(n)), batch_size, drop_last)
    assert list(ours) == list(theirs)
    assert len(ours) == len(theirs)


def test_batch_sampler_errors() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(TypeError, match="batch_size"):
        BatchSampler(range(3), 2.0, False)
    with pytest.raises(TypeError, match="drop_last"):
        BatchSampler(range(3), 2, None)


def test_custom_sampler_subclass() -> None:
    class Evens(Sampler[int]):
        def __iter__(self):
            return iter([0, 2, 4])

        def __len__(self) -> int:
            return 3

    assert list(BatchSampler(Evens(), 2, False)) == [[0, 2], [4]]


# ----- collate -----

def _to_py(x):
    """Nested structure of tensors (dt or torch) -> nested Python lists, for comparison."""
    if isinstance(x, torch.Tensor):
        return ("tensor", str(x.dtype).replace("torch.", ""), tuple(x.shape), x.tolist())
    if dt.is_tensor(x):
        return ("tensor", x.dtype.name, tuple(x.shape), x.tolist())
    if isinstance(x, dict):
        return {k: _to_py(v) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__, *[_to_py(v) for v in x])
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [_to_py(v) for v in x])
    return x


Point = collections.namedtuple("Point", ["x", "y"])

COLLATE_CASES = {
    "ints": [1, 2, 3],
    "floats": [1.5, 2.0],
    "bools": [True, False],
    "strings": ["a", "bc"],
    "numpy_arrays": [np.ones((2, 3), np.float32), np.zeros((2, 3), np.float32)],
    "numpy_int_scalars": [np.int32(3), np.int32(4)],
    "numpy_float_scalars": [np.float64(0.5), np.float64(1.5)],
    "tuples": [(1, 2.0, "x"), (3, 4.0, "y")],
    "lists": [[1, 2], [3, 4]],
    "dicts": [{"a": 1, "b": [1.0, 2.0]}, {"a": 2, "b": [3.0, 4.0]}],
    "namedtuples": [Point(1, 2.5), Point(3, 4.5)],
    "nested": [{"img": np.zeros((2, 2), np.uint8), "meta": (1, "n")},
               {"img": np.ones((2, 2), np.uint8), "meta": (2, "m")}],
}


@pytest.mark.parametrize("case", sorted(COLLATE_CASES))
def test_default_collate_matches_torch(case: str) -> None:
    batch = COLLATE_CASES[case]
    ours = _to_py(default_collate(batch))
    theirs = _to_py(tud.default_collate(batch))
    assert ours == theirs


def test_default_collate_tensors() -> None:
    batch = [dt.tensor([1.0, 2.0]), dt.tensor([3.0, 4.0])]
    out = default_collate(batch)
    assert dt.is_tensor(out) and out.shape == (2, 2) and out.dtype == dt.float32
    assert out.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    pairs = default_collate([(dt.tensor([1]), 0), (dt.tensor([2]), 1)])
    assert isinstance(pairs, list) and pairs[0].tolist() == [[1], [2]] and pairs[1].dtype == dt.int64


def test_default_collate_errors() -> None:
    with pytest.raises(RuntimeError, match="same shape"):
        default_collate([dt.zeros(2), dt.zeros(3)])
    with pytest.raises(RuntimeError, match="same shape"):
        default_collate([np.zeros(2), np.zeros(3)])
    with pytest.raises(TypeError, match="ToTensor"):
        default_collate([Image.new("RGB", (2, 2)), Image.new("RGB", (2, 2))])
    with pytest.raises(TypeError, match="found None"):
        default_collate([None, None])
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(KeyError, match="same keys"):
        default_collate([{"a": 1}, {"b": 2}])
    with pytest.raises(TypeError, match="numpy array of dtype"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(ValueError, match="empty batch"):
        default_collate([])


def test_default_convert() -> None:
    out = default_convert({"x": np.arange(3), "y": (np.float32(2.0), "s")})
    assert dt.is_tensor(out["x"]) and out["x"].tolist() == [0, 1, 2]
    assert isinstance(out["y"], list) and dt.is_tensor(out["y"][0]) and out["y"][1] == "s"
    assert default_convert(5) == 5
