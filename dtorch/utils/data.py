"""`dtorch.utils.data` is `dtorch.data`, for code written against `torch.utils.data`."""

import sys

from .. import data as _data

sys.modules[__name__] = _data
