"""All layer classes. One file per family; each file lists its public names in `__all__`."""

from .activation import *
from .batchnorm import *
from .container import *
from .conv import *
from .dropout import *
from .flatten import *
from .linear import *
from .loss import *
from .module import Module  # noqa: F401
from .normalization import *
from .pooling import *
from .sparse import *
from .upsampling import *
