"""Data movement: concatenation, views, slicing, indexing, padding, broadcasting."""

from __future__ import annotations

from ._schema import F32, I32, I64, MOVABLE_DTYPES, Attr, OpDef, Operand, Signature
from ._schema import MAX_DIMS as _MAXD

#: The kernels that only move elements take every dtype of MOVABLE_DTYPES (one signature each, same dtype out).
_MOVED = tuple(Signature((d,), (d,)) for d in MOVABLE_DTYPES)

#: pad's modes: torch.nn.functional.pad's names (ONNX Pad calls the last three reflect, edge and wrap).
_PAD_MODES = ("constant", "reflect", "replicate", "circular")
_PAD_DOC = ("padding as torch.nn.functional.pad, of any rank (the pads apply to the last len(pads) / 2 dims): "
            "\"constant\" fills with `value`; \"reflect\" mirrors about the edge element without repeating it "
            "(each pad must be smaller than its dimension, else the node is refused); \"replicate\" repeats the "
            "edge element (a padded dimension must not be empty); reflect and replicate index the uncropped input "
            "when the other side crops, as torch does; \"circular\" wraps around the input cropped first by the "
            "negative pads, as often as needed (each pad at most the dimension, as torch checks; nothing left to wrap is "
            "refused)")

#: reshape and expand read some target dims from another tensor at run time: `like` (any movable dtype) and, per
#: target entry, the dimension of `like` it takes (-1: the `shape` entry). This is how a target that depends on a
#: dynamic dimension stays symbolic when no 0 / -1 entry can say it (e.g. expanding a constant to the batch).
_LIKE = Operand("like", "optional: a tensor whose dimensions `like_dims` reads (its data is never read)", optional=True)
_LIKE_DIMS = Attr("like_dims", "ints", None, lo=-1, hi=_MAXD - 1, length=(0, _MAXD),
                  doc="one per `shape` entry: k >= 0 takes like.shape[k] at run time, -1 the `shape` entry")
_MOVED_LIKE = tuple(Signature((d, e), (d,)) for d in MOVABLE_DTYPES for e in MOVABLE_DTYPES)

OPS = [
    OpDef("concat", "concatenation along `axis`", (Operand("x", "one or more tensors", variadic=True),),
          attrs=(Attr("axis", "int", 0, lo=0, hi=_MAXD - 1),),
          signatures=_MOVED, shape="sizes add along axis", eager=("cat", "stack"),
          family="shape"),
    OpDef("reshape", "the same elements in a new shape", (Operand("x"), _LIKE),
          attrs=(Attr("shape", "ints", lo=-1, length=(0, _MAXD),
                      doc="0 = copy the input dim at that position, -1 = inferred (at most one)"), _LIKE_DIMS),
          signatures=_MOVED_LIKE, shape="`shape` (entries from like.shape where like_dims says)",
          eager=("reshape", "index", "stack"), family="shape"),
    OpDef("permute", "dimensions reordered", (Operand("x"),),
          attrs=(Attr("perm", "ints", lo=0, hi=_MAXD - 1, length=(0, _MAXD)),), signatures=_MOVED,
          shape="x.shape[perm]", eager=("permute",), family="shape"),
    OpDef("slice", "x[starts:ends:steps] along `axes` (Python clamping of starts/ends)", (Operand("x"),),
          attrs=(Attr("axes", "ints", lo=0, hi=_MAXD - 1, length=(0, _MAXD)),
                 Attr("starts", "ints", length=(0, _MAXD)), Attr("ends", "ints", length=(0, _MAXD)),
                 Attr("steps", "ints", None, lo=1, length=(0, _MAXD), doc="default: all 1")),
          signatures=_MOVED, shape="Python slicing", eager=("index",), family="shape"),
    OpDef("index_select", "the entries `indices` (1-D) of x along `axis` (torch.index_select; not torch.gather)",
          (Operand("x"), Operand("indices", "(K), int64")), attrs=(Attr("axis", "int", 0, lo=0, hi=_MAXD - 1),),
          signatures=tuple(Signature((d, I64), (d,)) for d in MOVABLE_DTYPES), shape="x.shape with K at axis",
          eager=("index",), family="shape"),
    OpDef("embedding", "rows of `weight` picked by integer indices",
          (Operand("indices", "any shape, int64"), Operand("weight", "(V, D)")),
          attrs=(Attr("padding_idx", "int", -1, lo=-1, doc="ignored at inference"),),
          signatures=(Signature((I64, F32), (F32,)),), shape="(*indices.shape, D)", eager=("embedding",),
          family="shape"),
    OpDef("gather_elements", "data[i0, .., index[i0, .., ik, ..], ..] along `axis` (torch.gather, ONNX GatherElements): one "
          "element per entry of index; a negative index counts from the end; an index outside [-size, size) is a run-time "
          "error",
          (Operand("data", "any rank >= 1"),
           Operand("index", "int64 or int32, data's rank; every dim but `axis` at most data's")),
          attrs=(Attr("axis", "int", 0, lo=0, hi=_MAXD - 1),),
          signatures=tuple(Signature((d, e), (d,)) for d in MOVABLE_DTYPES for e in (I64, I32)),
          shape="index.shape", eager=("gather",), family="shape"),
    OpDef("gather_nd", "slices of data picked by index tuples (ONNX GatherND): out[b.., i..] = data[b.., *indices[b.., i.., :]] "
          "with b the first `batch_dims` dims, which data and indices share; a negative index counts from the end; an "
          "index outside [-size, size) is a run-time error",
          (Operand("data", "rank r >= 1"), Operand("indices", "int64, rank q >= 1: tuples of k = indices.shape[-1] "
                                                              "indices, 1 <= k <= r - batch_dims")),
          attrs=(Attr("batch_dims", "int", 0, lo=0, hi=_MAXD - 1,
                      doc="leading dims of data and indices that are batch dims (equal sizes, fewer than r and q)"),),
          signatures=tuple(Signature((d, I64), (d,)) for d in MOVABLE_DTYPES),
          shape="indices.shape[:-1] + data.shape[batch_dims + k:]", family="shape"),
    OpDef("pad", _PAD_DOC, (Operand("x"),),
          attrs=(Attr("pads", "ints", length=(0, 2 * _MAXD),
                      doc="PyTorch order: last dim first, (lo, hi) pairs; negative crops"),
                 Attr("mode", "string", "constant", choices=_PAD_MODES),
                 Attr("value", "float", 0.0, doc="mode constant only; integer inputs truncate it toward zero "
                      "and refuse a value outside their dtype")),
          signatures=_MOVED, shape="each padded dim grows by lo + hi", eager=("pad",), family="shape"),
    OpDef("arange", "start + i * step for i in [0, n): n is `shape`[0], or like.shape[like_dims[0]] at run time (the "
          "length of ONNX Range / torch.arange that follows a dynamic dimension, e.g. position ids over the sequence)",
          (Operand("start", "a scalar: the first value, and the output's dtype"), _LIKE),
          attrs=(Attr("shape", "ints", lo=0, length=(1, 1), doc="[n], the length"),
                 Attr("step", "float", 1.0, doc="the increment (integer dtypes: a whole number)"), _LIKE_DIMS),
          signatures=tuple(Signature((d, e), (d,)) for d in (F32, I64, I32) for e in MOVABLE_DTYPES),
          shape="(n)", family="shape"),
    OpDef("shape", "x's dimensions as data, x.shape[start:end] (ONNX Shape: a size that follows a dynamic dimension "
          "and is used in arithmetic, e.g. flat indices batch_idx * seq + pos)",
          (Operand("x", "any tensor (its data is never read)"),),
          attrs=(Attr("start", "int", 0, lo=-_MAXD, hi=_MAXD, doc="Python slicing of the dimensions, clamped"),
                 Attr("end", "int", _MAXD, lo=-_MAXD, hi=_MAXD, doc="exclusive; default: to the last")),
          signatures=tuple(Signature((d,), (I64,)) for d in MOVABLE_DTYPES), shape="(len(x.shape[start:end]))",
          family="shape"),
    OpDef("expand", "broadcast to `shape`", (Operand("x"), _LIKE),
          attrs=(Attr("shape", "ints", lo=0, length=(0, _MAXD), doc="0 = keep the input dim"), _LIKE_DIMS),
          signatures=_MOVED_LIKE, shape="`shape` (entries from like.shape where like_dims says)",
          eager=("expand",), family="shape"),
]
