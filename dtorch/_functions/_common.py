"""Shared helpers of the functional API: operand checks, broadcasting errors, binary dispatch."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import dtypes as _dt
from .._prims import pointwise as E
from .._tensor import Size, Tensor

# --------------------------------------------------------------------------- helpers


def _scalar_ok(x: Any) -> bool:
    return isinstance(x, (int, float, bool, np.number, np.bool_))


def as_tensor_like(x: Any, ref: Tensor | None = None) -> Tensor:
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.ndarray):
        return Tensor._wrap(x)
    if _scalar_ok(x):
        d = ref.dtype if ref is not None and _dt.result_type(ref, x) is ref.dtype else _dt.scalar_dtype(x)
        return Tensor._wrap(np.asarray(E.cast(x, d.np)))
    from ..creation import tensor

    return tensor(x)


def _operand(x: Any, opname: str) -> Any:
    if isinstance(x, Tensor) or _scalar_ok(x):
        return x
    if isinstance(x, np.ndarray):
        return Tensor._wrap(x)
    raise TypeError(f"{opname}(): unsupported operand type {type(x).__name__}; expected a Tensor or a number")


def _check_broadcast(a: Any, b: Any, opname: str) -> None:
    sa, sb = np.shape(a._data if isinstance(a, Tensor) else a), np.shape(b._data if isinstance(b, Tensor) else b)
    try:
        np.broadcast_shapes(sa, sb)
    except ValueError:
        nd = builtins.max(len(sa), len(sb))
        pa, pb = (1,) * (nd - len(sa)) + sa, (1,) * (nd - len(sb)) + sb
        for i in range(nd - 1, -1, -1):
            if pa[i] != pb[i] and 1 not in (pa[i], pb[i]):
                raise RuntimeError(f"{opname}: the size of tensor a ({pa[i]}) must match the size of tensor b "
                                   f"({pb[i]}) at non-singleton dimension {i}; shapes {list(sa)} and {list(sb)} "
                                   f"do not broadcast") from None
        raise


def _binary(cls: Any, a: Any, b: Any, floating: bool = False) -> Tensor:
    """Apply a binary primitive with PyTorch's type promotion and broadcasting checks."""
    if isinstance(a, Tensor):
        bc = b.__class__
        if bc is float or bc is int:  # tensor op Python number: the hot path of `x * 2.0`, `x + 1`
            ad = a._data.dtype
            if ad.kind == "f" or ad is _dt.BF16_NP or (bc is int and not floating and ad.kind in "iu"):
                return cls.apply(a, b, dtype=ad)
        elif isinstance(b, Tensor) and a._data.dtype == b._data.dtype and (not floating or a.is_floating_point()):
            if a._data.shape != b._data.shape:
                _check_broadcast(a, b, cls.name)
            return cls.apply(a, b)
    a, b = _operand(a, cls.name), _operand(b, cls.name)
    d = _dt.result_type(a, b)
    if floating and not d.is_floating_point:
        d = _dt.get_default_dtype()
    if np.shape(getattr(a, "_data", a)) != np.shape(getattr(b, "_data", b)):
        _check_broadcast(a, b, cls.name)
    return cls.apply(a, b, dtype=d.np)


def _compare(op: str, a: Any, b: Any) -> Tensor:
    a, b = _operand(a, op), _operand(b, op)
    _check_broadcast(a, b, op)
    d = _dt.result_type(a, b)
    if op.startswith("bitwise") and d.is_floating_point:
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for '{d.name}': bitwise ops take integer or bool "
                                  f"tensors")
    return E.Compare.apply(a, b, op=op, dtype=d.np)



def _unary(cls: Any, x: Any, floating: bool = True) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{cls.name}(): argument 'input' must be Tensor, not {type(x).__name__}")
    if floating and not x.is_floating_point():
        x = x.type(_dt.get_default_dtype())
    return cls.apply(x)


class _ValuesIndices(tuple):
    """`(values, indices)` as returned by max/min/sort with a dim; also has `.values` and `.indices`."""

    @property
    def values(self) -> Tensor:
        return self[0]

    @property
    def indices(self) -> Tensor:
        return self[1]



def _reduce_input(x: Tensor, name: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(x).__name__}")
    return x



def _shape_arg(shape: Sequence[Any]) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = tuple(shape[0])
    out = []
    for s in shape:
        if isinstance(s, Tensor):
            s = s.item()
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"shape entries must be ints, got {type(s).__name__} in {tuple(shape)}")
        out.append(int(s))
    return tuple(out)


def _infer_shape(shape: tuple[int, ...], numel: int, old: tuple[int, ...]) -> tuple[int, ...]:
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred (only one -1 is allowed in a shape)")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s} in {list(shape)}")
            known *= s
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel} (input shape {list(old)})")
    return shape

