"""The worker side of a multi-process `DataLoader`: `get_worker_info` and the worker loop."""

from __future__ import annotations

import os
import pickle
import queue
import random
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

import dtorch as dt

from . import _ipc
from ._fetch import make_fetcher

__all__ = ["WorkerInfo", "get_worker_info"]

# How often (seconds) an idle worker checks that the main process is still alive.
STATUS_CHECK_INTERVAL = 1.0


@dataclass(frozen=True)
class WorkerInfo:
    """What a worker process knows about itself; `get_worker_info()` returns it inside a worker."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """Inside a DataLoader worker: its `WorkerInfo` (id, num_workers, seed, its copy of the dataset).

    In the main process: None. An `IterableDataset` uses it to give each worker its own shard.
    """
    return _worker_info


class ExceptionWrapper:
    """An exception caught in a worker, carried to the main process with its traceback text."""

    def __init__(self, exc: BaseException, where: str) -> None:
        self.exc_type: type[BaseException] | None = type(exc)
        try:
            pickle.loads(pickle.dumps(self.exc_type))
        except Exception:
            self.exc_type = None
        self.type_name = type(exc).__name__
        self.where = where
        self.text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))

    def reraise(self) -> None:
        msg = f"Caught {self.type_name} {self.where}.\nOriginal {self.text}"
        exc_type = self.exc_type
        if exc_type is KeyError:
            msg = KeyErrorMessage(msg)  # KeyError would print repr(msg): keep the newlines readable
        if exc_type is None:
            raise RuntimeError(msg)
        try:
            exc = exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exc


class KeyErrorMessage(str):
    def __repr__(self) -> str:
        return str(self)


class IterableEnd:
    """Sent by a worker whose IterableDataset replica is exhausted."""

    def __init__(self, worker_id: int) -> None:
        self.worker_id = worker_id


class ResumeIteration:
    """Sent to persistent workers at the start of a new epoch; they answer with `ResumeAck`."""


class ResumeAck:
    def __init__(self, worker_id: int) -> None:
        self.worker_id = worker_id


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    dt.manual_seed(seed)


class _Sender:
    """Writes results to the main process from a background thread, so a full pipe (the main process is
    busy with an earlier batch) does not stop this worker from preparing the next one."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.pending: queue.SimpleQueue[list[Any]] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, name="dtorch-worker-sender", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            messages = self.pending.get()
            try:
                _ipc.send(self.conn, messages)
            except (OSError, ValueError):
                return  # the main process went away or closed the pipe

    def put(self, obj: Any, worker_id: int) -> None:
        try:
            messages = _ipc.dumps(obj)
        except Exception as e:
            messages = _ipc.dumps((obj[0], ExceptionWrapper(
                e, f"in DataLoader worker process {worker_id} while sending a batch to the main process")))
        self.pending.put(messages)


def worker_loop(dataset: Any, is_iterable: bool, index_queue: Any, result_conn: Connection, done_event: Any,
                auto_collation: bool, collate_fn: Callable[[Any], Any], drop_last: bool,
                batch_size: int | None, base_seed: int, init_fn: Callable[[int], None] | None,
                worker_id: int, num_workers: int) -> None:
    """Runs in each worker process: take (task index, sampler entry) from `index_queue`, fetch and collate
    the batch, and send (task index, batch or ExceptionWrapper) back on `result_conn`.

    `None` on the queue (or the parent process disappearing) ends the loop.
    """
    global _worker_info
    try:
        seed = base_seed + worker_id
        _seed_everything(seed)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        sender = _Sender(result_conn)
        where = f"in DataLoader worker process {worker_id}"
        init_error: ExceptionWrapper | None = None
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = make_fetcher(dataset, is_iterable, auto_collation, collate_fn, drop_last, batch_size)
        except Exception as e:
            init_error = ExceptionWrapper(e, where)
        iteration_end = False
        parent = os.getppid()
        while True:
            try:
                task = index_queue.get(timeout=STATUS_CHECK_INTERVAL)
            except queue.Empty:
                if os.getppid() != parent:
                    break
                continue
            if task is None:
                break
            if isinstance(task, ResumeIteration):
                sender.put(ResumeAck(worker_id), worker_id)
                iteration_end = False
                if is_iterable and init_error is None:
                    fetcher = make_fetcher(dataset, is_iterable, auto_collation, collate_fn, drop_last,
                                           batch_size)
                continue
            if done_event.is_set() or iteration_end:
                continue
            idx, index = task
            data: Any
            if init_error is not None:
                data = init_error  # every batch asked of a worker whose set-up failed reports that failure
            else:
                try:
                    data = fetcher.fetch(index)  # type: ignore[union-attr]
                except StopIteration:
                    if not is_iterable:
                        raise
                    data, iteration_end = IterableEnd(worker_id), True
                except Exception as e:
                    data = ExceptionWrapper(e, where)
            sender.put((idx, data), worker_id)
            del data
    except KeyboardInterrupt:
        pass
    finally:
        sys.stdout.flush()
