"""`Parameter`: a tensor that a Module registers as trainable state."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor


class Parameter(Tensor):
    """A Tensor that, assigned as a Module attribute, is listed by `parameters()`. Requires grad by default."""

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        if data is None:
            arr = np.zeros((0,), dtype=np.float32)
        elif isinstance(data, Tensor):
            arr = data._data
        else:
            arr = np.asarray(data)
        # set the slots directly (as Tensor._wrap does): Tensor.__init__ would copy and cast the data
        self._data, self._rg, self.grad, self._ctx, self._hooks = arr, False, None, None, None
        if requires_grad:
            self.requires_grad = True

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto: Any) -> Any:
        return (Parameter, (Tensor._wrap(self._data), self._rg))
