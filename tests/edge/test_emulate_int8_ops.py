"""Int8 is bit-exact everywhere, for the int8 operators beyond convolutions too: the squeeze-excite / concat / avg-pool
network and the attention block of tests/quant/int8_blocks.py (qmul, qlut, qconcat, qavg_pool2d, qmatmul, qmean),
quantized and built into one bundle per board, give the host runtime's bits under QEMU on rk3588 (aarch64), rv1126
(armv7) and licheepi4a (riscv64), with either kernel policy."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import dtorch as dt
from dtorch.edge.build import build_bundle
from dtorch.edge.emulate import emulate

ROOT = Path(__file__).resolve().parents[2]
BOARDS = ["rk3588", "rv1126", "licheepi4a"]
NEW_OPS = {"qmul", "qlut", "qconcat", "qavg_pool2d", "qmatmul"}

_spec = importlib.util.spec_from_file_location("int8_blocks", ROOT / "tests" / "quant" / "int8_blocks.py")
blocks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(blocks)  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[object, Path, Path]]:
    """name -> (int8 model, its .dtm, an input batch .npy)."""
    root = tmp_path_factory.mktemp("int8_ops")
    rng = np.random.default_rng(0)
    out = {}
    for name, net, shape in (("blocks_int8", blocks.Blocks, (4, 3, 16, 16)), ("attention_int8", blocks.Attention,
                                                                               (2, 12, 32))):
        dt.manual_seed(0)
        calib = [rng.standard_normal(shape).astype(np.float32) for _ in range(3)]
        q = dt.quant.quantize(net().eval(), calib)
        path = root / f"{name}.dtm"
        dt.export(q, dt.tensor(calib[0][:1]), str(path), bundle_example=True)
        data = root / f"{name}.npy"
        np.save(data, rng.standard_normal(shape).astype(np.float32))
        out[name] = (q, path, data)
    ops = {n.op for name in out for n in out[name][0].graph.nodes}  # type: ignore[attr-defined]
    assert NEW_OPS <= ops, ops
    return out


@pytest.mark.parametrize("board", BOARDS)
def test_new_int8_operators_give_the_host_bits_on_every_board(models, board, tmp_path):
    bundle = build_bundle(board, [m[1] for m in models.values()], out=tmp_path / "dist", compare_full=False,
                          agent=False, log=lambda _m: None, progress=False).dist
    for name, (q, path, data) in models.items():
        rep = emulate(board, bundle=bundle, model=bundle / path.name, data=[data], runner="local", runs=1,
                      bench_runs=1, eager=lambda arrays, q=q: q.run(*arrays), log=lambda _m: None, progress=False)
        p = rep.figures["parity"]
        assert p["host_bits_equal"] and p["vs_host_max_abs"] == 0.0, (name, p)
        assert p["fast_vs_portable_max_rel"] == 0.0 and p["vs_eager_max_rel"] == 0.0, (name, p)
        assert p["pass"], (name, p)
