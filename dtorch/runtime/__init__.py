"""dtorch.runtime: run an exported ``.dtm`` model with the C++ runtime (host build, pybind11).

    import dtorch.runtime as rt
    session = rt.InferenceSession("model.dtm", backend="cpu")      # threads=N optional
    name = session.get_inputs()[0].name                              # .name .shape .dtype .type
    outputs = session.run(None, {name: batch})                        # list of numpy arrays (copies)

Conversions ``run`` makes, and what it refuses:
- a non-contiguous (e.g. transposed or sliced) array is copied to C order; nothing else is converted;
- an array whose dtype differs from the model's is refused (convert it with ``.astype``);
- Python scalars and lists are refused (wrap them with ``numpy.asarray(..., dtype=...)``).
Errors: ``InvalidModelError`` (corrupt or inconsistent file), ``VersionMismatchError`` (file and runtime
not compatible), ``UnsupportedError`` (an operator this build lacks), ``ValueError``/``TypeError``
(names, shapes, dtypes), ``FileNotFoundError``/``OSError`` (I/O).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._version import __version__

try:
    from . import _C
except ImportError as exc:  # pragma: no cover - only without a built extension
    raise ImportError(
        "dtorch.runtime needs its compiled extension dtorch.runtime._C, which is not built; "
        "run `pip install -e .` (or `python setup.py build_ext --inplace`) in the dtorch source tree"
    ) from exc

InvalidModelError = _C.InvalidModelError
VersionMismatchError = _C.VersionMismatchError
UnsupportedError = _C.UnsupportedError
RUNTIME_VERSION: str = _C.RUNTIME_VERSION
FORMAT_VERSION: int = _C.FORMAT_VERSION

__all__ = [
    "FORMAT_VERSION",
    "KERNEL_POLICIES",
    "RUNTIME_VERSION",
    "InferenceSession",
    "InvalidModelError",
    "NodeArg",
    "UnsupportedError",
    "VersionMismatchError",
    "__version__",
    "available_backends",
    "registered_kernels",
    "run_kernel",
]

_BACKENDS = ["cpu"]
# InferenceSession(kernels=...): which kernel sets may run (runtime/include/dtorch/types.h KernelPolicy).
KERNEL_POLICIES = ("fast", "exact", "portable")

_ONNX_TYPE = {
    "float32": "float", "float64": "double", "float16": "float16", "bfloat16": "bfloat16", "int64": "int64",
    "int32": "int32", "int16": "int16", "int8": "int8", "uint8": "uint8", "bool": "bool",
}


def available_backends() -> list[str]:
    """The backends InferenceSession accepts in this build."""
    return list(_BACKENDS)


def registered_kernels() -> list[tuple[str, str]]:
    """Every (operator, dtype) this runtime build has a kernel for."""
    return list(_C.registered_kernels())


def run_kernel(op: str, attrs: Mapping[str, Any], inputs: Sequence[np.ndarray | None], *, threads: int = 1,
               output_dtypes: Sequence[str] | None = None, num_outputs: int = 1) -> list[np.ndarray]:
    """Run one kernel on NumPy arrays (``None`` = an absent optional input); for kernel tests."""
    return list(_C.run_kernel(op, dict(attrs), list(inputs), threads=threads,
                              output_dtypes=None if output_dtypes is None else list(output_dtypes),
                              num_outputs=num_outputs))


def _numpy_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


@dataclass(frozen=True)
class NodeArg:
    """A model input or output: ``shape`` holds ints for fixed dims and the axis name for dynamic ones."""

    name: str
    shape: list[int | str]
    dtype: np.dtype
    type: str


def _node_arg(d: dict[str, Any]) -> NodeArg:
    shape: list[int | str] = [n if size < 0 else int(size) for size, n in zip(d["dims"], d["dim_names"])]
    return NodeArg(d["name"], shape, _numpy_dtype(d["dtype"]), f"tensor({_ONNX_TYPE.get(d['dtype'], d['dtype'])})")


class InferenceSession:
    """A loaded ``.dtm`` model, run by the C++ runtime.

    ``path_or_bytes``: a file path (the weights are used in place from a memory map) or the file's bytes.
    ``backend``: one of ``available_backends()``. ``threads``: worker threads for the big kernels
    (default 1); results are identical for any count. ``kernels``: which kernel sets may run —
    ``"fast"`` (default: the fastest this CPU has, e.g. the AVX-512 FMA set, within 1e-5 x the output scale
    of the portable kernels), ``"exact"`` (only kernels with the portable kernels' bits: a host result then
    matches an emulated or real board bit for bit) or ``"portable"`` (the reference kernels only).
    ``exclude_kernel_sets``: kernel sets the session may not take, e.g. ``["avx512"]`` to run the AVX2 set on an
    AVX-512 CPU (each node takes the best of the others; ``"portable"`` cannot be excluded).
    ``blocked_layouts``: whether tensors between kernels that both take it live in the blocked layout (NCHW16c:
    convolution chains on the AVX-512 set; model inputs and outputs stay NCHW); the results are the same bits
    either way, False keeps every tensor NCHW.
    Threads: ``run`` may be called from several threads at once, and those calls run in parallel (the GIL is
    released while a run computes): the weights and prepared kernels are shared, and each call works in an
    execution state of its own (plan, arena, outputs) from the session's small pool of idle ones, so every result
    is the one a single thread would get. With ``threads > 1`` the session's worker threads serve one call at a
    time; a call that finds them busy computes on its own thread (the same bits).
    """

    def __init__(self, path_or_bytes: str | os.PathLike[str] | bytes | bytearray | memoryview,
                 backend: str = "cpu", threads: int | None = None, kernels: str = "fast",
                 exclude_kernel_sets: Sequence[str] = (), blocked_layouts: bool = True) -> None:
        if backend not in _BACKENDS:
            raise ValueError(f"unknown backend {backend!r}; this build has {available_backends()}; "
                             f"use backend='cpu'")
        if threads is None:
            threads = 1
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be a positive int, got {threads!r}")
        if kernels not in KERNEL_POLICIES:
            raise ValueError(f"kernels must be one of {list(KERNEL_POLICIES)}, got {kernels!r}")
        if isinstance(exclude_kernel_sets, str) or not all(isinstance(k, str) for k in exclude_kernel_sets):
            raise TypeError(f"exclude_kernel_sets must be a list of kernel set names, got {exclude_kernel_sets!r}")
        exclude = list(exclude_kernel_sets)
        if not isinstance(blocked_layouts, bool):
            raise TypeError(f"blocked_layouts must be True or False, got {blocked_layouts!r}")
        self._backend = backend
        self._threads = threads
        self._kernels = kernels
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            self._path: str | None = None
            self._sess = _C.Session.from_bytes(bytes(path_or_bytes) if isinstance(path_or_bytes, memoryview)
                                               else path_or_bytes, threads, kernels, exclude,
                                               blocked_layouts)
        elif isinstance(path_or_bytes, (str, os.PathLike)):
            path = os.fspath(path_or_bytes)
            if not os.path.exists(path):
                raise FileNotFoundError(f"model file not found: {path!r}; export one with dt.export(model, example, "
                                        f"{path!r})")
            self._path = path
            self._sess = _C.Session.from_file(path, threads, kernels, exclude, blocked_layouts)
        else:
            raise TypeError(f"InferenceSession needs a path or the model's bytes, got {type(path_or_bytes).__name__}")
        self._inputs = [_node_arg(d) for d in self._sess.inputs()]
        self._outputs = [_node_arg(d) for d in self._sess.outputs()]
        # run()'s fast path: each input's name and dtype, in the model's order.
        self._feed = tuple((i.name, i.dtype) for i in self._inputs)

    def get_inputs(self) -> list[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        return list(self._outputs)

    def get_providers(self) -> list[str]:
        return [self._backend]

    def node_kernels(self) -> list[tuple[str, str, str]]:
        """The kernel each node runs, in execution order: ``(operator, dtype, kernel set)``, e.g.
        ``("conv2d", "float32", "avx512")``."""
        return [(op, dtype, ks) for op, dtype, ks in self._sess.node_kernels()]

    @property
    def info(self) -> dict[str, Any]:
        """Metadata: versions, producer, opset, op list, planned arena and weight bytes, test vector."""
        return dict(self._sess.info())

    @property
    def arena_bytes(self) -> int:
        """Bytes of the arena planned for the last run's input shapes (0 before the first run)."""
        return int(self._sess.arena_bytes())

    def blocked_tensors(self) -> int:
        """How many tensors the last run's plan kept in the blocked layout (0 before the first run, and always
        with ``blocked_layouts=False``)."""
        return int(self._sess.blocked_tensors())

    def test_vector(self) -> tuple[list[np.ndarray], list[np.ndarray]] | None:
        """The bundled example (inputs, expected outputs), or None when the model has none."""
        tv = self._sess.test_vector()
        return None if tv is None else (list(tv[0]), list(tv[1]))

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any]) -> list[np.ndarray]:
        """Run the model; returns copies of the outputs named in ``output_names`` (all when None), in order."""
        # The common call (every output; a dict of exactly the inputs, C-contiguous arrays of the model's dtypes) goes
        # straight to the binding, which checks each array without calling back into Python: 1.3 us a call on a
        # 1 x 10 model against 7.1 before (ONNX Runtime's run: 5.5). Every other call goes through the checks below
        # and gets their messages.
        if output_names is None and type(input_feed) is dict and len(input_feed) == len(self._feed):
            arrays = []
            for name, dtype in self._feed:
                value = input_feed.get(name)
                if type(value) is not np.ndarray or value.dtype != dtype or not value.flags.c_contiguous:
                    break
                arrays.append(value)
            else:
                return self._sess.run(arrays)
        if not isinstance(input_feed, Mapping):
            raise TypeError(f"input_feed must be a dict of input name -> numpy array, got {type(input_feed).__name__}")
        names = [i.name for i in self._inputs]
        unknown = [k for k in input_feed if k not in names]
        if unknown:
            raise ValueError(f"unknown input name(s) {unknown}; the model's inputs are {names}")
        missing = [n for n in names if n not in input_feed]
        if missing:
            raise ValueError(f"missing input(s) {missing}; the model's inputs are {names}")
        out_names = [o.name for o in self._outputs]
        if output_names is None:
            picks = list(range(len(out_names)))
        else:
            if isinstance(output_names, str):
                raise TypeError(f"output_names must be a list of names or None, not a string; use [{output_names!r}]")
            picks = []
            for n in output_names:
                if n not in out_names:
                    raise ValueError(f"unknown output name {n!r}; the model's outputs are {out_names}")
                picks.append(out_names.index(n))
        arrays = []
        for arg in self._inputs:
            value = input_feed[arg.name]
            if not isinstance(value, np.ndarray):
                raise TypeError(f"input {arg.name!r} must be a numpy.ndarray, got {type(value).__name__}; "
                                f"wrap it with numpy.asarray(value, dtype=numpy.{arg.dtype})")
            if value.dtype != arg.dtype:
                raise TypeError(f"input {arg.name!r} has dtype {value.dtype} but the model expects {arg.dtype}; "
                                f"convert it with .astype(numpy.{arg.dtype})")
            # np.ascontiguousarray would make a 0-d (scalar) input 1-d
            arrays.append(value if value.flags.c_contiguous else value.copy(order="C"))
        results = self._sess.run(arrays)
        return [results[i] for i in picks]
