"""`GradScaler`: dynamic loss scaling for low-precision training, with PyTorch's protocol.

Per iteration: `scaler.scale(loss).backward()`, optionally `scaler.unscale_(opt)` (e.g. to clip),
`scaler.step(opt)` (skipped when a gradient is inf/NaN), then `scaler.update()`. The scale halves
(backoff_factor) after a skipped step and doubles (growth_factor) after growth_interval clean steps
in a row. The scale is a float32 value and the unscaling multiplies by float32(1 / scale), so the
numbers match PyTorch's CPU GradScaler.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from enum import Enum
from typing import Any

import numpy as np

from ..device import check_device
from ..tensor import Tensor

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_state() -> dict[str, Any]:
    return {"stage": OptState.READY, "found_inf": None}


class GradScaler:
    """Scales losses up so small low-precision gradients do not underflow, and unscales them before
    the optimizer step. With `enabled=False` every method is a pass-through."""

    def __init__(self, device: str = "cpu", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        check_device(device)
        self._device = device
        self._enabled = bool(enabled)
        if not self._enabled:
            return
        if growth_factor <= 1.0:
            raise ValueError(f"The growth factor must be > 1.0, got {growth_factor}")
        if backoff_factor >= 1.0:
            raise ValueError(f"The backoff factor must be < 1.0, got {backoff_factor}")
        if int(growth_interval) != growth_interval or growth_interval < 1:
            raise ValueError(f"growth_interval must be a positive integer, got {growth_interval}")
        self._init_scale = float(init_scale)
        self._scale: np.ndarray | None = None  # float32 0-d, created by the first scale()
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._init_growth_tracker = 0
        self._growth_tracker: np.ndarray | None = None  # int32 0-d
        self._per_optimizer_states: defaultdict[int, dict[str, Any]] = defaultdict(_fresh_state)

    # ------------------------------------------------------------------ helpers
    def _lazy_init(self) -> None:
        if self._scale is None:
            self._scale = np.array(self._init_scale, dtype=np.float32)
            self._growth_tracker = np.array(self._init_growth_tracker, dtype=np.int32)

    def _require_scale(self, funcname: str) -> np.ndarray:
        if self._scale is None:
            raise RuntimeError(f"Attempted {funcname} but the scale is not set yet: call scaler.scale(loss) (and "
                               f"backward on the result) earlier in the iteration, before {funcname}.")
        return self._scale

    # ------------------------------------------------------------------ protocol
    def scale(self, outputs: Any) -> Any:
        """Multiply a tensor (or the tensors of a nested list/tuple/iterable) by the current scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            self._lazy_init()
            return outputs * Tensor._wrap(np.array(self._scale, copy=True))
        if isinstance(outputs, Iterable) and not isinstance(outputs, (str, bytes)):
            def apply(v: Any) -> Any:
                if isinstance(v, Tensor):
                    self._lazy_init()
                    return v * Tensor._wrap(np.array(self._scale, copy=True))
                if isinstance(v, Iterable) and not isinstance(v, (str, bytes)):
                    mapped = map(apply, v)
                    return type(v)(mapped) if isinstance(v, (list, tuple)) else mapped
                raise ValueError("outputs must be a Tensor or an iterable of Tensors")

            return apply(outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def unscale_(self, optimizer: Any) -> None:
        """Divide the optimizer's gradients by the scale, in place, and record whether any is inf/NaN.
        At most once per optimizer between two `update()` calls, and before `step()`."""
        if not self._enabled:
            return
        scale = self._require_scale("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = np.float32(1.0 / np.float64(scale))
        found = False
        with np.errstate(over="ignore", invalid="ignore"):
            for group in optimizer.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    arr = g._data
                    if arr.dtype == np.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    if not found and not np.isfinite(arr).all():
                        found = True
                    if not arr.flags.writeable:
                        arr = g._data = arr.copy()
                    np.multiply(arr, inv_scale, out=arr, casting="unsafe")
        state["found_inf"] = np.array(1.0 if found else 0.0, dtype=np.float32)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscale (if `unscale_` was not called), then run `optimizer.step(*args, **kwargs)` unless a
        gradient was inf/NaN. Returns what `optimizer.step` returned, or None when the step is skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._require_scale("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        retval = None
        if not float(state["found_inf"]):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Adjust the scale for the next iteration (or set it to `new_scale`) and reset per-step state."""
        if not self._enabled:
            return
        scale = self._require_scale("update")
        tracker = self._growth_tracker if self._growth_tracker is not None else np.array(0, dtype=np.int32)
        if new_scale is not None:
            if isinstance(new_scale, Tensor):
                if new_scale.numel() != 1 or new_scale.requires_grad:
                    raise ValueError("new_scale should be a float or a 1-element Tensor with requires_grad=False.")
                scale[...] = np.float32(new_scale.item())
            elif isinstance(new_scale, (float, int)) and not isinstance(new_scale, bool):
                scale[...] = np.float32(new_scale)
            else:
                raise ValueError("new_scale should be a float or a 1-element Tensor with requires_grad=False.")
        else:
            found = [s["found_inf"] for s in self._per_optimizer_states.values() if s["found_inf"] is not None]
            if not found:
                raise RuntimeError("No inf checks were recorded prior to update(): call scaler.step(optimizer) "
                                   "(or scaler.unscale_(optimizer)) before scaler.update().")
            with np.errstate(over="ignore"):
                if sum(float(f) for f in found):
                    scale[...] = np.float32(float(scale) * self._backoff_factor)
                    tracker[...] = 0
                else:
                    successful = int(tracker) + 1
                    if successful == self._growth_interval:
                        grown = np.float32(float(scale) * self._growth_factor)
                        if np.isfinite(grown):
                            scale[...] = grown
                        tracker[...] = 0
                    else:
                        tracker[...] = successful
        self._per_optimizer_states = defaultdict(_fresh_state)

    # ------------------------------------------------------------------ accessors
    def get_scale(self) -> float:
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale)

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = int(new_interval)

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker)

    def is_enabled(self) -> bool:
        return self._enabled

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """{"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"}; empty when
        the scaler is disabled."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        missing = {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"} - set(state_dict)
        if missing:
            raise ValueError(f"GradScaler state dict is missing {sorted(missing)}")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale[...] = np.float32(self._init_scale)
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker[...] = self._init_growth_tracker

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        if self._enabled:
            if any(s["stage"] is not OptState.READY for s in self._per_optimizer_states.values()):
                raise RuntimeError("A GradScaler instance may only be pickled at the beginning of an iteration, "
                                   "or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
            state["_per_optimizer_states"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self._enabled:
            self._per_optimizer_states = defaultdict(_fresh_state)
