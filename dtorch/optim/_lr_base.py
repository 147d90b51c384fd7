"""`LRScheduler`: the base of the learning-rate schedulers in `dtorch.optim.lr_scheduler`.

A scheduler owns `last_epoch` (how many times it stepped; -1 before the first), `base_lrs` (each
group's `initial_lr`) and `_last_lr`. Constructing one performs an initial step, as PyTorch does, so
the optimizer holds the epoch-0 learning rate right away. Subclasses override `get_lr()` with the
"chainable" form (new lr from the group's current lr) and may add `_get_closed_form_lr()` (lr from
`base_lrs` and `last_epoch` alone), used when `step(epoch)` is given an explicit epoch.
"""

from __future__ import annotations

import warnings
from typing import Any

from ..tensor import Tensor
from .optimizer import Optimizer

__all__ = ["LRScheduler"]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` is deprecated: call `scheduler.step()` without it. When an "
    "epoch is given, the closed form of the schedule is used where one exists.")


def _copy_value(v: Any) -> Any:
    return v.clone() if isinstance(v, Tensor) else v


def _group_values(optimizer: Optimizer, key: str) -> list[Any]:
    """`group[key]` for every parameter group (Tensors are copied so callers cannot alias them)."""
    return [_copy_value(g[key]) for g in optimizer.param_groups]


def _set_group_value(group: dict[str, Any], key: str, value: Any) -> None:
    """Store `value` in `group[key]`, in place when the group holds a Tensor there."""
    if isinstance(group.get(key), Tensor):
        group[key].fill_(float(value))
    else:
        group[key] = value


def _per_group(name: str, optimizer: Optimizer, value: Any) -> list[Any]:
    """A per-group list from one value or a list/tuple with one value per parameter group."""
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. {name} has "
                             f"{len(value)} values, param_groups has {n}.")
        return [_copy_value(v) for v in value]
    return [_copy_value(value)] * n


class LRScheduler:
    """Base class. Call `step()` once per epoch (or per batch), after `optimizer.step()`."""

    _is_initial: bool = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", _copy_value(group["lr"]))
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming a "
                                   f"scheduler with last_epoch >= 0: load the optimizer's state_dict first, or "
                                   f"use last_epoch=-1 for a fresh run")
        self.base_lrs: list[Any] = _group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        """Reset the step count and perform the construction-time step."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """Every attribute except the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list[Any]:
        """The learning rates the last `step()` set, one per parameter group."""
        return list(self._last_lr)

    def get_lr(self) -> list[Any]:
        """The learning rates for the current `last_epoch` (called by `step()`)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement get_lr()")

    # ------------------------------------------------------------------ stepping
    def step(self, epoch: int | None = None) -> None:
        if self._step_count == 1 and not self._is_initial and not getattr(self.optimizer, "_opt_called", True):
            warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. Call them in the "
                          "opposite order: `optimizer.step()` before `lr_scheduler.step()`; otherwise the first "
                          "value of the learning rate schedule is skipped.", UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            closed = getattr(self, "_get_closed_form_lr", None)
            values = closed() if closed is not None else self.get_lr()
        if len(values) != len(self.optimizer.param_groups):
            raise RuntimeError(f"{type(self).__name__}.get_lr() returned {len(values)} learning rates for "
                               f"{len(self.optimizer.param_groups)} parameter groups")
        for group, lr in zip(self.optimizer.param_groups, values):
            _set_group_value(group, "lr", lr)
        self._last_lr = _group_values(self.optimizer, "lr")

