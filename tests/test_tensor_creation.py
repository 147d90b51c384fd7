"""Tensor creation against PyTorch: tensor/zeros/ones/full/arange/linspace, random tensors, *_like, NumPy."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensor_oracle import DTYPES, assert_close, ddtype, tdtype

import dtorch as dt

DATA = [3, 2.5, True, [1, 2, 3], [1.0, 2], [True, False], [[1, 2], [3, 4]], [[1.5], [2.0]], [], [[]],
        [True, 2], [[[]]], np.array([1.0, 2.0]), np.array([1, 2], dtype=np.int32), np.float64(2.0),
        np.float32(1.5), np.array(3, dtype=np.uint8), np.zeros((2, 0, 3), dtype=np.float16)]


@pytest.mark.parametrize("data", DATA, ids=repr)
def test_tensor_infers_dtype_and_shape(data: object) -> None:
    assert_close(dt.tensor(data), torch.tensor(data))


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensor_with_dtype(dtype: str) -> None:
    data = [[0, 1, 2], [3, 4, 5]]
    assert_close(dt.tensor(data, dtype=ddtype(dtype)), torch.tensor(data, dtype=tdtype(dtype)))
    assert_close(dt.tensor(np.array(data, np.float64), dtype=ddtype(dtype)),
                 torch.tensor(np.array(data, np.float64), dtype=tdtype(dtype)))


def test_tensor_copies_and_requires_grad() -> None:
    a = np.array([1.0, 2.0])
    t = dt.tensor(a, requires_grad=True)
    a[0] = 9.0
    assert t.tolist() == [1.0, 2.0] and t.requires_grad and t.is_leaf
    with pytest.raises(RuntimeError, match="floating point"):
        dt.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="overflow"):
        dt.tensor([300], dtype=dt.uint8)
    with pytest.raises(ValueError):
        dt.tensor([[1, 2], [3]])
    with pytest.raises(TypeError):
        dt.tensor("abc")


SIZES = [(), (0,), (3,), (2, 3), (2, 0, 4), (1, 1, 1)]


@pytest.mark.parametrize("size", SIZES, ids=str)
@pytest.mark.parametrize("dtype", [None, *DTYPES])
def test_zeros_ones_empty_full(size: tuple[int, ...], dtype: str | None) -> None:
    kw_d = {} if dtype is None else {"dtype": ddtype(dtype)}
    kw_t = {} if dtype is None else {"dtype": tdtype(dtype)}
    if size:
        assert_close(dt.zeros(*size, **kw_d), torch.zeros(*size, **kw_t))
    assert_close(dt.zeros(size, **kw_d), torch.zeros(size, **kw_t))
    assert_close(dt.ones(size, **kw_d), torch.ones(size, **kw_t))
    e, te = dt.empty(size, **kw_d), torch.empty(size, **kw_t)
    assert e.shape == te.shape and e.dtype.name == str(te.dtype)[6:]
    for fill in (2, 1.5, True):
        if dtype is None or dtype == "bool" or not isinstance(fill, float) or ddtype(dtype).is_floating_point:
            assert_close(dt.full(size, fill, **kw_d), torch.full(size, fill, **kw_t))


def test_size_arguments() -> None:
    assert dt.zeros([2, 3]).shape == (2, 3)
    assert dt.ones(dt.Size([4])).shape == (4,)
    assert isinstance(dt.zeros(2, 3).shape, dt.Size)
    assert repr(dt.zeros(2, 3).shape) == "dtorch.Size([2, 3])"
    with pytest.raises(RuntimeError, match="negative dimension"):
        dt.zeros(-1)
    with pytest.raises(TypeError):
        dt.zeros(2.5)


ARANGE = [(5,), (5.0,), (0, 10, 3), (10, 0, -3), (10, -1, -3), (0, 1, 0.1), (1, 2.5, 0.5), (-1.0, 1.0, 0.3),
          (0, 0), (3, 3, 1), (0.5, 3), (-5, 5, 2), (0, 1, 1 / 3)]


@pytest.mark.parametrize("args", ARANGE, ids=str)
@pytest.mark.parametrize("dtype", [None, "float32", "float64", "float16", "bfloat16", "int64", "int32"])
def test_arange(args: tuple[float, ...], dtype: str | None) -> None:
    kw_d = {} if dtype is None else {"dtype": ddtype(dtype)}
    kw_t = {} if dtype is None else {"dtype": tdtype(dtype)}
    if dtype is not None and dtype.startswith("int") and len(args) == 3 and 0 < abs(args[2]) < 1:
        return  # the step truncates to 0 in an integer dtype (torch's result is degenerate; dtorch raises)
    expected = torch.arange(*args, **kw_t)
    got = dt.arange(*args, **kw_d)
    assert_close(got, expected)


def test_arange_counts_and_errors() -> None:
    assert dt.arange(0, 1, 0.1).shape == (10,)
    assert dt.arange(0, 5, 1.5, dtype=dt.int64).tolist() == torch.arange(0, 5, 1.5, dtype=torch.int64).tolist()
    assert dt.arange(1, 2, 0.3).numel() == torch.arange(1, 2, 0.3).numel()
    assert dt.arange(dt.tensor(3)).tolist() == [0, 1, 2]
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        dt.arange(0, 1, 0)
    with pytest.raises(RuntimeError, match="inconsistent with step sign"):
        dt.arange(1, 0, 1)
    with pytest.raises(RuntimeError):
        dt.arange(0, float("inf"))


LINSPACE = [(0, 1, 5), (-1, 1, 7), (0, 10, 4), (-5, 5, 4), (0, 1, 1), (0, 1, 0), (2, -3, 6), (0, 9, 4)]


@pytest.mark.parametrize("args", LINSPACE, ids=str)
@pytest.mark.parametrize("dtype", [None, "float64", "float16", "bfloat16", "int64", "int8"])
def test_linspace(args: tuple[float, float, int], dtype: str | None) -> None:
    kw_d = {} if dtype is None else {"dtype": ddtype(dtype)}
    kw_t = {} if dtype is None else {"dtype": tdtype(dtype)}
    assert_close(dt.linspace(*args, **kw_d), torch.linspace(*args, **kw_t))


def test_linspace_errors() -> None:
    with pytest.raises(RuntimeError, match="non-negative"):
        dt.linspace(0, 1, -1)


@pytest.mark.parametrize("fn", ["randn", "rand"])
@pytest.mark.parametrize("dtype", [None, "float32", "float64", "float16", "bfloat16"])
def test_random_float_shapes_dtypes(fn: str, dtype: str | None) -> None:
    kw = {} if dtype is None else {"dtype": ddtype(dtype)}
    for size in [(), (0,), (3, 4), (2, 1, 5)]:
        x = getattr(dt, fn)(*size, **kw)
        assert x.shape == size
        assert x.dtype is (dt.float32 if dtype is None else ddtype(dtype))
    x = getattr(dt, fn)(2000, dtype=dt.float64)
    if fn == "rand":
        assert 0.0 <= x.min().item() and x.max().item() < 1.0 and abs(x.mean().item() - 0.5) < 0.05
    else:
        assert abs(x.mean().item()) < 0.1 and abs(x.std().item() - 1.0) < 0.1
    with pytest.raises(NotImplementedError):
        getattr(dt, fn)(2, dtype=dt.int64)


def test_randint() -> None:
    x = dt.randint(3, 10, (50,))
    assert x.dtype is dt.int64 and x.shape == (50,)
    assert 3 <= x.min().item() and x.max().item() < 10
    y = dt.randint(5, (2, 3))
    assert y.shape == (2, 3) and 0 <= y.min().item() and y.max().item() < 5
    assert dt.randint(0, 4, (3,), dtype=dt.float32).dtype is dt.float32
    assert dt.randint(0, 4, (3,), dtype=dt.uint8).dtype is dt.uint8
    with pytest.raises(RuntimeError, match="'from' to be less than 'to'"):
        dt.randint(5, 3, (2,))


@pytest.mark.parametrize("fn", ["randn", "rand", "randint", "randperm", "normal"])
def test_seeding_is_reproducible(fn: str) -> None:
    def draw(gen: dt.Generator | None = None) -> list:  # type: ignore[type-arg]
        if fn == "randint":
            return dt.randint(0, 100, (6,), generator=gen).tolist()
        if fn == "randperm":
            return dt.randperm(8, generator=gen).tolist()
        if fn == "normal":
            return dt.normal(0.0, 1.0, (6,), generator=gen).tolist()
        return getattr(dt, fn)(6, generator=gen).tolist()

    dt.manual_seed(1234)
    a = draw()
    dt.manual_seed(1234)
    b = draw()
    assert a == b
    assert draw() != b  # the stream moves on
    g1 = dt.Generator().manual_seed(7)
    g2 = dt.Generator().manual_seed(7)
    dt.manual_seed(0)
    x = draw(g1)
    draw()  # the default generator does not disturb a separate one
    assert draw(g2) == x
    assert draw(dt.Generator().manual_seed(8)) != x


def test_rng_state_roundtrip() -> None:
    dt.manual_seed(3)
    state = dt.get_rng_state()
    a = dt.rand(4).tolist()
    dt.set_rng_state(state)
    assert dt.rand(4).tolist() == a
    g = dt.Generator()
    assert g.manual_seed(5) is g and g.initial_seed() == 5
    assert dt.manual_seed(11).initial_seed() == 11 and dt.initial_seed() == 11


@pytest.mark.parametrize("dtype", DTYPES)
def test_like_functions(dtype: str) -> None:
    src = dt.zeros(2, 3, dtype=ddtype(dtype))
    tsrc = torch.zeros(2, 3, dtype=tdtype(dtype))
    assert_close(dt.zeros_like(src), torch.zeros_like(tsrc))
    assert_close(dt.ones_like(src), torch.ones_like(tsrc))
    assert_close(dt.full_like(src, 1), torch.full_like(tsrc, 1))
    assert dt.empty_like(src).shape == (2, 3) and dt.empty_like(src).dtype is ddtype(dtype)
    assert_close(dt.zeros_like(src, dtype=dt.float64), torch.zeros_like(tsrc, dtype=torch.float64))
    if ddtype(dtype).is_floating_point:
        for fn in ("rand_like", "randn_like"):
            r = getattr(dt, fn)(src)
            assert r.shape == (2, 3) and r.dtype is ddtype(dtype)
    elif dtype != "bool":
        r = dt.randint_like(src, 0, 5)
        assert r.shape == (2, 3) and r.dtype is ddtype(dtype)
        with pytest.raises(NotImplementedError):
            dt.rand_like(src)
    r = dt.zeros_like(src.float(), requires_grad=True)
    assert r.requires_grad and r.is_leaf


@pytest.mark.parametrize("np_dtype", [np.float32, np.float64, np.float16, np.int64, np.int32, np.int8, np.uint8,
                                      np.bool_])
def test_from_numpy_shares_memory(np_dtype: type) -> None:
    a = np.arange(6).reshape(2, 3).astype(np_dtype)
    t = dt.from_numpy(a)
    tt = torch.from_numpy(a.copy())
    assert_close(t, tt)
    a[0, 0] = 1
    assert t[0, 0].item() == a[0, 0]
    t[1, 2] = 0
    assert a[1, 2] == 0
    n = t.numpy()
    assert np.shares_memory(n, a)


def test_from_numpy_views_and_errors() -> None:
    a = np.arange(12.0).reshape(3, 4)
    t = dt.from_numpy(a[:, ::2])
    assert t.shape == (3, 2) and t.stride() == torch.from_numpy(a[:, ::2]).stride() == (4, 2)
    assert not t.is_contiguous() and np.shares_memory(t.numpy(), a)
    with pytest.raises(TypeError):
        dt.from_numpy([1, 2])
    with pytest.raises(TypeError):
        dt.from_numpy(np.array([1 + 2j]))


def test_numpy_roundtrip() -> None:
    x = dt.arange(6.0).reshape(2, 3)
    n = x.numpy()
    n[0, 0] = 42.0
    assert x[0, 0].item() == 42.0  # .numpy() shares memory, as in torch
    with pytest.raises(RuntimeError, match="requires grad"):
        dt.ones(2, requires_grad=True).numpy()
    assert dt.ones(2, requires_grad=True).detach().numpy().tolist() == [1.0, 1.0]
    assert dt.tensor([1.5], dtype=dt.bfloat16).numpy().dtype.name == "bfloat16"
    assert dt.tensor(2.5).item() == 2.5 and isinstance(dt.tensor(2).item(), int)
    assert dt.tensor([[1, 2]]).tolist() == [[1, 2]]
    assert dt.tensor([1.5], dtype=dt.bfloat16).tolist() == [1.5]


def test_as_tensor_shares_numpy_memory() -> None:
    a = np.array([1.0, 2.0])
    t = dt.as_tensor(a)
    a[0] = 5.0
    assert t[0].item() == 5.0
    assert dt.as_tensor(t) is t
    assert dt.as_tensor([1, 2]).dtype is dt.int64


def test_eye() -> None:
    assert_close(dt.eye(3), torch.eye(3))
    assert_close(dt.eye(2, 4, dtype=dt.int64), torch.eye(2, 4, dtype=torch.int64))


def test_unknown_device() -> None:
    with pytest.raises(dt.DeviceError, match="'cuda'.*cpu"):
        dt.zeros(2, device="cuda")
    assert issubclass(dt.DeviceError, RuntimeError)
    with pytest.raises(dt.DeviceError, match="cuda:1"):
        dt.tensor([1.0], device="cuda:1")
    with pytest.raises(dt.DeviceError, match="mps"):
        dt.ones(2).to("mps")
    assert dt.zeros(2, device="cpu").device == dt.device("cpu")
    assert dt.zeros(2, device=dt.device("cpu")).device.type == "cpu"
