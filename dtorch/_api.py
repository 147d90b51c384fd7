"""The eager framework's public names (`dt.tensor`, `dt.float32`, `dt.no_grad`, ...), loaded by `dtorch/__init__.py`
on first use so that `import dtorch.runtime` alone does not pay for them. Every import here is a re-export."""

# ruff: noqa: F401

from __future__ import annotations

from . import _memory, _tensor_methods
from ._functions import *
from ._functions import (
    abs,
    add,
    all,
    any,
    argmax,
    argmin,
    cat,
    chunk,
    clamp,
    div,
    exp,
    flatten,
    log,
    matmul,
    max,
    mean,
    min,
    mul,
    permute,
    pow,
    reshape,
    round,
    sigmoid,
    split,
    sqrt,
    squeeze,
    stack,
    std,
    sub,
    sum,
    tanh,
    transpose,
    unsqueeze,
    var,
    where,
)
from ._version import __version__
from .amp.autocast_mode import autocast
from .autograd.grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .creation import (
    arange,
    as_tensor,
    asarray,
    bernoulli,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    logspace,
    multinomial,
    normal,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    tensor,
    zeros,
    zeros_like,
)
from .device import DeviceError, available_backends, device
from .dtypes import (
    bfloat16,
    bool_,
    double,
    dtype,
    float16,
    float32,
    float64,
    get_default_dtype,
    half,
    int8,
    int16,
    int32,
    int64,
    long,
    promote_types,
    set_default_dtype,
    short,
    uint8,
)
from .dtypes import float as float
from .dtypes import int as int
from .random import Generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state
from .tensor import Size, Tensor

bool = bool_

_memory.tune_malloc()


def is_tensor(obj: object) -> bool:
    return isinstance(obj, Tensor)


def is_floating_point(t: Tensor) -> bool:
    return t.is_floating_point()


def numel(t: Tensor) -> int:
    return t.numel()


def result_type(a: object, b: object) -> dtype:
    from .dtypes import result_type as _rt

    return _rt(a, b)


def export(model: object, args: object, f: object, *, opset: int = 13, input_names: list[str] | None = None,
           output_names: list[str] | None = None, dynamic_axes: dict[str, object] | None = None,
           bundle_example: bool = False) -> object:
    """Trace `model(*args)` (in eval mode, under no_grad) and write it to the `.dtm` file `f`.

    `args` is the example input: a Tensor or a tuple of Tensors. `input_names`/`output_names` default to
    "input"/"output" ("input0", "input1", ... when several). `dynamic_axes` maps a name to {dim: "name"} for
    dimensions that may change at run time, e.g. {"input": {0: "batch"}, "output": {0: "batch"}}.
    `bundle_example=True` stores the example input and the eager output in the file for device self-tests.
    Returns a `dtorch._export.ExportResult`; raises `dtorch._export.ExportError` with what to change.
    """
    from ._export import export as _export

    return _export(model, args, f, opset=opset, input_names=input_names, output_names=output_names,  # type: ignore[arg-type]
                   dynamic_axes=dynamic_axes, bundle_example=bundle_example)
