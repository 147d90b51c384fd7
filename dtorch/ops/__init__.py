"""Differentiable primitives of the core tensor library, one `Function` subclass per operator.

Each class's `name` is the operator's one name (Python primitive, `.dtm` opcode, runtime kernel).
The `nn` primitives (conv, pooling, normalization, losses) live in `dtorch.nn.ops`.
"""

from . import elementwise, linalg, reduce, shape  # noqa: F401
