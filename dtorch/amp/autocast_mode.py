"""Automatic mixed precision: `dt.autocast` runs matmul/conv/linear in a reduced float dtype and keeps
reductions, normalization, softmax and losses in float32.

Ops opt in by calling `autocast_args("lower", ...)` (cast float inputs to the autocast dtype) or
`autocast_args("fp32", ...)` (cast reduced-precision inputs up to float32) on their tensor arguments.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .. import dtypes as _dt

F = TypeVar("F", bound=Callable[..., Any])
_state = threading.local()


def _current() -> _dt.dtype | None:
    return getattr(_state, "dtype", None)


def is_autocast_enabled() -> bool:
    return _current() is not None


def get_autocast_dtype() -> _dt.dtype | None:
    return _current()


class autocast:
    """`with dt.autocast(dtype=dt.float16):` (also "float16", dt.bfloat16, "bfloat16"; default bfloat16 on CPU).

    `device_type` is accepted for PyTorch compatibility and must be "cpu"; `enabled=False` disables
    autocast inside the block. Usable as a decorator too.
    """

    def __init__(self, device_type: str = "cpu", dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        from ..device import check_device

        if device_type in (_dt.float16, _dt.bfloat16, "float16", "bfloat16") and dtype is None:
            device_type, dtype = "cpu", device_type
        check_device(device_type)
        d = _dt.bfloat16 if dtype is None else _dt.as_dtype(dtype)
        if d not in (_dt.float16, _dt.bfloat16, _dt.float32):
            raise ValueError(f"autocast dtype must be float16 or bfloat16 (or float32 to disable), got {d}")
        self.dtype = d
        self.enabled = bool(enabled)

    def __enter__(self) -> autocast:
        self._prev = _current()
        _state.dtype = self.dtype if self.enabled and self.dtype is not _dt.float32 else None
        return self

    def __exit__(self, *exc: object) -> None:
        _state.dtype = self._prev

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with autocast("cpu", dtype=self.dtype, enabled=self.enabled):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


def autocast_args(policy: str, *tensors: Any) -> tuple[Any, ...]:
    """Cast floating tensors for an op under the active autocast (no-op when autocast is off)."""
    d = _current()
    if d is None:
        return tensors
    out = []
    for t in tensors:
        if t is None or not hasattr(t, "_data") or not t.is_floating_point():
            out.append(t)
            continue
        if policy == "lower":
            out.append(t if t._data.dtype == d.np or t._data.dtype.itemsize > 4 else t.type(d))
        else:
            out.append(t.type(_dt.float32) if t._data.dtype.itemsize < 4 else t)
    return tuple(out)


def custom_fwd_fp32(fn: F) -> F:
    """Decorator: run `fn` with its tensor arguments cast to float32 under autocast."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*autocast_args("fp32", *args), **kwargs)

    return wrapper  # type: ignore[return-value]
