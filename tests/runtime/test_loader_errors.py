"""The loader refuses every corrupt, inconsistent or incompatible .dtm file with a clear error, never a crash."""

from __future__ import annotations

import numpy as np
import pytest
from dtm_builder import DtmBuilder, chain_model, relu_model

import dtorch.runtime as rt

LOAD_ERRORS = (rt.InvalidModelError, rt.VersionMismatchError, rt.UnsupportedError)


def test_empty_and_truncated_files() -> None:
    data = chain_model().build()
    with pytest.raises(rt.InvalidModelError, match=r"empty"):
        rt.InferenceSession(b"")
    for n in [1, 7, 8, 16, 40, len(data) // 2, len(data) - 1]:
        with pytest.raises(rt.InvalidModelError, match=r"invalid model file|not a \.dtm model"):
            rt.InferenceSession(data[:n])


def test_bad_identifier() -> None:
    data = bytearray(relu_model().build())
    data[4:8] = b"ONNX"
    with pytest.raises(rt.InvalidModelError, match=r'file identifier is not "DTM1"'):
        rt.InferenceSession(bytes(data))


def test_newer_format_names_both_versions() -> None:
    with pytest.raises(rt.VersionMismatchError, match=r"format version 7 .*newer than this runtime's format version 1"):
        rt.InferenceSession(relu_model().build(format_version=7, producer="dtorch 9.0"))


def test_min_runtime_version_too_high_names_both_versions() -> None:
    with pytest.raises(rt.VersionMismatchError, match=r"needs runtime version >= 5 .*this runtime is version 1"):
        rt.InferenceSession(relu_model().build(min_runtime_version=5))


def test_format_version_zero() -> None:
    with pytest.raises(rt.InvalidModelError, match=r"format_version is 0"):
        rt.InferenceSession(relu_model().build(format_version=0))


def test_unknown_operator_is_named() -> None:
    g = DtmBuilder()
    x, y = g.input("x", [2]), g.output("y", [2])
    g.node("frobnicate", [x], [y])
    with pytest.raises(rt.UnsupportedError,
                       match=r"model needs operator 'frobnicate' \(float32\), which this runtime was built without"):
        rt.InferenceSession(g.build())


def _bad_graph(kind: str) -> DtmBuilder:
    g = chain_model()
    if kind == "node-input":
        g.nodes[1].inputs[0] = 99
    elif kind == "node-output":
        g.nodes[1].outputs[0] = -5
    elif kind == "model-output":
        g.outputs[0] = 1000
    elif kind == "model-input":
        g.inputs[0] = -3
    elif kind == "order":
        g.nodes[1], g.nodes[2] = g.nodes[2], g.nodes[1]
    elif kind == "twice":
        g.nodes[2].outputs[0] = g.nodes[1].outputs[0]
    elif kind == "segment-index":
        g.tensors[1].segment = 7
    elif kind == "segment-outside":
        g.segment_override = [(64, 32), (1 << 40, 32)]
    elif kind == "segment-unaligned":
        g.segment_override = [(65, 32), (128, 32)]
    elif kind == "segment-size":
        g.blobs[0] = g.blobs[0][:16]
    elif kind == "rank":
        g.tensors[0].shape = [1] * 9
    elif kind == "dim":
        g.tensors[0].shape = ["batch", -4]
    elif kind == "no-output":
        g.outputs.clear()
    elif kind == "never-produced":
        g.nodes.pop()
    return g


@pytest.mark.parametrize("kind, message", [
    ("node-input", r"node 1 .*input 0 refers to tensor 99"),
    ("node-output", r"node 1 .*output 0 refers to tensor -5"),
    ("model-output", r"model output 0 refers to tensor 1000"),
    ("model-input", r"model input 0 refers to tensor -3"),
    ("order", r"before any node produces it \(nodes must be in topological order\)"),
    ("twice", r"already produced by an earlier node"),
    ("segment-index", r"refers to segment 7, which does not exist"),
    ("segment-outside", r"segment 1 .*lies outside the file"),
    ("segment-unaligned", r"segment 0 starts at offset 65, not a multiple of 64"),
    ("segment-size", r"needs 32 bytes .*segment holds 16"),
    ("rank", r"has rank 9 \(at most 8 supported\)"),
    ("dim", r"dimension 1 has size -4"),
    ("no-output", r"the model has no outputs"),
    ("never-produced", r"is never produced by any node"),
])
def test_inconsistent_graphs(kind: str, message: str) -> None:
    with pytest.raises(rt.InvalidModelError, match=message):
        rt.InferenceSession(_bad_graph(kind).build())


def test_bad_test_vector() -> None:
    g = relu_model([2, 4])
    g.set_test_vector([np.zeros((2, 4), np.float32)], [np.zeros((3, 4), np.float32)])
    data = g.build()
    rt.InferenceSession(data)  # shapes match their segments: fine
    g.test_vector = ([np.zeros((2, 4), np.float32)], [])
    with pytest.raises(rt.InvalidModelError, match=r"test vector needs one output segment"):
        rt.InferenceSession(g.build())


def _try(data: bytes, x: np.ndarray) -> None:
    try:
        s = rt.InferenceSession(data)
    except LOAD_ERRORS:
        return
    try:
        s.run(None, {i.name: np.zeros([d if isinstance(d, int) else 2 for d in i.shape], i.dtype)
                     for i in s.get_inputs()})
    except (ValueError, TypeError, NotImplementedError, RuntimeError, MemoryError):
        pass


def test_mutations_never_crash() -> None:
    """Bit flips, byte overwrites, huge values and truncations: each gives an error or a valid model."""
    g = chain_model()
    g.set_test_vector([np.ones((2, 8), np.float32)], [np.ones((2, 8), np.float32)])
    data = g.build()
    rng = np.random.default_rng(1234)
    x = np.ones((2, 8), np.float32)
    for i in range(400):
        buf = bytearray(data)
        kind = i % 4
        if kind == 0:
            pos = int(rng.integers(len(buf)))
            buf[pos] ^= 1 << int(rng.integers(8))
        elif kind == 1:
            for _ in range(4):
                buf[int(rng.integers(len(buf)))] = int(rng.integers(256))
        elif kind == 2:
            pos = int(rng.integers(max(1, len(buf) - 8)))
            buf[pos:pos + 8] = bytes([0xFF] * 7 + [0x7F])
        else:
            buf = buf[: int(rng.integers(len(buf)))]
        _try(bytes(buf), x)
