"""Differentiable primitives of the core tensor library, one `Function` subclass per operator.

Each class's `name` is the operator's one name (Python primitive, `.dtm` opcode, runtime kernel).
The `nn` primitives (conv, pooling, normalization, losses) live in `dtorch.nn.ops`.
"""

import warnings

# PyTorch computes log(0) = -inf, sqrt(-1) = nan, 1/0 = inf silently; NumPy warns. Silence NumPy's
# floating-point RuntimeWarnings raised inside these kernels only (a filter costs nothing per call).
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"dtorch\.ops\.")

from . import elementwise, linalg, reduce, shape  # noqa: F401, E402
