"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict (PyTorch's behaviour)."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from itertools import chain
from typing import Any

from ...tensor import Tensor
from ..parameter import Parameter
from .module import Module

__all__ = ["ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]



def _abs_index(idx: Any, size: int) -> int:
    try:
        i = operator.index(idx)
    except TypeError:
        raise TypeError(f"indices must be integers or slices, not {type(idx).__name__}") from None
    if not -size <= i < size:
        raise IndexError(f"index {i} is out of range for a container of length {size}")
    return i % size


def _addindent(s: str, n: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + line for line in lines[1:])


def _renumber(mod: Module) -> None:
    """Rename the children "0", "1", ... in order, as after a deletion from a Sequential/ModuleList."""
    object.__setattr__(mod, "_modules", OrderedDict((str(i), m) for i, m in enumerate(mod._modules.values())))


class Sequential(Module):
    """Modules called in order, each on the previous one's output. Built from modules as arguments, or from
    one OrderedDict of name -> module. Supports indexing, slicing (a new Sequential), len, iteration, append,
    insert, extend, pop, + and del."""

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return self.__class__(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_abs_index(idx, len(self))]

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules.keys())[_abs_index(idx, len(self))]
        setattr(self, key, module)

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules.keys())
        if isinstance(idx, slice):
            for key in keys[idx]:
                delattr(self, key)
        else:
            delattr(self, keys[_abs_index(idx, len(self))])
        _renumber(self)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(
                f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        ret = Sequential()
        for layer in chain(self, other):
            ret.append(layer)
        return ret

    def __iadd__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(
                f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        return self.extend(list(other))

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        mods = list(self._modules.values())
        mods.insert(index, module)
        object.__setattr__(self, "_modules", OrderedDict((str(i), m) for i, m in enumerate(mods)))
        return self

    def extend(self, sequential: Iterable[Module]) -> Sequential:
        for layer in sequential:
            self.append(layer)
        return self

    def pop(self, key: int | slice) -> Any:
        v = self[key]
        del self[key]
        return v

    def forward(self, input: Any) -> Any:
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules that registers each one (for parameters(), to(), state_dict() ...). It has no forward."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return self.__class__(list(self._modules.values())[idx])
        return self._modules[str(_abs_index(idx, len(self)))]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, str(_abs_index(idx, len(self))), module)

    def __delitem__(self, idx: int | slice) -> None:
        if isinstance(idx, slice):
            for k in range(len(self._modules))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, str(_abs_index(idx, len(self))))
        _renumber(self)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        self.extend(modules)
        return self

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        combined = ModuleList()
        for i, module in enumerate(chain(self, other)):
            combined.add_module(str(i), module)
        return combined

    def insert(self, index: int, module: Module) -> None:
        mods = list(self._modules.values())
        mods.insert(index, module)
        for m in mods:
            if m is not None and not isinstance(m, Module):
                raise TypeError(f"{type(m).__name__} is not a Module subclass")
        object.__setattr__(self, "_modules", OrderedDict((str(i), m) for i, m in enumerate(mods)))

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key: int | slice) -> Any:
        v = self[key]
        del self[key]
        return v

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        if not isinstance(modules, Iterable) or isinstance(modules, Module) and not isinstance(modules, ModuleList):
            raise TypeError(f"ModuleList.extend should be called with an iterable, but got {type(modules).__name__}")
        offset = len(self)
        for i, module in enumerate(modules):
            self.add_module(str(offset + i), module)
        return self

    def __repr__(self) -> str:
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        blocks: list[list[Any]] = []  # [start, end, repr] runs of identical consecutive reprs
        for i, r in enumerate(reprs):
            if blocks and blocks[-1][2] == r:
                blocks[-1][1] = i
            else:
                blocks.append([i, i, r])
        lines = []
        for start, end, r in blocks:
            head = f"({start}): " if start == end else f"({start}-{end}): {end - start + 1} x "
            lines.append(_addindent(head + r, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of name -> module that registers each module."""

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> Module:
        v = self[key]
        del self[key]
        return v

    def keys(self) -> Iterable[str]:
        return self._modules.keys()

    def items(self) -> Iterable[tuple[str, Module]]:
        return self._modules.items()

    def values(self) -> Iterable[Module]:
        return self._modules.values()

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        if isinstance(modules, (Mapping, ModuleDict)):
            for key, module in modules.items():
                self[key] = module
            return
        if not isinstance(modules, Iterable):
            raise TypeError(f"ModuleDict.update should be called with an iterable of key/value pairs, but got "
                            f"{type(modules).__name__}")
        for j, m in enumerate(modules):
            if not isinstance(m, Iterable):
                raise TypeError(f"ModuleDict update sequence element #{j} should be Iterable; is "
                                f"{type(m).__name__}")
            pair = list(m)
            if len(pair) != 2:
                raise ValueError(f"ModuleDict update sequence element #{j} has length {len(pair)}; 2 is required")
            self[pair[0]] = pair[1]


_LEGACY = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
           "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _param_str(p: Any, typename: bool = False) -> str:
    if isinstance(p, Tensor):
        kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
        what = f"dtorch.{_LEGACY[p.dtype.name]}Tensor" if typename else str(p.dtype)
        return f"{kind} containing: [{what} of size {'x'.join(map(str, p.shape))}]"
    return f"Object of type: {type(p).__name__}"


def _as_param(value: Any) -> Any:
    return Parameter(value) if isinstance(value, Tensor) and not isinstance(value, Parameter) else value


class ParameterList(Module):
    """A list of parameters that registers each one; plain tensors are wrapped as Parameters."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        object.__setattr__(self, "_size", 0)
        if values is not None:
            self.extend(values)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return self.__class__([self[i] for i in range(len(self))[idx]])
        return getattr(self, str(_abs_index(idx, len(self))))

    def __setitem__(self, idx: int, param: Any) -> None:
        setattr(self, str(_abs_index(idx, len(self))), _as_param(param))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self)))

    def __iadd__(self, parameters: Iterable[Any]) -> ParameterList:
        self.extend(parameters)
        return self

    def append(self, value: Any) -> ParameterList:
        idx = len(self)
        object.__setattr__(self, "_size", idx + 1)
        setattr(self, str(idx), _as_param(value))
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError(f"ParameterList.extend should be called with an iterable, but got "
                            f"{type(values).__name__}")
        for v in values:
            self.append(v)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): {_param_str(p)}" for k, p in enumerate(self))


class ParameterDict(Module):
    """An ordered dict of name -> parameter that registers each one; plain tensors are wrapped as Parameters."""

    def __init__(self, parameters: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None) -> None:
        super().__init__()
        object.__setattr__(self, "_keys", {})
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        self._keys[key] = None
        setattr(self, key, _as_param(value))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def keys(self) -> Iterable[str]:
        return self._keys.keys()

    def items(self) -> Iterable[tuple[str, Any]]:
        return ((k, self[k]) for k in self._keys)

    def values(self) -> Iterable[Any]:
        return (self[k] for k in self._keys)

    def pop(self, key: str) -> Any:
        v = self[key]
        del self[key]
        return v

    def clear(self) -> None:
        for k in list(self._keys):
            del self[k]

    def update(self, parameters: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> None:
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs: Iterable[Any] = parameters.items()
        elif isinstance(parameters, Mapping):
            pairs = sorted(parameters.items())  # PyTorch sorts the keys of a plain dict
        else:
            pairs = parameters
        for pair in pairs:
            k, v = pair
            self[k] = v

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): {_param_str(p, typename=True)}" for k, p in self.items())
