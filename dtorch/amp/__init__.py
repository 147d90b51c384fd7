"""Mixed precision: `autocast` and `GradScaler`."""

from .autocast_mode import autocast, get_autocast_dtype, is_autocast_enabled

__all__ = ["autocast", "get_autocast_dtype", "is_autocast_enabled", "GradScaler"]


def __getattr__(name: str):  # type: ignore[no-untyped-def]
    if name == "GradScaler":
        from .grad_scaler import GradScaler

        return GradScaler
    raise AttributeError(name)
