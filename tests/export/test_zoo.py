"""Every zoo model exports with a dynamic batch, optimizes as expected, plans memory soundly, reads back, and the
exported graph (run by the NumPy reference interpreter) reproduces eager outputs at batch 1, 4 and 33."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import reference
import zoo

import dtorch as dt
from dtorch._export.planner import PlanNode, plan_memory, verify_plan
from dtorch._export.reader import DtmFile, read_dtm

# (nodes after passes, ops that must not remain)
EXPECTED = {
    "simplenet": (6, {"batch_norm", "relu"}),
    "mobilenetv2": (None, {"batch_norm", "hardtanh", "identity"}),
    "mlp": (3, {"batch_norm", "relu", "gelu", "sigmoid"}),
    "transformer": (None, {"gelu", "identity"}),
    "unet": (None, {"batch_norm", "relu"}),
}


@pytest.fixture(scope="module", params=sorted(zoo.ZOO))
def exported(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, object, DtmFile,
                                                                                             object]:
    name = request.param
    make_model, make_input = zoo.ZOO[name]
    dt.manual_seed(0)
    model = make_model()
    path = tmp_path_factory.mktemp(name) / f"{name}.dtm"
    res = dt.export(model, make_input(1), path, input_names=["input"], output_names=["output"],
                    dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    return name, model, read_dtm(path), res


def test_passes_and_counts(exported: tuple) -> None:
    name, model, f, res = exported
    after, gone = EXPECTED[name]
    ops = [n.op for n in f.nodes]
    assert not gone & set(ops), ops
    assert res.nodes_after_passes == len(f.nodes) < res.nodes_traced
    if after is not None:
        assert len(f.nodes) == after, ops
    assert f.metadata["nodes_traced"] == str(res.nodes_traced)
    assert f.metadata["pass.fold_batch_norm"].count("->") == 1
    assert model.training  # export restores the mode


def test_fused_activations(exported: tuple) -> None:
    name, _, f, _ = exported
    acts = {n.attrs.get("activation") for n in f.nodes} - {None}
    want = {"simplenet": {"relu"}, "mobilenetv2": {"relu6"}, "mlp": {"relu", "gelu", "sigmoid"},
            "transformer": {"gelu"}, "unet": {"relu"}}[name]
    assert want <= acts


def test_plan_verifies_and_reuses(exported: tuple) -> None:
    name, _, f, res = exported
    inter = [t.kind == "intermediate" for t in f.tensors]
    nodes = [PlanNode(n.op, n.inputs, n.outputs) for n in f.nodes]
    sizes = [int(np.prod(t.example_shape)) * np.dtype(t.dtype).itemsize for t in f.tensors]
    verify_plan(nodes, sizes, inter, f.plan["offsets"], f.plan["arena_size"])
    again = plan_memory(nodes, sizes, [t.example_shape for t in f.tensors], [t.dtype for t in f.tensors], inter)
    assert again.offsets == f.plan["offsets"] and again.arena_size == f.plan["arena_size"]
    assert f.plan["algorithm"] == "greedy-by-size"
    assert f.plan["sum_of_intermediates"] == res.sum_of_intermediates
    if name == "mlp":  # two intermediates, alive together: nothing to reuse
        assert f.plan["arena_size"] == f.plan["sum_of_intermediates"]
    else:
        assert f.plan["arena_size"] < f.plan["sum_of_intermediates"]


def test_reader_round_trip(exported: tuple) -> None:
    _, model, f, res = exported
    assert (f.format_version, f.min_runtime_version, f.opset) == (1, 1, 13)
    assert f.producer == f"dtorch {dt.__version__}"
    assert f.op_list == sorted(set(f.op_list)) == res.op_list
    assert all(s.endswith(":float32") for s in f.op_list)
    assert [f.tensors[i].name for i in f.inputs] == ["input"] and [f.tensors[i].name for i in f.outputs] == ["output"]
    assert f.tensors[f.inputs[0]].dims[0] == "batch" and f.tensors[f.outputs[0]].dims[0] == "batch"
    assert all(off % 64 == 0 for off, _ in f.segments)
    assert int(f.metadata["parameter_bytes"]) == res.parameter_bytes == sum(s for _, s in f.segments)
    params = {n: p for n, p in model.named_parameters()}
    consts = [t for t in f.tensors if t.kind == "constant"]
    assert consts and all(t.data is not None and t.data.dtype.kind in "fi" for t in consts)
    for t in consts:  # parameters keep their names; BatchNorm-folded ones are renamed "<weight>+<bn module>"
        if t.name in params:
            np.testing.assert_array_equal(t.data, params[t.name].detach().numpy())
        elif "+" in t.name:
            assert t.name.split("+")[0] in params or t.name.split("+")[0].endswith(".weight.bias")
    for n in f.nodes:
        assert list(n.attrs) == sorted(n.attrs)


@pytest.mark.parametrize("batch", [1, 4, 33])
def test_parity_with_eager(exported: tuple, batch: int) -> None:
    name, model, f, _ = exported
    dt.manual_seed(batch)
    x = zoo.ZOO[name][1](batch)
    model.eval()
    try:
        with dt.no_grad():
            want = model(x).numpy()
    finally:
        model.train()
    (got,) = reference.run(f, {"input": x.numpy()})
    assert got.shape == want.shape
    scale = max(1.0, float(np.abs(want).max()))
    assert float(np.abs(got - want).max()) <= 1e-5 * scale


def test_bundled_example(tmp_path: Path) -> None:
    make_model, make_input = zoo.ZOO["mlp"]
    model = make_model()
    x = make_input(2)
    dt.export(model, x, tmp_path / "m.dtm", bundle_example=True)
    f = read_dtm(tmp_path / "m.dtm")
    assert f.test_vector is not None
    np.testing.assert_array_equal(f.test_vector["inputs"][0], x.numpy())
    model.eval()
    with dt.no_grad():
        np.testing.assert_array_equal(f.test_vector["outputs"][0], model(x).numpy())
    assert f.tensors[f.inputs[0]].dims == [2, 64]  # no dynamic_axes: every dim fixed


def test_simplenet_224_arena(tmp_path: Path) -> None:
    from dtorch.models import SimpleNet

    res = dt.export(SimpleNet(), dt.randn(1, 3, 224, 224), tmp_path / "s.dtm",
                    dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    print(f"SimpleNet 1x3x224x224: arena {res.arena_size} B, sum of intermediates {res.sum_of_intermediates} B")
    assert res.arena_size < res.sum_of_intermediates
    assert res.nodes_traced == 12 and res.nodes_after_passes == 6
