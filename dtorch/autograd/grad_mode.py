"""Switches for gradient recording: `no_grad`, `enable_grad`, `set_grad_enabled`, `inference_mode`."""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, TypeVar

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
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.__class__():
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class no_grad(_GradMode):  # noqa: N801
    """Disable gradient recording inside the block (or the decorated function)."""

    _flag = False


class enable_grad(_GradMode):  # noqa: N801
    """Enable gradient recording inside the block, even within `no_grad`."""

    _flag = True


class inference_mode(no_grad):  # noqa: N801
    """Same as `no_grad` here (there is no separate inference tensor kind)."""

    def __init__(self, mode: bool = True) -> None:
        self._flag = not mode


class set_grad_enabled(_GradMode):  # noqa: N801
    """Set grad mode to `mode`; takes effect at once, and as a context manager restores the previous mode."""

    def __init__(self, mode: bool) -> None:
        self._prev = is_grad_enabled()
        self._flag = bool(mode)
        _set(self._flag)

    def __enter__(self) -> None:
        pass

    def __call__(self, fn: F) -> F:
        _set(self._prev)
        mode = self._flag

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]
