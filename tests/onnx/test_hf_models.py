"""Hugging Face transformers models (the library's own modelling code, not ours) exported by torch.onnx, legacy
and dynamo, imported with their dynamic batch and sequence, and run at sizes other than the import's: the outputs
equal eager PyTorch's. The configs are tiny (2 layers, width 32) so that the test is about the graphs the exporters
write (attention masks built from Shape/Range/Expand/Where chains, position ids from CumSum, GatherND of the
dynamo exporter's mask handling, separately named batch dims), not about size.

Fast tier: a few models; the whole matrix (every model, both exporters, static and dynamic) is marked `full`
(.ci/run-full)."""

from __future__ import annotations

import contextlib
import io
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx", reason="dtorch.onnx needs the onnx package (pip install 'dtorch[onnx]')")
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # configs only: nothing is downloaded
T = pytest.importorskip("transformers", reason="the Hugging Face model tests need transformers (scripts/setup.sh "
                                                "installs the test extra)")
torch = pytest.importorskip("torch")

import dtorch.onnx as don  # noqa: E402
from dtorch.runtime import InferenceSession  # noqa: E402

_TEXT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, vocab_size=100,
             max_position_embeddings=64)


def _tiny(name: str) -> torch.nn.Module:
    if name == "bert":
        return T.BertModel(T.BertConfig(**_TEXT))
    if name == "bert-eager":  # the eager attention: the mask added to the scores, no SDPA
        return T.BertModel(T.BertConfig(**_TEXT, attn_implementation="eager"))
    if name == "distilbert":
        return T.DistilBertModel(T.DistilBertConfig(dim=32, n_layers=2, n_heads=4, hidden_dim=64, vocab_size=100,
                                                    max_position_embeddings=64))
    if name == "albert":
        return T.AlbertModel(T.AlbertConfig(**_TEXT, embedding_size=16))
    if name == "electra":
        return T.ElectraModel(T.ElectraConfig(**_TEXT, embedding_size=16))
    if name == "mobilebert":
        return T.MobileBertModel(T.MobileBertConfig(**_TEXT, embedding_size=16, intra_bottleneck_size=16,
                                                    true_hidden_size=16, num_feedforward_networks=2))
    if name == "roberta":  # position ids from cumsum(mask) * mask + padding_idx
        return T.RobertaModel(T.RobertaConfig(**_TEXT))
    if name == "gpt2":  # a causal mask from the key length, which the dynamo exporter names apart from the batch's
        return T.GPT2Model(T.GPT2Config(n_embd=32, n_layer=2, n_head=4, vocab_size=100, n_positions=64,
                                        bos_token_id=0, eos_token_id=0))
    if name == "vit":
        return T.ViTModel(T.ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                                      image_size=32, patch_size=8))
    raise KeyError(name)


class _LastHidden(torch.nn.Module):
    def __init__(self, m: torch.nn.Module) -> None:
        super().__init__()
        self.m = m

    def forward(self, *a: torch.Tensor) -> torch.Tensor:
        if len(a) == 1:
            return self.m(pixel_values=a[0]).last_hidden_state
        kw = {"use_cache": False} if isinstance(self.m, T.GPT2Model) else {}
        return self.m(input_ids=a[0], attention_mask=a[1], **kw).last_hidden_state


def _feeds(name: str, batch: int, seq: int, seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    if name == "vit":
        return [torch.randn(batch, 3, 32, 32, generator=g)]
    ids = torch.randint(0, 100, (batch, seq), generator=g)
    mask = torch.ones(batch, seq, dtype=torch.long)
    mask[-1, max(1, seq // 2):] = 0  # a padded row: the mask reaches the attention
    return [ids, mask]


def _export(name: str, exporter: str, path: Path) -> tuple[torch.nn.Module, list[str]]:
    torch.manual_seed(0)
    model = _LastHidden(_tiny(name).eval()).eval()
    args = tuple(_feeds(name, 2, 7, 0))
    names = ["pixel_values"] if name == "vit" else ["input_ids", "attention_mask"]
    dims = {0: "batch"} if name == "vit" else {0: "batch", 1: "seq"}
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        if exporter == "dynamo":
            from torch.export import Dim

            shapes = tuple({k: Dim.AUTO for k in dims} for _ in names)
            torch.onnx.export(model, args, str(path), input_names=names, output_names=["last_hidden_state"],
                              dynamo=True, dynamic_shapes=(shapes,))
        else:
            torch.onnx.export(model, args, str(path), input_names=names, output_names=["last_hidden_state"],
                              dynamo=False, opset_version=17,
                              dynamic_axes={**{n: dims for n in names}, "last_hidden_state": {0: "batch"}})
    return model, names


def _check(name: str, exporter: str, tmp_path: Path, static: bool) -> None:
    src = tmp_path / f"{name}-{exporter}.onnx"
    model, names = _export(name, exporter, src)
    dst = tmp_path / f"{name}-{exporter}.dtm"
    if static:
        shapes = {n: list(t.shape) for n, t in zip(names, _feeds(name, 2, 7, 0))}
        report = don.import_model(src, dst, dynamic_axes=[], input_shapes=shapes)
        assert report.input_shapes == shapes
        sizes = [(2, 7)]
    else:
        report = don.import_model(src, dst)  # every dynamic dim stays dynamic; parity vs ONNX Runtime inside
        for n in names:  # batch (and seq) are named dims of every input
            dims = report.input_shapes[n]
            assert all(isinstance(d, str) for d in (dims[:1] if name == "vit" else dims)), report.input_shapes
        sizes = [(1, 5), (3, 12), (4, 9), (2, 1)]
    assert max(report.parity.values()) < 1e-4, report.parity
    sess = InferenceSession(str(dst))
    for k, (b, s) in enumerate(sizes):
        feeds = _feeds(name, b, s, 10 + k)
        with torch.no_grad():
            want = model(*feeds).numpy()
        (got,) = sess.run(None, {n: t.numpy() for n, t in zip(names, feeds)})
        assert got.shape == want.shape, (b, s, got.shape, want.shape)
        scale = max(1.0, float(np.abs(want).max()))
        err = float(np.abs(got - want).max()) / scale
        assert err < 1e-4, f"{name} {exporter} at batch {b}, seq {s}: error {err:.3g} x scale"


FAST = [("bert", "legacy"), ("bert", "dynamo"), ("roberta", "dynamo"), ("gpt2", "dynamo")]
MODELS = ["bert", "bert-eager", "distilbert", "albert", "electra", "mobilebert", "roberta", "gpt2", "vit"]


@pytest.mark.parametrize("name,exporter", FAST, ids=[f"{n}-{e}" for n, e in FAST])
def test_text_model_imports_with_dynamic_batch_and_sequence(name: str, exporter: str, tmp_path: Path) -> None:
    _check(name, exporter, tmp_path, static=False)


@pytest.mark.full
@pytest.mark.parametrize("static", [False, True], ids=["dynamic", "static"])
@pytest.mark.parametrize("exporter", ["legacy", "dynamo"])
@pytest.mark.parametrize("name", MODELS)
def test_every_model_both_exporters(name: str, exporter: str, static: bool, tmp_path: Path) -> None:
    _check(name, exporter, tmp_path, static)


def test_separately_named_batch_dims_must_agree_at_run_time(tmp_path: Path) -> None:
    """torch's dynamo exporter names the batch and sequence of input_ids and attention_mask apart; GPT-2's graph fails
    when they differ, so the import takes each pair as one dimension, says so, and the runtime refuses inputs
    that disagree instead of computing garbage."""
    src = tmp_path / "gpt2.onnx"
    _, names = _export("gpt2", "dynamo", src)
    report = don.import_model(src, tmp_path / "gpt2.dtm")
    ids_dims, mask_dims = report.input_shapes["input_ids"], report.input_shapes["attention_mask"]
    assert ids_dims == mask_dims, report.input_shapes
    assert any("imported as one dimension" in w for w in report.warnings), report.warnings
    sess = InferenceSession(str(tmp_path / "gpt2.dtm"))
    with pytest.raises(ValueError, match=rf"input 'attention_mask' dimension 0 \(dynamic '{ids_dims[0]}'\) is 3, but "
                                         rf"input 'input_ids' dimension 0 gives '{ids_dims[0]}' the size 2"):
        sess.run(None, {"input_ids": np.zeros((2, 5), np.int64), "attention_mask": np.ones((3, 5), np.int64)})
