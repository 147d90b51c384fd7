"""Shape ops against PyTorch: reshape/view (and the non-viewable-stride error), permute, transpose, flatten,
squeeze/unsqueeze, expand, cat/stack/split/chunk, on contiguous and non-contiguous inputs; views share memory."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensor_oracle import DTYPES, assert_close, pair, same_outcome, sample, torch_outcome

import dtorch as dt


def _src(shape: tuple[int, ...], layout: str = "contiguous", dtype: str = "float32") -> tuple[dt.Tensor, torch.Tensor]:
    return pair(sample(shape, dtype, np.random.default_rng(sum(shape) + len(shape))), dtype, layout)


RESHAPES = [((2, 3, 4), (6, 4)), ((2, 3, 4), (-1,)), ((2, 3, 4), (4, -1, 2)), ((2, 3, 4), (24,)), ((6,), (2, 3)),
            ((), (1,)), ((1,), ()), ((0, 3), (3, 0)), ((0, 3), (-1, 3)), ((2, 3), (5,)), ((2, 3), (-1, -1)),
            ((0,), (-1, 0)), ((2, 3, 4), (2, -1)), ((4,), (2, 2, 1, 1))]


@pytest.mark.parametrize(("shape", "new"), RESHAPES, ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
def test_reshape_and_view(shape: tuple[int, ...], new: tuple[int, ...], layout: str) -> None:
    d, t = _src(shape, layout)
    same_outcome(lambda: d.reshape(new), lambda: t.reshape(new))
    same_outcome(lambda: d.reshape(*new) if new else d.reshape(()), lambda: t.reshape(*new) if new else t.reshape(()))
    same_outcome(lambda: dt.reshape(d, new), lambda: torch.reshape(t, new))
    same_outcome(lambda: d.view(new), lambda: t.view(new))  # raises for non-viewable strides, as torch does


def test_view_error_message_and_memory_sharing() -> None:
    x = dt.arange(12.0).reshape(3, 4)
    with pytest.raises(RuntimeError, match=r"view size is not compatible.*Use \.reshape\(\.\.\.\) instead"):
        x.T.view(12)
    v = x.view(4, 3)
    v[0, 0] = 100.0
    assert x[0, 0].item() == 100.0
    r = x.T.reshape(12)  # needs a copy: writes do not reach x
    r[1] = -1.0
    assert x[1, 0].item() == 4.0
    assert x.view(-1).data_ptr() == x.data_ptr()
    assert_close(x.view_as(dt.zeros(2, 6)), torch.arange(12.0).reshape(3, 4).index_put_(
        (torch.tensor([0]), torch.tensor([0])), torch.tensor(100.0)).view(2, 6))
    with pytest.raises(RuntimeError, match="invalid for input of size 12"):
        x.view(5, -1)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        x.reshape(-1, -1)


PERMS = [((2, 3, 4), (2, 0, 1)), ((2, 3, 4), (-1, 0, 1)), ((3, 4), (1, 0)), ((), ()), ((2, 0, 3), (1, 2, 0)),
         ((2, 3, 4), (0, 1)), ((2, 3, 4), (0, 0, 1)), ((2, 3), (0, 2))]


@pytest.mark.parametrize(("shape", "perm"), PERMS, ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_permute(shape: tuple[int, ...], perm: tuple[int, ...], layout: str) -> None:
    d, t = _src(shape, layout)
    same_outcome(lambda: d.permute(perm), lambda: t.permute(perm))
    same_outcome(lambda: d.permute(*perm), lambda: t.permute(*perm))
    same_outcome(lambda: dt.permute(d, perm), lambda: torch.permute(t, perm))
    if layout == "contiguous":
        tp, err = torch_outcome(lambda: t.permute(perm))
        if err is not None:
            return
        assert d.permute(perm).stride() == tp.stride()
        assert d.permute(perm).is_contiguous() == tp.is_contiguous()


@pytest.mark.parametrize(("shape", "d0", "d1"), [((2, 3, 4), 0, 2), ((2, 3, 4), -1, 1), ((3,), 0, 0), ((3, 4), 0, 1),
                                                 ((), 0, -1), ((3, 4), 0, 2), ((2, 0), 1, 0)], ids=str)
def test_transpose_t_swapaxes(shape: tuple[int, ...], d0: int, d1: int) -> None:
    d, t = _src(shape)
    same_outcome(lambda: d.transpose(d0, d1), lambda: t.transpose(d0, d1))
    same_outcome(lambda: dt.transpose(d, d0, d1), lambda: torch.transpose(t, d0, d1))
    same_outcome(lambda: d.swapaxes(d0, d1), lambda: t.swapaxes(d0, d1))
    same_outcome(lambda: d.t(), lambda: t.t())
    if len(shape) >= 2:
        assert_close(d.T, t.permute(*reversed(range(len(shape)))))
        assert_close(d.mT, t.mT)


@pytest.mark.parametrize(("shape", "s", "e"), [((2, 3, 4), 0, -1), ((2, 3, 4), 1, 2), ((2, 3, 4), 2, 2), ((), 0, -1),
                                               ((2, 0, 4), 0, 1), ((2, 3), 1, 0), ((2, 3), 0, 5), ((5,), 0, 0)],
                         ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_flatten_unflatten(shape: tuple[int, ...], s: int, e: int, layout: str) -> None:
    d, t = _src(shape, layout)
    same_outcome(lambda: d.flatten(s, e), lambda: t.flatten(s, e))
    same_outcome(lambda: dt.flatten(d, start_dim=s, end_dim=e), lambda: torch.flatten(t, start_dim=s, end_dim=e))
    same_outcome(lambda: d.flatten(), lambda: t.flatten())
    if shape == (2, 3, 4):
        assert_close(d.unflatten(1, (3, 1)), t.unflatten(1, (3, 1)))
        assert_close(d.unflatten(-1, (2, -1)), t.unflatten(-1, (2, -1)))


@pytest.mark.parametrize("shape", [(3, 1, 4, 1), (1,), (), (1, 1), (2, 0, 1), (3, 4)], ids=str)
def test_squeeze_unsqueeze(shape: tuple[int, ...]) -> None:
    d, t = _src(shape)
    same_outcome(lambda: d.squeeze(), lambda: t.squeeze())
    for dim in range(-len(shape) - 2, len(shape) + 2):
        same_outcome(lambda: d.squeeze(dim), lambda: t.squeeze(dim))  # noqa: B023
        same_outcome(lambda: d.unsqueeze(dim), lambda: t.unsqueeze(dim))  # noqa: B023
        same_outcome(lambda: dt.unsqueeze(d, dim), lambda: torch.unsqueeze(t, dim))  # noqa: B023
    if len(shape) >= 2:
        same_outcome(lambda: d.squeeze((0, -1)), lambda: t.squeeze((0, -1)))
    s = d.squeeze()
    assert s is not d  # a new view, as torch returns


EXPANDS = [((3, 1), (3, 4)), ((3, 1), (2, 3, 5)), ((1,), (0,)), ((), (2, 3)), ((3, 1), (-1, 4)), ((3, 2), (3, 4)),
           ((3, 1), (4,)), ((2, 1), (-1, 2, 3)), ((0, 1), (0, 3))]


@pytest.mark.parametrize(("shape", "new"), EXPANDS, ids=str)
def test_expand(shape: tuple[int, ...], new: tuple[int, ...]) -> None:
    d, t = _src(shape)
    same_outcome(lambda: d.expand(new), lambda: t.expand(new))
    same_outcome(lambda: d.expand(*new), lambda: t.expand(*new))
    same_outcome(lambda: dt.broadcast_to(d, new), lambda: torch.broadcast_to(t, new))
    te, err = torch_outcome(lambda: t.expand(new))
    if err is not None:
        return
    assert d.expand(new).stride() == te.stride()


def test_expand_shares_memory_and_write_error() -> None:
    x = dt.zeros(3, 1)
    y = x.expand(3, 4)
    x[1, 0] = 5.0
    assert y[1].tolist() == [5.0] * 4
    with pytest.raises(RuntimeError):
        y.add_(1)
    with pytest.raises(RuntimeError):
        torch.zeros(3, 1).expand(3, 4).add_(1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cat_stack_dtypes(dtype: str) -> None:
    a, ta = _src((2, 3), dtype=dtype)
    b, tb = _src((4, 3), dtype=dtype)
    assert_close(dt.cat([a, b]), torch.cat([ta, tb]))
    assert_close(dt.cat((a, b), -2), torch.cat((ta, tb), -2))
    assert_close(dt.stack([a, a * 1 if dtype != "bool" else a]), torch.stack([ta, ta]))


CATS = [([(2, 3), (4, 3)], 0), ([(2, 3), (2, 5)], 1), ([(2, 3), (2, 5)], -1), ([(2, 3), (2, 0)], 1), ([(0,), (3,)], 0),
        ([(2, 3), (0,)], 0), ([(2, 3), (2, 4)], 0), ([(2, 3), (3,)], 0), ([(), ()], 0), ([(2, 3)], 2),
        ([(1, 2, 3), (1, 2, 3), (1, 2, 3)], 1)]


@pytest.mark.parametrize(("shapes", "dim"), CATS, ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_cat(shapes: list[tuple[int, ...]], dim: int, layout: str) -> None:
    pairs = [_src(s, layout) for s in shapes]
    same_outcome(lambda: dt.cat([p[0] for p in pairs], dim), lambda: torch.cat([p[1] for p in pairs], dim))
    same_outcome(lambda: dt.concat([p[0] for p in pairs], dim=dim), lambda: torch.concat([p[1] for p in pairs], dim=dim))


def test_cat_stack_argument_errors() -> None:
    for fd, ft in [(lambda: dt.cat([]), lambda: torch.cat([])), (lambda: dt.stack([]), lambda: torch.stack([])),
                   (lambda: dt.cat(dt.ones(2)), lambda: torch.cat(torch.ones(2))),
                   (lambda: dt.cat([dt.ones(2), 3]), lambda: torch.cat([torch.ones(2), 3]))]:
        same_outcome(fd, ft)


STACKS = [([(2, 3), (2, 3)], 0), ([(2, 3), (2, 3)], 2), ([(2, 3), (2, 3)], -1), ([(2, 3), (2, 3)], -3),
          ([(2, 3), (3, 2)], 0), ([(), ()], 0), ([(0, 2), (0, 2)], 1), ([(2,)], 3)]


@pytest.mark.parametrize(("shapes", "dim"), STACKS, ids=str)
def test_stack(shapes: list[tuple[int, ...]], dim: int) -> None:
    pairs = [_src(s, "strided" if s else "contiguous") for s in shapes]
    same_outcome(lambda: dt.stack([p[0] for p in pairs], dim), lambda: torch.stack([p[1] for p in pairs], dim))
    if len(shapes[0]) == 2 and shapes[0] == shapes[-1]:
        same_outcome(lambda: dt.hstack([p[0] for p in pairs]), lambda: torch.hstack([p[1] for p in pairs]))
        same_outcome(lambda: dt.vstack([p[0] for p in pairs]), lambda: torch.vstack([p[1] for p in pairs]))


SPLITS = [((5, 4), 2, 0), ((5, 4), 5, 0), ((5, 4), 7, 0), ((5, 4), [1, 3, 1], 0), ((5, 4), [2, 2], 1),
          ((5, 4), [1, 1], 1), ((5, 4), 3, -1), ((0, 4), 2, 0), ((5, 4), 0, 0), ((5, 4), [0, 5], 0), ((5, 4), 2, 2)]


@pytest.mark.parametrize(("shape", "arg", "dim"), SPLITS, ids=str)
def test_split(shape: tuple[int, ...], arg: object, dim: int) -> None:
    d, t = _src(shape, "transposed")
    same_outcome(lambda: d.split(arg, dim), lambda: t.split(arg, dim))
    same_outcome(lambda: dt.split(d, arg, dim=dim), lambda: torch.split(t, arg, dim=dim))


@pytest.mark.parametrize(("shape", "chunks", "dim"), [((5, 4), 3, 0), ((6, 4), 4, 0), ((5, 4), 1, 1), ((5, 4), 10, 1),
                                                      ((0, 4), 3, 0), ((5, 4), 0, 0), ((5, 4), 2, -1), ((13,), 6, 0),
                                                      ((5, 4), 2, 3)], ids=str)
def test_chunk(shape: tuple[int, ...], chunks: int, dim: int) -> None:
    d, t = _src(shape)
    same_outcome(lambda: d.chunk(chunks, dim), lambda: t.chunk(chunks, dim))
    same_outcome(lambda: dt.chunk(d, chunks, dim), lambda: torch.chunk(t, chunks, dim))


def test_split_chunk_views_share_memory() -> None:
    x = dt.zeros(4, 3)
    _, b = x.split(2)
    b[0, 0] = 7.0
    assert x[2, 0].item() == 7.0
    c = x.chunk(3, 1)[1]
    c.fill_(1.0)
    assert x[:, 1].tolist() == [1.0] * 4


def test_misc_shape_ops() -> None:
    d, t = _src((2, 3, 4))
    for f in [lambda m, x: x.repeat(2, 1, 1, 3), lambda m, x: x.tile((2,)), lambda m, x: x.flip(0, 2),
              lambda m, x: x.flip((-1,)), lambda m, x: x.narrow(1, 1, 2), lambda m, x: x.unbind(1),
              lambda m, x: x.select(2, -1), lambda m, x: x.movedim(0, -1) if hasattr(x, "movedim") and m is torch else
              x.permute(1, 2, 0), lambda m, x: x.contiguous(), lambda m, x: x.clone(),
              lambda m, x: m.tril(x[0]), lambda m, x: m.triu(x[0], -1), lambda m, x: x.expand_as(m.zeros(5, 2, 3, 4)),
              lambda m, x: x.reshape_as(m.zeros(4, 6)), lambda m, x: x.swapdims(0, 1)]:
        assert_close(f(dt, d), f(torch, t))
