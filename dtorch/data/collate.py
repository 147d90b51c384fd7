"""Collation: how a list of samples becomes one batch (`default_collate`), and `default_convert`."""

from __future__ import annotations

import collections.abc as cabc
import copy
from typing import Any

import numpy as np

import dtorch as dt

__all__ = ["default_collate", "default_convert"]

_UNSUPPORTED = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                "found {}")


def _is_string_array(a: np.ndarray) -> bool:
    return a.dtype.kind in "SUO"


def _is_pil_image(x: Any) -> bool:
    return type(x).__module__.startswith("PIL.") and hasattr(x, "mode") and hasattr(x, "size")


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _stack_arrays(arrays: list[np.ndarray], what: str) -> np.ndarray:
    shapes = [a.shape for a in arrays]
    if any(s != shapes[0] for s in shapes):
        raise RuntimeError(f"default_collate: every {what} in a batch must have the same shape, but got "
                           f"shapes {sorted(set(shapes))}. Resize or pad the samples to one shape "
                           "(e.g. with a Resize/CenterCrop transform), or pass a custom collate_fn.")
    return np.stack(arrays, axis=0)


def _collate_tensors(batch: list[Any]) -> Any:
    if any(getattr(t, "requires_grad", False) for t in batch):
        shapes = [tuple(t.shape) for t in batch]
        if any(s != shapes[0] for s in shapes):
            _stack_arrays([np.empty(s) for s in shapes], "tensor")  # raises the shape error
        return dt.stack(list(batch), 0)
    return dt.from_numpy(_stack_arrays([t.detach().numpy() for t in batch], "tensor"))


def _collate_numbers(batch: list[Any]) -> Any:
    if all(isinstance(x, bool) for x in batch):
        return dt.from_numpy(np.array(batch, dtype=np.bool_))
    if all(isinstance(x, int) for x in batch):
        return dt.from_numpy(np.array(batch, dtype=np.int64))
    return dt.from_numpy(np.array(batch, dtype=np.float64))


def default_collate(batch: list[Any]) -> Any:
    """Merge a list of samples into a batch, following the structure of the first sample.

    Tensors and NumPy arrays are stacked along a new first dimension into a tensor; Python ints become
    an int64 tensor, floats a float64 tensor and bools a bool tensor; NumPy scalars a tensor of their
    dtype; strings and bytes stay a list. Dicts, named tuples, tuples and lists are collated field by
    field (tuples come back as lists, as in PyTorch).
    """
    if not isinstance(batch, cabc.Sequence) or isinstance(batch, (str, bytes)):
        batch = list(batch)
    if len(batch) == 0:
        raise ValueError("default_collate: got an empty batch")
    elem = batch[0]
    if dt.is_tensor(elem):
        if not all(dt.is_tensor(x) for x in batch):
            raise TypeError("default_collate: a batch mixes tensors with other types: "
                            f"{sorted({type(x).__name__ for x in batch})}")
        return _collate_tensors(batch)
    if isinstance(elem, np.ndarray) or (isinstance(elem, np.generic) and not isinstance(elem, (np.str_, np.bytes_))):
        arrays = [np.asarray(x) for x in batch]
        if _is_string_array(arrays[0]):
            raise TypeError(_UNSUPPORTED.format(f"a numpy array of dtype {arrays[0].dtype}"))
        return dt.from_numpy(_stack_arrays(arrays, "numpy array"))
    if isinstance(elem, (bool, int, float)) and not isinstance(elem, np.generic):
        if not all(isinstance(x, (bool, int, float)) for x in batch):
            raise TypeError(f"default_collate: a batch mixes numbers with other types: "
                            f"{sorted({type(x).__name__ for x in batch})}")
        return _collate_numbers(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, cabc.Mapping):
        for i, d in enumerate(batch):
            if not isinstance(d, cabc.Mapping) or set(d.keys()) != set(elem.keys()):
                raise KeyError(f"default_collate: sample {i} of the batch does not have the same keys as "
                               f"sample 0 (expected {sorted(map(str, elem.keys()))})")
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            if isinstance(elem, cabc.MutableMapping):
                clone = copy.copy(elem)
                clone.update(collated)
                return clone
            return type(elem)(collated)  # type: ignore[call-arg]
        except TypeError:
            return collated
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, cabc.Sequence):
        size = len(elem)
        if not all(len(x) == size for x in batch):
            raise RuntimeError("default_collate: each element in list of batch should be of equal size, got "
                               f"lengths {[len(x) for x in batch]}")
        columns = [default_collate(s) for s in zip(*batch)]  # strings stay the tuple zip gives, as torch
        if isinstance(elem, tuple):
            return columns
        try:
            return type(elem)(columns)  # type: ignore[call-arg]
        except TypeError:
            return columns
    if _is_pil_image(elem):
        raise TypeError(_UNSUPPORTED.format("a PIL Image") + ". Convert images to tensors in the dataset's "
                        "transform, e.g. transform=dtorch.vision.transforms.ToTensor(), or pass a custom "
                        "collate_fn.")
    raise TypeError(_UNSUPPORTED.format(type(elem).__name__ if elem is not None else "None"))


def default_convert(data: Any) -> Any:
    """Turn NumPy arrays (and NumPy scalars) inside `data` into tensors, leaving everything else as is.

    The collate function a `DataLoader` uses when `batch_size=None` (no automatic batching).
    """
    if dt.is_tensor(data):
        return data
    if isinstance(data, np.ndarray):
        return data if _is_string_array(data) else dt.from_numpy(data)
    if isinstance(data, np.generic) and not isinstance(data, (np.str_, np.bytes_)):
        return dt.from_numpy(np.asarray(data))
    if isinstance(data, cabc.Mapping):
        converted = {key: default_convert(data[key]) for key in data}
        try:
            if isinstance(data, cabc.MutableMapping):
                clone = copy.copy(data)
                clone.update(converted)
                return clone
            return type(data)(converted)  # type: ignore[call-arg]
        except TypeError:
            return converted
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, cabc.Sequence) and not isinstance(data, (str, bytes)):
        items = [default_convert(d) for d in data]
        try:
            return type(data)(items)  # type: ignore[call-arg]
        except TypeError:
            return items
    return data
