"""Every differentiable primitive of dtorch: one `Function` subclass per operator, one module per family.

Each class's `name` is the operator's one name (Python primitive, `.dtm` opcode, runtime kernel).
Families: the core tensor library (`pointwise`, `reduce`, `shape` (with indexing), `linalg`) and the
`nn` layers (`activation` (with softmax), `conv`, `dropout`, `linear`, `loss`, `normalization`,
`pooling`, `sparse` (embedding, one_hot), `upsampling`), named as the files of `dtorch.nn.functional`
and `dtorch.nn.modules` that use them. `dtorch._functions` and `dtorch.nn.functional` compose these;
gradients live only here.
"""

import warnings

# PyTorch computes log(0) = -inf, sqrt(-1) = nan, 1/0 = inf silently; NumPy warns. Silence NumPy's
# floating-point RuntimeWarnings raised inside the core kernels only (a filter costs nothing per call).
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"dtorch\._prims\.(pointwise|linalg|reduce|shape)\Z")

from . import linalg, pointwise, reduce, shape  # noqa: F401, E402
