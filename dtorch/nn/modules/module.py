"""`Module`: the base of every layer. Holds parameters, buffers and submodules in registration order."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

import numpy as np

from ...device import check_device
from ...dtypes import as_dtype
from ...tensor import Tensor
from ..parameter import Parameter


class _IncompatibleKeys(NamedTuple):
    missing_keys: list[str]
    unexpected_keys: list[str]

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self.missing_keys}, unexpected_keys={self.unexpected_keys})"

    __str__ = __repr__


class Module:
    """Base class for all layers: subclass it, create submodules in `__init__`, define `forward`."""

    training: bool

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args or kwargs:
            raise TypeError(f"Module.__init__() takes no arguments, got {args} {kwargs}")
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())

    forward: Callable[..., Any]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if "_parameters" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}.__init__ did not call super().__init__(); "
                               f"call it before assigning submodules or parameters")
        for hook in self._forward_pre_hooks.values():
            r = hook(self, args)
            if r is not None:
                args = r if isinstance(r, tuple) else (r,)
        fwd = getattr(type(self), "forward", None)
        if fwd is None:
            raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')
        from ...autograd.function import _module_stack

        _module_stack.append(self)
        try:
            out = self.forward(*args, **kwargs)
        finally:
            _module_stack.pop()
        for hook in self._forward_hooks.values():
            r = hook(self, args, out)
            if r is not None:
                out = r
        return out

    # ------------------------------------------------------------------ registration
    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        if "_parameters" not in d and isinstance(value, (Parameter, Module)):
            raise AttributeError(f"cannot assign {type(value).__name__} '{name}' before Module.__init__() call")
        params, modules, buffers = d.get("_parameters"), d.get("_modules"), d.get("_buffers")
        if isinstance(value, Parameter):
            self._remove_from(name, keep="_parameters")
            params[name] = value
        elif params is not None and name in params:
            if value is not None and not isinstance(value, Parameter):
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                f"(dtorch.nn.Parameter or None expected)")
            params[name] = value
        elif isinstance(value, Module):
            self._remove_from(name, keep="_modules")
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' "
                                f"(dtorch.nn.Module or None expected)")
            modules[name] = value
        elif buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' (Tensor or None expected)")
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _remove_from(self, name: str, keep: str) -> None:
        """Drop `name` from every store except `keep`, so re-assigning a member keeps its position."""
        for key in ("_parameters", "_buffers", "_modules"):
            if key != keep:
                self.__dict__[key].pop(name, None)
        self.__dict__.pop(name, None)
        self.__dict__["_non_persistent_buffers"].discard(name)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            store = d.get(key)
            if store is not None and name in store:
                return store[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for key in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__[key]:
                del self.__dict__[key][name]
                self.__dict__["_non_persistent_buffers"].discard(name)
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        self._check_name(name, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            f"(dtorch.nn.Parameter or None required)")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        self._check_name(name, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module")
        self._modules[name] = module

    register_module = add_module

    def _check_name(self, name: str, kind: str) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string, got {type(name).__name__}")
        if "." in name or name == "":
            raise KeyError(f'{kind} name can\'t contain "." or be empty, got {name!r}')
        own = {"parameter": self._parameters, "buffer": self._buffers, "module": self._modules}[kind]
        if hasattr(self, name) and name not in own:
            raise KeyError(f"attribute '{name}' already exists: choose another name for the {kind}, or delete the "
                           f"existing attribute first")

    def get_submodule(self, target: str) -> Module:
        mod: Module = self
        for item in target.split(".") if target else []:
            if item not in mod._modules:
                raise AttributeError(f"{type(mod).__name__} has no submodule `{item}` (in '{target}')")
            mod = mod._modules[item]
        return mod

    def get_buffer(self, target: str) -> Tensor:
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._buffers:
            raise AttributeError(f"{type(mod).__name__} has no buffer `{name}`")
        return mod._buffers[name]

    def get_parameter(self, target: str) -> Parameter:
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._parameters:
            raise AttributeError(f"{type(mod).__name__} has no parameter `{name}`")
        return mod._parameters[name]

    # ------------------------------------------------------------------ iteration
    def named_modules(self, memo: set[int] | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            yield from m.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen: set[int] = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def _named_members(self, store: str, prefix: str, recurse: bool,
                       remove_duplicate: bool = True) -> Iterator[tuple[str, Any]]:
        seen: set[int] = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for mod_prefix, mod in mods:
            for k, v in getattr(mod, store).items():
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                seen.add(id(v))
                yield mod_prefix + ("." if mod_prefix else "") + k, v

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ------------------------------------------------------------------ state
    def state_dict(self, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> OrderedDict[str, Tensor]:
        out: OrderedDict[str, Tensor] = OrderedDict() if destination is None else destination  # type: ignore
        for name, p in self._parameters.items():
            if p is not None:
                out[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers:
                out[prefix + name] = b if keep_vars else b.detach()
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(out, prefix + name + ".", keep_vars)
        return out

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict).__name__}")
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        for k, target in own.items():
            if k not in state_dict:
                continue
            src = state_dict[k]
            arr = src._data if isinstance(src, Tensor) else np.asarray(src)
            if arr.shape != target._data.shape:
                errors.append(f"size mismatch for {k}: copying a param with shape {list(arr.shape)} from checkpoint, "
                              f"the shape in current model is {list(target._data.shape)}.")
        if strict and (missing or unexpected):
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ".")
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ".")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        # all checks passed: only now copy, so a failed load leaves the model untouched
        for k, target in own.items():
            if k in state_dict:
                src = state_dict[k]
                arr = src._data if isinstance(src, Tensor) else np.asarray(src)
                if assign:
                    target._data = arr.astype(target._data.dtype, copy=False)
                else:
                    np.copyto(target._data, arr, casting="unsafe")
        return _IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------------ modes and moves
    def train(self, mode: bool = True) -> Module:
        """Set training mode on this module and (through their own `train`) on all children."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        object.__setattr__(self, "training", mode)
        for m in self.children():
            m.train(mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    p.grad._data[...] = 0

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def _cast(self, fn: Callable[[Tensor], np.ndarray]) -> Module:
        for m in self.modules():
            for store in (m._parameters, m._buffers):
                for t in store.values():
                    if t is None:
                        continue
                    new = fn(t)
                    if new is not t._data:
                        t._data = new
                        if t.grad is not None:
                            t.grad._data = fn(t.grad)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        dtype = kwargs.pop("dtype", None)
        dev = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        for a in args:
            if isinstance(a, Tensor):
                dtype = a.dtype
            elif isinstance(a, str):
                try:
                    dtype = as_dtype(a)
                    continue
                except TypeError:
                    dev = a
            elif hasattr(a, "is_floating_point") and hasattr(a, "np"):
                dtype = a
            else:
                dev = a
        check_device(dev)
        if dtype is not None:
            d = as_dtype(dtype)
            if not d.is_floating_point:
                raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got desired dtype={d}")
            self._cast(lambda t: t._data.astype(d.np, copy=False) if t.is_floating_point() else t._data)
        return self

    def cpu(self) -> Module:
        return self

    def cuda(self, device: Any = None) -> Module:
        check_device("cuda" if device is None else f"cuda:{device}" if isinstance(device, int) else device)
        return self  # pragma: no cover

    def float(self) -> Module:
        return self.to(dtype="float32")

    def double(self) -> Module:
        return self.to(dtype="float64")

    def half(self) -> Module:
        return self.to(dtype="float16")

    def bfloat16(self) -> Module:
        return self.to(dtype="bfloat16")

    # ------------------------------------------------------------------ hooks
    def register_forward_hook(self, hook: Callable[..., Any]) -> Any:
        return _add_hook(self._forward_hooks, hook)

    def register_forward_pre_hook(self, hook: Callable[..., Any]) -> Any:
        return _add_hook(self._forward_pre_hooks, hook)

    # ------------------------------------------------------------------ printing
    def extra_repr(self) -> str:
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = repr(module).replace("\n", "\n  ")
            child_lines.append(f"({key}): {mod_str}")
        body = lines + child_lines
        main = self._get_name() + "("
        if body:
            if len(lines) == 1 and not child_lines:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(body) + "\n"
        return main + ")"

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules))


class _RemovableHandle:
    _next_id = 0

    def __init__(self, store: dict) -> None:
        self.store = store
        self.id = _RemovableHandle._next_id
        _RemovableHandle._next_id += 1

    def remove(self) -> None:
        self.store.pop(self.id, None)


def _add_hook(store: dict, hook: Callable[..., Any]) -> _RemovableHandle:
    h = _RemovableHandle(store)
    store[h.id] = hook
    return h
