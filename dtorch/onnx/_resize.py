"""ONNX Resize (opsets 11, 13, 18, 19) as the attributes of the runtime's `resize` operator (runtime/OPS.md).

Pure Python, no onnx import: the importer reads the node's attributes and its constant roi/scales/sizes inputs and
calls `resize_attrs`; the kernel (runtime/kernels/portable/resize.cc) does the coordinate transform and the
interpolation. The computation follows the ONNX spec and its reference implementation:

- scales given: the output size is floor(input * scale) (the roi does not change it, as in onnxruntime and the
  reference evaluator); `sizes` is written as 0 everywhere, so the kernel computes floor(input * scale) when the
  model runs and a dynamic dimension works;
- sizes given: scale = output / input, after `keep_aspect_ratio_policy` (opset 18: "not_larger" / "not_smaller"
  take the min / max of those ratios over `axes` and round output = int(scale * input + 0.5)); a dimension the
  node leaves as it is gets size 0 and scale 1.0;
- `axes` (opset 18) name the dimensions roi/scales/sizes refer to; the others keep scale 1.0 and roi [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["resize_attrs", "resize_output_shape"]

_MODES = ("nearest", "linear", "cubic")
_CTMS = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
         "tf_half_pixel_for_nn", "tf_crop_and_resize")
_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
_POLICIES = ("stretch", "not_larger", "not_smaller")
_KNOWN = ("mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
          "extrapolation_value", "antialias", "axes", "keep_aspect_ratio_policy")


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _values(v: Any) -> list[Any] | None:
    """An optional ONNX input as a list (None when absent or empty)."""
    if v is None:
        return None
    vals = list(v.reshape(-1).tolist() if hasattr(v, "reshape") else v)
    return vals or None


def _static(dim: Any) -> int | None:
    return dim if isinstance(dim, int) and not isinstance(dim, bool) and dim >= 0 else None


def resize_attrs(input_shape: Sequence[int | str | None], onnx_attrs: Mapping[str, Any], roi: Any = None,
                 scales: Any = None, sizes: Any = None) -> dict[str, Any]:
    """The `resize` node's attributes for an ONNX Resize node.

    input_shape: the input's dims (an int, or None / a name for a dynamic one). onnx_attrs: the node's attributes by
    name (strings as str or bytes, as onnx.helper.get_attribute_value gives them). roi, scales, sizes: the values of
    its constant inputs (a sequence or numpy array; None or empty when absent). Raises ValueError, one line, for a
    node the runtime cannot run: neither or both of scales and sizes, wrong lengths, a scale <= 0, sizes given for a
    dynamic dimension, an unknown attribute value.

    Returns every attribute of `resize`: sizes (ints, one per dim, 0 = floor(input * scale)), scales (floats, one per
    dim), mode, coordinate_transformation_mode, nearest_mode, cubic_coeff_a, exclude_outside, antialias,
    extrapolation_value, and roi (2 * rank floats) only for tf_crop_and_resize.
    """
    rank = len(input_shape)
    if not 1 <= rank <= 8:
        raise ValueError(f"Resize: the input has rank {rank}; the runtime resizes ranks 1 to 8")
    unknown = sorted(set(onnx_attrs) - set(_KNOWN))
    if unknown:
        raise ValueError(f"Resize: unknown attribute(s) {', '.join(unknown)}")
    mode = _text(onnx_attrs.get("mode", "nearest"))
    ctm = _text(onnx_attrs.get("coordinate_transformation_mode", "half_pixel"))
    nearest_mode = _text(onnx_attrs.get("nearest_mode", "round_prefer_floor"))
    policy = _text(onnx_attrs.get("keep_aspect_ratio_policy", "stretch"))
    for what, v, legal in (("mode", mode, _MODES), ("coordinate_transformation_mode", ctm, _CTMS),
                           ("nearest_mode", nearest_mode, _NEAREST), ("keep_aspect_ratio_policy", policy, _POLICIES)):
        if v not in legal:
            raise ValueError(f"Resize: {what} {v!r} is not one of {', '.join(legal)}")
    exclude_outside = int(onnx_attrs.get("exclude_outside", 0))
    antialias = int(onnx_attrs.get("antialias", 0))
    if exclude_outside not in (0, 1) or antialias not in (0, 1):
        raise ValueError(f"Resize: exclude_outside and antialias must be 0 or 1, got {exclude_outside} and {antialias}")
    if antialias and mode == "nearest":
        raise ValueError("Resize: antialias applies to modes linear and cubic, not nearest")

    axes_attr = onnx_attrs.get("axes")
    if axes_attr is None:
        axes = list(range(rank))
    else:
        axes = []
        for a in axes_attr:
            a = int(a)
            if not -rank <= a < rank:
                raise ValueError(f"Resize: axis {a} is out of range for an input of rank {rank}")
            axes.append(a % rank)
        if len(set(axes)) != len(axes):
            raise ValueError(f"Resize: axes {list(axes_attr)} repeat a dimension")
    n = len(axes)

    scale_v, size_v, roi_v = _values(scales), _values(sizes), _values(roi)
    if (scale_v is None) == (size_v is None):
        raise ValueError("Resize: exactly one of the scales and sizes inputs must be given, got "
                         f"{'both' if scale_v is not None else 'neither'}")
    full_scales = [1.0] * rank
    full_sizes = [0] * rank
    if scale_v is not None:
        if len(scale_v) != n:
            raise ValueError(f"Resize: scales has {len(scale_v)} values, expected {n} (one per axis)")
        for i, d in enumerate(axes):
            s = float(scale_v[i])
            if not (s > 0.0 and math.isfinite(s)):
                raise ValueError(f"Resize: scales[{i}] is {s}; every scale must be > 0 and finite")
            full_scales[d] = s
    else:
        assert size_v is not None
        if len(size_v) != n:
            raise ValueError(f"Resize: sizes has {len(size_v)} values, expected {n} (one per axis)")
        ins: list[int] = []
        for i, d in enumerate(axes):
            dim = _static(input_shape[d])
            if dim is None:
                raise ValueError(f"Resize: sizes needs a static input size, but dimension {d} is dynamic "
                                 f"({input_shape[d]!r})")
            if dim == 0:
                raise ValueError(f"Resize: dimension {d} of the input is empty and cannot be resized")
            if int(size_v[i]) < 1:
                raise ValueError(f"Resize: sizes[{i}] is {int(size_v[i])}; every output size must be >= 1")
            ins.append(dim)
        ratios = [int(size_v[i]) / ins[i] for i in range(n)]
        if policy == "stretch":
            outs = [int(size_v[i]) for i in range(n)]
            axis_scales = ratios
        else:
            s = min(ratios) if policy == "not_larger" else max(ratios)
            outs = [int(s * ins[i] + 0.5) for i in range(n)]
            axis_scales = [s] * n
        for i, d in enumerate(axes):
            if not (outs[i] == ins[i] and axis_scales[i] == 1.0):
                full_sizes[d] = outs[i]
                full_scales[d] = axis_scales[i]
    attrs: dict[str, Any] = {
        "sizes": full_sizes, "scales": full_scales, "mode": mode, "coordinate_transformation_mode": ctm,
        "nearest_mode": nearest_mode, "cubic_coeff_a": float(onnx_attrs.get("cubic_coeff_a", -0.75)),
        "exclude_outside": exclude_outside, "antialias": antialias,
        "extrapolation_value": float(onnx_attrs.get("extrapolation_value", 0.0)),
    }
    if ctm == "tf_crop_and_resize":
        if roi_v is None:
            raise ValueError("Resize: coordinate_transformation_mode tf_crop_and_resize needs the roi input")
        if len(roi_v) != 2 * n:
            raise ValueError(f"Resize: roi has {len(roi_v)} values, expected {2 * n} (starts then ends, one per axis)")
        full_roi = [0.0] * rank + [1.0] * rank
        for i, d in enumerate(axes):
            full_roi[d] = float(roi_v[i])
            full_roi[rank + d] = float(roi_v[n + i])
        attrs["roi"] = full_roi
    return attrs


def resize_output_shape(input_shape: Sequence[int | str | None], attrs: Mapping[str, Any]) -> list[int | None]:
    """The output shape of a `resize` node with `attrs` (as resize_attrs returns them): sizes[d], or
    floor(input * scales[d]) where sizes[d] is 0 (None where that input dimension is dynamic)."""
    out: list[int | None] = []
    for d, dim in enumerate(input_shape):
        size = int(attrs["sizes"][d])
        static = _static(dim)
        out.append(size if size > 0 else (None if static is None else math.floor(static * float(attrs["scales"][d]))))
    return out
