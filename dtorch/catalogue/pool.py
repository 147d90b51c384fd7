"""Pooling and resampling over (N, C, H, W)."""

from __future__ import annotations

from ._schema import MAX_ATTR_VALUE as _BIG
from ._schema import REQUIRED, Attr, OpDef, Operand, Signature, flag

_X = (Operand("x", "(N, C, H, W)"),)


def _ints2(name: str, lo: int, default: object = REQUIRED, doc: str = "") -> Attr:
    return Attr(name, "ints", default, lo=lo, hi=_BIG, length=2, doc=doc)


_SIZE = Attr("size", "ints", None, lo=1, hi=_BIG, length=2, doc="the output (OH, OW); or `scales`")
_SCALES = Attr("scales", "floats", None, lo=0.0, length=2,
               doc="the user's scale_factor: OH = floor(H * scale), src = floor(dst / scale)")

OPS = [
    OpDef("max_pool2d", "max over each window (PyTorch's MaxPool2d)", _X,
          attrs=(_ints2("kernel", 1), _ints2("stride", 1, None, doc="default: the kernel"), _ints2("padding", 0, [0, 0]),
                 _ints2("dilation", 1, [1, 1]), flag("ceil_mode", 0)),
          signatures=(Signature(("float32",), ("float32",)), Signature(("int8",), ("int8",))),
          shape="PyTorch's rule (int8: the same windows; a max commutes with quantization)", eager=("max_pool2d",),
          family="pool"),
    OpDef("avg_pool2d", "mean over each window (PyTorch's AvgPool2d)", _X,
          attrs=(_ints2("kernel", 1), _ints2("stride", 1, None, doc="default: the kernel"), _ints2("padding", 0, [0, 0]),
                 flag("ceil_mode", 0), flag("count_include_pad", 1),
                 Attr("divisor_override", "int", 0, lo=0, hi=_BIG, doc="0 = none")),
          shape="PyTorch's rule", eager=("avg_pool2d",), family="pool"),
    OpDef("adaptive_avg_pool2d", "mean over windows floor(i*H/oh) .. ceil((i+1)*H/oh)", _X,
          attrs=(_ints2("output_size", 1),), shape="(N, C, oh, ow)", eager=("adaptive_avg_pool2d",), family="pool"),
    OpDef("adaptive_max_pool2d", "max over windows floor(i*H/oh) .. ceil((i+1)*H/oh)", _X,
          attrs=(_ints2("output_size", 1),), shape="(N, C, oh, ow)", eager=("adaptive_max_pool2d",), family="pool"),
    OpDef("upsample_nearest2d", "F.interpolate(mode=\"nearest\") to `size`, or by `scales`", _X,
          attrs=(_SIZE, _SCALES), shape="(N, C, OH, OW)", eager=("upsample_nearest2d",), family="pool"),
    OpDef("upsample_bilinear2d", "F.interpolate(mode=\"bilinear\") to `size`, or by `scales`", _X,
          attrs=(_SIZE, _SCALES, flag("align_corners", 0)),
          shape="(N, C, OH, OW)", eager=("upsample_bilinear2d",), family="pool"),
]
