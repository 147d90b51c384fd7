"""Int8 operators: quantize and dequantize at the float boundaries, and the int8 products.

The scheme (runtime/kernels/common/requant.h, dtorch/quant/_fixed_point.py): a real value r is held as an int8 q with
r = scale * (q - zero_point). Activations are per tensor and asymmetric in [-128, 127]; weights per output channel,
symmetric (zero point 0) in [-127, 127]; biases int32 at scale x_scale * w_scale[o], zero point 0. Each product
accumulates (x - x_zero_point) * w in int32 from its bias, then requantizes with the fixed-point multiplier of
x_scale * w_scale[o] / y_scale (integer only, so every target gives the same bits), adds y_zero_point and clamps to
[-128, 127] or to the fused activation's range.
"""

from __future__ import annotations

from ._schema import MAX_ATTR_VALUE as _BIG
from ._schema import MAX_DIMS as _MAXD
from ._schema import REQUIRED, Attr, OpDef, Operand, Signature, flag

F32, I8, I32 = "float32", "int8", "int32"

#: The largest scale an int8 tensor may have (a requantization multiplier must stay below 2^30).
MAX_SCALE = 1e30


def _scale(name: str, doc: str) -> Attr:
    return Attr(name, "float", REQUIRED, lo=0.0, hi=MAX_SCALE, doc=doc + " (> 0)")


def _zero_point(name: str, doc: str) -> Attr:
    return Attr(name, "int", REQUIRED, lo=-128, hi=127, doc=doc)


def _pair(name: str, lo: int, default: list[int], n: int = 2, doc: str = "") -> Attr:
    return Attr(name, "ints", default, lo=lo, hi=_BIG, length=n, doc=doc)


_QUANT_ATTRS = (_scale("scale", "the int8 tensor's scale"), _zero_point("zero_point", "the int8 tensor's zero point"))

#: The io quantization of a product: its input's and output's scale and zero point, and the fused clamp.
_IO_ATTRS = (
    _scale("x_scale", "input scale"), _zero_point("x_zero_point", "input zero point"),
    _scale("y_scale", "output scale"), _zero_point("y_zero_point", "output zero point"),
    Attr("activation", "string", "none", choices=("none", "relu", "relu6"),
         doc="the fused activation, as the output's clamp: relu [zp, 127], relu6 [zp, quantize(6)]"),
)

_PRODUCT_SIG = (Signature((I8, I8, F32, I32), (I8,)),)

#: The largest number of values one qmean output averages (its int32 sum of |x - zp| <= 255 stays exact).
QMEAN_MAX_COUNT = 2**23

OPS = [
    OpDef("quantize", "float32 -> int8 as ONNX QuantizeLinear: saturate(round_half_even(x / scale) + zero_point); "
          "NaN -> zero_point", (Operand("x", "any shape, float32"),), attrs=_QUANT_ATTRS,
          signatures=(Signature((F32,), (I8,)),), family="quant"),
    OpDef("dequantize", "int8 -> float32: (q - zero_point) * scale", (Operand("x", "any shape, int8"),),
          attrs=_QUANT_ATTRS, signatures=(Signature((I8,), (F32,)),), family="quant"),
    OpDef("qconv2d", "int8 2-D convolution (groups, dilation; depthwise when groups = C): int32 accumulation of "
          "(x - x_zero_point) * w from the bias, requantized per output channel",
          (Operand("x", "(N, C, H, W) int8"), Operand("w", "(O, C/groups, kh, kw) int8, symmetric"),
           Operand("w_scale", "(O) float32: each output channel's weight scale"),
           Operand("b", "(O) int32 at scale x_scale * w_scale[o]", optional=True)),
          attrs=(_pair("stride", 1, [1, 1]), _pair("padding", 0, [0, 0, 0, 0], 4, "top, bottom, left, right"),
                 _pair("dilation", 1, [1, 1]), Attr("groups", "int", 1, lo=1, hi=_BIG), *_IO_ATTRS),
          signatures=_PRODUCT_SIG, shape="conv2d's rule", family="quant"),
    OpDef("qlinear", "int8 x @ w.T + b: int32 accumulation from the bias, requantized per output feature",
          (Operand("x", "(..., K) int8"), Operand("w", "(M, K) int8, symmetric"),
           Operand("w_scale", "(M) float32: each output feature's weight scale"),
           Operand("b", "(M) int32 at scale x_scale * w_scale[m]", optional=True)),
          attrs=_IO_ATTRS, signatures=_PRODUCT_SIG, shape="(..., M)", family="quant"),
    OpDef("qadd", "int8 a + b (NumPy broadcasting) as TFLite's ADD: each input shifted left 20 bits and rescaled "
          "to twice the larger input scale, summed, requantized to the output; then the fused clamp",
          (Operand("a", "int8"), Operand("b", "int8, broadcastable with a")),
          attrs=(_scale("a_scale", "a's scale"), _zero_point("a_zero_point", "a's zero point"),
                 _scale("b_scale", "b's scale"), _zero_point("b_zero_point", "b's zero point"),
                 _scale("y_scale", "output scale"), _zero_point("y_zero_point", "output zero point"),
                 Attr("activation", "string", "none", choices=("none", "relu", "relu6"),
                      doc="the fused activation, as the output's clamp")),
          signatures=(Signature((I8, I8), (I8,)),), shape="NumPy broadcasting of a and b", family="quant"),
    OpDef("qmean", "int8 mean over `axes`: the int32 sum of (x - x_zero_point) requantized with x_scale / (y_scale * "
          "count) (at most 2^23 values per output)", (Operand("x", "int8"),),
          attrs=(Attr("axes", "ints", None, lo=-_MAXD, hi=_MAXD - 1, length=(0, _MAXD),
                      doc="absent = every dimension; an empty list reduces nothing"),
                 flag("keepdim", 0),
                 _scale("x_scale", "input scale"), _zero_point("x_zero_point", "input zero point"),
                 _scale("y_scale", "output scale"), _zero_point("y_zero_point", "output zero point")),
          signatures=(Signature((I8,), (I8,)),), shape="the reduced dims removed (kept as 1 with keepdim)",
          scratch="one int32 per output element", family="quant"),
]
