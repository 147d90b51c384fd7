"""Normalizations (inference form)."""

from __future__ import annotations

from ._schema import F32, MAX_ATTR_VALUE, MAX_DIMS, Attr, OpDef, Operand, Signature

_EPS = Attr("eps", "float", 1e-5, lo=0.0)

OPS = [
    OpDef("batch_norm", "(x - mean) / sqrt(var + eps) * w + b per channel (export folds it into a preceding "
          "conv2d/linear when it can)",
          (Operand("x", "(N, C, *)"), Operand("mean", "(C)"), Operand("var", "(C)"),
           Operand("w", "(C)", optional=True), Operand("b", "(C)", optional=True)),
          attrs=(_EPS,), signatures=(Signature((F32,) * 5, (F32,)),), eager=("batch_norm",), family="norm"),
    OpDef("layer_norm", "normalize over the last normalized_ndim dimensions, then * w + b",
          (Operand("x"), Operand("w", "the normalized shape", optional=True),
           Operand("b", "the normalized shape", optional=True)),
          attrs=(Attr("normalized_ndim", "int", 1, lo=0, hi=MAX_DIMS), _EPS),
          signatures=(Signature((F32,) * 3, (F32,)),), eager=("layer_norm",), family="norm"),
    OpDef("group_norm", "normalize each of `groups` channel groups, then * w + b per channel",
          (Operand("x", "(N, C, *)"), Operand("w", "(C)", optional=True), Operand("b", "(C)", optional=True)),
          attrs=(Attr("groups", "int", lo=1, hi=MAX_ATTR_VALUE), _EPS),
          signatures=(Signature((F32,) * 3, (F32,)),), eager=("group_norm",), family="norm"),
]
