"""A tiny hand-written .dtm builder for the runtime tests (independent of the exporter; see conftest.py).

    g = DtmBuilder()
    x = g.input("x", ["batch", 4])
    w = g.const("w", np.ones((4,), np.float32))
    y = g.output("y", ["batch", 4])
    g.node("add", [x, w], [y])
    data = g.build()            # bytes: FlatBuffer + 64-byte aligned segments

Nothing is validated here on purpose, so tests can write broken files (out-of-range indices, bad
segments, wrong versions).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import flatbuffers
import numpy as np

from dtorch.dtm import (
    Attr,
    AttrType,
    Dim,
    KeyValue,
    MemoryPlan,
    Model,
    Node,
    Segment,
    Shape,
    Tensor,
    TensorKind,
    TestVector,
)

DTYPES = {"float32": 0, "float16": 1, "bfloat16": 2, "float64": 3, "int64": 4, "int32": 5, "int16": 6, "int8": 7,
          "uint8": 8, "bool": 9}


@dataclass(frozen=True)
class RawAttr:
    """An attribute written exactly as given: any type code (also ones the schema does not define) and payload."""

    type: int
    i: int = 0
    f: float = 0.0
    ints: tuple[int, ...] | None = None
    floats: tuple[float, ...] | None = None
    s: str | None = None


@dataclass
class _Tensor:
    name: str
    dtype: str
    shape: list[int | str]
    kind: int
    segment: int = -1


@dataclass
class _Node:
    op: str
    inputs: list[int]
    outputs: list[int]
    attrs: dict[str, Any]
    name: str


@dataclass
class DtmBuilder:
    tensors: list[_Tensor] = field(default_factory=list)
    nodes: list[_Node] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    blobs: list[bytes] = field(default_factory=list)
    segment_override: list[tuple[int, int]] | None = None  # raw (offset, size) pairs instead of the real ones
    test_vector: tuple[list[np.ndarray], list[np.ndarray]] | None = None
    plan: tuple[int, list[int]] | None = None  # MemoryPlan (arena_size, offsets per tensor); None: arena 0, no offsets
    example_shapes: bool = True  # write Tensor.example_shape (dynamic dimensions as 1)

    def _add(self, name: str, dtype: str, shape: list[int | str], kind: int, segment: int = -1) -> int:
        self.tensors.append(_Tensor(name, dtype, list(shape), kind, segment))
        return len(self.tensors) - 1

    def input(self, name: str, shape: list[int | str], dtype: str = "float32") -> int:
        t = self._add(name, dtype, shape, TensorKind.TensorKind.input)
        self.inputs.append(t)
        return t

    def output(self, name: str, shape: list[int | str], dtype: str = "float32") -> int:
        t = self._add(name, dtype, shape, TensorKind.TensorKind.output)
        self.outputs.append(t)
        return t

    def tensor(self, name: str, shape: list[int | str], dtype: str = "float32") -> int:
        return self._add(name, dtype, shape, TensorKind.TensorKind.intermediate)

    def const(self, name: str, value: np.ndarray) -> int:
        value = np.ascontiguousarray(value)
        self.blobs.append(value.tobytes())
        return self._add(name, str(value.dtype), list(value.shape), TensorKind.TensorKind.constant, len(self.blobs) - 1)

    def node(self, op: str, inputs: list[int], outputs: list[int], attrs: dict[str, Any] | None = None,
             name: str | None = None) -> None:
        self.nodes.append(_Node(op, list(inputs), list(outputs), dict(attrs or {}), name or f"{op}{len(self.nodes)}"))

    def set_test_vector(self, inputs: list[np.ndarray], outputs: list[np.ndarray]) -> None:
        self.test_vector = (inputs, outputs)

    def plan_without_reuse(self) -> None:
        """A memory plan that gives every intermediate its own 64-byte aligned slot (dynamic dims taken as 1)."""
        sizes = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4, "int16": 2,
                 "int8": 1, "uint8": 1, "bool": 1}
        offsets, arena = [], 0
        for t in self.tensors:
            if t.kind != TensorKind.TensorKind.intermediate:
                offsets.append(-1)
                continue
            offsets.append(arena)
            arena += (sizes[t.dtype] * int(np.prod([d if isinstance(d, int) else 1 for d in t.shape])) + 63) // 64 * 64
        self.plan = (arena, offsets)

    # --- serialization -------------------------------------------------------------------------
    def build(self, format_version: int = 1, min_runtime_version: int = 1, producer: str = "dtorch test",
              opset: int = 13) -> bytes:
        blobs = list(self.blobs)
        tv_segments: tuple[list[int], list[int]] | None = None
        if self.test_vector is not None:
            ins, outs = self.test_vector
            first = len(blobs)
            blobs += [np.ascontiguousarray(a).tobytes() for a in ins + outs]
            tv_segments = (list(range(first, first + len(ins))), list(range(first + len(ins), len(blobs))))
        # The FlatBuffer's size does not depend on the segment offsets (fixed-size fields): build once to
        # learn it, then again with the real offsets.
        fb = self._flatbuffer(blobs, 0, format_version, min_runtime_version, producer, opset, tv_segments)
        base = (len(fb) + 63) // 64 * 64
        fb = self._flatbuffer(blobs, base, format_version, min_runtime_version, producer, opset, tv_segments)
        assert (len(fb) + 63) // 64 * 64 == base
        out = bytearray(fb)
        for blob in blobs:
            out += b"\0" * ((-len(out)) % 64)
            out += blob
        return bytes(out)

    def _flatbuffer(self, blobs: list[bytes], base: int, format_version: int, min_runtime_version: int,
                    producer: str, opset: int, tv_segments: tuple[list[int], list[int]] | None) -> bytes:
        b = flatbuffers.Builder(1024)

        def ivec(values: list[int], dtype: Any = np.int32) -> int:
            return b.CreateNumpyVector(np.asarray(values, dtype=dtype))

        def tables(start: Any, offsets: list[int]) -> int:
            start(b, len(offsets))
            for o in reversed(offsets):
                b.PrependUOffsetTRelative(o)
            return b.EndVector()

        tensor_offsets = []
        for t in self.tensors:
            dims = []
            for d in t.shape:
                dname = b.CreateString(d) if isinstance(d, str) else None
                Dim.DimStart(b)
                Dim.DimAddSize(b, -1 if isinstance(d, str) else d)
                if dname is not None:
                    Dim.DimAddName(b, dname)
                dims.append(Dim.DimEnd(b))
            shape = tables(Tensor.TensorStartShapeVector, dims)
            example = ivec([1 if isinstance(d, str) else d for d in t.shape], np.int64) if self.example_shapes else None
            name = b.CreateString(t.name)
            Tensor.TensorStart(b)
            Tensor.TensorAddName(b, name)
            Tensor.TensorAddDtype(b, DTYPES[t.dtype])
            Tensor.TensorAddShape(b, shape)
            if example is not None:
                Tensor.TensorAddExampleShape(b, example)
            Tensor.TensorAddKind(b, t.kind)
            Tensor.TensorAddSegment(b, t.segment)
            tensor_offsets.append(Tensor.TensorEnd(b))
        tensors = tables(Model.ModelStartTensorsVector, tensor_offsets)

        node_offsets = []
        for n in self.nodes:
            attr_offsets = [self._attr(b, k, v, ivec) for k, v in sorted(n.attrs.items())]
            attrs = tables(Node.NodeStartAttrsVector, attr_offsets)
            op, name = b.CreateString(n.op), b.CreateString(n.name)
            ins, outs = ivec(n.inputs), ivec(n.outputs)
            Node.NodeStart(b)
            Node.NodeAddOp(b, op)
            Node.NodeAddInputs(b, ins)
            Node.NodeAddOutputs(b, outs)
            Node.NodeAddAttrs(b, attrs)
            Node.NodeAddName(b, name)
            node_offsets.append(Node.NodeEnd(b))
        nodes = tables(Model.ModelStartNodesVector, node_offsets)

        if self.segment_override is not None:
            segs = self.segment_override
        else:
            segs, pos = [], base
            for blob in blobs:
                pos = (pos + 63) // 64 * 64
                segs.append((pos, len(blob)))
                pos += len(blob)
        Model.ModelStartSegmentsVector(b, len(segs))
        for off, size in reversed(segs):
            Segment.CreateSegment(b, off, size)
        segments = b.EndVector()

        def op_key(n: _Node) -> str:
            first = n.inputs[0] if n.inputs else -1
            return f"{n.op}:{self.tensors[first].dtype if 0 <= first < len(self.tensors) else 'float32'}"

        ops = sorted({op_key(n) for n in self.nodes})
        op_list = tables(Model.ModelStartOpListVector, [b.CreateString(s) for s in ops])

        tv = None
        if tv_segments is not None and self.test_vector is not None:
            def shapes(arrs: list[np.ndarray]) -> int:
                offs = []
                for a in arrs:
                    dims = ivec(list(a.shape), np.int64)
                    Shape.ShapeStart(b)
                    Shape.ShapeAddDims(b, dims)
                    offs.append(Shape.ShapeEnd(b))
                return tables(TestVector.TestVectorStartInputShapesVector, offs)

            in_shapes, out_shapes = shapes(self.test_vector[0]), shapes(self.test_vector[1])
            tv_in, tv_out = ivec(tv_segments[0]), ivec(tv_segments[1])
            TestVector.TestVectorStart(b)
            TestVector.TestVectorAddInputs(b, tv_in)
            TestVector.TestVectorAddInputShapes(b, in_shapes)
            TestVector.TestVectorAddOutputs(b, tv_out)
            TestVector.TestVectorAddOutputShapes(b, out_shapes)
            tv = TestVector.TestVectorEnd(b)

        algo = b.CreateString("greedy-by-size")
        plan_offsets = None if self.plan is None else ivec(self.plan[1], np.int64)
        MemoryPlan.MemoryPlanStart(b)
        MemoryPlan.MemoryPlanAddAlgorithm(b, algo)
        MemoryPlan.MemoryPlanAddArenaSize(b, 0 if self.plan is None else self.plan[0])
        if plan_offsets is not None:
            MemoryPlan.MemoryPlanAddOffsets(b, plan_offsets)
        plan = MemoryPlan.MemoryPlanEnd(b)

        key, value = b.CreateString("source"), b.CreateString("tests/runtime/conftest.py")
        KeyValue.KeyValueStart(b)
        KeyValue.KeyValueAddKey(b, key)
        KeyValue.KeyValueAddValue(b, value)
        meta = tables(Model.ModelStartMetadataVector, [KeyValue.KeyValueEnd(b)])

        inputs, outputs = ivec(self.inputs), ivec(self.outputs)
        prod = b.CreateString(producer)
        Model.ModelStart(b)
        Model.ModelAddFormatVersion(b, format_version)
        Model.ModelAddMinRuntimeVersion(b, min_runtime_version)
        Model.ModelAddProducer(b, prod)
        Model.ModelAddOpset(b, opset)
        Model.ModelAddTensors(b, tensors)
        Model.ModelAddNodes(b, nodes)
        Model.ModelAddInputs(b, inputs)
        Model.ModelAddOutputs(b, outputs)
        Model.ModelAddOpList(b, op_list)
        Model.ModelAddSegments(b, segments)
        Model.ModelAddPlan(b, plan)
        if tv is not None:
            Model.ModelAddTestVector(b, tv)
        Model.ModelAddMetadata(b, meta)
        b.Finish(Model.ModelEnd(b), file_identifier=b"DTM1")
        return bytes(b.Output())

    @staticmethod
    def _attr(b: flatbuffers.Builder, key: str, value: Any, ivec: Any) -> int:
        name = b.CreateString(key)
        s = ints = floats = None
        if isinstance(value, RawAttr):
            ints = None if value.ints is None else ivec(list(value.ints), np.int64)
            floats = None if value.floats is None else ivec(list(value.floats), np.float64)
            s = None if value.s is None else b.CreateString(value.s)
            Attr.AttrStart(b)
            Attr.AttrAddName(b, name)
            Attr.AttrAddType(b, value.type)
            Attr.AttrAddI(b, value.i)
            Attr.AttrAddF(b, value.f)
            for add, v in ((Attr.AttrAddInts, ints), (Attr.AttrAddFloats, floats), (Attr.AttrAddS, s)):
                if v is not None:
                    add(b, v)
            return Attr.AttrEnd(b)
        if isinstance(value, str):
            kind, s = AttrType.AttrType.string, b.CreateString(value)
        elif isinstance(value, (list, tuple)):
            if any(isinstance(v, float) for v in value):
                kind, floats = AttrType.AttrType.floats, ivec(list(value), np.float64)
            else:
                kind, ints = AttrType.AttrType.ints, ivec(list(value), np.int64)
        elif isinstance(value, float):
            kind = AttrType.AttrType.float
        else:
            kind = AttrType.AttrType.int
        Attr.AttrStart(b)
        Attr.AttrAddName(b, name)
        Attr.AttrAddType(b, kind)
        if kind == AttrType.AttrType.int:
            Attr.AttrAddI(b, int(value))
        elif kind == AttrType.AttrType.float:
            Attr.AttrAddF(b, float(value))
        if ints is not None:
            Attr.AttrAddInts(b, ints)
        if floats is not None:
            Attr.AttrAddFloats(b, floats)
        if s is not None:
            Attr.AttrAddS(b, s)
        return Attr.AttrEnd(b)


def relu_model(shape: list[int | str] | None = None) -> DtmBuilder:
    """x -> relu -> y."""
    g = DtmBuilder()
    shape = shape if shape is not None else ["batch", 4]
    x = g.input("x", shape)
    y = g.output("y", shape)
    g.node("relu", [x], [y])
    return g


def chain_model() -> DtmBuilder:
    """x (batch, 8) -> add(x, b) -> relu -> mul(., s) -> neg -> add(., x) -> y: intermediates, constants, in-place."""
    g = DtmBuilder()
    rng = np.random.default_rng(0)
    x = g.input("x", ["batch", 8])
    b = g.const("b", rng.standard_normal(8).astype(np.float32))
    s = g.const("s", rng.standard_normal((1, 8)).astype(np.float32))
    t1, t2, t3, t4 = (g.tensor(f"t{i}", ["batch", 8]) for i in range(1, 5))
    y = g.output("y", ["batch", 8])
    g.node("add", [x, b], [t1])
    g.node("relu", [t1], [t2])
    g.node("mul", [t2, s], [t3])
    g.node("neg", [t3], [t4])
    g.node("add", [t4, x], [y])
    return g


def chain_reference(x: np.ndarray, g: DtmBuilder) -> np.ndarray:
    b = np.frombuffer(g.blobs[0], np.float32)
    s = np.frombuffer(g.blobs[1], np.float32).reshape(1, 8)
    return -(np.maximum(x + b, 0) * s) + x


def conv_linear_model(rng: np.random.Generator, channels: int, size: int) -> bytes:
    """x (batch, 3, size, size) -> conv2d 3x3 (relu) -> reshape -> linear -> y (batch, 5), weights from `rng`."""
    g = DtmBuilder()
    x = g.input("x", ["batch", 3, size, size])
    w = g.const("w", rng.standard_normal((channels, 3, 3, 3)).astype(np.float32))
    b = g.const("b", rng.standard_normal(channels).astype(np.float32))
    lw = g.const("lw", rng.standard_normal((5, channels * size * size)).astype(np.float32))
    c, f = g.tensor("c", ["batch", channels, size, size]), g.tensor("f", ["batch", channels * size * size])
    y = g.output("y", ["batch", 5])
    g.node("conv2d", [x, w, b], [c], {"stride": [1, 1], "padding": [1, 1, 1, 1], "dilation": [1, 1], "groups": 1,
                                      "activation": "relu"})
    g.node("reshape", [c], [f], {"shape": [0, -1]})
    g.node("linear", [f, lw, -1], [y])
    return g.build()

