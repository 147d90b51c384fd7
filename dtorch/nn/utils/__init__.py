"""`dtorch.nn.utils`: gradient clipping and parameter helpers."""

from .clip_grad import *  # noqa: F401,F403
