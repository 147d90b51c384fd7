"""Several Python threads calling run on one InferenceSession get exactly the results one thread gets (issue 13):
the session serializes its runs (runtime.h, the binding's lock), with the GIL released while a run waits."""

from __future__ import annotations

import threading

import numpy as np
from dtm_builder import conv_linear_model

import dtorch.runtime as rt


def test_eight_threads_on_one_session_get_the_single_threaded_results() -> None:
    data = conv_linear_model(np.random.default_rng(3), 4, 8)  # plans differ per batch size
    sess = rt.InferenceSession(data, threads=2)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((1 + i % 5, 3, 8, 8)).astype(np.float32) for i in range(40)]
    want = [rt.InferenceSession(data).run(None, {"x": x})[0] for x in inputs]
    errors: list[str] = []
    start = threading.Barrier(8)

    def worker(t: int) -> None:
        start.wait()
        for k in range(100):
            i = (t * 7 + k) % len(inputs)
            try:
                (got,) = sess.run(None, {"x": inputs[i]})
            except Exception as e:  # any failure is the finding
                errors.append(f"thread {t} run {k}: {type(e).__name__}: {e}")
                return
            if got.shape != want[i].shape or not np.array_equal(got, want[i]):
                errors.append(f"thread {t} run {k}: input {i} gave a different result")
                return

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=300)
    assert not any(th.is_alive() for th in threads), "a run hung"
    assert not errors, errors[:5]
    assert sess.arena_bytes > 0
