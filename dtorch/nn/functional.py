"""`dtorch.nn.functional`: the stateless form of every layer, loss and activation."""

from .._functions import pad  # noqa: F401
from ._functional.activation import *
from ._functional.conv import *
from ._functional.dropout import *
from ._functional.embedding import *
from ._functional.linear import *
from ._functional.loss import *
from ._functional.normalization import *
from ._functional.pooling import *
from ._functional.upsampling import *
