"""`dtorch.nn.functional`: the stateless form of every layer, loss and activation (PyTorch's names and signatures).

One file per family, named as the `dtorch.nn.modules` file that uses it and the `dtorch._prims` file whose
primitives it composes: activation, conv, dropout, linear, loss, normalization, pooling, sparse (embedding,
one_hot), upsampling. Argument checks and PyTorch's conventions live here; gradients live in the primitives.
Two families share a name with one of their functions: `F.dropout` and `F.linear` are the functions, so code
that wants a family's file imports names from it (`from dtorch.nn.functional.linear import bilinear`).
"""

import sys as _sys

from ..._functions import pad  # noqa: F401  (the one nn.functional name that lives in the tensor API)
from .activation import *
from .conv import *
from .dropout import *
from .linear import *
from .loss import *
from .normalization import *
from .pooling import *
from .sparse import *
from .upsampling import *

__all__ = sorted(["pad", *(name for family in ("activation", "conv", "dropout", "linear", "loss", "normalization",
                                               "pooling", "sparse", "upsampling")
                           for name in _sys.modules[f"{__name__}.{family}"].__all__)])
del _sys
