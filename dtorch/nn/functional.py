"""`dtorch.nn.functional`: the stateless form of every layer, loss and activation."""

from ._functional.activation import *  # noqa: F401,F403
from ._functional.conv import *  # noqa: F401,F403
from ._functional.dropout import *  # noqa: F401,F403
from ._functional.embedding import *  # noqa: F401,F403
from ._functional.linear import *  # noqa: F401,F403
from ._functional.loss import *  # noqa: F401,F403
from ._functional.normalization import *  # noqa: F401,F403
from ._functional.pooling import *  # noqa: F401,F403
from ._functional.upsampling import *  # noqa: F401,F403
from .._functions import pad  # noqa: F401
