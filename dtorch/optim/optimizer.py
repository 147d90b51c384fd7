"""`Optimizer`: the base of every optimizer. Holds parameter groups and per-parameter state.

Updates are written in place into each parameter's NumPy array (`p._data`), outside autograd.
Per-parameter state (`self.state[p]`) holds dtorch Tensors under PyTorch's names, so
`state_dict()` has PyTorch's layout: parameters are numbered across groups in group order and
the state is keyed by those numbers.
"""

from __future__ import annotations

import copy
import functools
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..autograd.grad_mode import enable_grad
from ..tensor import Tensor

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """Sentinel for a hyper-parameter that every parameter group must specify."""

    def __repr__(self) -> str:
        return "<required parameter>"


required: Any = _RequiredParameter()


def _mark_step_called(step: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a subclass's `step` so LR schedulers can tell whether the optimizer stepped yet."""
    if getattr(step, "_dtorch_marks_step", False):
        return step

    @functools.wraps(step)
    def wrapper(self: Optimizer, *args: Any, **kwargs: Any) -> Any:
        self._opt_called = True
        return step(self, *args, **kwargs)

    wrapper._dtorch_marks_step = True  # type: ignore[attr-defined]
    return wrapper


class Optimizer:
    """Base class: `Optimizer(params, defaults)`. `params` is an iterable of Tensors, of
    `(name, Tensor)` pairs, or of dicts that each define a parameter group."""

    # state entries that have the parameter's shape; load_state_dict checks their shapes
    _elementwise_state: tuple[str, ...] = ("momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq",
                                           "square_avg", "grad_avg")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:
            cls.step = _mark_step_called(cls.__dict__["step"])  # type: ignore[method-assign]

    def __init__(self, params: Any, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._opt_called = False
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            "but got a Tensor; wrap it in a list: [tensor]")
        if isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        if isinstance(params, dict) or not isinstance(params, Iterable):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {type(params).__name__}")
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    # ------------------------------------------------------------------ groups
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (a dict with "params" and optional hyper-parameter overrides)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        if "params" not in param_group:
            raise ValueError("param_group must have a 'params' entry holding its parameters")
        params = param_group["params"]
        if isinstance(params, Tensor):
            items: list[Any] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        else:
            items = list(params)
        tensors: list[Any] = []
        names: list[str] = []
        for item in items:
            if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
                names.append(item[0])
                tensors.append(item[1])
            else:
                tensors.append(item)
        if names and len(names) != len(tensors):
            raise ValueError("all optimizer params should be with/without names. Some param names are missing")
        for p in tensors:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        group = dict(param_group)
        group["params"] = tensors
        if names:
            group["param_names"] = names
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            group.setdefault(name, default)
        ids = [id(p) for p in tensors]
        if len(ids) != len(set(ids)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error", UserWarning, stacklevel=3)
        taken: set[int] = set()
        for other in self.param_groups:
            taken.update(id(p) for p in other["params"])
            if ("param_names" in other) != bool(names):
                kind = "with names" if names else "without names"
                raise ValueError("all optimizer param groups should be with/without names. cannot add param group "
                                 f"{kind} to the optimizer")
        if not taken.isdisjoint(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    # ------------------------------------------------------------------ gradients
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized parameters: to None (default) or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                    continue
                g._ctx = None
                g._rg = False
                if g._data.flags.writeable:
                    g._data.fill(0)
                else:
                    g._data = np.zeros_like(g._data)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step. `closure` re-evaluates the model and returns the loss."""
        raise NotImplementedError(f"{type(self).__name__} does not implement step()")

    def _eval_closure(self, closure: Callable[[], Any] | None) -> Any:
        if closure is None:
            return None
        with enable_grad():
            return closure()

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """Return {"state": {index: {name: Tensor}}, "param_groups": [{..., "params": [index, ...]}]}.

        As in PyTorch, state tensors are the optimizer's own (not copies); deep-copy to snapshot.
        """
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            ids = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            packed["params"] = ids
            groups.append(packed)
        state: dict[Any, Any] = {}
        for key, value in self.state.items():
            packed_key = index.get(id(key), key) if isinstance(key, Tensor) else key
            state[packed_key] = dict(value) if isinstance(value, dict) else value
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state produced by `state_dict()`. Checks everything first, then copies the state in."""
        if not isinstance(state_dict, dict) or "state" not in state_dict or "param_groups" not in state_dict:
            raise ValueError("optimizer state_dict must be a dict with 'state' and 'param_groups' entries, as "
                             "returned by Optimizer.state_dict()")
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"loaded state dict has a different number of parameter groups: it has "
                             f"{len(saved_groups)}, this optimizer has {len(self.param_groups)}")
        for i, (group, saved) in enumerate(zip(self.param_groups, saved_groups)):
            if len(group["params"]) != len(saved["params"]):
                raise ValueError(f"loaded state dict contains a parameter group that doesn't match the size of "
                                 f"optimizer's group: group {i} has {len(saved['params'])} parameters in the state "
                                 f"dict and {len(group['params'])} in this optimizer")
        id_map: dict[Any, Tensor] = {}
        for group, saved in zip(self.param_groups, saved_groups):
            id_map.update(zip(saved["params"], group["params"]))
        new_state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key not in id_map:
                raise ValueError(f"loaded state dict has state for parameter {key!r}, which is not in any of its "
                                 f"parameter groups")
            param = id_map[key]
            new_state[param] = self._load_param_state(key, param, value)
        for group, saved in zip(self.param_groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
        self.state = new_state
        self.param_groups = saved_groups

    def _load_param_state(self, key: Any, param: Tensor, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise TypeError(f"loaded state for parameter {key!r} must be a dict, got {type(value).__name__}")
        out: dict[str, Any] = {}
        for name, v in value.items():
            if isinstance(v, (Tensor, np.ndarray)):
                arr = v._data if isinstance(v, Tensor) else v
                if name in self._elementwise_state and arr.shape != param._data.shape:
                    raise ValueError(f"loaded state '{name}' for parameter {key!r} has shape {list(arr.shape)}, but "
                                     f"the parameter has shape {list(param._data.shape)}")
                is_float = arr.dtype.kind == "f" or arr.dtype.name == "bfloat16"
                dtype = param._data.dtype if name != "step" and is_float and param.is_floating_point() else arr.dtype
                out[name] = Tensor._wrap(np.array(arr, dtype=dtype, copy=True))
            else:
                out[name] = copy.deepcopy(v)
        return out

    # ------------------------------------------------------------------ pickling and display
    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("_opt_called", False)

    def __repr__(self) -> str:
        lines = [type(self).__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {k}: {group[k]}" for k in sorted(group) if k not in ("params", "param_names"))
        return "\n".join(lines) + "\n)"


# ---------------------------------------------------------------------- helpers for subclasses


def _scalar(x: Any) -> float:
    """A hyper-parameter as a Python float (accepts 1-element Tensors)."""
    return float(x.item()) if isinstance(x, Tensor) else float(x)


def _check_tensor_scalar(name: str, value: Any) -> None:
    if isinstance(value, Tensor) and value.numel() != 1:
        raise ValueError(f"Tensor {name} must be 1-element")


def _check_nonneg(label: str, value: Any) -> None:
    """Raise ValueError(f"Invalid {label}: {value}") when value < 0, as PyTorch words it."""
    if _scalar(value) < 0.0:
        raise ValueError(f"Invalid {label}: {value}")


def _check_unsupported(*, differentiable: bool = False, capturable: bool = False, fused: bool | None = None,
                       foreach: bool | None = None) -> None:
    if differentiable:
        raise NotImplementedError("differentiable=True is not supported: dtorch optimizers update parameters in "
                                  "place outside autograd")
    if capturable:
        raise NotImplementedError("capturable=True is not supported: dtorch has no graph capture")
    if fused and foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def _grad_of(p: Tensor, maximize: bool) -> np.ndarray | None:
    """The gradient array of `p` in `p`'s dtype (negated when maximizing), or None if p has no grad.

    Also makes sure `p._data` can be written in place."""
    if p.grad is None:
        return None
    g = p.grad._data
    if g.dtype != p._data.dtype:
        g = g.astype(p._data.dtype)
    if g.shape != p._data.shape:
        raise RuntimeError(f"a parameter of shape {list(p._data.shape)} has a gradient of shape {list(g.shape)}; "
                           f"they must match")
    if not p._data.flags.writeable:
        p._data = p._data.copy()
    return np.negative(g) if maximize else g


def _zeros_state(p: Tensor) -> Tensor:
    return Tensor._wrap(np.zeros_like(p._data))


def _step_state() -> Tensor:
    return Tensor._wrap(np.array(0.0, dtype=np.float32))
