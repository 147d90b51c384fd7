"""Several Python threads calling run on one InferenceSession get exactly the results one thread gets (issue 13):
the session serializes its runs (runtime.h, the binding's lock), with the GIL released while a run waits."""

from __future__ import annotations

import threading

import numpy as np
from dtm_builder import DtmBuilder

import dtorch.runtime as rt


def _model() -> bytes:
    """x (batch, 3, 8, 8) -> conv2d 3x3 (relu) -> reshape -> linear -> y (batch, 5): plans differ per batch size."""
    rng = np.random.default_rng(3)
    g = DtmBuilder()
    x = g.input("x", ["batch", 3, 8, 8])
    w = g.const("w", rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    b = g.const("b", rng.standard_normal(4).astype(np.float32))
    lw = g.const("lw", rng.standard_normal((5, 4 * 8 * 8)).astype(np.float32))
    c, f = g.tensor("c", ["batch", 4, 8, 8]), g.tensor("f", ["batch", 256])
    y = g.output("y", ["batch", 5])
    g.node("conv2d", [x, w, b], [c], {"stride": [1, 1], "padding": [1, 1, 1, 1], "dilation": [1, 1], "groups": 1,
                                      "activation": "relu"})
    g.node("reshape", [c], [f], {"shape": [0, -1]})
    g.node("linear", [f, lw], [y])
    return g.build()


def test_eight_threads_on_one_session_get_the_single_threaded_results() -> None:
    data = _model()
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
