"""Data movement: concatenation, views, slicing, indexing, padding, broadcasting."""

from __future__ import annotations

from ._schema import F32, I64, Attr, OpDef, Operand, Signature
from ._schema import MAX_DIMS as _MAXD

OPS = [
    OpDef("concat", "concatenation along `axis`", (Operand("x", "one or more tensors", variadic=True),),
          attrs=(Attr("axis", "int", 0, lo=0, hi=_MAXD - 1),),
          signatures=(Signature((F32,), (F32,)),), shape="sizes add along axis", eager=("cat", "stack"),
          family="shape"),
    OpDef("reshape", "the same elements in a new shape", (Operand("x"),),
          attrs=(Attr("shape", "ints", lo=-1, length=(0, _MAXD),
                      doc="0 = copy the input dim at that position, -1 = inferred (at most one)"),),
          shape="`shape`", eager=("reshape", "index", "stack"), family="shape"),
    OpDef("permute", "dimensions reordered", (Operand("x"),),
          attrs=(Attr("perm", "ints", lo=0, hi=_MAXD - 1, length=(0, _MAXD)),), shape="x.shape[perm]",
          eager=("permute",), family="shape"),
    OpDef("slice", "x[starts:ends:steps] along `axes` (Python clamping of starts/ends)", (Operand("x"),),
          attrs=(Attr("axes", "ints", lo=0, hi=_MAXD - 1, length=(0, _MAXD)),
                 Attr("starts", "ints", length=(0, _MAXD)), Attr("ends", "ints", length=(0, _MAXD)),
                 Attr("steps", "ints", None, lo=1, length=(0, _MAXD), doc="default: all 1")),
          shape="Python slicing", eager=("index",), family="shape"),
    OpDef("index_select", "the entries `indices` (1-D) of x along `axis` (torch.index_select; not torch.gather)",
          (Operand("x"), Operand("indices", "(K), int64")), attrs=(Attr("axis", "int", 0, lo=0, hi=_MAXD - 1),),
          signatures=(Signature((F32, I64), (F32,)),), shape="x.shape with K at axis", eager=("index",),
          family="shape"),
    OpDef("embedding", "rows of `weight` picked by integer indices",
          (Operand("indices", "any shape, int64"), Operand("weight", "(V, D)")),
          attrs=(Attr("padding_idx", "int", -1, lo=-1, doc="ignored at inference"),),
          signatures=(Signature((I64, F32), (F32,)),), shape="(*indices.shape, D)", eager=("embedding",),
          family="shape"),
    OpDef("pad", "constant padding", (Operand("x"),),
          attrs=(Attr("pads", "ints", length=(0, 2 * _MAXD),
                      doc="PyTorch order: last dim first, (lo, hi) pairs; negative crops"),
                 Attr("mode", "string", "constant", choices=("constant",)), Attr("value", "float", 0.0)),
          shape="each padded dim grows by lo + hi", eager=("pad",), family="shape"),
    OpDef("expand", "broadcast to `shape`", (Operand("x"),),
          attrs=(Attr("shape", "ints", lo=0, length=(0, _MAXD), doc="0 = keep the input dim"),),
          shape="`shape`", eager=("expand",), family="shape"),
]
