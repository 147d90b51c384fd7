"""`dtorch.utils`: PyTorch's `torch.utils` spellings (`dtorch.utils.data` is `dtorch.data`)."""

from . import data  # noqa: F401
