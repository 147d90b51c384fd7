"""dtorch/onnx/_resize.py: an ONNX Resize node's attributes and constant inputs -> the `resize` operator's attributes
(pure Python; the kernel's numerics are tests/runtime/kernels/test_resize.py)."""

from __future__ import annotations

import numpy as np
import pytest

from dtorch.onnx._resize import resize_attrs, resize_output_shape

DEFAULTS = {"mode": "nearest", "coordinate_transformation_mode": "half_pixel", "nearest_mode": "round_prefer_floor",
            "cubic_coeff_a": -0.75, "exclude_outside": 0, "antialias": 0, "extrapolation_value": 0.0}


def test_scales_leave_the_output_size_to_the_kernel() -> None:
    a = resize_attrs([1, 3, 5, 7], {}, None, np.array([1, 1, 2.6, 0.5], np.float32), None)
    assert a == {**DEFAULTS, "sizes": [0, 0, 0, 0], "scales": [1.0, 1.0, float(np.float32(2.6)), 0.5]}
    # floor(input * scale) of the float32 scale, exactly: 5 * 2.5999999 = 12.99..., not 13.
    assert resize_output_shape([1, 3, 5, 7], a) == [1, 3, 12, 3]
    # A dynamic dimension works with scales (the kernel computes its size when the model runs).
    b = resize_attrs(["batch", 3, None, 7], {}, None, [1.0, 1.0, 2.0, 2.0], None)
    assert b["sizes"] == [0, 0, 0, 0] and resize_output_shape(["batch", 3, None, 7], b) == [None, 3, None, 14]


def test_sizes_give_output_over_input_as_the_scale() -> None:
    a = resize_attrs([2, 3, 4, 6], {"mode": b"linear"}, np.zeros(0, np.float32), np.zeros(0, np.float32),
                     np.array([2, 3, 7, 3], np.int64))
    assert a["sizes"] == [0, 0, 7, 3] and a["scales"] == [1.0, 1.0, 7 / 4, 0.5] and a["mode"] == "linear"
    assert resize_output_shape([2, 3, 4, 6], a) == [2, 3, 7, 3]
    # A dynamic batch the node leaves as it is (axes, opset 18).
    b = resize_attrs(["n", 3, 4, 6], {"axes": [2, 3]}, None, None, [8, 6])
    assert b["sizes"] == [0, 0, 8, 0] and b["scales"] == [1.0, 1.0, 2.0, 1.0]


@pytest.mark.parametrize("policy,sizes,out,scale", [
    ("not_larger", [7, 7], [4, 7], 7 / 12),   # min(7/7, 7/12): 7 * 7/12 = 4.08 -> 4
    ("not_smaller", [7, 7], [7, 12], 1.0),   # max: 12 stays, 7 stays
    ("not_larger", [3, 100], [3, 5], 3 / 7),  # round half up: 12 * 3/7 = 5.14 -> 5
    ("stretch", [3, 100], [3, 100], None),
])
def test_keep_aspect_ratio_policy(policy: str, sizes: list[int], out: list[int], scale: float | None) -> None:
    a = resize_attrs([1, 1, 7, 12], {"axes": [2, 3], "keep_aspect_ratio_policy": policy}, None, None, sizes)
    assert resize_output_shape([1, 1, 7, 12], a) == [1, 1, *out]
    if scale is not None:
        assert all(s in (scale, 1.0) for s in a["scales"][2:])
        for d, n in ((2, 7), (3, 12)):
            assert (a["sizes"][d] == 0) == (a["scales"][d] == 1.0 and out[d - 2] == n)


def test_axes_reorder_and_negative_axes() -> None:
    a = resize_attrs([1, 2, 4, 6], {"axes": [-1, 2]}, None, [0.5, 3.0], None)
    assert a["scales"] == [1.0, 1.0, 3.0, 0.5]
    roi = [0.1, 0.2, 0.9, 0.8]  # starts of axes (3, 2), then ends
    b = resize_attrs([1, 2, 4, 6], {"axes": [3, 2], "coordinate_transformation_mode": "tf_crop_and_resize"},
                     np.array(roi, np.float32), None, [5, 3])
    assert b["sizes"] == [0, 0, 3, 5]
    assert b["roi"] == [0.0, 0.0, float(np.float32(0.2)), float(np.float32(0.1)), 1.0, 1.0,
                        float(np.float32(0.8)), float(np.float32(0.9))]


def test_roi_is_written_only_for_tf_crop_and_resize() -> None:
    a = resize_attrs([1, 4], {"coordinate_transformation_mode": "align_corners"}, [0.2, 0.2, 0.8, 0.8], [1.0, 2.0],
                     None)
    assert "roi" not in a
    b = resize_attrs([1, 4], {"coordinate_transformation_mode": "tf_crop_and_resize", "extrapolation_value": 3.0,
                              "mode": "linear"}, [0.0, 0.25, 1.0, 0.75], None, [1, 5])
    assert b["roi"] == [0.0, 0.25, 1.0, 0.75] and b["extrapolation_value"] == 3.0


@pytest.mark.parametrize("shape,attrs,roi,scales,sizes,msg", [
    ([1, 4], {}, None, [1.0, 2.0], [1, 8], "exactly one of the scales and sizes inputs must be given, got both"),
    ([1, 4], {}, None, [], np.zeros(0, np.int64), "got neither"),
    ([1, 4], {}, None, [2.0], None, r"scales has 1 values, expected 2 \(one per axis\)"),
    ([1, 4], {}, None, None, [1, 2, 3], r"sizes has 3 values, expected 2"),
    ([1, 4], {}, None, [1.0, 0.0], None, r"scales\[1\] is 0.0; every scale must be > 0"),
    ([1, 4], {}, None, [1.0, -1.0], None, r"scales\[1\] is -1.0"),
    ([1, 4], {}, None, None, [1, 0], r"sizes\[1\] is 0; every output size must be >= 1"),
    (["n", 4], {}, None, None, [2, 8], r"sizes needs a static input size, but dimension 0 is dynamic \('n'\)"),
    ([1, 4], {"mode": "bilinear"}, None, [1.0, 2.0], None, r"mode 'bilinear' is not one of nearest, linear, cubic"),
    ([1, 4], {"coordinate_transformation_mode": "x"}, None, [1.0, 2.0], None, "coordinate_transformation_mode 'x'"),
    ([1, 4], {"antialias": 1}, None, [1.0, 0.5], None, "antialias applies to modes linear and cubic, not nearest"),
    ([1, 4], {"axes": [1, -1]}, None, [2.0, 2.0], None, r"axes \[1, -1\] repeat a dimension"),
    ([1, 4], {"axes": [2]}, None, [2.0], None, "axis 2 is out of range for an input of rank 2"),
    ([1, 4], {"coordinate_transformation_mode": "tf_crop_and_resize"}, None, [1.0, 2.0], None, "needs the roi input"),
    ([1, 4], {"coordinate_transformation_mode": "tf_crop_and_resize"}, [0, 1], [1.0, 2.0], None,
     r"roi has 2 values, expected 4"),
    ([1, 4], {"frobnicate": 1}, None, [1.0, 2.0], None, "unknown attribute"),
    ([], {}, None, [], [], "rank 0"),
])
def test_errors(shape: list, attrs: dict, roi: object, scales: object, sizes: object, msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        resize_attrs(shape, attrs, roi, scales, sizes)
