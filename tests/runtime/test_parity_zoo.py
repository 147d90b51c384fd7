"""Eager vs the C++ runtime on the export model zoo: float32 parity, dynamic batch, identical bits for any
thread count."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import dtorch as dt
import dtorch.runtime as rt

_spec = importlib.util.spec_from_file_location("export_zoo", Path(__file__).resolve().parents[1] / "export" / "zoo.py")
zoo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(zoo)  # type: ignore[union-attr]


def _models() -> list[str]:
    return sorted(zoo.ZOO)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[object, Path, object]]:
    out = {}
    root = tmp_path_factory.mktemp("zoo")
    for name in _models():
        make_model, make_input = zoo.ZOO[name]
        dt.manual_seed(0)
        model = make_model().eval()
        path = root / f"{name}.dtm"
        dt.export(model, make_input(2), str(path), dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                  bundle_example=True)
        out[name] = (model, path, make_input)
    return out


@pytest.mark.parametrize("name", _models())
@pytest.mark.parametrize("batch", [1, 4, 33])
def test_runtime_matches_eager(exported, name, batch):
    model, path, make_input = exported[name]
    x = make_input(batch)
    with dt.no_grad():
        ref = model(x).numpy()
    sess = rt.InferenceSession(str(path))
    got = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0]
    assert got.shape == ref.shape
    scale = max(float(np.max(np.abs(ref))), 1e-6)
    assert float(np.max(np.abs(got - ref))) <= 1e-5 * scale


@pytest.mark.parametrize("name", _models())
def test_threads_give_identical_bits(exported, name):
    model, path, make_input = exported[name]
    x = make_input(4).numpy()
    outs = []
    for threads in (1, 2):
        sess = rt.InferenceSession(str(path), threads=threads)
        outs.append(sess.run(None, {sess.get_inputs()[0].name: x})[0])
    assert outs[0].tobytes() == outs[1].tobytes()
