"""Eager vs the C++ runtime on the export model zoo: float32 parity, dynamic batch, identical bits for any
thread count."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import dtorch as dt
import dtorch.runtime as rt

_spec = importlib.util.spec_from_file_location("export_zoo", Path(__file__).resolve().parents[1] / "export" / "zoo.py")
zoo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(zoo)  # type: ignore[union-attr]


def _models() -> list[str]:
    return sorted(zoo.ZOO)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[object, Path, object]]:
    out = {}
    root = tmp_path_factory.mktemp("zoo")
    for name in _models():
        make_model, make_input = zoo.ZOO[name]
        dt.manual_seed(0)
        model = make_model().eval()
        path = root / f"{name}.dtm"
        dt.export(model, make_input(2), str(path), dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                  bundle_example=True)
        out[name] = (model, path, make_input)
    return out


@pytest.mark.parametrize("name", _models())
@pytest.mark.parametrize("batch", [1, 4, 33])
@pytest.mark.parametrize("kernels", rt.KERNEL_POLICIES)
def test_runtime_matches_eager(exported, name, batch, kernels):
    model, path, make_input = exported[name]
    x = make_input(batch)
    with dt.no_grad():
        ref = model(x).numpy()
    sess = rt.InferenceSession(str(path), kernels=kernels)
    got = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0]
    assert got.shape == ref.shape
    scale = max(float(np.max(np.abs(ref))), 1e-6)
    assert float(np.max(np.abs(got - ref))) <= 1e-5 * scale


@pytest.mark.parametrize("name", _models())
@pytest.mark.parametrize("kernels", rt.KERNEL_POLICIES)
def test_threads_give_identical_bits(exported, name, kernels):
    model, path, make_input = exported[name]
    x = make_input(4).numpy()
    outs = []
    for threads in (1, 2, 3):
        sess = rt.InferenceSession(str(path), threads=threads, kernels=kernels)
        outs.append(sess.run(None, {sess.get_inputs()[0].name: x})[0])
    assert outs[0].tobytes() == outs[1].tobytes() == outs[2].tobytes()


@pytest.mark.parametrize("name", _models())
def test_exact_policy_gives_the_portable_bits(exported, name):
    """"exact" may use faster kernel sets (x86) but only ones with the portable kernels' bits, so a host result
    under it is the result every board's portable build gives."""
    _, path, make_input = exported[name]
    x = make_input(4).numpy()
    outs = {}
    for kernels in ("exact", "portable"):
        sess = rt.InferenceSession(str(path), kernels=kernels)
        outs[kernels] = sess.run(None, {sess.get_inputs()[0].name: x})[0]
        sets = {ks for _, _, ks in sess.node_kernels()}
        assert sets <= ({"portable", "x86"} if kernels == "exact" else {"portable"}), sets
    assert outs["exact"].tobytes() == outs["portable"].tobytes()


def test_fast_policy_uses_the_best_kernel_set_this_cpu_has(exported):
    _, path, _ = exported["simplenet"]
    registered = {(op, ks, prio) for op, dt_, ks, prio in rt._C.registered_kernel_sets() if dt_ == "float32"}
    best = {}
    for op, ks, prio in registered:
        if op not in best or prio > best[op][1]:
            best[op] = (ks, prio)
    for op, _, ks in rt.InferenceSession(str(path)).node_kernels():
        assert ks == best[op][0], (op, ks, best[op])


def test_unknown_kernel_policy_is_refused(exported):
    _, path, _ = exported["mlp"]
    with pytest.raises(ValueError, match=r"kernels must be one of \['fast', 'exact', 'portable'\], got 'turbo'"):
        rt.InferenceSession(str(path), kernels="turbo")


def test_excluded_kernel_sets_are_not_taken(exported):
    """exclude_kernel_sets: each node takes the best kernel of the other sets (on an AVX-512 CPU, excluding avx512
    runs the avx2 set: the way to time both on one machine); the result stays within the fast tolerance."""
    model, path, make_input = exported["simplenet"]
    x = make_input(2).numpy()
    sets = {ks for _, _, ks, _ in rt._C.registered_kernel_sets()}
    full = rt.InferenceSession(str(path))
    taken = {ks for _, _, ks in full.node_kernels()}
    for drop in sorted(taken - {"portable"}) or ["avx512"]:
        sess = rt.InferenceSession(str(path), exclude_kernel_sets=[drop])
        now = {ks for _, _, ks in sess.node_kernels()}
        assert drop not in now and now <= sets
        want = full.run(None, {"input": x})[0]
        got = sess.run(None, {"input": x})[0]
        assert np.max(np.abs(got - want)) <= 1e-5 * max(1.0, float(np.max(np.abs(want))))
    # excluding every ISA set leaves the portable kernels; an unknown name changes nothing
    every = rt.InferenceSession(str(path), exclude_kernel_sets=sorted(sets - {"portable"}))
    assert {ks for _, _, ks in every.node_kernels()} == {"portable"}
    same = rt.InferenceSession(str(path), exclude_kernel_sets=["no-such-set"])
    assert same.node_kernels() == full.node_kernels()
    if {"avx512", "avx2"} <= sets:  # this CPU has both: the avx2 set runs the convolutions
        avx2 = rt.InferenceSession(str(path), exclude_kernel_sets=["avx512"])
        convs = [ks for op, _, ks in avx2.node_kernels() if op == "conv2d"]
        assert convs and set(convs) == {"avx2"}


def test_bad_kernel_set_exclusions_are_refused(exported):
    _, path, _ = exported["mlp"]
    with pytest.raises(ValueError, match=r"'portable' cannot be excluded \(the portable kernels are every operator"):
        rt.InferenceSession(str(path), exclude_kernel_sets=["portable"])
    with pytest.raises(ValueError, match="'' cannot be excluded"):
        rt.InferenceSession(str(path), exclude_kernel_sets=[""])
    with pytest.raises(TypeError, match="exclude_kernel_sets must be a list of kernel set names, got 'avx512'"):
        rt.InferenceSession(str(path), exclude_kernel_sets="avx512")


def _conv_sets() -> set[str]:
    return {ks for op, _, ks, _ in rt._C.registered_kernel_sets() if op == "conv2d"}


# Sessions whose convolutions run each FMA set this CPU has: the best (avx512 where present), then avx2 alone.
_FMA_RUNS = [pytest.param([], id="best"), pytest.param(["avx512"], id="avx2")]


@pytest.mark.parametrize("drop", _FMA_RUNS)
@pytest.mark.parametrize("name", _models())
def test_blocked_layouts_give_identical_bits(exported, name, drop):
    """A session keeps tensors between kernels that take it in the blocked layout (NCHW16c); the results are the
    bits of an all-NCHW session, for any batch (the choice is made again per shape) and thread count, with either FMA
    set's convolutions."""
    if drop and "avx2" not in _conv_sets():
        pytest.skip("this CPU lacks AVX2 + FMA: no avx2 conv2d kernel")
    model, path, make_input = exported[name]
    plain = rt.InferenceSession(str(path), blocked_layouts=False, exclude_kernel_sets=drop)
    for batch in (1, 3):
        x = make_input(batch).numpy()
        want = plain.run(None, {"input": x})[0]
        assert plain.blocked_tensors() == 0
        for threads in (1, 2):
            sess = rt.InferenceSession(str(path), threads=threads, exclude_kernel_sets=drop)
            got = sess.run(None, {"input": x})[0]
            np.testing.assert_array_equal(got, want)
            assert np.array_equal(np.signbit(got), np.signbit(want))
    with pytest.raises(TypeError, match="blocked_layouts must be True or False, got 'no'"):
        rt.InferenceSession(str(path), blocked_layouts="no")


class _Chain(dt.nn.Module):
    """Blocked-capable nodes (convolutions, depthwise, residual add, max pool, global mean) mixed with ones that are
    not (a sigmoid between convolutions, a broadcast add, a concat, 24-channel tensors), and a model output taken
    from the middle of a chain."""

    def __init__(self) -> None:
        super().__init__()
        nn = dt.nn
        self.stem = nn.Conv2d(3, 32, 3, stride=2, padding=1)
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        self.c1 = nn.Conv2d(32, 32, 3, padding=1)
        self.c2 = nn.Conv2d(32, 32, 3, padding=1)
        self.dw = nn.Conv2d(32, 32, 3, padding=1, groups=32)
        self.pw = nn.Conv2d(32, 24, 1)
        self.up = nn.Conv2d(24, 48, 1)
        self.c3 = nn.Conv2d(48, 16, 3, stride=2, padding=1)
        self.c4 = nn.Conv2d(32, 16, 1)

    def forward(self, x):
        F = dt.nn.functional
        x = self.pool(F.relu(self.stem(x)))
        y = F.relu(self.c1(x))
        x = F.relu(self.c2(y) + x)                   # residual: blocked together
        s = dt.sigmoid(self.dw(x))                    # not fused into the convolution: NCHW around it
        z = self.up(F.relu(self.pw(s + 1.0)))         # a broadcast add, a 24-channel tensor
        a = self.c3(z)
        b = self.c4(dt.cat([a, a], dim=1))
        return b.mean(dim=(2, 3)), y


@pytest.mark.parametrize("drop", _FMA_RUNS)
def test_blocked_layouts_on_a_mixed_chain(tmp_path, drop):
    if drop and "avx2" not in _conv_sets():
        pytest.skip("this CPU lacks AVX2 + FMA: no avx2 conv2d kernel")
    dt.manual_seed(0)
    model = _Chain().eval()
    x = dt.randn(2, 3, 37, 41)
    path = tmp_path / "chain.dtm"
    dt.export(model, x, str(path), dynamic_axes={"input": {0: "batch"}})
    with dt.no_grad():
        ref = [t.numpy() for t in model(x)]
    xs = {"input": x.numpy()}
    plain = rt.InferenceSession(str(path), blocked_layouts=False, exclude_kernel_sets=drop).run(None, xs)
    sess = rt.InferenceSession(str(path), exclude_kernel_sets=drop)
    got = sess.run(None, xs)
    for g, p, r in zip(got, plain, ref):
        np.testing.assert_array_equal(g, p)
        assert np.max(np.abs(g - r)) <= 1e-5 * max(1.0, float(np.max(np.abs(r))))
    if _conv_sets() & {"avx512", "avx2"}:
        assert sess.blocked_tensors() > 0
    else:
        print("test_blocked_layouts_on_a_mixed_chain: no FMA conv2d kernels on this CPU: nothing is blocked")
