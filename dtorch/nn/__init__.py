"""Neural-network layers, losses, initialization and utilities, with PyTorch's names and semantics."""

from . import functional, init, utils  # noqa: F401
from .modules import *
from .modules.module import Module  # noqa: F401
from .parameter import Parameter  # noqa: F401
