"""The main-process side of a multi-process `DataLoader`: start workers, hand out work, reorder results.

Each worker has its own task queue (main -> worker) and its own result pipe (worker -> main). The main
process waits on all result pipes and on every worker's process sentinel at once, so a worker that dies
is noticed at once instead of hanging the loop. At most `prefetch_factor * num_workers` batches are in
flight; results are kept until their turn so batches come out in sampler order.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import signal
import time
from multiprocessing.connection import wait
from typing import TYPE_CHECKING, Any

from . import _ipc
from .dataloader import BaseIter
from .worker import ExceptionWrapper, IterableEnd, ResumeAck, ResumeIteration, worker_loop

if TYPE_CHECKING:
    from .dataloader import DataLoader

# Seconds a worker gets to finish on its own at shutdown before it is terminated.
_JOIN_GRACE = 2.0


class WorkerPool:
    """The worker processes of one iterator, with their task queues and result pipes.

    A live pool is held by `_LIVE_POOLS` until it is shut down. An iterator caught in a reference
    cycle (say, through the traceback of an exception it raised) is collected by the garbage
    collector, which may tear down the objects of that cycle in any order; keeping the pool out of
    the cycle lets the iterator's finalizer still stop the workers through intact queues.
    """

    def __init__(self, ctx: Any) -> None:
        self.workers: list[Any] = []
        self.index_queues: list[Any] = []
        self.result_conns: list[Any] = []
        self.done_event = ctx.Event()
        self.closed = False
        _LIVE_POOLS.add(self)

    def start_worker(self, ctx: Any, worker_id: int, args: tuple[Any, ...]) -> None:
        index_queue = ctx.Queue()
        index_queue.cancel_join_thread()
        reader, writer = ctx.Pipe(duplex=False)
        process = ctx.Process(target=worker_loop, name=f"dtorch-dataloader-worker-{worker_id}", daemon=True,
                              args=(*args[:2], index_queue, writer, self.done_event, *args[2:]))
        self.index_queues.append(index_queue)
        self.result_conns.append(reader)
        try:
            process.start()
        finally:
            writer.close()  # only the worker writes; its death then shows as EOF here
        self.workers.append(process)

    def shutdown(self, grace: float = _JOIN_GRACE) -> None:
        """Stop every worker and release the queues and pipes; safe to call more than once.

        Idle workers leave as soon as they read the stop message; one still busy after `grace`
        seconds is terminated.
        """
        if self.closed:
            return
        self.closed = True
        try:
            self.done_event.set()
            for q, w in zip(self.index_queues, self.workers):
                if w.is_alive():
                    with contextlib.suppress(OSError, ValueError):
                        q.put(None)
            deadline = time.monotonic() + grace
            for w in self.workers:
                w.join(timeout=max(0.0, deadline - time.monotonic()))
            for w in self.workers:
                if w.is_alive():
                    w.terminate()
                    w.join(timeout=1.0)
                if w.is_alive():
                    w.kill()
                    w.join()
        finally:
            for q in self.index_queues:
                q.cancel_join_thread()
                q.close()
            for c in self.result_conns:
                c.close()
            _LIVE_POOLS.discard(self)


_LIVE_POOLS: set[WorkerPool] = set()


@atexit.register
def _shutdown_live_pools() -> None:
    for pool in list(_LIVE_POOLS):
        with contextlib.suppress(Exception):
            pool.shutdown(grace=0.5)


class MultiProcessIter(BaseIter):
    def __init__(self, loader: DataLoader) -> None:
        self._pool: WorkerPool | None = None
        super().__init__(loader)
        self._num_workers = loader.num_workers
        self._prefetch_factor = int(loader.prefetch_factor or 2)
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        ctx = loader.mp_context
        pool = self._pool = WorkerPool(ctx)
        try:
            for worker_id in range(self._num_workers):
                pool.start_worker(ctx, worker_id, (
                    self._dataset, self._is_iterable, self._auto_collation, self._collate_fn, self._drop_last,
                    self._batch_size, self._base_seed, loader.worker_init_fn, worker_id, self._num_workers))
        except BaseException:
            pool.shutdown()
            raise
        self._workers = pool.workers
        self._index_queues = pool.index_queues
        self._result_conns = pool.result_conns
        self._start_pass(resume=False)

    @property
    def _shutdown(self) -> bool:
        return self._pool is None or self._pool.closed

    def _shutdown_workers(self, grace: float = _JOIN_GRACE) -> None:
        if self._pool is not None:
            self._pool.shutdown(grace)

    # ----- one pass over the sampler -----

    def _start_pass(self, resume: bool) -> None:
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info: dict[int, tuple[Any, ...]] = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        if resume:  # persistent workers: drop what is left of the last pass, then start the new one
            for q in self._index_queues:
                q.put(ResumeIteration())
            waiting = self._num_workers
            while waiting:
                if isinstance(self._get_data(), ResumeAck):
                    waiting -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def reset(self, loader: DataLoader) -> None:
        """Start a new pass on the same (persistent) workers."""
        if self._shutdown:
            raise RuntimeError("DataLoader: cannot start a new pass, its persistent workers were shut down "
                               "after an earlier error; create a new DataLoader")
        self._index_sampler = loader._index_sampler
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._start_pass(resume=True)

    def _try_put_index(self) -> None:
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker_id = next(self._worker_cycle)
            if self._workers_status[worker_id]:
                break
        else:
            return  # every worker's IterableDataset replica is exhausted
        self._index_queues[worker_id].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _next_data(self) -> Any:
        if self._shutdown:
            raise StopIteration
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None:
                    if len(info) == 2 or self._workers_status[info[0]]:
                        break
                    del self._task_info[self._rcvd_idx]  # its worker ran out of data: no answer will come
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:  # it arrived earlier, out of turn
                data = self._task_info.pop(self._rcvd_idx)[1]
                self._rcvd_idx += 1
                return self._process(data)
            result = self._get_data()
            if isinstance(result, ResumeAck):
                continue
            idx, data = result
            self._tasks_outstanding -= 1
            if isinstance(data, IterableEnd):
                self._workers_status[data.worker_id] = False
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                self._task_info[idx] += (data,)
                continue
            del self._task_info[idx]
            self._rcvd_idx += 1
            return self._process(data)

    def _process(self, data: Any) -> Any:
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    # ----- receiving -----

    def _get_data(self) -> Any:
        """The next message from any worker; raises if none comes within `timeout` or a worker died."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        conn_to_worker = {id(c): i for i, c in enumerate(self._result_conns)}
        sentinel_to_worker = {w.sentinel: i for i, w in enumerate(self._workers)}
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = wait([*self._result_conns, *sentinel_to_worker], timeout=remaining)
            if not ready:
                self._shutdown_workers(grace=0.1)
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds waiting for a batch "
                                   "from its workers; raise timeout= or look for a stuck dataset __getitem__")
            for obj in ready:
                worker_id = conn_to_worker.get(id(obj))
                if worker_id is not None:
                    try:
                        return _ipc.recv(obj)  # type: ignore[arg-type]
                    except (EOFError, OSError):
                        self._raise_worker_died(worker_id)
            for obj in ready:
                if obj in sentinel_to_worker:
                    self._raise_worker_died(sentinel_to_worker[obj])

    def _raise_worker_died(self, worker_id: int) -> None:
        process = self._workers[worker_id]
        process.join(timeout=1.0)
        code = process.exitcode
        how = f"exit code {code}"
        if code is not None and code < 0:
            try:
                how += f" (killed by signal {signal.Signals(-code).name})"
            except ValueError:
                how += f" (killed by signal {-code})"
        self._shutdown_workers(grace=0.1)
        raise RuntimeError(f"DataLoader worker {worker_id} (pid {process.pid}) exited unexpectedly with {how}. "
                           "It may have run out of memory or been killed, or failed to start (its error "
                           "output, if any, is above); try num_workers=0 to see the error in the main process.")

    # ----- shutting down -----

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # never raise from a finalizer (e.g. at interpreter exit)
            self._shutdown_workers()
