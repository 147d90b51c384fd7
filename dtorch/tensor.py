"""`dtorch.Tensor` and `dtorch.Size`: the class (`dtorch/_tensor.py`) with the PyTorch method surface attached.

Every differentiable method composes primitives from `dtorch._prims` through the functional API
(`dtorch/_functions/`); `dtorch/_tensor_methods.py` attaches that API to the class as methods and operators.
Importing this module does both, whichever way the package was entered (the root loads its API lazily), and
applies the allocator policy (`dtorch/_memory.py`).
"""

from __future__ import annotations

from . import _memory, _tensor_methods  # noqa: F401  (attaches x.add, x @ y, x.sum(), ... to Tensor)
from ._tensor import Size, Tensor, _norm_dim, with_no_grad_fill  # noqa: F401

__all__ = ["Size", "Tensor"]

_memory.tune_malloc()
