"""Memory is planned once, by the runtime's planner (runtime/hosted/planner.h): the exporter writes its plan into the
file through the binding, the session checks the file's plan at load and runs on it at the example shapes, and
re-plans with the same planner for other dynamic sizes. Lying plans are refused (hostile_catalogue.plan_cases)."""

from __future__ import annotations

import numpy as np
import pytest
from dtm_builder import DtmBuilder
from hostile_catalogue import plan_model

import dtorch as dt
import dtorch.runtime as rt
from dtorch import nn
from dtorch._export.planner import PlanNode, plan_memory, verify_plan
from dtorch._export.reader import read_dtm
from dtorch.runtime import _C

X = np.linspace(-2, 2, 16, dtype=np.float32).reshape(1, 16)


def _expected(middle: str) -> np.ndarray:
    a = np.maximum(X, 0)
    b = 1 / (1 + np.exp(-a)) if middle == "sigmoid" else np.exp(a - a.max()) / np.exp(a - a.max()).sum()
    return np.maximum(b, 0)


@pytest.mark.parametrize("offsets, arena", [([-1, -1, 0, 64], 128), ([-1, -1, 64, 0], 128), ([-1, -1, 0, 0], 64)],
                         ids=["apart", "swapped", "in-place"])
def test_a_sound_file_plan_runs_as_written(offsets: list[int], arena: int) -> None:
    # a and b share a buffer only in the last case: sigmoid runs in place, a dies where b is produced.
    s = rt.InferenceSession(plan_model(offsets, arena))
    (y,) = s.run(None, {"x": X})
    np.testing.assert_allclose(y, _expected("sigmoid"), rtol=1e-6)
    assert s.arena_bytes == arena  # the file's arena (no kernel here needs scratch)


def test_other_shapes_are_replanned() -> None:
    g = DtmBuilder()
    x, y = g.input("x", ["batch", 16]), g.output("y", ["batch", 16])
    a, b = g.tensor("a", ["batch", 16]), g.tensor("b", ["batch", 16])
    g.node("relu", [x], [a])
    g.node("sigmoid", [a], [b])
    g.node("add", [a, b], [y])  # a and b alive together
    g.plan = (128, [-1, -1, 0, 64])  # sound at the example batch of 1 only
    s = rt.InferenceSession(g.build())
    big = np.random.default_rng(0).standard_normal((5, 16)).astype(np.float32)
    (out,) = s.run(None, {"x": big})
    a_ = np.maximum(big, 0)
    np.testing.assert_allclose(out, a_ + 1 / (1 + np.exp(-a_)), rtol=1e-6)
    assert s.arena_bytes == 2 * 5 * 16 * 4 // 64 * 64  # two live 320-byte tensors, each at a multiple of 64
    (out1,) = s.run(None, {"x": big[:1]})  # back at the example shape: the file's plan again
    np.testing.assert_allclose(out1, out[:1], rtol=1e-6)
    assert s.arena_bytes == 128


def test_a_plan_sharing_a_buffer_without_in_place_is_refused_everywhere(tmp_path) -> None:  # type: ignore[no-untyped-def]
    data = plan_model([-1, -1, 0, 0], 64, middle="softmax")
    with pytest.raises(rt.InvalidModelError, match=r"memory plan .*tensors 2 .* and 3 .* overlap"):
        rt.InferenceSession(data)
    p = tmp_path / "m.dtm"
    p.write_bytes(data)
    with pytest.raises(ValueError, match="the memory plan is wrong: .*overlap"):
        read_dtm(p)
    # the same graph with a sound plan runs
    (y,) = rt.InferenceSession(plan_model([-1, -1, 0, 64], 128, middle="softmax")).run(None, {"x": X})
    np.testing.assert_allclose(y, _expected("softmax"), rtol=1e-6)


def test_the_exporter_writes_the_runtime_planners_plan(tmp_path) -> None:  # type: ignore[no-untyped-def]
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c1, self.c2 = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1)

        def forward(self, x):  # type: ignore[no-untyped-def]
            a = self.c1(x).relu()
            return self.c2(a).sigmoid() + a

    dt.manual_seed(0)
    p = tmp_path / "net.dtm"
    dt.export(Net(), dt.randn(2, 3, 8, 8), p, input_names=["x"], dynamic_axes={"x": {0: "b"}})
    f = read_dtm(p)
    inter = [t.kind == "intermediate" for t in f.tensors]
    sizes = [int(np.prod(t.example_shape)) * np.dtype(t.dtype).itemsize for t in f.tensors]
    nodes = [PlanNode(n.op, n.inputs, n.outputs) for n in f.nodes]
    verify_plan(nodes, sizes, inter, f.plan["offsets"], f.plan["arena_size"])
    again = plan_memory(nodes, sizes, [t.example_shape for t in f.tensors], [t.dtype for t in f.tensors], inter)
    assert (again.offsets, again.arena_size) == (f.plan["offsets"], f.plan["arena_size"])
    s = rt.InferenceSession(p)
    s.run(None, {"x": np.zeros((2, 3, 8, 8), np.float32)})
    # at the example shapes the session keeps the file's tensor offsets; kernel scratch is fitted around them
    assert s.arena_bytes >= f.plan["arena_size"]


def test_binding_plans_in_place_and_reuses_dead_memory() -> None:
    # relu (in place) then sigmoid over 256-byte tensors, then a 64-byte linear-like result from a node with scratch
    tensors = [(False, 256, "float32", [64]), (True, 256, "float32", [64]), (True, 256, "float32", [64]),
               (False, 256, "float32", [64])]
    nodes = [("always", [0], [1], 0), ("always", [1], [2], 0), ("none", [2], [3], 100)]
    offsets, scratch, arena = _C.plan_arena(nodes, tensors)
    assert offsets == [-1, 0, 0, -1]  # the chain shares one buffer
    assert scratch == [-1, -1, 256] and arena == 384  # scratch beside the live input of node 2
    # a dtype change never runs in place
    tensors[2] = (True, 256, "int64", [32])
    offsets, _, _ = _C.plan_arena(nodes, tensors)
    assert offsets[1] != offsets[2]


@pytest.mark.parametrize("nodes, tensors, match", [
    ([("sideways", [0], [1], 0)], [(False, 4, "float32", [1]), (True, 4, "float32", [1])], "in-place rule"),
    ([("none", [5], [1], 0)], [(False, 4, "float32", [1]), (True, 4, "float32", [1])], "reads tensor 5"),
    ([("none", [0], [1], 0), ("none", [0], [1], 0)], [(False, 4, "float32", [1]), (True, 4, "float32", [1])],
     "already produced"),
    ([], [(True, 4, "float32", [1])], "produced by no node"),
    ([("none", [0], [1], 0)], [(False, 4, "float32", [1]), (True, 4, "complex64", [1])], "dtype"),
])
def test_binding_refuses_a_malformed_graph(nodes: list, tensors: list, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        _C.plan_arena(nodes, tensors)
