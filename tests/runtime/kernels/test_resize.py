"""resize (ONNX Resize's semantics): the portable kernel, with the attributes dtorch/onnx/_resize.py computes, against
onnxruntime and onnx's ReferenceEvaluator on one-node Resize-19 models, against F.interpolate for what torch.onnx
exports, 1 and 2 threads bit-identical, and its errors (through run_kernel and refused at load)."""

from __future__ import annotations

import numpy as np
import pytest
from dtm_builder import DtmBuilder

import dtorch.runtime as rt
from dtorch.catalogue import CATALOGUE
from dtorch.onnx._resize import resize_attrs

from .helpers import assert_close, rand, run

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

CTMS = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
        "tf_crop_and_resize")
NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
ROI4 = [0.0, 0.0, 0.125, 0.25, 1.0, 1.0, 0.75, 0.875]  # tf_crop_and_resize on (N, C, H, W): a crop inside the image
ROI4_OUT = [0.0, 0.0, -0.2, 0.1, 1.0, 1.0, 1.3, 0.7]  # partly outside: extrapolation_value there


def _model(shape: tuple[int, ...], attrs: dict, roi: list | None, scales: list | None, sizes: list | None,
           opset: int = 19) -> onnx.ModelProto:
    inits, names = [], ["x"]
    for name, v, dt in (("roi", roi, np.float32), ("scales", scales, np.float32), ("sizes", sizes, np.int64)):
        if v is None:
            names.append("")
        else:
            inits.append(numpy_helper.from_array(np.array(v, dt), name))
            names.append(name)
    while names[-1] == "":
        names.pop()
    node = helper.make_node("Resize", names, ["y"], **attrs)
    graph = helper.make_graph([node], "resize", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _reference(m: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    return ReferenceEvaluator(m).run(None, {"x": x})[0]


def _onnxruntime(m: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    return ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def _kernel(x: np.ndarray, attrs: dict, roi: list | None, scales: list | None, sizes: list | None) -> np.ndarray:
    """The kernel at 1 and 2 threads (the same bits), with the attributes the importer writes."""
    a = resize_attrs(list(x.shape), attrs, roi, None if scales is None else np.array(scales, np.float32), sizes)
    got = run("resize", a, [x])
    np.testing.assert_array_equal(run("resize", a, [x], threads=2), got)
    return got


def _check(shape: tuple[int, ...], attrs: dict, *, scales: list | None = None, sizes: list | None = None,
           roi: list | None = None, onnxruntime: bool = True, seed: int = 0) -> np.ndarray:
    x = rand(np.random.default_rng(seed), *shape)
    if attrs.get("coordinate_transformation_mode") != "tf_crop_and_resize":
        roi = None
    m = _model(shape, attrs, roi, scales, sizes)
    got = _kernel(x, attrs, roi, scales, sizes)
    assert_close(got, _reference(m, x))
    if onnxruntime:
        assert_close(got, _onnxruntime(m, x))
    return got


# Up and down, integer and not, by scales and by sizes, on (N, C, H, W) with N and C kept (what onnxruntime runs).
GEOMETRIES = [
    dict(shape=(2, 3, 5, 7), scales=[1.0, 1.0, 2.0, 3.0]),
    dict(shape=(1, 2, 5, 7), scales=[1.0, 1.0, 1.7, 2.3]),
    dict(shape=(1, 2, 9, 11), scales=[1.0, 1.0, 0.6, 0.45]),
    dict(shape=(1, 2, 8, 12), scales=[1.0, 1.0, 0.625, 0.375]),
    dict(shape=(1, 2, 6, 8), sizes=[1, 2, 9, 5]),
    dict(shape=(1, 1, 7, 4), sizes=[1, 1, 3, 13]),
]


def _few_bits(g: dict) -> bool:
    """Whether every scale is a multiple of 1/64: onnxruntime computes coordinates in float32, so where an inexact
    scale puts x within float32's rounding of a nearest tie (x.5), it may round the other way than the reference
    (double). Nearest is compared with onnxruntime only on these geometries (always with the reference)."""
    ratios = g["scales"] if "scales" in g else [o / i for o, i in zip(g["sizes"], g["shape"])]
    return all(float(np.float32(r)) * 64 == int(float(np.float32(r)) * 64) for r in ratios)


def _ort_agrees(ctm: str, g: dict) -> bool:
    """onnxruntime takes align_corners' and tf_crop_and_resize's length_resized as the integer output size; the
    conformance data (and this kernel) take the fractional scale * input (only differs when that is not an integer)."""
    if "sizes" in g:
        return True
    products = [float(np.float32(s)) * n for s, n in zip(g["scales"], g["shape"])]
    # onnxruntime's output size is floor of the float32 product; ONNX's (and the reference's) of the exact one.
    if any(np.floor(np.float32(s) * np.float32(n)) != np.floor(p) for s, n, p in zip(g["scales"], g["shape"], products)):
        return False
    return ctm not in ("align_corners", "tf_crop_and_resize") or all(p == int(p) for p in products)


@pytest.mark.parametrize("ctm", CTMS)
@pytest.mark.parametrize("nearest_mode", NEAREST)
@pytest.mark.parametrize("g", range(len(GEOMETRIES)))
def test_nearest(ctm: str, nearest_mode: str, g: int) -> None:
    geo = GEOMETRIES[g]
    _check(geo["shape"], dict(mode="nearest", coordinate_transformation_mode=ctm, nearest_mode=nearest_mode),
           scales=geo.get("scales"), sizes=geo.get("sizes"), roi=ROI4,
           onnxruntime=_ort_agrees(ctm, geo) and _few_bits(geo))


@pytest.mark.parametrize("ctm", CTMS)
@pytest.mark.parametrize("g", range(len(GEOMETRIES)))
def test_linear(ctm: str, g: int) -> None:
    geo = GEOMETRIES[g]
    _check(geo["shape"], dict(mode="linear", coordinate_transformation_mode=ctm), scales=geo.get("scales"),
           sizes=geo.get("sizes"), roi=ROI4, onnxruntime=_ort_agrees(ctm, geo))


@pytest.mark.parametrize("ctm", CTMS)
@pytest.mark.parametrize("a,exclude", [(-0.75, 0), (-0.5, 1), (-0.6, 0)])
@pytest.mark.parametrize("g", range(len(GEOMETRIES)))
def test_cubic(ctm: str, a: float, exclude: int, g: int) -> None:
    geo = GEOMETRIES[g]
    attrs = dict(mode="cubic", coordinate_transformation_mode=ctm, cubic_coeff_a=a, exclude_outside=exclude)
    _check(geo["shape"], attrs, scales=geo.get("scales"), sizes=geo.get("sizes"), roi=ROI4,
           onnxruntime=_ort_agrees(ctm, geo))


def test_linear_exclude_outside_against_the_reference() -> None:
    """onnxruntime refuses exclude_outside for linear without antialias; the spec and the reference do not."""
    for ctm in ("half_pixel", "align_corners", "asymmetric"):
        _check((1, 2, 5, 6), dict(mode="linear", coordinate_transformation_mode=ctm, exclude_outside=1),
               scales=[1.0, 1.0, 2.5, 0.7], onnxruntime=False)


def test_nearest_exclude_outside_zeroes_picks_outside_the_input() -> None:
    """As the reference: a one-hot nearest pick whose index is outside the input loses its weight (the output is 0)."""
    got = _check((1, 1, 3, 4), dict(mode="nearest", coordinate_transformation_mode="half_pixel", nearest_mode="floor",
                                    exclude_outside=1), scales=[1.0, 1.0, 3.0, 2.0], onnxruntime=False)
    assert (got[0, 0, 0] == 0).all() and (got[0, 0, :, 0] == 0).all()


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("geo", [dict(scales=[1.0, 1.0, 0.3, 0.55]), dict(scales=[1.0, 1.0, 0.5, 0.25]),
                                 dict(sizes=[1, 2, 4, 9]), dict(scales=[1.0, 1.0, 1.5, 0.4])])
def test_antialias(mode: str, geo: dict) -> None:
    _check((1, 2, 13, 16), dict(mode=mode, antialias=1), **geo)
    _check((1, 2, 13, 16), dict(mode=mode, antialias=1, exclude_outside=1), onnxruntime=mode == "cubic", **geo)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("ctm", ["half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize"])
@pytest.mark.parametrize("shape,scales,ort_ok", [
    ((7,), [1.8], {"nearest"}),
    ((5, 6), [0.75, 1.875], {"nearest", "linear", "cubic"}),
    ((5, 6), [0.7, 1.9], {"linear", "cubic"}),
    ((2, 3, 10), [1.0, 1.0, 2.55], {"linear"}),
    ((2, 3, 10), [1.0, 1.0, 2.5], {"nearest", "linear"}),
    ((2, 3, 4, 5), [2.0, 1.5, 1.0, 0.6], {"nearest"}),  # N and C resized too
    ((1, 2, 4, 5, 6), [1.0, 1.0, 1.5, 0.5, 2.0], {"nearest", "linear"}),  # trilinear / tricubic
    ((2, 2, 3, 4, 3), [1.5, 1.0, 2.0, 0.75, 1.7], {"nearest"}),
])
def test_ranks_and_every_dimension(mode: str, ctm: str, shape: tuple[int, ...], scales: list, ort_ok: set) -> None:
    roi = [0.125 if s != 1.0 else 0.0 for s in scales] + [0.875 if s != 1.0 else 1.0 for s in scales]
    geo = dict(shape=shape, scales=scales)
    _check(shape, dict(mode=mode, coordinate_transformation_mode=ctm), scales=scales, roi=roi,
           onnxruntime=mode in ort_ok and _ort_agrees(ctm, geo))


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("ev", [0.0, 10.0, -2.5])
def test_tf_crop_and_resize_extrapolation(mode: str, ev: float) -> None:
    attrs = dict(mode=mode, coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=ev)
    got = _check((1, 2, 6, 7), attrs, sizes=[1, 2, 9, 8], roi=ROI4_OUT)
    assert (got[:, :, 0] == np.float32(ev)).all()  # y = -0.2 * 5 < 0
    # Only some of the axes (opset 18): the roi of the others is [0, 1].
    m_attrs = dict(attrs, axes=[3, 2])
    x = rand(np.random.default_rng(3), 1, 2, 6, 7)
    roi = [0.1, -0.2, 0.7, 1.3]
    m = _model((1, 2, 6, 7), m_attrs, roi, None, [8, 9])
    got = _kernel(x, m_attrs, roi, None, [8, 9])
    assert_close(got, _reference(m, x))
    assert_close(got, _onnxruntime(m, x))


def test_tf_crop_and_resize_crops_dimensions_of_scale_1_too() -> None:
    """The roi applies to every dimension (the spec and the reference); onnxruntime's linear ignores it where the
    scale is 1, so this is checked against the reference only."""
    for mode in ("nearest", "linear", "cubic"):
        _check((3, 2, 9), dict(mode=mode, coordinate_transformation_mode="tf_crop_and_resize"),
               scales=[1.0, 1.0, 1.5], roi=[0.25, 0.0, 0.0, 0.75, 1.0, 0.5], onnxruntime=False)


def test_tf_half_pixel_for_nn_against_onnxruntime() -> None:
    """Opsets 11 and 13 only (the reference evaluator implements opset 19's modes)."""
    x = rand(np.random.default_rng(4), 1, 2, 5, 6)
    for nm in NEAREST:
        attrs = dict(mode="nearest", coordinate_transformation_mode="tf_half_pixel_for_nn", nearest_mode=nm)
        m = _model(x.shape, attrs, [], [1.0, 1.0, 1.5, 0.7], None, opset=13)
        assert_close(_kernel(x, attrs, None, [1.0, 1.0, 1.5, 0.7], None), _onnxruntime(m, x))


def test_dimensions_left_as_they_are_and_empty_outputs() -> None:
    x = rand(np.random.default_rng(5), 2, 3, 4)
    for mode in ("nearest", "linear", "cubic"):
        a = dict(sizes=[0, 0, 0], scales=[1.0, 1.0, 1.0], mode=mode)
        np.testing.assert_array_equal(run("resize", a, [x]), x)
        assert run("resize", dict(a, scales=[1.0, 1.0, 0.2]), [x]).shape == (2, 3, 0)
    assert run("resize", dict(sizes=[0, 5], scales=[1.0, 2.5]), [np.zeros((0, 2), np.float32)]).shape == (0, 5)


torch = pytest.importorskip("torch")
F = torch.nn.functional


@pytest.mark.parametrize("shape,size,factor", [((2, 3, 5, 7), (10, 14), None), ((1, 2, 6, 5), (4, 11), None),
                                               ((1, 2, 4, 6), None, 2.0), ((1, 1, 6, 6), None, 0.5),
                                               ((1, 3, 7, 3), (1, 1), None)])
@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bilinear_align", "bicubic"])
def test_torch_interpolate(shape: tuple, size: tuple | None, factor: float | None, mode: str) -> None:
    """As torch.onnx exports F.interpolate: nearest = asymmetric + floor; bilinear / bicubic = half_pixel
    (align_corners=False) or align_corners; a scale_factor becomes Resize scales, a size Resize sizes."""
    x = rand(np.random.default_rng(6), *shape)
    tmode = {"bilinear_align": "bilinear"}.get(mode, mode)
    kw = {} if mode == "nearest" else {"align_corners": mode == "bilinear_align"}
    ref = F.interpolate(torch.from_numpy(x), size=size, scale_factor=factor, mode=tmode, **kw).numpy()
    if mode == "nearest":
        attrs = dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    else:
        attrs = dict(mode="linear" if tmode == "bilinear" else "cubic",
                     coordinate_transformation_mode="align_corners" if kw["align_corners"] else "half_pixel")
    scales = None if factor is None else [1.0, 1.0, factor, factor]
    sizes = None if size is None else [shape[0], shape[1], *size]
    assert_close(_kernel(x, attrs, None, scales, sizes), ref)


def test_align_corners_by_scales_follows_the_conformance_data_not_pytorch() -> None:
    """ONNX's align_corners divides by scale * input - 1 (onnx/onnx#2462: the scale is authoritative), which is what
    the conformance data (test_resize_downsample_scales_linear_align_corners) expects; PyTorch and onnxruntime
    divide by the integer output size - 1. They differ only where input * scale is not an integer."""
    x = np.array([[[[1, 2, 3, 4], [5, 6, 7, 8]]]], np.float32)
    attrs = dict(mode="linear", coordinate_transformation_mode="align_corners")
    got = _kernel(x, attrs, None, [1.0, 1.0, 0.6, 0.6], None)
    np.testing.assert_allclose(got, [[[[1.0, 3.142857]]]], rtol=1e-6)
    torch_y = F.interpolate(torch.from_numpy(x), scale_factor=0.6, mode="bilinear", align_corners=True).numpy()
    np.testing.assert_allclose(torch_y, [[[[1.0, 4.0]]]])
    # With the output size (sizes), all agree.
    assert_close(_kernel(x, attrs, None, None, [1, 1, 1, 2]),
                 F.interpolate(torch.from_numpy(x), size=(1, 2), mode="bilinear", align_corners=True).numpy())


def test_every_attribute_the_importer_writes_is_in_the_catalogue() -> None:
    """resize_attrs writes every attribute of the entry, each of its catalogue type and legal values."""
    op = CATALOGUE["resize"]
    a = resize_attrs([1, 3, 4, 4], {"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1, "antialias": 1,
                                    "coordinate_transformation_mode": "tf_crop_and_resize"},
                     [0, 0, 0, 0, 1, 1, 1, 1], [1, 1, 0.5, 0.5], None)
    assert set(a) == {x.name for x in op.attrs}
    for name, v in a.items():
        spec = op.attr(name)
        assert spec is not None
        if spec.choices is not None:
            assert v in spec.choices
        if spec.type == "floats":
            assert all(isinstance(f, float) for f in v)
        if spec.type == "ints":
            assert all(isinstance(i, int) for i in v)


def test_threads_give_the_same_bits_on_a_big_input() -> None:
    x = rand(np.random.default_rng(7), 2, 3, 37, 41)
    for mode in ("nearest", "linear", "cubic"):
        for aa in ((0, 1) if mode != "nearest" else (0,)):
            a = resize_attrs(list(x.shape), dict(mode=mode, antialias=aa), None, [1.0, 1.5, 1.3, 0.45], None)
            got = run("resize", a, [x])
            for threads in (2, 3, 4):
                np.testing.assert_array_equal(run("resize", a, [x], threads=threads), got)


def test_in_a_model_with_a_dynamic_batch() -> None:
    g = DtmBuilder()
    x = g.input("x", ["batch", 2, 4, 5])
    y = g.output("y", ["batch", 2, 8, 7])
    attrs = resize_attrs(["batch", 2, 4, 5], {"mode": "linear", "axes": [2, 3]}, None, None, [8, 7])
    assert attrs["sizes"] == [0, 0, 8, 7] and attrs["scales"] == [1.0, 1.0, 2.0, 1.4]
    g.node("resize", [x], [y], attrs)
    s = rt.InferenceSession(g.build())
    for n in (1, 3):
        xv = rand(np.random.default_rng(n), n, 2, 4, 5)
        m = _model(xv.shape, dict(mode="linear"), None, None, [n, 2, 8, 7])
        assert_close(s.run(None, {"x": xv})[0], _reference(m, xv))


ERRORS = [
    (dict(sizes=[0, 0, 8], scales=[1.0, 1.0, 2.0, 2.0]),
     r"resize: attribute 'sizes' must have one value per input dimension \(4 for input \[1, 2, 4, 4\]\), got 3"),
    (dict(sizes=[0, 0, 0, 0], scales=[1.0, 2.0, 2.0]),
     r"resize: attribute 'scales' must have one value per input dimension \(4 for input \[1, 2, 4, 4\]\), got 3"),
    (dict(sizes=[0, 0, 0, 0], scales=[1.0, 1.0, 0.0, 2.0]), r"resize: scales\[2\] is 0; every scale must be > 0"),
    (dict(sizes=[0, 0, 0, 0], scales=[1.0, 1.0, 1.0, float("inf")]), r"resize: scales\[3\] is inf; every scale must"),
    (dict(sizes=[0, 0, 0, 0], scales=[1.0] * 4, mode="linear", antialias=1, coordinate_transformation_mode=
          "tf_crop_and_resize"), r"tf_crop_and_resize needs attribute 'roi' \(8 values for input \[1, 2, 4, 4\]\)"),
    (dict(sizes=[0, 0, 0, 0], scales=[1.0] * 4, roi=[0.0, 1.0]),
     r"attribute 'roi' must have 2 values per input dimension \(starts, then ends: 8 for input \[1, 2, 4, 4\]\)"),
    (dict(sizes=[0, 0, 0, 0], scales=[1.0] * 4, antialias=1), r"antialias applies to modes linear and cubic"),
    (dict(sizes=[0, 0, 0, 0], scales=[1.0, 1.0, 2e7, 1.0]), r"input size 4 \* scale 2e\+07 gives an output size"),
]
CATALOGUE_ERRORS = [
    (dict(sizes=[0, 0, 0, 0], scales=[1.0] * 4, mode="bilinear"),
     r"attribute 'mode' is \"bilinear\", expected one of \"nearest\", \"linear\", \"cubic\""),
    (dict(sizes=[0, 0, 0, 0], scales=[1.0, 1.0, -2.0, 1.0]), r"attribute 'scales' is -2, outside \[0, inf\]"),
    (dict(sizes=[0, 0, -3, 0], scales=[1.0] * 4), r"attribute 'sizes' is -3, outside \[0, 16777216\]"),
    (dict(scales=[1.0] * 4), r"missing required attribute 'sizes'"),
    (dict(sizes=[0, 0, 0, 0], scales=[1.0] * 4, coordinate_transformation_mode="tf_half_pixel"),
     r"attribute 'coordinate_transformation_mode' is \"tf_half_pixel\", expected one of"),
    (dict(sizes=[0] * 9, scales=[1.0] * 4), r"attribute 'sizes' has 9 values, expected 1 to 8"),
]


@pytest.mark.parametrize("attrs,msg", ERRORS + CATALOGUE_ERRORS)
def test_errors(attrs: dict, msg: str) -> None:
    x = np.ones((1, 2, 4, 4), np.float32)
    with pytest.raises(ValueError, match=msg):
        run("resize", attrs, [x])
    # The same node in a model file is refused at load.
    g = DtmBuilder()
    xi = g.input("x", [1, 2, 4, 4])
    y = g.output("y", [1, 2, 8, 8])
    g.node("resize", [xi], [y], attrs)
    with pytest.raises(rt.InvalidModelError, match=msg):
        rt.InferenceSession(g.build())
