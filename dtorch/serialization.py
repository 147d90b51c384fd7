"""`dt.save` / `dt.load`: tensors, state dicts and whole checkpoints in the safetensors format.

Nothing is pickled. A flat ``{name: Tensor}`` mapping (a state dict) is written as a plain
safetensors file that any safetensors reader understands. Anything else (a lone tensor, an optimizer
state dict, a checkpoint dict with an epoch number) is written as its tensors plus a JSON description
of the structure in the header metadata under ``dtorch.structure``. Writes are atomic: a temp file
in the same folder, fsync, rename; a failed save leaves any earlier file untouched.
"""

from __future__ import annotations

import io
import json
import math
import os
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np
from safetensors import SafetensorError, TensorSpec, deserialize, serialize

from ._fileio import NotRegularFileError, read_regular, write_atomic
from .device import check_device
from .tensor import Tensor

__all__ = ["save", "load", "CheckpointError"]

_STRUCT_KEY = "dtorch.structure"
_FORMAT_KEY = "dtorch.format"
_FORMAT = "1"

# safetensors dtype codes <-> numpy dtypes
_FROM_CODE = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64",
              "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool"}


class CheckpointError(RuntimeError):
    """A file given to `dt.load` is not a readable dtorch/safetensors checkpoint."""


def _np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _contiguous(a: np.ndarray) -> np.ndarray:
    return a if a.flags.c_contiguous else np.array(a, order="C")  # (np.ascontiguousarray turns 0-d into 1-d)


class _Writer:
    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def add(self, key: str, t: Tensor) -> str:
        arr = _contiguous(t._data)
        if not arr.dtype.isnative:
            arr = arr.astype(arr.dtype.newbyteorder("="))
        k, n = key, 1
        while k in self.arrays:
            k, n = f"{key}#{n}", n + 1
        self.arrays[k] = arr
        return k

    def encode(self, obj: Any, path: str) -> Any:
        if isinstance(obj, Tensor):
            return {"__tensor__": self.add(path or "tensor", obj)}
        if isinstance(obj, np.ndarray):
            return {"__tensor__": self.add(path or "tensor", Tensor._wrap(obj)), "numpy": True}
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, (int, np.integer)):
            return int(obj)
        if isinstance(obj, (float, np.floating)):
            f = float(obj)
            return f if math.isfinite(f) else {"__float__": repr(f)}
        if isinstance(obj, (list, tuple)):
            items = [self.encode(v, f"{path}.{i}" if path else str(i)) for i, v in enumerate(obj)]
            return items if isinstance(obj, list) else {"__tuple__": items}
        if isinstance(obj, Mapping):
            if all(isinstance(k, str) for k in obj):
                return {"__dict__": {k: self.encode(v, f"{path}.{k}" if path else k) for k, v in obj.items()}}
            pairs = []
            for k, v in obj.items():
                if not isinstance(k, (str, int, float, bool)) and k is not None:
                    raise TypeError(f"dt.save cannot store a dict key of type {type(k).__name__}; keys must be "
                                    f"str, int, float, bool or None")
                pairs.append([k, self.encode(v, f"{path}.{k}" if path else str(k))])
            return {"__items__": pairs}
        raise TypeError(f"dt.save cannot store an object of type {type(obj).__name__}: it stores tensors, numbers, "
                        f"strings, None, lists, tuples and dicts of those (never pickle); convert it first, e.g. "
                        f"save model.state_dict() rather than the model")


def _is_state_dict(obj: Any) -> bool:
    return isinstance(obj, Mapping) and bool(obj) and all(
        isinstance(k, str) and isinstance(v, Tensor) for k, v in obj.items())


def _to_bytes(obj: Any) -> bytes:
    w = _Writer()
    meta = {_FORMAT_KEY: _FORMAT}
    if _is_state_dict(obj):
        for k, v in obj.items():
            w.arrays[k] = _contiguous(v._data)
        meta["dtorch.kind"] = "state_dict"
    else:
        meta[_STRUCT_KEY] = json.dumps(w.encode(obj, ""))
    meta["dtorch.keys"] = json.dumps(list(w.arrays))
    specs = {k: TensorSpec(dtype=a.dtype.name, shape=list(a.shape), data_ptr=a.ctypes.data, data_len=a.nbytes)
             for k, a in w.arrays.items()}
    data = bytes(serialize(specs, metadata=meta))
    del w  # arrays had to stay alive through serialize()
    return _canonical_header(data)


def _canonical_header(data: bytes) -> bytes:
    """The same file with its __metadata__ keys in sorted order, so that dt.save is byte-reproducible (the
    safetensors library writes them in hash-map order, which changes from process to process). The tensors'
    data offsets count from the end of the header, so only the header is rewritten (padded with spaces to a
    multiple of 8 bytes, as the format asks)."""
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    if "__metadata__" in header:
        header["__metadata__"] = dict(sorted(header["__metadata__"].items()))
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + data[8 + n:]


def save(obj: Any, f: str | os.PathLike[str] | IO[bytes]) -> None:
    """Save tensors / a state dict / a checkpoint dict to `f` (a path or a binary file object)."""
    data = _to_bytes(obj)
    if hasattr(f, "write"):
        f.write(data)  # type: ignore[union-attr]
        return
    path = Path(f)  # type: ignore[arg-type]
    if path.is_dir():
        raise IsADirectoryError(f"dt.save: {path} is a directory; give a file name such as {path / 'model.safetensors'}")
    if not path.parent.exists():
        raise FileNotFoundError(f"dt.save: folder {path.parent} does not exist; create it first")
    write_atomic(path, data)


def _decode(node: Any, tensors: dict[str, np.ndarray]) -> Any:
    if isinstance(node, list):
        return [_decode(v, tensors) for v in node]
    if isinstance(node, dict):
        if "__tensor__" in node:
            arr = tensors[node["__tensor__"]]
            return arr if node.get("numpy") else Tensor._wrap(arr)
        if "__float__" in node:
            return float(node["__float__"])
        if "__tuple__" in node:
            return tuple(_decode(v, tensors) for v in node["__tuple__"])
        if "__dict__" in node:
            return OrderedDict((k, _decode(v, tensors)) for k, v in node["__dict__"].items())
        if "__items__" in node:
            return {k: _decode(v, tensors) for k, v in node["__items__"]}
    return node


def load(f: str | os.PathLike[str] | IO[bytes], map_location: Any = None, weights_only: bool = True) -> Any:
    """Load what `dt.save` wrote (or any safetensors file). `map_location` must name the CPU."""
    if map_location is not None and not callable(map_location) and not isinstance(map_location, dict):
        check_device(map_location)
    name = getattr(f, "name", None) if hasattr(f, "read") else str(f)
    if hasattr(f, "read"):
        data = f.read()  # type: ignore[union-attr]
    else:
        try:
            data = read_regular(f)  # type: ignore[arg-type]
        except NotRegularFileError as e:
            raise CheckpointError(f"could not load {name!r}: {e.strerror}") from None
    if data[:2] == b"PK" or data[:1] == b"\x80":
        raise CheckpointError(f"could not load {name!r}: it looks like a pickle/zip checkpoint (e.g. from torch.save); "
                              f"dtorch never unpickles files — convert it to safetensors first")
    try:
        header_len = int.from_bytes(data[:8], "little") if len(data) >= 8 else -1
        if header_len < 2 or 8 + header_len > len(data):
            raise SafetensorError("header length is out of range")
        header = json.loads(data[8:8 + header_len])
        if not isinstance(header, dict):
            raise SafetensorError(f"its header is a JSON {type(header).__name__}, not an object")
        meta = header.get("__metadata__") or {}
        if not isinstance(meta, dict):
            raise SafetensorError(f"its __metadata__ is a JSON {type(meta).__name__}, not an object")
        entries = deserialize(data)
    except (SafetensorError, ValueError, UnicodeDecodeError, RecursionError) as e:
        raise CheckpointError(f"could not load {name!r}: the file is truncated or is not a safetensors checkpoint "
                              f"({e})") from None
    tensors: dict[str, np.ndarray] = {}
    for key, info in entries:
        code = info["dtype"]
        if code not in _FROM_CODE:
            raise CheckpointError(f"could not load {name!r}: tensor {key!r} has dtype {code}, which dtorch does not "
                                  f"support (supported: {', '.join(_FROM_CODE)})")
        arr = np.frombuffer(bytearray(info["data"]), dtype=_np_dtype(_FROM_CODE[code]))
        tensors[key] = arr.reshape(info["shape"])
    try:
        order = [k for k in json.loads(meta.get("dtorch.keys", "[]")) if k in tensors]
    except (KeyError, ValueError, TypeError, RecursionError) as e:
        raise CheckpointError(f"could not load {name!r}: its dtorch metadata is damaged ({e})") from None
    if _STRUCT_KEY in meta:
        try:
            return _decode(json.loads(meta[_STRUCT_KEY]), tensors)
        except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as e:
            raise CheckpointError(f"could not load {name!r}: its dtorch structure record is damaged "
                                  f"({type(e).__name__}: {' '.join(str(e).split())[:200]})") from None
    if len(order) != len(tensors):  # a plain safetensors file from elsewhere: keep the file's data order
        order = sorted((k for k in header if k != "__metadata__"), key=lambda k: header[k]["data_offsets"][0])
    return OrderedDict((k, Tensor._wrap(tensors[k])) for k in order)


def _roundtrip_bytes(obj: Any) -> Any:  # used by tests
    buf = io.BytesIO(_to_bytes(obj))
    return load(buf)
