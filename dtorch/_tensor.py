"""The `Tensor` class: a NumPy array with autograd bookkeeping, conversions and in-place plumbing.

The array lives in `_data`; `.data` gives a detached Tensor sharing it, as in PyTorch. In-place ops
write into the tensor's buffer; under autograd they rebind the tensor to the new graph node (and rebase
the base of a view onto a `copy_slices` node), see `Tensor._inplace`. The math methods and operators
(x.add, x @ y, x.sum(), ...) are the functional API of `dtorch/_functions/`, which builds on this class;
`dtorch/_tensor_methods.py` attaches them in one place. Import Tensor from `dtorch.tensor`, which
guarantees they are attached; only `_functions` and `_tensor_methods` import this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from . import dtypes as _dt
from .autograd.grad_mode import is_grad_enabled

__all__ = ["Size", "Tensor"]

# Set by dt.export while it traces a model: called as _trace_check(tensor, what) before a tensor's values are
# read from Python (bool, item, tolist, numpy, int, float, index), so data-dependent control flow is reported.
_trace_check: Callable[[Tensor, str], None] | None = None


_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
               "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


class Size(tuple):
    """The shape of a tensor: a tuple of ints (slices of it are Sizes too)."""

    def __getitem__(self, key: Any) -> Any:
        out = tuple.__getitem__(self, key)
        return Size(out) if isinstance(key, slice) else out

    def __add__(self, other: Any) -> Size:
        return Size(tuple(self) + tuple(other))

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self) -> str:
        return f"dtorch.Size([{', '.join(map(str, self))}])"


class Tensor:
    __slots__ = ("__dict__", "__weakref__", "_ctx", "_data", "_hooks", "_rg", "grad")
    __array_priority__ = 1000

    def __init__(self, *args: Any) -> None:
        # Tensor(data) copies data as the default float dtype; Tensor(d0, d1, ...) is an uninitialized
        # (here: zero) float tensor of that size; Tensor() is empty -- as torch.Tensor does.
        d = _dt.get_default_dtype().np
        if len(args) == 1 and not isinstance(args[0], (int, np.integer)):
            src = args[0]
            if isinstance(src, Size):
                self._data = np.zeros(tuple(src), dtype=d)
            else:
                arr = src._data if isinstance(src, Tensor) else np.asarray(src)
                if arr.dtype == object or (arr.dtype.kind in "USV" and arr.dtype is not _dt.BF16_NP):
                    raise TypeError(f"new(): invalid data type '{type(src).__name__}'")
                self._data = np.array(arr, dtype=d, copy=True)
        else:
            for a in args:
                if not isinstance(a, (int, np.integer)) or isinstance(a, bool) or a < 0:
                    raise TypeError(f"Tensor(): sizes must be non-negative ints, got {args}")
            self._data = np.zeros(tuple(int(a) for a in args) if args else (0,), dtype=d)
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
        return self._data.dtype.kind == "f" or self._data.dtype is _dt.BF16_NP

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
        from .autograd.engine import run_backward

        if create_graph:
            raise NotImplementedError("create_graph=True (higher-order gradients) is not supported by dtorch")
        run_backward((self,), (gradient,), retain_graph=bool(retain_graph))

    def detach(self) -> Tensor:
        return Tensor._wrap(self._data)

    def detach_(self) -> Tensor:
        self._ctx = None
        self._rg = False
        return self

    def retain_grad(self) -> None:
        """Keep this non-leaf tensor's gradient in `.grad` after backward (a no-op on leaves)."""
        if not self._rg:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._ctx is None:
            return
        self.__dict__["_retains"] = True
        self._watch()

    @property
    def retains_grad(self) -> bool:
        return self._ctx is not None and bool(self.__dict__.get("_retains"))

    def _watch(self) -> None:
        lst = self._ctx.__dict__.setdefault("retain_for", [])
        if not any(t is self for t in lst):
            lst.append(self)

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> Any:
        """Call `hook(grad)` when this tensor's gradient is computed; a returned tensor replaces the gradient."""
        if not self._rg:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._ctx is not None:
            self._watch()
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(hook)
        hooks = self._hooks

        class _Handle:
            def remove(self_inner) -> None:
                if hook in hooks:
                    hooks.remove(hook)

        return _Handle()

    # ---------------------------------------------------------------- conversion
    def numpy(self, *, force: bool = False) -> np.ndarray:
        if _trace_check is not None:
            _trace_check(self, "t.numpy()")
        if self._rg and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        return self._data

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._data if dtype is None else self._data.astype(dtype)

    def item(self) -> Any:
        if _trace_check is not None:
            _trace_check(self, "t.item()")
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        v = self._data.reshape(()).item() if self._data.dtype is not _dt.BF16_NP else float(self._data.reshape(()))
        return v

    def tolist(self) -> Any:
        if _trace_check is not None:
            _trace_check(self, "t.tolist()")
        if self._data.dtype is _dt.BF16_NP:
            return self._data.astype(np.float32).tolist()
        return self._data.tolist()

    def __float__(self) -> float:
        if _trace_check is not None:
            _trace_check(self, "float(t)")
        return float(self.item())

    def __int__(self) -> int:
        if _trace_check is not None:
            _trace_check(self, "int(t)")
        return int(self.item())

    def __index__(self) -> int:
        if _trace_check is not None:
            _trace_check(self, "using a tensor as an index (t.__index__())")
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self) -> bool:
        if _trace_check is not None:
            _trace_check(self, "bool(t) (an `if`/`while` on a tensor)")
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
        from ._tensor_str import tensor_repr

        return tensor_repr(self)

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
            return f"dtorch.{_TYPE_NAMES[self.dtype.name]}Tensor"
        d = _dt.as_dtype(dtype)
        if d.np == self._data.dtype:
            return self
        from ._prims.pointwise import Cast

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
        """Make `self` hold `result` (same shape after broadcasting; cast to self's dtype), as an in-place op.

        Without autograd the values are written into self's buffer, so every view of it sees them. When the
        op is recorded, self takes `result`'s graph node; if self is a view of a non-leaf tensor, the values
        are also written through to the base and the base's graph is rebased onto a `copy_slices` node.
        """
        rd = result._data
        if rd.dtype != self._data.dtype and _dt.from_numpy_dtype(rd.dtype)._category > self.dtype._category:
            raise RuntimeError(f"result type {result.dtype} can't be cast to the desired output type "
                               f"{self.dtype} of an in-place operation")
        if rd.shape != self._data.shape:
            try:
                bshape: tuple[int, ...] | None = np.broadcast_shapes(rd.shape, self._data.shape)
            except ValueError:
                bshape = None
            if bshape != self._data.shape:
                raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
                                   f"{list(bshape if bshape is not None else rd.shape)}")
        if (self._rg or result._rg) and is_grad_enabled():
            return self._inplace_recorded(result)
        if not self._data.flags.writeable:
            raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                               "single memory location. Please clone() the tensor before performing the operation.")
        np.copyto(self._data, rd, casting="unsafe")
        return self

    def _inplace_recorded(self, result: Tensor) -> Tensor:
        if self._ctx is None and self._rg:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation; wrap it "
                               "in `with dtorch.no_grad():` or use the out-of-place op")
        if result._data.dtype != self._data.dtype:
            result = result.type(self.dtype)
        if result._data.shape != self._data.shape:
            from ._functions import expand

            result = expand(result, self._data.shape)
        if not self._data.flags.writeable:
            raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                               "single memory location. Please clone() the tensor before performing the operation.")
        root, chain = self._view_chain()
        if chain:
            if root._ctx is None and root._rg:
                raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                                   "operation; do it under `with dtorch.no_grad():` or clone() first")
            from ._prims.shape import CopySlices

            _protect_saved(result._ctx, self._data)
            np.copyto(self._data, result._data, casting="unsafe")  # every view of the base sees the values
            old = Tensor._wrap(root._data)
            old._rg, old._ctx = root._rg, root._ctx
            rebased = CopySlices.apply(old, result, chain=chain)
            root._ctx, root._rg = rebased._ctx, rebased._rg
            self._ctx, self._rg = result._ctx, result._rg
            self._rewatch()
            return self
        if self._ctx is None:
            _protect_saved(result._ctx, self._data)
            np.copyto(self._data, result._data, casting="unsafe")  # keep sharing the buffer with any aliases
        else:
            self._data = result._data  # a fresh buffer: arrays saved for backward keep their values
        self._ctx, self._rg = result._ctx, result._rg
        self._rewatch()
        return self

    def _rewatch(self) -> None:
        """After an in-place op, `retain_grad()` follows the tensor to its new graph node (as in PyTorch)."""
        if self._ctx is not None and self.__dict__.get("_retains"):
            self._watch()

    def _view_chain(self) -> tuple[Tensor, tuple[tuple[type, dict[str, Any]], ...]]:
        """The tensor this one is a view of (through recorded view ops), and the ops from it to this one."""
        from ._prims.shape import is_view_node

        steps: list[tuple[type, dict[str, Any]]] = []
        cur = self
        while cur._ctx is not None and is_view_node(cur._ctx):
            parent = cur._ctx.parents[0]
            if not np.may_share_memory(cur._data, parent._data):
                break
            steps.append((type(cur._ctx), dict(cur._ctx.attrs)))
            cur = parent
        return cur, tuple(reversed(steps))

    def _constant_inplace(self, values: Any) -> Tensor:
        """Overwrite with values that do not depend on the old ones (fill_, zero_, random fills)."""
        if (self._rg and is_grad_enabled()) or not self._data.flags.writeable:
            const = Tensor._wrap(np.broadcast_to(np.asarray(values).astype(self._data.dtype), self._data.shape))
            if self._rg and is_grad_enabled():
                from ._functions import where

                keep = Tensor._wrap(np.ones((), dtype=np.bool_))
                return self._inplace(where(keep, const, self))  # the old value gets a zero gradient
            return self._inplace(const)
        np.copyto(self._data, values, casting="unsafe")
        return self

    def fill_(self, value: Any) -> Tensor:
        if isinstance(value, Tensor):
            if value.ndim != 0:
                raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} "
                                   f"dimensions.")
            if value._rg and is_grad_enabled():
                from ._functions import expand

                return self._inplace(expand(value.type(self.dtype), self._data.shape))
            value = value.item()
        from ._prims.pointwise import cast

        return self._constant_inplace(cast(value, self._data.dtype))

    def zero_(self) -> Tensor:
        return self.fill_(0)

    def copy_(self, src: Any, non_blocking: bool = False) -> Tensor:
        from ._functions import as_tensor_like, expand

        s = as_tensor_like(src, self)
        try:
            np.broadcast_to(np.empty(s._data.shape, dtype=np.bool_), self._data.shape)
        except ValueError:
            raise RuntimeError(f"The size of tensor a ({self._data.shape[-1] if self.ndim else 1}) must match the size "
                               f"of tensor b ({s._data.shape[-1] if s.ndim else 1}): copy_ from shape {list(s.shape)} "
                               f"into shape {list(self.shape)}") from None
        if is_grad_enabled() and s._rg:
            v = s if s._data.dtype == self._data.dtype else s.type(self.dtype)
            return self._inplace(v if v._data.shape == self._data.shape else expand(v, self._data.shape))
        return self._constant_inplace(s._data)

    def normal_(self, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Tensor:
        from .random import rng

        return self._constant_inplace(rng(generator).normal(mean, std, size=self._data.shape))

    def uniform_(self, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Tensor:
        from .random import rng

        return self._constant_inplace(rng(generator).uniform(a, b, size=self._data.shape))

    def bernoulli_(self, p: float = 0.5, generator: Any = None) -> Tensor:
        from .random import rng

        return self._constant_inplace(rng(generator).random(size=self._data.shape) < p)


def _protect_saved(node: Any, buf: np.ndarray) -> None:
    """Before `buf` is overwritten in place, give the node that computed the new value private copies of the
    arrays it saved from `buf` (its backward needs the old values, as PyTorch's saved original self)."""
    if node is None:
        return
    saved = getattr(node, "saved", None)
    if saved:
        node.saved = tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) and np.may_share_memory(a, buf)
                           else a for a in saved)
    for k, v in list(node.__dict__.items()):
        if isinstance(v, np.ndarray) and np.may_share_memory(v, buf):
            node.__dict__[k] = np.array(v, copy=True)


def with_no_grad_fill(t: Tensor, values: np.ndarray) -> None:
    """Overwrite `t` with constant values (kept for callers of the old helper; see Tensor._constant_inplace)."""
    t._constant_inplace(values)


def _norm_dim(dim: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n



# the classes' public home, as the user sees it in reprs and pickles: dtorch/tensor.py re-exports them
Size.__module__ = Tensor.__module__ = "dtorch.tensor"
