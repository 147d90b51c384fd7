"""Int8 operators: quantize and dequantize at the float boundaries, and the int8 products.

The scheme (runtime/kernels/common/requant.h, dtorch/quant/_fixed_point.py): a real value r is held as an int8 q with
r = scale * (q - zero_point). Activations are per tensor and asymmetric in [-128, 127]; weights per output channel,
symmetric (zero point 0) in [-127, 127]; biases int32 at scale x_scale * w_scale[o], zero point 0. Each product
accumulates (x - x_zero_point) * w in int32 from its bias, then requantizes with the fixed-point multiplier of
x_scale * w_scale[o] / y_scale (integer only, so every target gives the same bits), adds y_zero_point and clamps to
[-128, 127] or to the fused activation's range.

The operators that take int8 activations only (qadd, qmul, qmatmul, qconcat, qmean, qavg_pool2d, qlut) follow TFLite's
int8 reference kernels with the single-rounding requantization of requant.h: qmul and qmatmul multiply (a - a_zp) *
(b - b_zp) in int32 and requantize once with a_scale * b_scale / y_scale; qconcat requantizes each input whose scale
or zero point differs from the output's; qavg_pool2d keeps its input's scale and zero point (TFLite's restriction) and
rounds the window's integer average half away from zero; qlut reads a 256-entry table, computed in Python from the
float function when the model is quantized, so an activation gives the same bits on every target without a libm.
"""

from __future__ import annotations

from ._schema import MAX_ATTR_VALUE as _BIG
from ._schema import MAX_DIMS as _MAXD
from ._schema import REQUIRED, Attr, OpDef, Operand, Signature, flag

F32, I8, I32 = "float32", "int8", "int32"

#: The float activations a qlut table may hold (dtorch/quant/_fixed_point.py LUT_FUNCTIONS computes each; gelu_tanh is
#: gelu(approximate="tanh")).
QLUT_FUNCTIONS = ("relu", "sigmoid", "tanh", "silu", "hardswish", "hardsigmoid", "gelu", "gelu_tanh", "hardtanh",
                  "leaky_relu", "elu", "softplus")

#: The largest scale an int8 tensor may have (a requantization multiplier must stay below 2^30).
MAX_SCALE = 1e30


def _scale(name: str, doc: str) -> Attr:
    return Attr(name, "float", REQUIRED, lo=0.0, hi=MAX_SCALE, doc=doc + " (> 0)")


def _zero_point(name: str, doc: str) -> Attr:
    return Attr(name, "int", REQUIRED, lo=-128, hi=127, doc=doc)


def _pair(name: str, lo: int, default: object, n: int = 2, doc: str = "") -> Attr:
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

#: The two int8 inputs of an elementwise or matrix product of activations (qadd, qmul, qmatmul).
_TWO_INPUTS = (_scale("a_scale", "a's scale"), _zero_point("a_zero_point", "a's zero point"),
               _scale("b_scale", "b's scale"), _zero_point("b_zero_point", "b's zero point"))
#: The output quantization and fused clamp of qadd, qmul and qmatmul.
_Y_ATTRS = (_scale("y_scale", "output scale"), _zero_point("y_zero_point", "output zero point"),
            Attr("activation", "string", "none", choices=("none", "relu", "relu6"),
                 doc="the fused activation, as the output's clamp"))

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
          attrs=(*_TWO_INPUTS, *_Y_ATTRS),
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
    OpDef("qmul", "int8 a * b (NumPy broadcasting) as TFLite's MUL: (a - a_zero_point) * (b - b_zero_point) in int32, "
          "requantized once with a_scale * b_scale / y_scale; then the fused clamp",
          (Operand("a", "int8"), Operand("b", "int8, broadcastable with a")),
          attrs=(*_TWO_INPUTS, *_Y_ATTRS), signatures=(Signature((I8, I8), (I8,)),),
          shape="NumPy broadcasting of a and b", family="quant"),
    OpDef("qmatmul", "int8 torch.matmul of two int8 tensors (1-D promotion, batch broadcasting): the int32 sum of "
          "(a - a_zero_point) * (b - b_zero_point) over k (wrapping modulo 2^32), requantized once with a_scale * "
          "b_scale / y_scale; then the fused clamp",
          (Operand("a", "(..., M, K) int8"), Operand("b", "(..., K, N) int8")),
          attrs=(*_TWO_INPUTS, *_Y_ATTRS), signatures=(Signature((I8, I8), (I8,)),), shape="torch.matmul's rule",
          family="quant"),
    OpDef("qconcat", "int8 concatenation along `axis`: input i with x_scales[i] and x_zero_points[i] is copied where "
          "they equal the output's, else requantized: (x - x_zero_points[i]) times x_scales[i] / y_scale, "
          "+ y_zero_point, saturated", (Operand("x", "one or more int8 tensors", variadic=True),),
          attrs=(Attr("axis", "int", 0, lo=0, hi=_MAXD - 1),
                 Attr("x_scales", "floats", REQUIRED, lo=0.0, hi=MAX_SCALE, length=(1, 64),
                      doc="each input's scale (> 0), one per input"),
                 Attr("x_zero_points", "ints", REQUIRED, lo=-128, hi=127, length=(1, 64),
                      doc="each input's zero point, one per input"),
                 _scale("y_scale", "output scale"), _zero_point("y_zero_point", "output zero point")),
          signatures=(Signature((I8,), (I8,)),), shape="sizes add along axis", family="quant"),
    OpDef("qavg_pool2d", "int8 avg_pool2d (PyTorch's windows, padding, ceil_mode, count_include_pad, "
          "divisor_override) as TFLite's AVERAGE_POOL_2D: output and input share one scale and zero point; the window's "
          "int32 sum (a counted padding tap holds the zero point, the real 0) divided by the divisor, rounded half "
          "away from zero", (Operand("x", "(N, C, H, W) int8"),),
          attrs=(_pair("kernel", 1, REQUIRED), _pair("stride", 1, None, doc="default: the kernel"),
                 _pair("padding", 0, [0, 0]), flag("ceil_mode", 0), flag("count_include_pad", 1),
                 Attr("divisor_override", "int", 0, lo=0, hi=_BIG, doc="0 = none"), *_QUANT_ATTRS),
          signatures=(Signature((I8,), (I8,)),), shape="avg_pool2d's rule", family="quant"),
    OpDef("qlut", "int8 elementwise function by table: y = table[x + 128]. The table holds quantize(f(dequantize(q))) "
          "for each of the 256 inputs q, f the float `function`, computed when the model is quantized",
          (Operand("x", "any shape, int8"), Operand("table", "(256) int8: the output for x = -128 .. 127")),
          attrs=(Attr("function", "string", REQUIRED, choices=QLUT_FUNCTIONS,
                      doc="the float function the table holds (for export and inspection; the kernel reads the table)"),
                 Attr("alpha", "float", 0.01, doc="leaky_relu: the negative slope; elu: alpha"),
                 Attr("min_val", "float", -1.0, doc="hardtanh: lower bound"),
                 Attr("max_val", "float", 1.0, doc="hardtanh: upper bound"),
                 Attr("beta", "float", 1.0, doc="softplus: beta"),
                 Attr("threshold", "float", 20.0, doc="softplus: threshold"),
                 _scale("x_scale", "input scale"), _zero_point("x_zero_point", "input zero point"),
                 _scale("y_scale", "output scale"), _zero_point("y_zero_point", "output zero point")),
          signatures=(Signature((I8, I8), (I8,)),), inplace="always", family="quant"),
]
