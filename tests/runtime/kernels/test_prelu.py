"""prelu (the catalogue's proof that an operator is one entry + one kernel file + this test): the portable kernel
against PyTorch's F.prelu, through run_kernel and through a loaded model, and its shape and dtype errors."""

from __future__ import annotations

import numpy as np
import pytest
from dtm_builder import DtmBuilder

import dtorch.runtime as rt

from .helpers import assert_close, rand, run

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("shape,slopes", [((2, 3, 4, 5), 3), ((2, 3, 4, 5), 1), ((4, 6), 6), ((7,), 1),
                                          ((1, 2, 3, 2, 2), 2), ((0, 3, 2), 3)])
def test_matches_pytorch(shape: tuple[int, ...], slopes: int) -> None:
    rng = np.random.default_rng(0)
    x = rand(rng, *shape)
    if x.size:
        x.reshape(-1)[::5] = 0.0
    w = rand(rng, slopes)
    ref = torch.nn.functional.prelu(torch.from_numpy(x), torch.from_numpy(w)).numpy()
    for threads in (1, 2):
        got = run("prelu", {}, [x, w], threads=threads)
        assert_close(got, ref, tol=0.0)


def test_in_a_model_runs_in_place() -> None:
    g = DtmBuilder()
    x = g.input("x", ["batch", 3, 4])
    w = g.const("w", np.array([0.1, -0.5, 2.0], np.float32))
    t = g.tensor("t", ["batch", 3, 4])
    y = g.output("y", ["batch", 3, 4])
    g.node("neg", [x], [t])
    g.node("prelu", [t, w], [y])
    s = rt.InferenceSession(g.build())
    xv = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    ref = torch.nn.functional.prelu(torch.from_numpy(-xv), torch.tensor([0.1, -0.5, 2.0])).numpy()
    np.testing.assert_array_equal(s.run(None, {"x": xv})[0], ref)


def test_errors() -> None:
    x = np.ones((2, 3, 4), np.float32)
    with pytest.raises(ValueError, match=r"prelu: weight must have shape \[1\] or \[3\] \(the input's channels\), "
                                         r"got \[2\]"):
        run("prelu", {}, [x, np.ones(2, np.float32)])
    with pytest.raises(ValueError, match=r"prelu: weight must be float32, got float64"):
        run("prelu", {}, [x, np.ones(3, np.float64)])
    g = DtmBuilder()
    xi = g.input("x", [2, 3])
    w = g.const("w", np.ones(3, np.float32))
    y = g.output("y", [2, 3], "int8")
    g.node("prelu", [xi, w], [y])
    with pytest.raises(rt.InvalidModelError, match=r"is declared int8, but the prelu kernel writes float32"):
        rt.InferenceSession(g.build())
