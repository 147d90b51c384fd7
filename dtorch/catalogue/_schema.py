"""The types of the operator catalogue (see dtorch/catalogue/__init__.py for what uses it).

An `OpDef` is everything DTorch knows about one `.dtm` operator: its inputs and outputs, its typed attributes
with defaults and legal values, which dtypes its kernels accept and produce, whether its output may take its
first input's buffer, which activations fuse into it, its scratch and shape rules, and the eager primitives
that lower to it. Entries are plain frozen data: no behaviour lives here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["ACTIVATION_ATTRS", "ATTR_TYPES", "BOOL", "DTYPES", "F32", "FUSED_ACTIVATIONS", "I32", "I64", "MAX_ATTR_VALUE",
           "MAX_DIMS", "MOVABLE_DTYPES", "REQUIRED", "Attr", "OpDef", "Operand", "Signature", "flag"]

#: The .dtm attribute types (runtime/schema/dtm.fbs `AttrType`, same order).
ATTR_TYPES = ("int", "float", "ints", "floats", "string")
#: The largest rank of a tensor (runtime/include/dtorch/types.h kMaxDims).
MAX_DIMS = 8
#: The largest kernel size, stride, dilation, padding or output size an attribute may hold
#: (runtime/kernels/common/util.h kMaxAttrValue).
MAX_ATTR_VALUE = 2**24
#: The .dtm tensor dtypes (runtime/schema/dtm.fbs `DType`, same order).
DTYPES = ("float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int8", "uint8", "bool")


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: The default of an attribute that every node must carry.
REQUIRED = _Required()

AttrType = Literal["int", "float", "ints", "floats", "string"]
Scalar = int | float | str


@dataclass(frozen=True)
class Attr:
    """One typed attribute. `lo`/`hi` bound the value (each element of a list) inclusively; `choices` lists
    every legal value (strings, or ints such as 0/1 flags); `length` is the exact element count of a list
    attribute, or (min, max) with max -1 for "any"."""

    name: str
    type: AttrType
    default: object = REQUIRED
    lo: float | None = None
    hi: float | None = None
    choices: tuple[Scalar, ...] | None = None
    length: int | tuple[int, int] | None = None
    doc: str = ""

    def __post_init__(self) -> None:
        if self.type not in ATTR_TYPES:
            raise ValueError(f"attribute {self.name}: unknown type {self.type!r} (one of {ATTR_TYPES})")

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    @property
    def length_range(self) -> tuple[int, int]:
        """(min, max) element count of a list attribute; max -1 = unbounded. Scalars: (0, -1)."""
        if self.length is None:
            return (0, -1)
        if isinstance(self.length, int):
            return (self.length, self.length)
        return self.length


def flag(name: str, default: int, doc: str = "") -> Attr:
    """A 0/1 int attribute."""
    return Attr(name, "int", default, choices=(0, 1), doc=doc)


@dataclass(frozen=True)
class Operand:
    """An input or output slot. `optional`: may be absent (-1 in the file). `variadic`: this slot and any number
    after it (the last input only)."""

    name: str
    doc: str = ""
    optional: bool = False
    variadic: bool = False


@dataclass(frozen=True)
class Signature:
    """One dtype combination a kernel implements: the dtype of each input slot (a variadic slot's dtype repeats)
    and of each output. The first input's dtype is the kernel registry key. Several signatures may share a key (one
    kernel serves them all, e.g. where's, keyed by its bool condition): a node must match one of them in full."""

    inputs: tuple[str, ...]
    outputs: tuple[str, ...]

    def __post_init__(self) -> None:
        for d in (*self.inputs, *self.outputs):
            if d not in DTYPES:
                raise ValueError(f"unknown dtype {d!r} (one of {DTYPES})")

    @property
    def key(self) -> str:
        return self.inputs[0]

    def input_dtype(self, i: int) -> str:
        """The dtype of input slot i (a variadic last slot repeats; core/op_schema.h signature_input)."""
        return self.inputs[min(i, len(self.inputs) - 1)]

    def accepts(self, input_dtypes: Sequence[str | None]) -> bool:
        """Whether every present input (None: an absent optional input) has this signature's dtype."""
        return all(d is None or d == self.input_dtype(i) for i, d in enumerate(input_dtypes))

    def __str__(self) -> str:
        return f"({', '.join(self.inputs)}) -> {', '.join(self.outputs)}"


F32 = "float32"
I64 = "int64"
I32 = "int32"
BOOL = "bool"
I8 = "int8"
#: The dtypes of the data-movement kernels that only copy elements (reshape, concat, slice, ...): any of these costs
#: one kernel that moves 1-, 4- or 8-byte elements (int8: the tensors of int8 models between their products).
MOVABLE_DTYPES = (F32, I64, I32, BOOL, I8)


@dataclass(frozen=True)
class OpDef:
    """One operator of the `.dtm` format.

    inplace: "none"; "always" (the output may take the first input's buffer when that input dies at this node:
    unary elementwise ops); "same_shape" (the same, only when the output's shape equals the first input's).
    fuses: the `activation` values the exporter may fold into this node (its `activation` attribute).
    fused_as, fused_attrs: for an activation operator that fuses into others, its `activation` value and the
    attributes it carries over as (this op's name, the fused attribute's name); None when it does not fuse.
    eager: the eager primitives (dtorch autograd Function names) that lower to this operator.
    dtype_attr: the string attribute that names output 0's dtype (cast's `to`); a node's output 0 must be declared
    with that dtype, and among the signatures its inputs match, the one writing it is the node's.
    """

    name: str
    summary: str
    inputs: tuple[Operand, ...]
    outputs: tuple[Operand, ...] = (Operand("y"),)
    attrs: tuple[Attr, ...] = ()
    signatures: tuple[Signature, ...] = field(default=(Signature((F32,), (F32,)),))
    shape: str = "same shape as the first input"
    scratch: str = "none"
    inplace: Literal["none", "always", "same_shape"] = "none"
    fuses: tuple[str, ...] = ()
    eager: tuple[str, ...] = ()
    family: str = ""
    fused_as: str | None = None
    fused_attrs: tuple[tuple[str, str], ...] = ()
    dtype_attr: str | None = None

    @property
    def min_inputs(self) -> int:
        n = 0
        for i, o in enumerate(self.inputs):
            if not o.optional:
                n = i + 1
        return n

    @property
    def max_inputs(self) -> int:
        """-1 for a variadic last input."""
        return -1 if self.inputs and self.inputs[-1].variadic else len(self.inputs)

    @property
    def optional_mask(self) -> int:
        return sum(1 << i for i, o in enumerate(self.inputs) if o.optional)

    def input_slot(self, i: int) -> Operand:
        """Input slot i (a variadic last slot repeats)."""
        return self.inputs[min(i, len(self.inputs) - 1)]

    def attr(self, name: str) -> Attr | None:
        return next((a for a in self.attrs if a.name == name), None)


#: The values of the fused `activation` attribute besides "none", in the order of the runtime's ActKind
#: (runtime/kernels/common/activation.h). relu6 is hardtanh(0, 6); gelu_tanh is gelu(approximate="tanh").
FUSED_ACTIVATIONS = ("relu", "relu6", "hardtanh", "leaky_relu", "sigmoid", "tanh", "silu", "hardswish", "hardsigmoid",
                     "gelu", "gelu_tanh")

#: The attributes of an operator that takes a fused activation (conv2d, conv_transpose2d, linear, add).
ACTIVATION_ATTRS = (
    Attr("activation", "string", "none", choices=("none", *FUSED_ACTIVATIONS),
         doc="applied elementwise to the result"),
    Attr("min_val", "float", -1.0, doc="activation hardtanh: lower bound"),
    Attr("max_val", "float", 1.0, doc="activation hardtanh: upper bound"),
    Attr("alpha", "float", 0.01, doc="activation leaky_relu: negative slope"),
)
