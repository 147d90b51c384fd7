"""Serialize a planned graph to a `.dtm` file: one FlatBuffer (root `Model`, identifier "DTM1") followed by the
constant segments, each at a 64-byte aligned file offset with zero padding in between. Written atomically
(temp file in the same folder, fsync, rename), so an error never leaves a partial file behind.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import flatbuffers
import numpy as np

from .._fileio import write_atomic as _write_atomic
from ..catalogue import CATALOGUE
from ..dtm import Attr as FAttr
from ..dtm import Dim as FDim
from ..dtm import KeyValue as FKeyValue
from ..dtm import MemoryPlan as FPlan
from ..dtm import Model as FModel
from ..dtm import Node as FNode
from ..dtm import Segment as FSegment
from ..dtm import Shape as FShape
from ..dtm import Tensor as FTensor
from ..dtm import TestVector as FTestVector
from ..dtm.AttrType import AttrType
from .errors import ExportError
from .planner import ALIGN, MemoryPlan

__all__ = ["DTYPE_CODES", "FILE_IDENTIFIER", "FORMAT_VERSION", "KIND_CODES", "MIN_RUNTIME_VERSION", "ModelSpec",
           "NodeSpec", "TensorSpec", "build_bytes", "write_atomic"]

FILE_IDENTIFIER = b"DTM1"
FORMAT_VERSION = 1
MIN_RUNTIME_VERSION = 1
DTYPE_CODES = {"float32": 0, "float16": 1, "bfloat16": 2, "float64": 3, "int64": 4, "int32": 5, "int16": 6, "int8": 7,
               "uint8": 8, "bool": 9}
KIND_CODES = {"intermediate": 0, "input": 1, "output": 2, "constant": 3}


@dataclass
class TensorSpec:
    name: str
    dtype: np.dtype
    dims: list[int | str]  # a fixed size, or the name of a dynamic dimension ("?" = derived, unnamed)
    example_shape: tuple[int, ...]
    kind: str
    data: np.ndarray | None = None


@dataclass
class NodeSpec:
    op: str
    inputs: list[int]
    outputs: list[int]
    attrs: dict[str, Any]
    name: str


@dataclass
class ModelSpec:
    producer: str
    opset: int
    tensors: list[TensorSpec]
    nodes: list[NodeSpec]
    inputs: list[int]
    outputs: list[int]
    plan: MemoryPlan
    metadata: list[tuple[str, str]]
    test_inputs: list[np.ndarray] | None = None
    test_outputs: list[np.ndarray] | None = None
    op_list: list[str] = field(default_factory=list)


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _le_bytes(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes()


def _offsets_vector(b: flatbuffers.Builder, offs: Sequence[int]) -> int:
    b.StartVector(4, len(offs), 4)
    for o in reversed(offs):
        b.PrependUOffsetTRelative(o)
    return b.EndVector()


def _attr(b: flatbuffers.Builder, op: str, name: str, v: Any) -> int:
    """One attribute, stored as the catalogue's type for (op, name) when it names one (an empty list of floats is
    floats, a whole-number float stays float), else as the Python value's type."""
    name_off = b.CreateString(name)
    kind: int
    payload: int | None = None
    entry = CATALOGUE.get(op)
    spec = entry.attr(name) if entry is not None else None
    if spec is not None and spec.type == "floats" and isinstance(v, (list, tuple)):
        kind, payload = AttrType.floats, b.CreateNumpyVector(np.asarray(v, dtype=np.float64).reshape(-1))
    elif spec is not None and spec.type == "float" and isinstance(v, (int, float, np.integer, np.floating)):
        kind = AttrType.float
    elif isinstance(v, str):
        kind, payload = AttrType.string, b.CreateString(v)
    elif isinstance(v, (bool, int, np.integer)):
        kind = AttrType.int
    elif isinstance(v, (float, np.floating)):
        kind = AttrType.float
    elif isinstance(v, (list, tuple)) and all(isinstance(x, (int, np.integer)) for x in v):
        kind, payload = AttrType.ints, b.CreateNumpyVector(np.asarray(v, dtype=np.int64).reshape(-1))
    elif isinstance(v, (list, tuple)):
        kind, payload = AttrType.floats, b.CreateNumpyVector(np.asarray(v, dtype=np.float64).reshape(-1))
    else:  # pragma: no cover - lowering only produces the types above
        raise ExportError(f"internal error: attribute {name}={v!r} has no .dtm type")
    FAttr.Start(b)
    FAttr.AddName(b, name_off)
    FAttr.AddType(b, kind)
    if kind == AttrType.int:
        FAttr.AddI(b, int(v))
    elif kind == AttrType.float:
        FAttr.AddF(b, float(v))
    elif kind == AttrType.ints:
        FAttr.AddInts(b, payload)
    elif kind == AttrType.floats:
        FAttr.AddFloats(b, payload)
    else:
        FAttr.AddS(b, payload)
    return FAttr.End(b)


def _tensor(b: flatbuffers.Builder, t: TensorSpec, segment: int) -> int:
    name = b.CreateString(t.name)
    dims = []
    for d in t.dims:
        if isinstance(d, str):
            dn = b.CreateString(d)
            FDim.Start(b)
            FDim.AddSize(b, -1)
            FDim.AddName(b, dn)
        else:
            FDim.Start(b)
            FDim.AddSize(b, int(d))
        dims.append(FDim.End(b))
    shape = _offsets_vector(b, dims)
    ex = b.CreateNumpyVector(np.asarray(t.example_shape, dtype=np.int64).reshape(-1))
    FTensor.Start(b)
    FTensor.AddName(b, name)
    FTensor.AddDtype(b, DTYPE_CODES[np.dtype(t.dtype).name])
    FTensor.AddShape(b, shape)
    FTensor.AddExampleShape(b, ex)
    FTensor.AddKind(b, KIND_CODES[t.kind])
    FTensor.AddSegment(b, segment)
    return FTensor.End(b)


def _node(b: flatbuffers.Builder, n: NodeSpec) -> int:
    op = b.CreateString(n.op)
    name = b.CreateString(n.name)
    ins = b.CreateNumpyVector(np.asarray(n.inputs, dtype=np.int32).reshape(-1))
    outs = b.CreateNumpyVector(np.asarray(n.outputs, dtype=np.int32).reshape(-1))
    attrs = _offsets_vector(b, [_attr(b, n.op, k, n.attrs[k]) for k in sorted(n.attrs)])
    FNode.Start(b)
    FNode.AddOp(b, op)
    FNode.AddInputs(b, ins)
    FNode.AddOutputs(b, outs)
    FNode.AddAttrs(b, attrs)
    FNode.AddName(b, name)
    return FNode.End(b)


def _shapes(b: flatbuffers.Builder, arrays: Sequence[np.ndarray]) -> int:
    offs = []
    for a in arrays:
        dims = b.CreateNumpyVector(np.asarray(a.shape, dtype=np.int64).reshape(-1))
        FShape.Start(b)
        FShape.AddDims(b, dims)
        offs.append(FShape.End(b))
    return _offsets_vector(b, offs)


def _build(spec: ModelSpec, seg_offsets: Sequence[int], blobs: Sequence[bytes], tensor_segment: Sequence[int]) -> bytes:
    b = flatbuffers.Builder(1 << 16)
    producer = b.CreateString(spec.producer)
    tensors = _offsets_vector(b, [_tensor(b, t, s) for t, s in zip(spec.tensors, tensor_segment)])
    nodes = _offsets_vector(b, [_node(b, n) for n in spec.nodes])
    inputs = b.CreateNumpyVector(np.asarray(spec.inputs, dtype=np.int32))
    outputs = b.CreateNumpyVector(np.asarray(spec.outputs, dtype=np.int32))
    op_list = _offsets_vector(b, [b.CreateString(s) for s in spec.op_list])
    FModel.StartSegmentsVector(b, len(blobs))
    for off, blob in zip(reversed(seg_offsets), reversed(blobs)):
        FSegment.CreateSegment(b, off, len(blob))
    segments = b.EndVector()
    algo = b.CreateString(spec.plan.algorithm)
    poffs = b.CreateNumpyVector(np.asarray(spec.plan.offsets, dtype=np.int64).reshape(-1))
    FPlan.Start(b)
    FPlan.AddAlgorithm(b, algo)
    FPlan.AddArenaSize(b, spec.plan.arena_size)
    FPlan.AddOffsets(b, poffs)
    FPlan.AddSumOfIntermediates(b, spec.plan.sum_of_intermediates)
    plan = FPlan.End(b)
    tv = None
    if spec.test_inputs is not None and spec.test_outputs is not None:
        n_const = len(blobs) - len(spec.test_inputs) - len(spec.test_outputs)
        ti = b.CreateNumpyVector(np.arange(n_const, n_const + len(spec.test_inputs), dtype=np.int32))
        to = b.CreateNumpyVector(np.arange(n_const + len(spec.test_inputs), len(blobs), dtype=np.int32))
        tis, tos = _shapes(b, spec.test_inputs), _shapes(b, spec.test_outputs)
        FTestVector.Start(b)
        FTestVector.AddInputs(b, ti)
        FTestVector.AddInputShapes(b, tis)
        FTestVector.AddOutputs(b, to)
        FTestVector.AddOutputShapes(b, tos)
        tv = FTestVector.End(b)
    kvs = []
    for k, v in spec.metadata:
        ko, vo = b.CreateString(k), b.CreateString(v)
        FKeyValue.Start(b)
        FKeyValue.AddKey(b, ko)
        FKeyValue.AddValue(b, vo)
        kvs.append(FKeyValue.End(b))
    meta = _offsets_vector(b, kvs)
    FModel.Start(b)
    FModel.AddFormatVersion(b, FORMAT_VERSION)
    FModel.AddMinRuntimeVersion(b, MIN_RUNTIME_VERSION)
    FModel.AddProducer(b, producer)
    FModel.AddOpset(b, spec.opset)
    FModel.AddTensors(b, tensors)
    FModel.AddNodes(b, nodes)
    FModel.AddInputs(b, inputs)
    FModel.AddOutputs(b, outputs)
    FModel.AddOpList(b, op_list)
    FModel.AddSegments(b, segments)
    FModel.AddPlan(b, plan)
    if tv is not None:
        FModel.AddTestVector(b, tv)
    FModel.AddMetadata(b, meta)
    b.Finish(FModel.End(b), file_identifier=FILE_IDENTIFIER)
    return bytes(b.Output())


def build_bytes(spec: ModelSpec) -> bytes:
    """The whole file: the FlatBuffer, then every segment at a 64-byte aligned offset."""
    blobs: list[bytes] = []
    tensor_segment = []
    for t in spec.tensors:
        if t.kind == "constant":
            assert t.data is not None
            tensor_segment.append(len(blobs))
            blobs.append(_le_bytes(t.data))
        else:
            tensor_segment.append(-1)
    for a in (spec.test_inputs or []) + (spec.test_outputs or []):
        blobs.append(_le_bytes(a))
    offsets = [0] * len(blobs)
    for _ in range(4):  # the FlatBuffer's size does not depend on the offsets' values; settle them
        fb = _build(spec, offsets, blobs, tensor_segment)
        pos = _align(len(fb))
        new = []
        for blob in blobs:
            new.append(pos)
            pos = _align(pos + len(blob))
        if new == offsets:
            break
        offsets = new
    else:  # pragma: no cover
        raise ExportError("internal error: segment offsets did not settle")
    out = bytearray(fb)
    for off, blob in zip(offsets, blobs):
        out.extend(b"\0" * (off - len(out)))
        out.extend(blob)
    return bytes(out)


def check_writable(path: Path) -> None:
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise ExportError(f"cannot write the model to {str(path)!r}: it is a directory; give a file path such as "
                          f"{str(path / 'model.dtm')!r}")
    if not parent.is_dir():
        raise ExportError(f"cannot write the model to {str(path)!r}: the folder {str(parent)!r} does not exist; "
                          f"create it first")
    if not os.access(parent, os.W_OK):
        raise ExportError(f"cannot write the model to {str(path)!r}: the folder {str(parent)!r} is not writable")


def write_atomic(path: Path, data: bytes) -> None:
    check_writable(path)
    try:
        _write_atomic(path, data)
    except OSError as e:
        raise ExportError(f"cannot write the model to {str(path)!r}: {e.strerror or e}") from e
