"""`Tensor`: a NumPy array with autograd bookkeeping and the PyTorch method surface.

The array lives in `_data`; `.data` gives a detached Tensor sharing it, as in PyTorch. Every
differentiable method composes primitives from `dtorch.ops` (see `dtorch/_functions.py`).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np

from . import dtypes as _dt
from .autograd.grad_mode import is_grad_enabled

__all__ = ["Tensor", "Size"]


class Size(tuple):
    """The shape of a tensor: a tuple of ints."""

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self) -> str:
        return f"dtorch.Size([{', '.join(map(str, self))}])"


class Tensor:
    __slots__ = ("_data", "_rg", "grad", "_ctx", "_hooks", "__weakref__", "__dict__")
    __array_priority__ = 1000

    def __init__(self, *args: Any) -> None:
        # Tensor(array) or Tensor(d0, d1, ...) (uninitialized float tensor, as torch.Tensor does)
        if len(args) == 1 and not isinstance(args[0], (int, np.integer)):
            self._data = np.asarray(args[0].numpy() if isinstance(args[0], Tensor) else args[0])
            if self._data.dtype.kind == "f" and self._data.dtype != np.float64 and self._data.dtype.itemsize > 2:
                pass
            if self._data.dtype == np.float64 and not isinstance(args[0], np.ndarray):
                self._data = self._data.astype(_dt.get_default_dtype().np)
        else:
            self._data = np.zeros(tuple(int(a) for a in args), dtype=_dt.get_default_dtype().np)
        self._rg = False
        self.grad: Tensor | None = None
        self._ctx: Any = None
        self._hooks: list[Callable[..., Any]] | None = None

    @classmethod
    def _wrap(cls, arr: np.ndarray, requires_grad: bool = False) -> Tensor:
        t = object.__new__(cls)
        t._data = arr
        t._rg = requires_grad
        t.grad = None
        t._ctx = None
        t._hooks = None
        return t

    # ---------------------------------------------------------------- metadata
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None) -> Any:
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_norm_dim(dim, self._data.ndim)]

    @property
    def dtype(self) -> _dt.dtype:
        return _dt.from_numpy_dtype(self._data.dtype)

    @property
    def device(self) -> Any:
        from .device import CPU

        return CPU

    @property
    def is_cuda(self) -> bool:
        return False

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return int(self._data.size)

    nelement = numel

    def element_size(self) -> int:
        return self._data.itemsize

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind == "f" or self._data.dtype.name == "bfloat16"

    def is_contiguous(self, memory_format: Any = None) -> bool:
        return bool(self._data.flags.c_contiguous)

    def stride(self, dim: int | None = None) -> Any:
        st = tuple(s // self._data.itemsize for s in self._data.strides)
        return st if dim is None else st[_norm_dim(dim, self._data.ndim)]

    def data_ptr(self) -> int:
        return int(self._data.__array_interface__["data"][0]) if self._data.size else 0

    @property
    def data(self) -> Tensor:
        return Tensor._wrap(self._data)

    @data.setter
    def data(self, value: Any) -> None:
        arr = value._data if isinstance(value, Tensor) else np.asarray(value)
        self._data = arr

    # ---------------------------------------------------------------- autograd
    @property
    def requires_grad(self) -> bool:
        return self._rg

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        if flag and not self.is_floating_point():
            raise RuntimeError(f"only Tensors of floating point dtype can require gradients, got {self.dtype}")
        if self._ctx is not None and not flag:
            raise RuntimeError("you can only change requires_grad flags of leaf variables; use .detach() to get a "
                               "tensor that does not require grad")
        self._rg = bool(flag)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        return self._ctx is None

    @property
    def grad_fn(self) -> Any:
        return self._ctx

    def backward(self, gradient: Any = None, retain_graph: bool | None = None, create_graph: bool = False) -> None:
        from .autograd.engine import backward

        if create_graph:
            raise NotImplementedError("create_graph=True (higher-order gradients) is not supported by dtorch")
        backward(self, gradient, retain_graph=bool(retain_graph))

    def detach(self) -> Tensor:
        return Tensor._wrap(self._data)

    def detach_(self) -> Tensor:
        self._ctx = None
        self._rg = False
        return self

    def retain_grad(self) -> None:
        if self._ctx is None:
            return
        lst = self._ctx.__dict__.setdefault("retain_for", [])
        if self not in lst:
            lst.append(self)

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> Any:
        if not self._rg:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._ctx is not None:
            self.retain_grad()
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(hook)
        hooks = self._hooks

        class _Handle:
            def remove(self_inner) -> None:  # noqa: N805
                if hook in hooks:
                    hooks.remove(hook)

        return _Handle()

    # ---------------------------------------------------------------- conversion
    def numpy(self, *, force: bool = False) -> np.ndarray:
        if self._rg and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        return self._data

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._data if dtype is None else self._data.astype(dtype)

    def item(self) -> Any:
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        v = self._data.reshape(()).item() if self._data.dtype.name != "bfloat16" else float(self._data.reshape(()))
        return v

    def tolist(self) -> Any:
        if self._data.dtype.name == "bfloat16":
            return self._data.astype(np.float32).tolist()
        return self._data.tolist()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with {self._data.size} values is ambiguous")
        return bool(self._data.reshape(()))

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        arr = self._data
        if arr.dtype.name == "bfloat16":
            arr = arr.astype(np.float32)
        body = np.array2string(arr, separator=", ", prefix="tensor(", precision=4,
                               threshold=1000, edgeitems=3, floatmode="maxprec_equal")
        extras = []
        default = {_dt.get_default_dtype(), _dt.int64, _dt.bool_}
        if self.dtype not in default:
            extras.append(f"dtype={self.dtype}")
        if arr.size == 0 and arr.ndim != 1:
            extras.append(f"size={tuple(arr.shape)}")
        if self._ctx is not None:
            extras.append(f"grad_fn=<{type(self._ctx).__name__}Backward>")
        elif self._rg:
            extras.append("requires_grad=True")
        return "tensor(" + body + "".join(", " + e for e in extras) + ")"

    # ---------------------------------------------------------------- type / device moves
    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        from .device import check_device

        dtype = kwargs.pop("dtype", None)
        dev = kwargs.pop("device", None)
        copy = kwargs.pop("copy", False)
        kwargs.pop("non_blocking", None)
        kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        for a in args:
            if isinstance(a, Tensor):
                dtype = a.dtype
            elif isinstance(a, _dt.dtype):
                dtype = a
            elif isinstance(a, str) and (a in _dt._BY_NAME or a.startswith("dtorch.")):
                dtype = _dt.as_dtype(a)
            else:
                dev = a
        check_device(dev)
        out = self if dtype is None else self.type(dtype)
        if copy and out is self:
            out = self.clone()
        return out

    def cpu(self) -> Tensor:
        return self

    def cuda(self, *args: Any, **kwargs: Any) -> Tensor:
        from .device import check_device

        check_device("cuda")
        return self  # pragma: no cover

    def type(self, dtype: Any = None) -> Any:
        if dtype is None:
            return f"dtorch.{self.dtype.name.capitalize()}Tensor"
        d = _dt.as_dtype(dtype)
        if d.np == self._data.dtype:
            return self
        from .ops.elementwise import Cast

        return Cast.apply(self, dtype=d.np)

    def float(self) -> Tensor:
        return self.type(_dt.float32)

    def double(self) -> Tensor:
        return self.type(_dt.float64)

    def half(self) -> Tensor:
        return self.type(_dt.float16)

    def bfloat16(self) -> Tensor:
        return self.type(_dt.bfloat16)

    def long(self) -> Tensor:
        return self.type(_dt.int64)

    def int(self) -> Tensor:
        return self.type(_dt.int32)

    def short(self) -> Tensor:
        return self.type(_dt.int16)

    def char(self) -> Tensor:
        return self.type(_dt.int8)

    def byte(self) -> Tensor:
        return self.type(_dt.uint8)

    def bool(self) -> Tensor:
        return self.type(_dt.bool_)

    def type_as(self, other: Tensor) -> Tensor:
        return self.type(other.dtype)

    def new_zeros(self, *size: Any, dtype: Any = None, **kw: Any) -> Tensor:
        from .creation import zeros

        return zeros(*size, dtype=dtype or self.dtype, **kw)

    def new_ones(self, *size: Any, dtype: Any = None, **kw: Any) -> Tensor:
        from .creation import ones

        return ones(*size, dtype=dtype or self.dtype, **kw)

    def new_full(self, size: Any, fill_value: Any, dtype: Any = None, **kw: Any) -> Tensor:
        from .creation import full

        return full(size, fill_value, dtype=dtype or self.dtype, **kw)

    def new_empty(self, *size: Any, dtype: Any = None, **kw: Any) -> Tensor:
        return self.new_zeros(*size, dtype=dtype, **kw)

    def new_tensor(self, data: Any, dtype: Any = None, **kw: Any) -> Tensor:
        from .creation import tensor

        return tensor(data, dtype=dtype or self.dtype, **kw)

    # ---------------------------------------------------------------- in-place machinery
    def _inplace(self, result: Tensor) -> Tensor:
        """Make `self` hold `result`: into its own buffer when no graph is recorded, else by rebinding."""
        rd = result._data
        if rd.dtype != self._data.dtype:
            if _dt.from_numpy_dtype(rd.dtype)._category > self.dtype._category:
                raise RuntimeError(f"result type {result.dtype} can't be cast to the desired output type "
                                   f"{self.dtype} of an in-place operation")
        if result._ctx is not None:
            if self._ctx is None and self._rg:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation; "
                                   "wrap it in `with dtorch.no_grad():` or use the out-of-place op")
            if rd.dtype != self._data.dtype:
                result = result.type(self.dtype)
            self._data, self._ctx, self._rg = result._data, result._ctx, True
            return self
        if rd.shape != self._data.shape:
            try:
                rd = np.broadcast_to(rd, self._data.shape)
            except ValueError:
                raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
                                   f"{list(rd.shape)} of an in-place operation") from None
        if not self._data.flags.writeable:
            raise RuntimeError("unsupported operation: this tensor is an expanded (broadcast) view, which cannot be "
                               "written in place; call .clone() first")
        np.copyto(self._data, rd, casting="unsafe")
        return self

    def fill_(self, value: Any) -> Tensor:
        v = value.item() if isinstance(value, Tensor) else value
        if self._rg and self._ctx is None and is_grad_enabled():
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation")
        self._data[...] = v
        return self

    def zero_(self) -> Tensor:
        return self.fill_(0)

    def copy_(self, src: Any, non_blocking: bool = False) -> Tensor:
        from ._functions import as_tensor_like

        s = as_tensor_like(src, self)
        if is_grad_enabled() and (s._rg or self._rg):
            from ._functions import expand

            res = expand(s.type(self.dtype), self._data.shape) + 0 if s.shape != self.shape else s.type(self.dtype) + 0
            return self._inplace(res)
        return self._inplace(Tensor._wrap(s._data))

    def normal_(self, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Tensor:
        from .random import rng

        with_no_grad_fill(self, rng(generator).normal(mean, std, size=self._data.shape))
        return self

    def uniform_(self, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Tensor:
        from .random import rng

        with_no_grad_fill(self, rng(generator).uniform(a, b, size=self._data.shape))
        return self

    def bernoulli_(self, p: float = 0.5, generator: Any = None) -> Tensor:
        from .random import rng

        with_no_grad_fill(self, rng(generator).random(size=self._data.shape) < p)
        return self


def with_no_grad_fill(t: Tensor, values: np.ndarray) -> None:
    if t._rg and t._ctx is None and is_grad_enabled():
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation; "
                           "wrap it in `with dtorch.no_grad():`")
    np.copyto(t._data, values, casting="unsafe")


def _norm_dim(dim: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n
