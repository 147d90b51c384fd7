"""Every differentiable op passes the float64 finite-difference gradcheck, incl. broadcasting and views."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import dtorch as dt
from dtorch.autograd import GradcheckError, gradcheck


def _inp(shape: tuple[int, ...], seed: int, kind: str = "any") -> dt.Tensor:
    """float64 values away from kinks (|x| in [0.2, 1.5]); kind 'pos' gives positive values."""
    rng = np.random.default_rng(seed)
    v = rng.uniform(0.2, 1.5, shape)
    if kind == "any":
        v = v * rng.choice([-1.0, 1.0], shape)
    return dt.tensor(v, dtype=dt.float64, requires_grad=True)


# name -> (function, [(shape, kind), ...])
OPS: dict[str, tuple[Callable[..., Any], list[tuple[tuple[int, ...], str]]]] = {
    # unary
    "exp": (dt.exp, [((3, 4), "any")]),
    "log": (dt.log, [((3, 4), "pos")]),
    "log2": (dt.log2, [((5,), "pos")]),
    "log10": (dt.log10, [((5,), "pos")]),
    "log1p": (dt.log1p, [((5,), "pos")]),
    "expm1": (dt.expm1, [((5,), "any")]),
    "sqrt": (dt.sqrt, [((3, 4), "pos")]),
    "rsqrt": (dt.rsqrt, [((3, 4), "pos")]),
    "tanh": (dt.tanh, [((3, 4), "any")]),
    "sigmoid": (dt.sigmoid, [((3, 4), "any")]),
    "abs": (dt.abs, [((3, 4), "any")]),
    "neg": (lambda x: -x, [((3, 4), "any")]),
    "sin": (dt.sin, [((6,), "any")]),
    "cos": (dt.cos, [((6,), "any")]),
    "reciprocal": (dt.reciprocal, [((6,), "any")]),
    "relu": (dt.relu, [((3, 4), "any")]),
    "erf": (dt.erf, [((6,), "any")]),
    "square": (dt.square, [((6,), "any")]),
    "floor": (dt.floor, [((6,), "any")]),
    "ceil": (dt.ceil, [((6,), "any")]),
    "round": (dt.round, [((6,), "any")]),
    "trunc": (dt.trunc, [((6,), "any")]),
    "sign": (dt.sign, [((6,), "any")]),
    "clamp": (lambda x: dt.clamp(x, -0.5, 0.7), [((4, 5), "any")]),
    "clamp_min": (lambda x: x.clamp(min=0.1), [((4, 5), "any")]),
    "clamp_tensor": (lambda x, lo, hi: dt.clamp(x, lo, hi + 2.0), [((3, 4), "any"), ((4,), "any"), ((3, 1), "any")]),
    "pow_scalar_2": (lambda x: x ** 2, [((3, 4), "any")]),
    "pow_scalar_half": (lambda x: x ** 0.5, [((3, 4), "pos")]),
    "pow_scalar_neg": (lambda x: x ** -1.5, [((3, 4), "pos")]),
    "pow_scalar_0": (lambda x: x ** 0, [((3, 4), "any")]),
    "rpow": (lambda x: 2.5 ** x, [((3, 4), "any")]),
    # binary with broadcasting
    "add": (lambda a, b: a + b, [((3, 4), "any"), ((4,), "any")]),
    "add_alpha": (lambda a, b: dt.add(a, b, alpha=-2.5), [((3, 1), "any"), ((1, 4), "any")]),
    "sub": (lambda a, b: a - b, [((2, 3, 4), "any"), ((3, 1), "any")]),
    "rsub": (lambda a: 1.5 - a, [((3,), "any")]),
    "mul": (lambda a, b: a * b, [((3, 4), "any"), ((3, 1), "any")]),
    "mul_scalar_tensor": (lambda a, b: a * b, [((3, 4), "any"), ((), "any")]),
    "div": (lambda a, b: a / b, [((3, 4), "any"), ((4,), "any")]),
    "rdiv": (lambda a: 2.0 / a, [((3, 4), "any")]),
    "pow_tensor": (lambda a, b: a ** b, [((3, 4), "pos"), ((4,), "any")]),
    "maximum": (dt.maximum, [((3, 4), "any"), ((4,), "any")]),
    "minimum": (dt.minimum, [((3, 4), "any"), ((3, 1), "any")]),
    "remainder": (lambda a, b: a % b, [((3, 4), "any"), ((4,), "pos")]),
    "fmod": (dt.fmod, [((3, 4), "any"), ((4,), "pos")]),
    "where": (lambda a, b: dt.where(dt.tensor([[True, False, True, False]]), a, b), [((3, 4), "any"), ((3, 1), "any")]),
    "where_scalar": (lambda a: dt.where(dt.tensor([True, False, True]), a, 0.0), [((2, 3), "any")]),
    "masked_fill": (lambda a: a.masked_fill(dt.tensor([True, False, True]), 1.5), [((2, 3), "any")]),
    "lerp": (lambda a, b: dt.lerp(a, b, 0.3), [((3, 4), "any"), ((4,), "any")]),
    # matmul
    "matmul_1d_1d": (dt.matmul, [((4,), "any"), ((4,), "any")]),
    "matmul_2d_2d": (dt.matmul, [((3, 4), "any"), ((4, 2), "any")]),
    "matmul_1d_2d": (dt.matmul, [((4,), "any"), ((4, 2), "any")]),
    "matmul_2d_1d": (dt.matmul, [((3, 4), "any"), ((4,), "any")]),
    "matmul_batched": (dt.matmul, [((2, 1, 3, 4), "any"), ((3, 4, 2), "any")]),
    "matmul_batched_1d": (dt.matmul, [((2, 3, 4), "any"), ((4,), "any")]),
    "matmul_1d_batched": (dt.matmul, [((3,), "any"), ((2, 3, 4), "any")]),
    "mm_transposed": (lambda a, b: a.T @ b, [((4, 3), "any"), ((4, 2), "any")]),
    "dot": (dt.dot, [((5,), "any"), ((5,), "any")]),
    "outer": (dt.outer, [((3,), "any"), ((4,), "any")]),
    # reductions
    "sum": (lambda x: x.sum(), [((3, 4), "any")]),
    "sum_dim": (lambda x: x.sum(1), [((3, 4), "any")]),
    "sum_dims_keepdim": (lambda x: x.sum((0, 2), keepdim=True), [((2, 3, 4), "any")]),
    "mean": (lambda x: x.mean(), [((3, 4), "any")]),
    "mean_dim": (lambda x: x.mean(-1, keepdim=True), [((3, 4), "any")]),
    "amax": (lambda x: x.amax(1), [((3, 4), "any")]),
    "max_all": (lambda x: x.max(), [((3, 4), "any")]),
    "max_dim": (lambda x: x.max(1).values, [((3, 4), "any")]),
    "max_dim_keepdim": (lambda x: x.max(0, keepdim=True)[0], [((3, 4), "any")]),
    "min_all": (lambda x: x.min(), [((3, 4), "any")]),
    "min_dim": (lambda x: dt.min(x, -1)[0], [((3, 4), "any")]),
    "var": (lambda x: x.var(), [((3, 4), "any")]),
    "var_dim_corr0": (lambda x: x.var(1, correction=0), [((3, 4), "any")]),
    "var_dims_keepdim": (lambda x: x.var((0, 1), keepdim=True, correction=2), [((3, 4), "any")]),
    "std": (lambda x: x.std(0), [((3, 4), "any")]),
    "std_all": (lambda x: x.std(), [((3, 4), "any")]),
    "prod": (lambda x: x.prod(), [((5,), "any")]),
    "prod_dim": (lambda x: x.prod(1), [((3, 4), "any")]),
    "cumsum": (lambda x: x.cumsum(1), [((3, 4), "any")]),
    "logsumexp": (lambda x: x.logsumexp(1), [((3, 4), "any")]),
    "norm": (lambda x: x.norm(), [((3, 4), "any")]),
    "norm_p1_dim": (lambda x: x.norm(1, dim=0), [((3, 4), "any")]),
    "sort_values": (lambda x: x.sort(1).values, [((3, 4), "any")]),
    "topk_values": (lambda x: x.topk(2, 1).values, [((3, 4), "any")]),
    # shape
    "reshape": (lambda x: x.reshape(4, 3), [((3, 4), "any")]),
    "reshape_noncontig": (lambda x: x.T.reshape(-1), [((3, 4), "any")]),
    "view": (lambda x: x.view(2, 6), [((3, 4), "any")]),
    "permute": (lambda x: x.permute(2, 0, 1), [((2, 3, 4), "any")]),
    "transpose": (lambda x: x.transpose(0, -1), [((2, 3, 4), "any")]),
    "T": (lambda x: x.T * 1, [((3, 4), "any")]),
    "mT": (lambda x: x.mT, [((2, 3, 4), "any")]),
    "flatten": (lambda x: x.flatten(1), [((2, 3, 4), "any")]),
    "squeeze": (lambda x: x.squeeze(), [((3, 1, 4, 1), "any")]),
    "squeeze_dim": (lambda x: x.squeeze(1), [((3, 1, 4), "any")]),
    "unsqueeze": (lambda x: x.unsqueeze(-1), [((3, 4), "any")]),
    "expand": (lambda x: x.expand(2, 3, 4), [((3, 1), "any")]),
    "expand_as_mul": (lambda x, y: x.expand_as(y) * y, [((1, 4), "any"), ((3, 4), "any")]),
    "repeat": (lambda x: x.repeat(2, 1, 3), [((3, 2), "any")]),
    "tile": (lambda x: x.tile((2,)), [((3, 2), "any")]),
    "cat": (lambda a, b: dt.cat([a, b], 1), [((3, 2), "any"), ((3, 4), "any")]),
    "cat_same_twice": (lambda a: dt.cat([a, a * 2], 0), [((3, 2), "any")]),
    "stack": (lambda a, b: dt.stack([a, b], -1), [((3, 2), "any"), ((3, 2), "any")]),
    "split": (lambda x: x.split(2, 1)[1] * 3, [((3, 5), "any")]),
    "split_sizes": (lambda x: dt.cat(x.split([1, 3, 1], 1)[::-1], 1), [((3, 5), "any")]),
    "chunk": (lambda x: x.chunk(3, 0)[2], [((5, 2), "any")]),
    "unbind": (lambda x: x.unbind(1)[1], [((3, 4), "any")]),
    "flip": (lambda x: x.flip((0, 1)), [((3, 4), "any")]),
    "narrow": (lambda x: x.narrow(1, 1, 2), [((3, 4), "any")]),
    "select": (lambda x: x.select(0, -1), [((3, 4), "any")]),
    "gather": (lambda x: x.gather(1, dt.tensor([[0, 0], [3, 1], [2, 2]])), [((3, 4), "any")]),
    "index_select_repeat": (lambda x: x.index_select(0, dt.tensor([2, 0, 2])), [((3, 4), "any")]),
    "pad": (lambda x: dt.nn.functional.pad(x, (1, 2, 0, 1)), [((2, 3), "any")]),
    "tril": (lambda x: x.tril(), [((3, 4), "any")]),
    "triu": (lambda x: x.triu(1), [((3, 4), "any")]),
    "contiguous": (lambda x: x.T.contiguous(), [((3, 4), "any")]),
    "clone": (lambda x: x.clone(), [((3, 4), "any")]),
    # indexing
    "index_int": (lambda x: x[1], [((3, 4), "any")]),
    "index_neg_int": (lambda x: x[-1, -2], [((3, 4), "any")]),
    "index_slice_step": (lambda x: x[::2, 1::2], [((5, 4), "any")]),
    "index_none_ellipsis": (lambda x: x[None, ..., 1], [((2, 3, 4), "any")]),
    "index_bool_mask": (lambda x: x[dt.tensor([True, False, True])], [((3, 4), "any")]),
    "index_bool_mask_full": (lambda x: x[x > 0], [((3, 4), "any")]),
    "index_int_array_repeat": (lambda x: x[dt.tensor([0, 2, 0, 0])], [((3, 4), "any")]),
    "index_two_arrays": (lambda x: x[dt.tensor([0, 2, 0]), dt.tensor([1, 1, 1])], [((3, 4), "any")]),
    "index_list": (lambda x: x[:, [3, 3, 0]], [((3, 4), "any")]),
    "index_mixed": (lambda x: x[1:, None, dt.tensor([1, 0, 1])], [((3, 4), "any")]),
    "setitem": (lambda x, v: _setitem(x, (slice(None), 1), v), [((3, 4), "any"), ((3,), "any")]),
    "setitem_mask": (lambda x: _setitem(x, x > 0.5, 0.0), [((3, 4), "any")]),
}


def _setitem(x: dt.Tensor, key: Any, v: Any) -> dt.Tensor:
    y = x * 1  # a non-leaf copy: in-place on a leaf that requires grad is an error
    y[key] = v
    return y


@pytest.mark.parametrize("name", list(OPS))
def test_gradcheck(name: str) -> None:
    fn, specs = OPS[name]
    inputs = tuple(_inp(shape, seed, kind) for seed, (shape, kind) in enumerate(specs))
    assert gradcheck(fn, inputs)


@pytest.mark.parametrize("name", ["add", "mul", "matmul_2d_2d", "sum_dim", "reshape", "index_slice_step"])
def test_gradcheck_noncontiguous_inputs(name: str) -> None:
    fn, specs = OPS[name]
    inputs = []
    for seed, (shape, kind) in enumerate(specs):
        base = _inp(tuple(reversed(shape)) + (2,), seed, kind).detach()
        view = base[..., 0].permute(*reversed(range(len(shape)))) if shape else base[..., 0]
        assert view.shape == shape
        inputs.append(view.requires_grad_())
    assert gradcheck(fn, tuple(inputs))


def test_gradcheck_pow_zero_edge_cases() -> None:
    # 0 ** 0: torch gives d/dx = 0 and d/dy = 0 (the log term is masked where x == 0 and y >= 0)
    x = dt.tensor([0.0, 0.0, 2.0], dtype=dt.float64, requires_grad=True)
    y = dt.tensor([0.0, 2.0, 0.0], dtype=dt.float64, requires_grad=True)
    (x ** y).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]
    assert y.grad.tolist() == [0.0, 0.0, float(np.log(2.0))]
    x.grad = None
    (x ** 0).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]
    x.grad = None
    (x ** 2.0).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 4.0]


def test_gradcheck_reports_bad_gradient() -> None:
    from dtorch._prims.pointwise import Exp

    class BadExp(Exp):
        def backward(self, g: np.ndarray) -> np.ndarray:
            _, out = self.saved
            return g * out * 1.01

    x = _inp((2, 3), 0)
    with pytest.raises(GradcheckError, match=r"input 0.*worst at input element \[\d, \d\]"):
        gradcheck(lambda a: BadExp.apply(a), (x,))
    assert gradcheck(lambda a: BadExp.apply(a), (x,), raise_exception=False) is False


def test_gradcheck_argument_errors() -> None:
    with pytest.raises(ValueError, match="float64"):
        gradcheck(dt.exp, (dt.ones(2, requires_grad=True),))
    with pytest.raises(ValueError, match="requires_grad"):
        gradcheck(dt.exp, (dt.ones(2, dtype=dt.float64),))
    # several outputs, a non-tensor argument, an input that does not require grad
    a, b = _inp((3,), 0), _inp((3,), 1).detach()
    assert gradcheck(lambda x, k, y: (x * k, x * y + y), (a, 3.0, b))


def test_every_differentiable_primitive_is_gradchecked() -> None:
    """Each differentiable primitive of the core families of dtorch._prims is exercised by an entry of OPS."""
    from dtorch._prims import linalg, pointwise, reduce, shape
    from dtorch.autograd import function as fn_mod

    prims = {c.name for mod in (pointwise, linalg, reduce, shape) for c in vars(mod).values()
             if isinstance(c, type) and issubclass(c, fn_mod.Function) and c.differentiable and c.name}
    used: set[str] = set()

    def hook(cls: type, inputs: Any, attrs: Any, result: Any) -> None:
        used.add(cls.name)

    fn_mod._trace_hooks.append(hook)
    try:
        for fn, specs in OPS.values():
            fn(*(_inp(shape, seed, kind) for seed, (shape, kind) in enumerate(specs)))
        x = _inp((2, 3), 0)
        y = x * 1
        y[0].mul_(2.0)  # in-place on a view of a non-leaf: copy_slices
        (x.float() * 2).double()  # cast
    finally:
        fn_mod._trace_hooks.remove(hook)
    assert prims - used == set(), f"primitives without a gradcheck: {sorted(prims - used)}"


def _inplace_view(a: dt.Tensor) -> dt.Tensor:
    y = a * 1
    y[0].mul_(y[1])
    return y


def test_gradcheck_cast() -> None:
    # float32 round trip: finite differences need a larger step than float32's resolution
    x = _inp((3, 4), 0)
    assert gradcheck(lambda a: (a.float() * 3).double(), (x,), eps=1e-3, atol=1e-3, rtol=1e-2)


def test_gradcheck_inplace_on_views() -> None:
    x = _inp((3, 4), 0)
    assert gradcheck(_inplace_view, (x,))
    assert gradcheck(lambda a: (a * 1).T.contiguous().add_(a.T), (x,))
