"""Real architectures through ONNX: written in PyTorch (tests/onnx/torch_models.py), exported with torch.onnx
(the legacy TorchScript exporter and the dynamo exporter), imported by dtorch.onnx.import_model with a dynamic
batch, and run by the host runtime against ONNX Runtime on the same .onnx file and against PyTorch eager: top-1
equal and outputs within 1e-4 x output scale at batch 1, 3 and 8; then the same models in one pruned rk3588
bundle under QEMU, bit for bit with the host.

Fast tier (default run): the small configurations, legacy exporter at opset 17 for every model and the dynamo
exporter at opset 18 for two. Full tier (`-m full`, .ci/run-full): the published sizes at 224x224, both
exporters, opsets 17 and 18."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx", reason="dtorch.onnx needs the onnx package (pip install 'dtorch[onnx]')")
pytest.importorskip("onnxruntime", reason="the model tests compare with ONNX Runtime (pip install onnxruntime)")
torch = pytest.importorskip("torch", reason="the model tests export PyTorch models (pip install torch==2.13.0)")

import torch_models as tm  # noqa: E402
from onnx_cases import ort_run  # noqa: E402

import dtorch.onnx as don  # noqa: E402
from dtorch.runtime import InferenceSession  # noqa: E402

TOL = 1e-4


def export(model, shape, path: Path, exporter: str, opset: int) -> Path:
    x = torch.randn(*shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "dynamo":
            # batch 2 in the example: torch.export specializes dimensions whose example size is 1
            x = torch.randn(2, *shape[1:])
            torch.onnx.export(model, (x,), str(path), dynamo=True, opset_version=opset, input_names=["x"],
                              output_names=["logits"], dynamic_shapes={"x": {0: torch.export.Dim("batch", max=64)}},
                              verbose=False)
        else:
            torch.onnx.export(model, (x,), str(path), dynamo=False, opset_version=opset, input_names=["x"],
                              output_names=["logits"], dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})
    return path


def check_against_peers(model, shape, src: Path, dst: Path) -> None:
    report = don.import_model(src, dst)
    assert report.input_shapes["x"][0] == "batch", report.input_shapes
    assert report.parity is not None and max(report.parity.values()) <= TOL
    sess = InferenceSession(str(dst))
    rng = np.random.default_rng(7)
    for batch in (1, 3, 8):
        x = rng.standard_normal((batch, *shape[1:])).astype(np.float32)
        got = sess.run(None, {"x": x})[0]
        ref = ort_run(src, {"x": x})[0]
        with torch.no_grad():
            eager = model(torch.from_numpy(x)).numpy()
        for other in (ref, eager):
            assert got.shape == other.shape
            scale = max(1.0, float(np.abs(other).max()))
            assert float(np.abs(got - other).max()) / scale <= TOL
            if got.ndim == 2:
                assert (got.argmax(1) == other.argmax(1)).all()


FAST = [(name, "legacy", 17) for name in tm.NAMES] + [("resnet18", "dynamo", 18), ("vit_tiny", "dynamo", 18)]


@pytest.mark.parametrize("name,exporter,opset", FAST, ids=[f"{n}-{e}-{o}" for n, e, o in FAST])
def test_small_model_matches_onnxruntime_and_eager(name, exporter, opset, tmp_path):
    model, shape = tm.build(name, small=True)
    src = export(model, shape, tmp_path / f"{name}.onnx", exporter, opset)
    check_against_peers(model, shape, src, tmp_path / f"{name}.dtm")


FULL = [(n, e, o) for n in tm.NAMES for e in ("legacy", "dynamo") for o in (17, 18)]


@pytest.mark.full
@pytest.mark.parametrize("name,exporter,opset", FULL, ids=[f"{n}-{e}-{o}" for n, e, o in FULL])
def test_full_size_model_matches_onnxruntime_and_eager(name, exporter, opset, tmp_path):
    model, shape = tm.build(name, small=False)
    src = export(model, shape, tmp_path / f"{name}.onnx", exporter, opset)
    check_against_peers(model, shape, src, tmp_path / f"{name}.dtm")


def test_imported_models_on_an_emulated_rk3588(tmp_path):
    """All six small models in one pruned rk3588 bundle (the union of their operators), each run under QEMU:
    outputs bit for bit those of the host runtime's exact kernels, top-1 equal to ONNX Runtime's."""
    from dtorch.edge.build import build_bundle
    from dtorch.edge.emulate import emulate

    dtms, inputs = [], {}
    rng = np.random.default_rng(3)
    for name in tm.NAMES:
        model, shape = tm.build(name, small=True)
        src = export(model, shape, tmp_path / f"{name}.onnx", "legacy", 17)
        dst = tmp_path / f"{name}.dtm"
        don.import_model(src, dst, dynamic_axes=[])
        x = rng.standard_normal(shape).astype(np.float32)
        np.save(tmp_path / f"{name}_x.npy", x)
        dtms.append(dst)
        inputs[name] = (src, x)
    res = build_bundle("rk3588", dtms, out=tmp_path / "dist", log=lambda _m: None, progress=False,
                       compare_full=False, agent=False)
    bits = {}
    for name in tm.NAMES:
        src, x = inputs[name]
        # kernels="exact": the host kernels with the portable bits, which a board runs
        host = InferenceSession(str(tmp_path / f"{name}.dtm"), kernels="exact").run(None, {"x": x})
        rep = emulate("rk3588", bundle=res.dist, model=res.dist / f"{name}.dtm", data=[tmp_path / f"{name}_x.npy"],
                      eager=lambda _inputs, host=host: host, runner="local", runs=1, bench_runs=1,
                      count_instructions=False, log=lambda _m: None, progress=False)
        parity = rep.figures["parity"]
        bits[name] = parity["host_bits_equal"]
        assert parity["vs_eager_max_rel"] <= 1e-5, f"{name}: the emulated rk3588 differs from the host: {parity}"
        # the board's fast kernels (neon64 where it has them) within the same tolerance of the portable outputs
        assert parity["fast_vs_portable_max_rel"] <= 1e-5, f"{name}: rk3588's fast kernels: {parity}"
        ref = ort_run(src, {"x": x})[0]
        if ref.ndim == 2:
            assert host[0].argmax(1).tolist() == ref.argmax(1).tolist()
    # Bit for bit, exp-based functions (sigmoid, SiLU, GELU, softmax) included: the portable kernels call their own
    # transcendental functions (kernels/common/scalar_math.h), not the C library's (glibc here, musl on the board).
    assert all(bits.values()), bits


class TextEncoder(torch.nn.Module):
    """A BERT-style classifier over token ids and an attention mask (int64 inputs): token + learned position
    embeddings (positions from torch.arange of the sequence length), LayerNorm, nn.TransformerEncoder with a key
    padding mask (MultiheadAttention's view(bsz, heads, -1, src_len) reshapes), GELU, the first token's logits."""

    def __init__(self, vocab: int = 100, d: int = 32, heads: int = 4, layers: int = 2) -> None:
        super().__init__()
        self.tok, self.pos = torch.nn.Embedding(vocab, d), torch.nn.Embedding(64, d)
        self.ln = torch.nn.LayerNorm(d)
        layer = torch.nn.TransformerEncoderLayer(d, heads, 64, dropout=0.0, activation="gelu", batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(d, 3)

    def forward(self, ids, mask):
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        h = self.enc(self.ln(self.tok(ids) + self.pos(pos)), src_key_padding_mask=(mask == 0))
        return self.head(h[:, 0])


def _text_inputs(batch: int, seq: int, seed: int) -> tuple:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 100, (batch, seq), generator=g)
    mask = torch.ones(batch, seq, dtype=torch.int64)
    mask[0, seq - 3:] = 0  # padding in the first sequence
    return ids, mask


@pytest.mark.parametrize("exporter", ["legacy", "dynamo"])
def test_text_encoder_with_attention_mask(exporter, tmp_path):
    """Token ids and a mask: int64 inputs (zeros at import, which mask every position: the parity check retries
    with ones instead of comparing NaN). Legacy exporter: the traced sequence length 7 is baked into the attention
    reshapes, so the import fixes it (and, at the default example size 1, says so) and keeps the batch dynamic.
    Dynamo exporter: batch and sequence both dynamic; the position ids torch.arange(seq) become the runtime's
    arange with its length read from the ids' dim 1. Run at several sizes against eager."""
    torch.manual_seed(0)
    model = TextEncoder().eval()
    src = tmp_path / "text.onnx"
    ids, mask = _text_inputs(2, 7, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "dynamo":
            dims = {0: torch.export.Dim("batch", max=64), 1: torch.export.Dim("seq", max=64)}
            torch.onnx.export(model, (ids, mask), str(src), dynamo=True, opset_version=18, input_names=["ids", "mask"],
                              dynamic_shapes={"ids": dims, "mask": dims}, verbose=False)
        else:
            torch.onnx.export(model, (ids, mask), str(src), dynamo=False, opset_version=17,
                              input_names=["ids", "mask"], output_names=["y"],
                              dynamic_axes={"ids": {0: "batch", 1: "seq"}, "mask": {0: "batch", 1: "seq"}})
    if exporter == "legacy":
        for static in (None, []):  # kept dynamic or fixed, the guessed sizes are what fails
            with pytest.raises(don.OnnxImportError,
                               match=r"took example sizes nobody gave \(batch=.*--input-shape ids=BATCH,SEQ"):
                don.import_model(src, tmp_path / "bad.dtm", dynamic_axes=static)
        report = don.import_model(src, tmp_path / "text.dtm", dynamic_axes=["batch"],
                                  input_shapes={"ids": [2, 7], "mask": [2, 7]})
        assert report.input_shapes["ids"] == ["batch", 7], report.input_shapes
        sizes = [(1, 7), (3, 7), (8, 7)]
    else:
        report = don.import_model(src, tmp_path / "text.dtm")
        assert report.input_shapes["ids"] == ["batch", "seq"], report.input_shapes
        assert "arange:int64" in report.op_list
        sizes = [(1, 5), (3, 12), (8, 7), (2, 40)]
    assert report.parity is not None and max(report.parity.values()) <= TOL
    sess = InferenceSession(str(tmp_path / "text.dtm"))
    for b, seq in sizes:
        ids, mask = _text_inputs(b, seq, b)
        got = sess.run(None, {"ids": ids.numpy(), "mask": mask.numpy()})[0]
        with torch.no_grad():
            eager = model(ids, mask).numpy()
        assert float(np.abs(got - eager).max()) / max(1.0, float(np.abs(eager).max())) <= TOL, (b, seq)
