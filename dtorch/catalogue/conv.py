"""Convolutions and dense products."""

from __future__ import annotations

from ._schema import ACTIVATION_ATTRS, F32, FUSED_ACTIVATIONS, Attr, OpDef, Operand, Signature
from ._schema import MAX_ATTR_VALUE as _BIG

_SIG3 = (Signature((F32, F32, F32), (F32,)),)


def _pair(name: str, lo: int, default: list[int], n: int = 2, doc: str = "") -> Attr:
    return Attr(name, "ints", default, lo=lo, hi=_BIG, length=n, doc=doc)


OPS = [
    OpDef("conv2d", "2-D convolution (cross-correlation), groups and dilation, then the fused activation",
          (Operand("x", "(N, C, H, W)"), Operand("w", "(O, C/groups, kh, kw)"), Operand("b", "(O)", optional=True)),
          attrs=(_pair("stride", 1, [1, 1]),
                 _pair("padding", 0, [0, 0, 0, 0], 4, "top, bottom, left, right"),
                 _pair("dilation", 1, [1, 1]),
                 Attr("groups", "int", 1, lo=1, hi=_BIG), *ACTIVATION_ATTRS),
          signatures=_SIG3, shape="(N, O, OH, OW), OH = (H + top + bottom - dh*(kh-1) - 1) / sh + 1",
          scratch="kernel-set specific: an im2col panel for the GEMM path", fuses=FUSED_ACTIVATIONS,
          eager=("conv2d",), family="conv"),
    OpDef("conv_transpose2d", "2-D transposed convolution, then the fused activation",
          (Operand("x", "(N, C, H, W)"), Operand("w", "(C, O/groups, kh, kw)"), Operand("b", "(O)", optional=True)),
          attrs=(_pair("stride", 1, [1, 1]), _pair("padding", 0, [0, 0]), _pair("output_padding", 0, [0, 0]),
                 _pair("dilation", 1, [1, 1]), Attr("groups", "int", 1, lo=1, hi=_BIG), *ACTIVATION_ATTRS),
          signatures=_SIG3, shape="PyTorch's rule", scratch="a column buffer", fuses=FUSED_ACTIVATIONS,
          eager=("conv_transpose2d",), family="conv"),
    OpDef("linear", "x @ w.T + b, then the fused activation",
          (Operand("x", "(..., K)"), Operand("w", "(M, K)"), Operand("b", "(M)", optional=True)),
          attrs=ACTIVATION_ATTRS, signatures=_SIG3, shape="(..., M)", fuses=FUSED_ACTIVATIONS,
          eager=("linear",), family="conv"),
    OpDef("matmul", "torch.matmul (1-D promotion, batch broadcasting)", (Operand("a"), Operand("b")),
          signatures=(Signature((F32, F32), (F32,)),), shape="torch.matmul's rule", eager=("matmul",),
          family="conv"),
]
