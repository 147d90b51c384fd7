"""The export IR: `Value`s (tensors) and `Node`s (operators of runtime/OPS.md) in a `Graph`.

A Value is one tensor: a graph input, a constant (with its data), or the output of exactly one node.
`shape` is the example shape; `dims` names the dynamic dimensions (an int for a fixed size, a string for a
named dynamic size, "?" for a dynamic size derived from others, e.g. batch * seq). Nodes are kept in
execution (topological) order; `name` is the module path where the operator ran.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Graph", "Node", "Value", "c_array", "constant"]

_ids = itertools.count()


@dataclass(eq=False)
class Value:
    shape: tuple[int, ...]
    dtype: np.dtype
    kind: str = "intermediate"  # "input", "constant" or "intermediate" (graph outputs are marked by Graph.outputs)
    data: np.ndarray | None = None
    name: str = ""
    dims: list[int | str] | None = None
    uid: int = field(default_factory=lambda: next(_ids))

    @property
    def is_const(self) -> bool:
        return self.kind == "constant"

    @property
    def nbytes(self) -> int:
        n = int(np.dtype(self.dtype).itemsize)
        for s in self.shape:
            n *= int(s)
        return n

    def __repr__(self) -> str:
        return f"Value#{self.uid}({self.kind}, {list(self.shape)}, {np.dtype(self.dtype).name})"


@dataclass(eq=False)
class Node:
    op: str
    inputs: list[Value | None]
    outputs: list[Value]
    attrs: dict[str, Any] = field(default_factory=dict)
    name: str = ""

    def __repr__(self) -> str:
        return f"Node({self.op} @ {self.name or '<top>'}, attrs={self.attrs})"


def c_array(data: Any, dtype: Any = None) -> np.ndarray:
    """`data` as a C-contiguous array, keeping a 0-d array 0-d (np.ascontiguousarray makes it 1-d)."""
    arr = np.asarray(data, dtype=dtype)
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def constant(data: Any, dtype: Any = None, name: str = "") -> Value:
    arr = c_array(data, dtype)
    return Value(tuple(arr.shape), arr.dtype, "constant", arr, name)


@dataclass(eq=False)
class Graph:
    inputs: list[Value] = field(default_factory=list)
    outputs: list[Value] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)

    def producers(self) -> dict[int, Node]:
        return {v.uid: n for n in self.nodes for v in n.outputs}

    def consumers(self) -> dict[int, list[Node]]:
        out: dict[int, list[Node]] = {}
        for n in self.nodes:
            for v in n.inputs:
                if v is not None:
                    lst = out.setdefault(v.uid, [])
                    if not lst or lst[-1] is not n:
                        lst.append(n)
        return out

    def replace_uses(self, old: Value, new: Value) -> None:
        for n in self.nodes:
            n.inputs = [new if v is old else v for v in n.inputs]
        self.outputs = [new if v is old else v for v in self.outputs]

    def constants(self) -> list[Value]:
        seen: dict[int, Value] = {}
        for n in self.nodes:
            for v in n.inputs:
                if v is not None and v.is_const:
                    seen.setdefault(v.uid, v)
        return list(seen.values())
