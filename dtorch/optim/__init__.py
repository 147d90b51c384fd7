"""Optimizers and learning-rate schedulers, with PyTorch's names, arguments and numerics.

`dt.optim.SGD`, `Adam`, `AdamW`, `RMSprop` update parameters in place with NumPy;
`dt.optim.lr_scheduler` holds the schedulers.
"""

from . import lr_scheduler
from .adam import Adam
from .adamw import AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "RMSprop", "lr_scheduler"]
