"""`repr(tensor)` in PyTorch's layout: 4 decimals, integer-valued floats as `1.`, scientific notation when
magnitudes span too far, right-aligned columns, 80-character lines and `...` summaries above 1000 elements."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .tensor import Tensor

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80


class _Formatter:
    def __init__(self, values: np.ndarray, floating: bool) -> None:
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        flat = values.reshape(-1)
        if not floating:
            for v in flat.tolist():
                self.width = max(self.width, len(str(v)))
            return
        with np.errstate(all="ignore"):
            finite = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if finite.size == 0:
            return
        absv = np.abs(finite)
        lo, hi = float(absv.min()), float(absv.max())
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        if self.int_mode:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8
            fmt = (lambda v: f"{v:.{PRECISION}e}") if self.sci_mode else (lambda v: f"{v:.0f}" + ".")
        else:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
            fmt = (lambda v: f"{v:.{PRECISION}e}") if self.sci_mode else (lambda v: f"{v:.{PRECISION}f}")
        for v in finite.tolist():
            self.width = max(self.width, len(fmt(v)))

    def format(self, v: Any) -> str:
        if not self.floating:
            s = str(v)
        elif self.sci_mode:
            s = f"{v:.{PRECISION}e}"
        elif self.int_mode:
            s = f"{v:.0f}" + ("" if math.isinf(v) or math.isnan(v) else ".")
        else:
            s = f"{v:.{PRECISION}f}"
        return " " * (self.width - len(s)) + s


def _summarized(a: np.ndarray) -> np.ndarray:
    """The edge items of every dim (what a summarized print shows), for sizing the columns."""
    if a.ndim == 0:
        return a
    if a.shape[0] > 2 * EDGEITEMS:
        a = np.concatenate([a[:EDGEITEMS], a[-EDGEITEMS:]])
    return np.stack([_summarized(x) for x in a]) if a.ndim > 1 else a


def _vector(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    per_line = max(1, (LINEWIDTH - indent) // (fmt.width + 2))
    if summarize and a.shape[0] > 2 * EDGEITEMS:
        data = [fmt.format(v) for v in a[:EDGEITEMS].tolist()] + [" ..."] + \
               [fmt.format(v) for v in a[-EDGEITEMS:].tolist()]
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector(a, indent, summarize, fmt)
    n = a.shape[0]
    if summarize and n > 2 * EDGEITEMS:
        parts = [_nested(a[i], indent + 1, summarize, fmt) for i in range(EDGEITEMS)] + ["..."] + \
                [_nested(a[i], indent + 1, summarize, fmt) for i in range(n - EDGEITEMS, n)]
    else:
        parts = [_nested(a[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def tensor_repr(t: Tensor) -> str:
    from . import dtypes as _dt

    prefix = "tensor("
    arr = t._data
    floating = t.is_floating_point()
    if floating and arr.dtype != np.float64:
        arr = arr.astype(np.float64)
    suffixes = []
    if arr.size == 0:
        if arr.ndim != 1:
            suffixes.append(f"size={tuple(arr.shape)}")
        if t.dtype is not _dt.get_default_dtype():
            suffixes.append(f"dtype={t.dtype}")
        body = "[]"
    else:
        if t.dtype not in (_dt.get_default_dtype(), _dt.int64, _dt.bool_):
            suffixes.append(f"dtype={t.dtype}")
        summarize = arr.size > THRESHOLD
        fmt = _Formatter(_summarized(arr) if summarize else arr, floating)
        body = _nested(arr, len(prefix), summarize, fmt)
    if t._ctx is not None:
        suffixes.append(f"grad_fn=<{type(t._ctx).__name__}Backward>")
    elif t._rg:
        suffixes.append("requires_grad=True")
    return prefix + body + "".join(", " + s for s in suffixes) + ")"
