"""Switches for gradient recording: `no_grad`, `enable_grad`, `set_grad_enabled`, `inference_mode`.

Each works as a context manager and as a decorator (`@no_grad()`, and bare `@no_grad` as in PyTorch);
the mode is per thread and is restored on exit, also when the block raises.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_state = threading.local()


def is_grad_enabled() -> bool:
    return getattr(_state, "enabled", True)


def _set(flag: bool) -> None:
    _state.enabled = flag


class _GradMode:
    """Context manager and decorator that sets grad mode to `self._flag` and restores it after."""

    _flag = True

    def __enter__(self) -> None:
        self._prev = is_grad_enabled()
        _set(self._flag)

    def __exit__(self, *exc: object) -> None:
        _set(self._prev)

    def __call__(self, fn: F) -> F:
        flag = self._flag

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            prev = is_grad_enabled()
            _set(flag)
            try:
                return fn(*args, **kwargs)
            finally:
                _set(prev)

        return wrapper  # type: ignore[return-value]


class _NoParamMode(_GradMode):
    """Usable as `with mode():`, `@mode()` and bare `@mode`, as in PyTorch."""

    def __new__(cls, orig_func: Callable[..., Any] | None = None) -> Any:
        if orig_func is None:
            return super().__new__(cls)
        if not callable(orig_func):
            raise TypeError(f"{cls.__name__}() takes no arguments (got {type(orig_func).__name__})")
        return super().__new__(cls)(orig_func)

    def __init__(self, orig_func: Callable[..., Any] | None = None) -> None:
        pass


class no_grad(_NoParamMode):
    """Disable gradient recording inside the block (or the decorated function)."""

    _flag = False


class enable_grad(_NoParamMode):
    """Enable gradient recording inside the block, even within `no_grad`."""

    _flag = True


class inference_mode(_GradMode):
    """`inference_mode(True)` (the default) disables gradient recording like `no_grad`; there is no separate
    inference tensor kind. `inference_mode(False)` leaves the mode as it is. Bare `@inference_mode` works too."""

    def __new__(cls, mode: Any = True) -> Any:
        if callable(mode):
            return super().__new__(cls)(mode)
        return super().__new__(cls)

    def __init__(self, mode: Any = True) -> None:
        self._enabled = bool(mode) if not callable(mode) else True

    @property
    def _flag(self) -> bool:  # type: ignore[override]
        return False if self._enabled else is_grad_enabled()

    def __call__(self, fn: F) -> F:
        enabled = self._enabled

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with inference_mode(enabled):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class set_grad_enabled(_GradMode):
    """Set grad mode to `mode`; takes effect at once, and as a context manager restores the previous mode.

    As a decorator (`@set_grad_enabled(False)`) it leaves the current mode alone and applies `mode` only
    while the decorated function runs.
    """

    def __init__(self, mode: bool) -> None:
        self._prev = is_grad_enabled()
        self._flag = bool(mode)
        _set(self._flag)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _set(self._prev)

    def __call__(self, fn: F) -> F:
        _set(self._prev)
        return super().__call__(fn)
