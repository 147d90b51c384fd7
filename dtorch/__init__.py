"""DTorch: a PyTorch-style deep-learning framework whose models export to one `.dtm` file and run on
small devices through a pruned C++ runtime. `import dtorch as dt`.

The package root is light: the eager API (`dtorch/_api.py`) and the user-facing subpackages load on
first attribute access, so `import dtorch.runtime` (inference only) starts fast. Everything is
available as usual: `dt.tensor`, `dt.nn`, `dt.optim`, ...
"""

from __future__ import annotations

import importlib as _importlib
import os as _os
from typing import Any as _Any

from ._version import __version__

# subpackages a user reaches as attributes (dt.nn, dt.optim, ...): imported on first access
_LAZY_SUBPACKAGES = frozenset({"nn", "optim", "data", "vision", "amp", "autograd", "utils", "runtime", "edge",
                               "random", "serialization", "models", "quant"})
# every module of the package: `from . import X` inside dtorch imports X itself and never loads the API
# (which would be circular while a module is half-initialized); names that are both a module and an API
# object (dt.tensor is a function, dt.device a class) are the API object
_MODULES = frozenset(n[:-3] if n.endswith(".py") else n for n in _os.listdir(_os.path.dirname(_os.path.abspath(__file__)))
                     if not n.startswith((".", "__")))
_API_OVER_MODULE = frozenset({"tensor", "device"})
_api_loaded = False


def _load_api() -> None:
    global _api_loaded
    if _api_loaded:
        return
    _api_loaded = True
    api = _importlib.import_module("._api", __name__)
    g = globals()
    for key, value in vars(api).items():
        if not key.startswith("_") and key != "annotations":
            g[key] = value  # (overrides submodule attributes of the same name, e.g. dt.tensor is the function)


def __getattr__(name: str) -> _Any:
    if name in _LAZY_SUBPACKAGES:
        return _importlib.import_module(f".{name}", __name__)
    if name in ("save", "load"):
        return getattr(_importlib.import_module(".serialization", __name__), name)
    if name.startswith("__"):
        raise AttributeError(name)
    if name in _MODULES and name not in _API_OVER_MODULE:
        return _importlib.import_module(f".{name}", __name__)
    if not _api_loaded:
        _load_api()
        if name in globals():
            return globals()[name]
    raise AttributeError(f"module 'dtorch' has no attribute {name!r}")


def __dir__() -> list[str]:
    _load_api()
    return sorted(set(globals()) | _LAZY_SUBPACKAGES)


__all__ = ["Tensor", "Size", "tensor", "device", "dtype", "autocast", "no_grad", "enable_grad", "manual_seed",
           "available_backends", "__version__", "DeviceError"]
