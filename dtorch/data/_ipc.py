"""Moving batches between processes: tensors travel as bare NumPy arrays, array bytes out of band.

A worker `pack`s a batch (each `dt.Tensor` becomes a `PackedTensor` holding its array), pickles it with
protocol 5 so the array buffers are not copied into the pickle stream, and writes the stream and then
each buffer on its own pipe. The main process reads the buffers straight into writable memory,
unpickles, and `unpack` rebuilds the tensors with `dt.from_numpy` (no further copy).
"""

from __future__ import annotations

import os
import pickle
import struct
from multiprocessing.connection import Connection
from typing import Any, NamedTuple

import numpy as np

import dtorch as dt

_COUNT = struct.Struct("<I")
_LENGTH = struct.Struct("<Q")


class PackedTensor(NamedTuple):
    array: np.ndarray
    requires_grad: bool


def pack(obj: Any) -> Any:
    """Replace tensors inside lists, tuples, named tuples and dicts by `PackedTensor`s."""
    if dt.is_tensor(obj):
        return PackedTensor(np.ascontiguousarray(obj.detach().numpy()), bool(getattr(obj, "requires_grad", False)))
    if isinstance(obj, PackedTensor):
        return obj
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(pack(x) for x in obj))
    if type(obj) in (list, tuple):
        return type(obj)(pack(x) for x in obj)
    if type(obj) is dict:
        return {k: pack(v) for k, v in obj.items()}
    return obj


def unpack(obj: Any) -> Any:
    """Inverse of `pack`: rebuild tensors from their arrays."""
    if isinstance(obj, PackedTensor):
        t = dt.from_numpy(obj.array)
        if obj.requires_grad:
            t.requires_grad_(True)
        return t
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(unpack(x) for x in obj))
    if type(obj) in (list, tuple):
        return type(obj)(unpack(x) for x in obj)
    if type(obj) is dict:
        return {k: unpack(v) for k, v in obj.items()}
    return obj


def dumps(obj: Any) -> list[Any]:
    """Pickle `obj` into the pieces to send: a head (buffer count and sizes, then the pickle stream)
    and one raw piece per out-of-band buffer.

    Raises whatever pickling raises, in the calling thread, so a worker can report it.
    """
    buffers: list[pickle.PickleBuffer] = []
    stream = pickle.dumps(pack(obj), protocol=5, buffer_callback=buffers.append)
    raws = [b.raw() for b in buffers]
    sizes = struct.pack(f"<{len(raws)}Q", *(r.nbytes for r in raws))
    return [_COUNT.pack(len(raws)) + sizes + stream, *raws]


# On POSIX the pieces go straight through the pipe's file descriptor (read into preallocated buffers,
# several times faster than Connection.recv_bytes for large batches); elsewhere through the Connection.
_RAW_IO = os.name == "posix" and hasattr(os, "readv")


def _write_all(fd: int, data: Any) -> None:
    view = memoryview(data).cast("B")
    while view:
        view = view[os.write(fd, view):]


def _read_into(fd: int, buf: Any) -> None:
    view = memoryview(buf)
    while view:
        n = os.readv(fd, [view])
        if n == 0:
            raise EOFError("the worker's end of the pipe closed")
        view = view[n:]


def send(conn: Connection, pieces: list[Any]) -> None:
    """Write the pieces from `dumps` to `conn` (blocking until all is written)."""
    if not _RAW_IO:
        for piece in pieces:
            conn.send_bytes(piece)
        return
    fd = conn.fileno()
    _write_all(fd, _LENGTH.pack(len(pieces[0])) + pieces[0])
    for piece in pieces[1:]:
        _write_all(fd, piece)


def recv(conn: Connection) -> Any:
    """Read one object written by `send(conn, dumps(obj))`; EOFError if the writer is gone."""
    if _RAW_IO:
        fd = conn.fileno()
        length = bytearray(_LENGTH.size)
        _read_into(fd, length)
        head = bytearray(_LENGTH.unpack(length)[0])
        _read_into(fd, head)
    else:
        head = bytearray(conn.recv_bytes())
    (count,) = _COUNT.unpack_from(head)
    sizes = struct.unpack_from(f"<{count}Q", head, _COUNT.size)
    stream = memoryview(head)[_COUNT.size + 8 * count:]
    buffers = []
    for size in sizes:
        buf = np.empty(size, dtype=np.uint8)  # not zero-filled: it is overwritten at once
        if _RAW_IO:
            _read_into(fd, buf)
        else:
            buf[:] = np.frombuffer(conn.recv_bytes(), dtype=np.uint8)
        buffers.append(buf)
    return unpack(pickle.loads(stream, buffers=buffers))
