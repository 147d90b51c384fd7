"""Parse a `.dtm` file back into plain Python data (used by `dtorch-edge inspect` and the tests).

Validates the file identifier, the format version, every tensor index and every segment (inside the file,
64-byte aligned), and every node against the operator catalogue (known operator, arity, attribute types and
values, input and output dtypes); anything wrong raises `DtmFormatError` with one clear sentence.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._fileio import read_regular
from ..catalogue import ATTR_TYPES, OPSET, check_node
from ..dtm.AttrType import AttrType
from ..dtm.Model import Model as FModel
from .errors import DtmFormatError
from .graph import Graph, Node, Value
from .planner import PlanNode, verify_plan
from .writer import DTYPE_CODES, FILE_IDENTIFIER, FORMAT_VERSION, KIND_CODES, NodeSpec

__all__ = ["DtmFile", "DtmNode", "DtmTensor", "read_dtm"]

_DTYPES = {v: k for k, v in DTYPE_CODES.items()}
_KINDS = {v: k for k, v in KIND_CODES.items()}
_ATTR_TYPES = dict(enumerate(ATTR_TYPES))


@dataclass
class DtmTensor:
    name: str
    dtype: str
    dims: list[int | str]  # fixed size, or the dynamic dimension's name ("?" when unnamed)
    example_shape: list[int]
    kind: str
    segment: int
    data: np.ndarray | None = None  # constants only


DtmNode = NodeSpec  # a node as read: the writer's description of one


@dataclass
class DtmFile:
    path: str
    size: int
    format_version: int
    min_runtime_version: int
    producer: str
    opset: int
    tensors: list[DtmTensor]
    nodes: list[DtmNode]
    inputs: list[int]
    outputs: list[int]
    op_list: list[str]
    segments: list[tuple[int, int]]
    plan: dict[str, Any]
    metadata: dict[str, str]
    test_vector: dict[str, list[np.ndarray]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_graph(self) -> tuple[Graph, list[str], list[str]]:
        """The model as the export IR again (the graph `dt.export` wrote, after its passes), with its input and
        output names: what a pass over a written file (int8 quantization) starts from. Constants keep their data
        (read-only views of the file's bytes); dynamic dimensions keep their names."""
        values: list[Value] = []
        for t in self.tensors:
            kind = t.kind if t.kind in ("input", "constant") else "intermediate"
            values.append(Value(tuple(t.example_shape), np.dtype(t.dtype), kind,
                                None if t.data is None else np.asarray(t.data).astype(t.data.dtype.newbyteorder("=")),
                                t.name if kind == "constant" else "", list(t.dims)))
        nodes = [Node(n.op, [None if i < 0 else values[i] for i in n.inputs], [values[i] for i in n.outputs],
                      dict(n.attrs), n.name) for n in self.nodes]
        graph = Graph([values[i] for i in self.inputs], [values[i] for i in self.outputs], nodes)
        return graph, [self.tensors[i].name for i in self.inputs], [self.tensors[i].name for i in self.outputs]

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready summary (no weight data)."""
        def t(i: int) -> dict[str, Any]:
            x = self.tensors[i]
            return {"index": i, "name": x.name, "dtype": x.dtype, "shape": x.dims, "kind": x.kind}
        return {
            "path": self.path, "format_version": self.format_version,
            "min_runtime_version": self.min_runtime_version, "producer": self.producer, "opset": self.opset,
            "inputs": [t(i) for i in self.inputs], "outputs": [t(i) for i in self.outputs],
            "nodes": [{"index": k, "op": n.op, "activation": n.attrs.get("activation", "none"), "module": n.name,
                       "attrs": n.attrs, "inputs": [None if i < 0 else t(i) for i in n.inputs],
                       "outputs": [t(i) for i in n.outputs]} for k, n in enumerate(self.nodes)],
            "op_list": self.op_list, "metadata": self.metadata,
            "plan": {k: v for k, v in self.plan.items() if k != "offsets"},
            "has_test_vector": self.test_vector is not None,
        }


def _s(b: bytes | None) -> str:
    return "" if b is None else b.decode("utf-8")


def _attr(a: Any) -> Any:
    kind = a.Type()
    if kind == AttrType.int:
        return int(a.I())
    if kind == AttrType.float:
        return float(a.F())
    if kind == AttrType.ints:
        return [int(a.Ints(j)) for j in range(a.IntsLength())]
    if kind == AttrType.floats:
        return [float(a.Floats(j)) for j in range(a.FloatsLength())]
    if kind == AttrType.string:
        return _s(a.S())
    raise DtmFormatError(f"attribute {_s(a.Name())!r} has an unknown type code {kind}")


def _parse(buf: bytes, path: str) -> DtmFile:
    if len(buf) < 8 or buf[4:8] != FILE_IDENTIFIER:
        raise DtmFormatError(f"{path} is not a .dtm model file (no 'DTM1' identifier); export one with dt.export")
    m = FModel.GetRootAs(buf, 0)
    version = m.FormatVersion()
    if version > FORMAT_VERSION:
        raise DtmFormatError(f"{path} has format version {version}, newer than this dtorch reads ({FORMAT_VERSION}); "
                             f"upgrade dtorch")
    if version < 1:
        raise DtmFormatError(f"{path} has an invalid format version {version}")
    segments = []
    for j in range(m.SegmentsLength()):
        s = m.Segments(j)
        off, size = int(s.Offset()), int(s.Size())
        if off % 64 or off + size > len(buf) or off < 8:
            raise DtmFormatError(f"{path}: segment {j} (offset {off}, {size} bytes) is unaligned or outside the "
                                 f"{len(buf)}-byte file; the file is truncated or corrupt")
        segments.append((off, size))
    tensors = []
    n_t = m.TensorsLength()
    for j in range(n_t):
        t = m.Tensors(j)
        dims: list[int | str] = []
        for k in range(t.ShapeLength()):
            d = t.Shape(k)
            dims.append(int(d.Size()) if d.Size() >= 0 else (_s(d.Name()) or "?"))
        code = t.Dtype()
        if code not in _DTYPES or t.Kind() not in _KINDS:
            raise DtmFormatError(f"{path}: tensor {j} has an unknown dtype or kind code")
        ex = [int(t.ExampleShape(k)) for k in range(t.ExampleShapeLength())]
        tensor = DtmTensor(_s(t.Name()), _DTYPES[code], dims, ex, _KINDS[t.Kind()], int(t.Segment()))
        if tensor.kind == "constant":
            if not 0 <= tensor.segment < len(segments):
                raise DtmFormatError(f"{path}: constant tensor {j} ({tensor.name!r}) refers to a missing segment")
            off, size = segments[tensor.segment]
            dt = np.dtype(tensor.dtype).newbyteorder("<")
            if size != dt.itemsize * int(np.prod(ex, dtype=np.int64)):
                raise DtmFormatError(f"{path}: constant {tensor.name!r} has {size} bytes of data but shape {ex}")
            tensor.data = np.frombuffer(buf, dtype=dt, count=size // dt.itemsize, offset=off).reshape(ex)
        tensors.append(tensor)

    def idx(i: int, what: str, optional: bool = False) -> int:
        if (optional and i == -1) or 0 <= i < n_t:
            return int(i)
        raise DtmFormatError(f"{path}: {what} refers to tensor {i}, but the file has {n_t} tensors")

    nodes = []
    for j in range(m.NodesLength()):
        n = m.Nodes(j)
        attrs, types = {}, {}
        for k in range(n.AttrsLength()):
            a = n.Attrs(k)
            name = _s(a.Name())
            if name in attrs:
                raise DtmFormatError(f"{path}: node {j} ({_s(n.Op())!r}) gives attribute {name!r} twice")
            attrs[name] = _attr(a)
            types[name] = _ATTR_TYPES[a.Type()]
        node = DtmNode(_s(n.Op()), [idx(int(n.Inputs(k)), f"node {j}", True) for k in range(n.InputsLength())],
                       [idx(int(n.Outputs(k)), f"node {j}") for k in range(n.OutputsLength())], attrs, _s(n.Name()))
        errs = check_node(node.op, attrs, types, [None if i < 0 else tensors[i].dtype for i in node.inputs],
                          [tensors[i].dtype for i in node.outputs])
        if errs:
            raise DtmFormatError(f"{path}: node {j} ({node.op!r} at {node.name or '<top>'}): {errs[0]}; the file "
                                 f"does not follow the opset {OPSET} catalogue (runtime/OPS.md)")
        nodes.append(node)
    plan: dict[str, Any] = {}
    p = m.Plan()
    if p is not None:
        plan = {"algorithm": _s(p.Algorithm()), "arena_size": int(p.ArenaSize()),
                "offsets": [int(p.Offsets(k)) for k in range(p.OffsetsLength())],
                "sum_of_intermediates": int(p.SumOfIntermediates())}
        if plan["offsets"]:
            _check_plan(path, tensors, nodes, plan["offsets"], plan["arena_size"])
    meta = {}
    for j in range(m.MetadataLength()):
        kv = m.Metadata(j)
        meta[_s(kv.Key())] = _s(kv.Value())
    tv = None
    v = m.TestVector()
    if v is not None:
        in_ids = [idx(int(m.Inputs(k)), "the input list") for k in range(m.InputsLength())]
        out_ids = [idx(int(m.Outputs(k)), "the output list") for k in range(m.OutputsLength())]

        def seg(i: int, shape: list[int], t: int) -> np.ndarray:
            if not 0 <= i < len(segments):
                raise DtmFormatError(f"{path}: the test vector refers to a missing segment {i}")
            off, size = segments[i]
            dt = np.dtype(tensors[t].dtype).newbyteorder("<")
            if size != dt.itemsize * int(np.prod(shape, dtype=np.int64)):
                raise DtmFormatError(f"{path}: test vector segment {i} has {size} bytes but shape {shape}")
            return np.frombuffer(buf, dtype=dt, count=size // dt.itemsize, offset=off).reshape(shape)
        ins = [seg(int(v.Inputs(k)), [int(x) for x in v.InputShapes(k).DimsAsNumpy()], in_ids[k])
               for k in range(min(v.InputsLength(), len(in_ids)))]
        outs = [seg(int(v.Outputs(k)), [int(x) for x in v.OutputShapes(k).DimsAsNumpy()], out_ids[k])
                for k in range(min(v.OutputsLength(), len(out_ids)))]
        tv = {"inputs": ins, "outputs": outs}
    return DtmFile(path, len(buf), version, m.MinRuntimeVersion(), _s(m.Producer()), m.Opset(), tensors, nodes,
                   [idx(int(m.Inputs(k)), "the input list") for k in range(m.InputsLength())],
                   [idx(int(m.Outputs(k)), "the output list") for k in range(m.OutputsLength())],
                   [_s(m.OpList(k)) for k in range(m.OpListLength())], segments, plan, meta, tv)


def _check_plan(path: str, tensors: list[DtmTensor], nodes: list[DtmNode], offsets: list[int], arena: int) -> None:
    """The file's memory plan must hold at its example shapes (the runtime checks the same at load)."""
    if len(offsets) != len(tensors):
        raise DtmFormatError(f"{path}: the memory plan has {len(offsets)} offsets for {len(tensors)} tensors")
    if any(len(t.example_shape) != len(t.dims) for t in tensors if t.kind != "constant"):
        raise DtmFormatError(f"{path}: the file has a memory plan but no example shapes to check it at")
    sizes = [np.dtype(t.dtype).itemsize * int(np.prod(t.example_shape, dtype=np.int64)) for t in tensors]
    inter = [t.kind == "intermediate" for t in tensors]
    try:
        verify_plan([PlanNode(n.op, n.inputs, n.outputs) for n in nodes], sizes, inter, offsets, arena)
    except ValueError as e:
        raise DtmFormatError(f"{path}: the memory plan is wrong: {e}; re-export the model with dtorch") from None


def read_dtm(path: str | os.PathLike[str]) -> DtmFile:
    """Read and validate a `.dtm` file. Raises `DtmFormatError` (missing, corrupt, or too new a file)."""
    p = Path(os.fspath(path))
    try:
        buf = read_regular(p)
    except FileNotFoundError:
        raise DtmFormatError(f"model file not found: {str(p)!r}") from None
    except OSError as e:
        raise DtmFormatError(f"cannot read {str(p)!r}: {e.strerror or e}") from None
    try:
        return _parse(buf, str(p))
    except DtmFormatError:
        raise
    except Exception as e:  # the FlatBuffers accessors raise struct/index/unicode errors on corrupt data
        raise DtmFormatError(f"{str(p)!r} is corrupt or truncated ({type(e).__name__}: {e}); export the model "
                             f"again") from None
