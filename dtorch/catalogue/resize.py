"""Resizing with ONNX Resize's semantics (the ONNX importer's target; dtorch/onnx/_resize.py computes the attributes)."""

from __future__ import annotations

from ._schema import MAX_ATTR_VALUE as _BIG
from ._schema import MAX_DIMS, REQUIRED, Attr, OpDef, Operand, flag

OPS = [
    OpDef("resize", "ONNX Resize (opsets 11-19): each output coordinate is mapped to the input by "
          "`coordinate_transformation_mode`, then nearest, N-linear or N-cubic interpolation over every dimension",
          (Operand("x", "any rank 1..8"),),
          attrs=(
              Attr("sizes", "ints", REQUIRED, lo=0, hi=_BIG, length=(1, MAX_DIMS),
                   doc="one per dimension: the output size; 0 = floor(input size * scales[d]), computed when the "
                       "model runs (with scale 1.0: the dimension is not resized)"),
              Attr("scales", "floats", REQUIRED, lo=0.0, length=(1, MAX_DIMS),
                   doc="one per dimension, > 0: the scale of the coordinate transform (ONNX's scales, or "
                       "output / input when sizes were given; 1.0 for dimensions not resized)"),
              Attr("mode", "string", "nearest", choices=("nearest", "linear", "cubic")),
              Attr("coordinate_transformation_mode", "string", "half_pixel",
                   choices=("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                            "tf_half_pixel_for_nn", "tf_crop_and_resize")),
              Attr("roi", "floats", None, length=(0, 2 * MAX_DIMS),
                   doc="tf_crop_and_resize: starts then ends, one per dimension, normalized (required there; "
                       "other modes ignore it)"),
              Attr("extrapolation_value", "float", 0.0,
                   doc="tf_crop_and_resize: the output where a coordinate falls outside the input"),
              Attr("nearest_mode", "string", "round_prefer_floor",
                   choices=("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")),
              Attr("cubic_coeff_a", "float", -0.75),
              flag("exclude_outside", 0, doc="1: weights of taps outside the input are 0, the rest renormalized"),
              flag("antialias", 0, doc="1: linear and cubic filters stretched by 1 / scale when downsampling"),
          ),
          shape="sizes[d], or floor(x.shape[d] * scales[d]) where sizes[d] is 0",
          scratch="the per-dimension tap tables (input offsets and weights)", family="resize"),
]
