"""dtorch.runtime.InferenceSession on hand-written .dtm files: results, dynamic dims, and every user error."""

from __future__ import annotations

import numpy as np
import pytest
from dtm_builder import DtmBuilder, chain_model, chain_reference, conv_linear_model, relu_model

import dtorch
import dtorch.runtime as rt


def test_relu_runs_and_describes_io(relu_dtm: str) -> None:
    s = rt.InferenceSession(relu_dtm, backend="cpu")
    (inp,), (out,) = s.get_inputs(), s.get_outputs()
    assert (inp.name, inp.shape, inp.dtype, inp.type) == ("x", ["batch", 4], np.dtype(np.float32), "tensor(float)")
    assert (out.name, out.shape) == ("y", ["batch", 4])
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    (y,) = s.run(None, {"x": x})
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    assert s.info["format_version"] == rt.FORMAT_VERSION and s.info["op_list"] == ["relu:float32"]


def test_session_from_bytes_and_dynamic_batch() -> None:
    g = chain_model()
    s = rt.InferenceSession(g.build())
    rng = np.random.default_rng(1)
    for batch in (1, 4, 33, 4):
        x = rng.standard_normal((batch, 8)).astype(np.float32)
        (y,) = s.run(["y"], {"x": x})
        assert y.shape == (batch, 8)
        np.testing.assert_allclose(y, chain_reference(x, g), rtol=1e-6, atol=1e-6)
    # In-place chain: relu/mul/neg reuse add's buffer, so the arena holds one (4, 8) float32 tensor.
    assert s.arena_bytes == 128


def test_outputs_are_copies_and_noncontiguous_inputs_are_converted() -> None:
    s = rt.InferenceSession(chain_model().build())
    x = np.random.default_rng(2).standard_normal((8, 6)).astype(np.float32)
    (a,) = s.run(None, {"x": x.T})  # non-contiguous: copied to C order
    (b,) = s.run(None, {"x": np.ascontiguousarray(x.T)})
    np.testing.assert_array_equal(a, b)
    a[:] = 0
    (c,) = s.run(None, {"x": np.ascontiguousarray(x.T)})
    np.testing.assert_array_equal(b, c)


def test_threads_give_identical_bits() -> None:
    data = chain_model().build()
    x = np.random.default_rng(3).standard_normal((33, 8)).astype(np.float32)
    outs = [rt.InferenceSession(data, threads=t).run(None, {"x": x})[0] for t in (1, 2)]
    assert outs[0].tobytes() == outs[1].tobytes()


def test_test_vector_roundtrip() -> None:
    g = relu_model()
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    g.set_test_vector([x], [np.maximum(x, 0)])
    ins, outs = rt.InferenceSession(g.build()).test_vector() or ([], [])
    np.testing.assert_array_equal(ins[0], x)
    np.testing.assert_array_equal(outs[0], np.maximum(x, 0))
    assert rt.InferenceSession(relu_model().build()).test_vector() is None


def test_available_backends_and_versions() -> None:
    assert rt.available_backends() == ["cpu"]
    assert "cpu" in dtorch.available_backends()
    assert rt.__version__ == dtorch.__version__ and isinstance(rt.RUNTIME_VERSION, str)
    assert ("relu", "float32") in rt.registered_kernels()


# --- user errors -----------------------------------------------------------------------------------
@pytest.fixture
def session() -> rt.InferenceSession:
    return rt.InferenceSession(relu_model(["batch", 4]).build())


def test_unknown_output_name(session: rt.InferenceSession) -> None:
    with pytest.raises(ValueError, match=r"unknown output name 'z'.*\['y'\]"):
        session.run(["z"], {"x": np.zeros((1, 4), np.float32)})


def test_missing_and_unknown_inputs(session: rt.InferenceSession) -> None:
    with pytest.raises(ValueError, match=r"missing input\(s\) \['x'\]"):
        session.run(None, {})
    with pytest.raises(ValueError, match=r"unknown input name\(s\) \['q'\]"):
        session.run(None, {"x": np.zeros((1, 4), np.float32), "q": np.zeros(1)})


def test_wrong_dtype_suggests_astype(session: rt.InferenceSession) -> None:
    with pytest.raises(TypeError, match=r"input 'x' has dtype float64 but the model expects float32.*astype"):
        session.run(None, {"x": np.zeros((1, 4))})


@pytest.mark.parametrize("value", [1.0, [[1.0, 2.0, 3.0, 4.0]]])
def test_scalars_and_lists_are_refused(session: rt.InferenceSession, value: object) -> None:
    with pytest.raises(TypeError, match=r"must be a numpy.ndarray.*numpy.asarray"):
        session.run(None, {"x": value})


def test_fixed_dimension_mismatch_names_input_dim_and_dynamic_axes(session: rt.InferenceSession) -> None:
    with pytest.raises(ValueError, match=r"input 'x' dimension 1: expected size 4 but got 5.*dynamic_axes.*"
                                         r"import --dynamic NAME"):
        session.run(None, {"x": np.zeros((2, 5), np.float32)})


def test_rank_mismatch(session: rt.InferenceSession) -> None:
    with pytest.raises(ValueError, match=r"input 'x' has 3 dimensions"):
        session.run(None, {"x": np.zeros((2, 4, 1), np.float32)})


def test_non_native_byte_order_is_refused_with_the_conversion(session: rt.InferenceSession) -> None:
    swapped = np.zeros((1, 4), np.dtype(np.float32).newbyteorder("S"))
    with pytest.raises(TypeError, match=r"input 'x' has dtype >f4 but the model expects float32.*astype"):
        session.run(None, {"x": swapped})
    # The binding itself (the wrapper's fast path hands arrays straight to it) checks the byte order too.
    with pytest.raises(ValueError, match=r"input 'x' has non-native byte order.*newbyteorder"):
        session._sess.run([swapped])
    with pytest.raises(ValueError, match=r"input 0 has non-native byte order"):
        rt.run_kernel("relu", {}, [swapped])


def test_binding_refuses_unsupported_dtypes_by_name(session: rt.InferenceSession) -> None:
    for bad, name in ((np.zeros((1, 4), np.uint16), "uint16"), (np.zeros((1, 4), np.complex64), "complex64"),
                      (np.zeros((1, 4), np.longdouble), "float128")):
        with pytest.raises(ValueError, match=rf"input 'x' has dtype {name}, which the runtime does not support"):
            session._sess.run([bad])


def test_fast_and_checked_calls_agree() -> None:
    """run(None, {exact inputs}) goes straight to the runtime; every other call shape goes through the checks: the
    same outputs either way, and the inputs are never written."""
    s = rt.InferenceSession(chain_model().build())
    x = np.random.default_rng(4).standard_normal((5, 8)).astype(np.float32)
    keep = x.copy()
    (fast,) = s.run(None, {"x": x})
    (named,) = s.run(["y"], {"x": x})
    (fortran,) = s.run(None, {"x": np.asfortranarray(x)})  # not C-contiguous: converted by the checked path
    (strided,) = s.run(None, {"x": np.repeat(x, 2, axis=1)[:, ::2]})
    (sub,) = s.run(None, {"x": x.view(_Sub)})  # a subclass takes the checked path
    for other in (named, fortran, strided, sub):
        assert other.tobytes() == fast.tobytes()
    assert type(fast) is np.ndarray and fast.dtype == np.float32 and fast.flags.c_contiguous
    np.testing.assert_array_equal(x, keep)
    (again,) = s.run(None, {"x": x})
    assert again is not fast and again.tobytes() == fast.tobytes()


class _Sub(np.ndarray):
    pass


def test_bad_constructor_arguments(tmp_path) -> None:  # type: ignore[no-untyped-def]
    data = relu_model().build()
    with pytest.raises(ValueError, match=r"unknown backend 'npu'.*\['cpu'\]"):
        rt.InferenceSession(data, backend="npu")
    with pytest.raises(ValueError, match=r"threads must be a positive int"):
        rt.InferenceSession(data, threads=0)
    with pytest.raises(FileNotFoundError, match=r"model file not found"):
        rt.InferenceSession(str(tmp_path / "missing.dtm"))
    with pytest.raises(TypeError, match=r"needs a path or the model's bytes"):
        rt.InferenceSession(123)  # type: ignore[arg-type]
    with pytest.raises(OSError, match=r"is a directory; give the .dtm file itself"):
        rt.InferenceSession(str(tmp_path))


def test_kernel_error_names_the_node() -> None:
    g = DtmBuilder()
    a, b = g.input("a", [2, 3]), g.input("b", [4, 5])
    y = g.output("y", [2, 3])
    g.node("add", [a, b], [y], name="block.add")
    # Fixed shapes that cannot broadcast: the file's own example shapes fail at load, naming the node.
    with pytest.raises(rt.InvalidModelError, match=r"example input shapes do not run: node 'block.add' \(add\)"):
        rt.InferenceSession(g.build())
    g = DtmBuilder()
    a, b = g.input("a", ["p", 3]), g.input("b", ["q", 3])
    y = g.output("y", ["p", 3])
    g.node("add", [a, b], [y], name="block.add")
    s = rt.InferenceSession(g.build())
    with pytest.raises(ValueError, match=r"node 'block.add' \(add\)"):
        s.run(None, {"a": np.zeros((2, 3), np.float32), "b": np.zeros((4, 3), np.float32)})


def test_run_kernel_errors() -> None:
    with pytest.raises(rt.UnsupportedError, match=r"no kernel for operator 'nope' \(float32\)"):
        rt.run_kernel("nope", {}, [np.zeros(2, np.float32)])
    with pytest.raises(ValueError, match=r"threads must be >= 1"):
        rt.run_kernel("relu", {}, [np.zeros(2, np.float32)], threads=0)
    with pytest.raises(ValueError, match=r"attribute 'bad'"):
        rt.run_kernel("relu", {"bad": object()}, [np.zeros(2, np.float32)])
    (y,) = rt.run_kernel("relu", {}, [np.array([-1.0, 2.0], np.float32)], threads=2)
    np.testing.assert_array_equal(y, [0.0, 2.0])


def test_conv_linear_threads_identical_bits() -> None:
    have = set(rt.registered_kernels())
    if not {("conv2d", "float32"), ("linear", "float32")} <= have:
        pytest.skip("conv2d/linear kernels not built yet")
    rng = np.random.default_rng(5)
    data = conv_linear_model(rng, 8, 9)
    xv = rng.standard_normal((3, 3, 9, 9)).astype(np.float32)
    outs = [rt.InferenceSession(data, threads=t).run(None, {"x": xv})[0] for t in (1, 2)]
    assert outs[0].shape == (3, 5) and outs[0].tobytes() == outs[1].tobytes()


def test_a_dynamic_dimension_shared_by_two_inputs_takes_one_size(tmp_path) -> None:  # type: ignore[no-untyped-def]
    class Add(dtorch.nn.Module):
        def forward(self, a, b):  # type: ignore[no-untyped-def]
            return a + b

    path = tmp_path / "add.dtm"
    dtorch.export(Add(), (dtorch.randn(2, 3), dtorch.randn(2, 3)), path, input_names=["a", "b"],
                  dynamic_axes={"a": {0: "batch"}, "b": {0: "batch"}})
    s = rt.InferenceSession(str(path))
    a = np.ones((4, 3), np.float32)
    np.testing.assert_array_equal(s.run(None, {"a": a, "b": a})[0], a + a)
    b = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(s.run(None, {"b": b, "a": a})[0], a + b)  # a dict in any order
    with pytest.raises(ValueError, match=r"unknown input name\(s\) \['c'\]; the model's inputs are \['a', 'b'\]"):
        s.run(None, {"a": a, "c": a})  # as many entries as inputs, one of them wrong
    with pytest.raises(ValueError, match=r"input 'b' dimension 0 \(dynamic 'batch'\) is 5, but input 'a' dimension 0 "
                                         r"gives 'batch' the size 4"):
        s.run(None, {"a": a, "b": np.ones((5, 3), np.float32)})
