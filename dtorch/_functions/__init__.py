"""The functional tensor API (`dt.add`, `dt.matmul`, `dt.cat`, ...) and the Tensor methods built on it.

Everything here composes primitives from `dtorch._prims`: dtype promotion, argument checking and
PyTorch's argument conventions live here; gradients live in the primitives. The API is split by
kind (`pointwise`, `reduce`, `shape`, `index`); every name is re-exported from this package, so
`from dtorch._functions import X` and `from dtorch import _functions as F; F.X` work for all of them.
"""

from __future__ import annotations

from ._common import (  # noqa: F401
                      _binary,
                      _check_broadcast,
                      _compare,
                      _infer_shape,
                      _operand,
                      _reduce_input,
                      _scalar_ok,
                      _shape_arg,
                      _unary,
                      _ValuesIndices,
                      as_tensor_like,
)
from .index import *
from .index import _index_key, getitem, setitem  # noqa: F401
from .pointwise import *
from .reduce import *
from .shape import *

__all__ = ["abs", "absolute", "add", "all", "allclose", "amax", "amin", "any", "argmax", "argmin", "argsort",
           "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "bmm", "broadcast_to", "cat", "ceil", "chunk",
           "clamp", "clip", "clone", "concat", "concatenate", "contiguous", "cos", "count_nonzero", "cumsum", "div",
           "divide", "dot", "einsum", "eq", "equal", "erf", "exp", "expand", "expm1", "fix", "flatten", "flip",
           "floor", "floor_divide", "fmod", "gather", "ge", "greater", "greater_equal", "gt", "hstack", "index_select",
           "isclose", "isfinite", "isinf", "isnan", "le", "lerp", "less", "less_equal", "log", "log1p", "log2",
           "log10", "logical_and", "logical_not", "logical_or", "logical_xor", "logsumexp", "lt", "masked_fill",
           "matmul", "max", "maximum", "mean", "min", "minimum", "mm", "mul", "multiply", "narrow", "ne", "neg",
           "negative", "nonzero", "norm", "not_equal", "outer", "pad", "permute", "pow", "prod", "reciprocal", "relu",
           "remainder", "repeat", "reshape", "round", "rsqrt", "select", "sigmoid", "sign", "sin", "sort", "split",
           "sqrt", "square", "squeeze", "stack", "std", "std_mean", "sub", "subtract", "sum", "swapaxes", "swapdims",
           "t", "tanh", "tile", "topk", "transpose", "tril", "triu", "true_divide", "trunc", "unbind", "unflatten",
           "unsqueeze", "var", "var_mean", "view", "vstack", "where"]
