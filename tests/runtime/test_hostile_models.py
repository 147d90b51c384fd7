"""Regressions from the fuzzer (runtime/fuzz/crashes/): node arity, absent required inputs, and shape
arithmetic that would overflow are refused with an error that names the node and operator, never a crash."""

from __future__ import annotations

import numpy as np
import pytest
from dtm_builder import DtmBuilder

import dtorch.runtime as rt
from dtorch.runtime import _C


def test_absent_required_input_is_refused_at_load() -> None:
    g = DtmBuilder()
    x = g.input("x", [2, 3])
    y = g.output("y", [2, 3])
    g.node("add", [x, -1], [y])
    with pytest.raises(rt.InvalidModelError, match=r"node 0 \('add'.*requires input 1, but it is absent"):
        rt.InferenceSession(g.build())


def test_wrong_input_and_output_counts_are_refused_at_load() -> None:
    g = DtmBuilder()
    x = g.input("x", [2, 3])
    y = g.output("y", [2, 3])
    g.node("relu", [x, x], [y])
    with pytest.raises(rt.InvalidModelError, match=r"node 0 \('relu'.*takes 1 input\(s\) but the node has 2"):
        rt.InferenceSession(g.build())
    g = DtmBuilder()
    x = g.input("x", [2, 3])
    y, z = g.output("y", [2, 3]), g.output("z", [2, 3])
    g.node("relu", [x], [y, z])
    with pytest.raises(rt.InvalidModelError, match=r"has 1 output\(s\) but the node lists 2"):
        rt.InferenceSession(g.build())


def test_absent_optional_bias_still_loads() -> None:
    g = DtmBuilder()
    x = g.input("x", [2, 4])
    w = g.const("w", np.ones((3, 4), np.float32))
    y = g.output("y", [2, 3])
    g.node("linear", [x, w, -1], [y])
    s = rt.InferenceSession(g.build())
    (out,) = s.run(None, {"x": np.ones((2, 4), np.float32)})
    np.testing.assert_allclose(out, np.full((2, 3), 4.0, np.float32))


def test_run_kernel_checks_arity() -> None:
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"requires input 1, but it is absent"):
        _C.run_kernel("add", {}, [x, None])
    with pytest.raises(ValueError, match=r"takes 1 input\(s\)"):
        _C.run_kernel("relu", {}, [x, x])


@pytest.mark.parametrize("attr,value", [("padding", [0, 0, 0, 2**62]), ("stride", [2**40, 1]), ("dilation", [1, 2**50])])
def test_conv2d_attribute_out_of_range(attr: str, value: list[int]) -> None:
    g = DtmBuilder()
    x = g.input("x", [1, 1, 4, 4])
    w = g.const("w", np.ones((1, 1, 3, 3), np.float32))
    y = g.output("y", [1, 1, 2, 2])
    g.node("conv2d", [x, w, -1], [y], {attr: value})
    # The catalogue bounds every geometry attribute, so the loader refuses the file before anything runs.
    with pytest.raises(rt.InvalidModelError, match=rf"conv2d attribute '{attr}' is \d+, outside \[\d, 16777216\]"):
        rt.InferenceSession(g.build())


def test_reshape_overflow_and_huge_output_are_refused() -> None:
    g = DtmBuilder()
    x = g.input("x", [2, 3])
    y = g.output("y", [2, 3])
    g.node("reshape", [x], [y], {"shape": [2**62, 4, 0]})
    with pytest.raises(ValueError, match=r"reshape: shape .* too many elements"):
        rt.InferenceSession(g.build()).run(None, {"x": np.ones((2, 3), np.float32)})
    g = DtmBuilder()
    x = g.input("x", [1, 1])
    y = g.output("y", [2**20, 2**20])
    g.node("expand", [x], [y], {"shape": [2**20, 2**20]})
    with pytest.raises(rt.InvalidModelError, match=r"\(expand\).*larger than the \d+-byte limit on one tensor"):
        rt.InferenceSession(g.build()).run(None, {"x": np.ones((1, 1), np.float32)})
