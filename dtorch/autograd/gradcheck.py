"""`gradcheck`: compare autograd's gradients with float64 central finite differences.

For every input that requires grad, each element is perturbed by +-eps and the change of every
output is measured; the resulting numerical Jacobian is compared with the analytical one that
backward produces (one backward pass per output element). A mismatch names the output, the input
index and the worst element, so a failing primitive's `backward` is easy to locate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .grad_mode import no_grad

__all__ = ["GradcheckError", "gradcheck"]


class GradcheckError(RuntimeError):
    """The analytical gradient of a function disagrees with its numerical gradient."""


def _as_tuple(x: Any) -> tuple[Any, ...]:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _outputs(fn: Callable[..., Any], inputs: Sequence[Any]) -> list[Any]:
    from ..tensor import Tensor

    outs = _as_tuple(fn(*inputs))
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            raise TypeError(f"gradcheck: the function must return a Tensor or a tuple of Tensors, but output {i} "
                            f"is {type(o).__name__}")
    return list(outs)


def _numerical(fn: Callable[..., Any], inputs: Sequence[Any], i: int, eps: float,
               out_mask: list[bool]) -> list[np.ndarray]:
    """Jacobian d(out_j)/d(input_i) per differentiable output j, shape (out_numel, in_numel)."""
    x = inputs[i]
    if not x._data.flags.writeable:  # e.g. a broadcast view: perturb a private copy instead
        x._data = x._data.copy()
    arr = x._data
    jac: list[np.ndarray] = []
    with no_grad():
        for flat in range(arr.size):
            idx = np.unravel_index(flat, arr.shape)
            orig = arr[idx].copy()
            arr[idx] = orig + eps
            plus = [o._data.astype(np.float64).ravel() for o in _outputs(fn, inputs)]
            arr[idx] = orig - eps
            minus = [o._data.astype(np.float64).ravel() for o in _outputs(fn, inputs)]
            arr[idx] = orig
            cols = [(p - m) / (2.0 * eps) for p, m in zip(plus, minus)]
            if not jac:
                jac = [np.zeros((c.size, arr.size)) for c in cols]
            for j, c in enumerate(cols):
                if out_mask[j]:
                    jac[j][:, flat] = c
    return jac


def _analytical(fn: Callable[..., Any], inputs: Sequence[Any], diff_idx: list[int],
                outs: list[Any]) -> list[list[np.ndarray]]:
    """jac[j][k]: d(out_j)/d(inputs[diff_idx[k]]), shape (out_numel, in_numel)."""
    from . import grad as autograd_grad

    targets = [inputs[k] for k in diff_idx]
    result: list[list[np.ndarray]] = []
    for o in outs:
        per_input = [np.zeros((o._data.size, t._data.size)) for t in targets]
        if o.requires_grad and o.is_floating_point():
            for r in range(o._data.size):
                seed = np.zeros(o._data.size, dtype=o._data.dtype)
                seed[r] = 1
                grads = autograd_grad(o, targets, grad_outputs=seed.reshape(o._data.shape), retain_graph=True,
                                      allow_unused=True)
                for k, g in enumerate(grads):
                    if g is not None:
                        if g._data.shape != targets[k]._data.shape:
                            raise GradcheckError(f"gradcheck: the gradient for input {diff_idx[k]} has shape "
                                                 f"{tuple(g.shape)} but the input has shape "
                                                 f"{tuple(targets[k].shape)}")
                        per_input[k][r] = g._data.astype(np.float64).ravel()
        result.append(per_input)
    return result


def gradcheck(fn: Callable[..., Any], inputs: Any, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True) -> bool:
    """Check `fn`'s autograd gradients against central finite differences in float64.

    `inputs` is a Tensor or a tuple of arguments; every Tensor in it that requires grad must be
    float64 and is checked element by element. Returns True when all Jacobians agree within
    `|analytical - numerical| <= atol + rtol * |numerical|`; otherwise raises GradcheckError (or
    returns False with `raise_exception=False`).
    """
    from ..tensor import Tensor

    ins = _as_tuple(inputs)
    diff_idx = [k for k, x in enumerate(ins) if isinstance(x, Tensor) and x.requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the "
                         "inputs have requires_grad=True")
    for k in diff_idx:
        if ins[k].dtype.name != "float64":
            raise ValueError(f"gradcheck: input {k} requires grad but has dtype {ins[k].dtype}; finite differences "
                             f"need float64 inputs: pass x.double().requires_grad_()")
    outs = _outputs(fn, ins)
    out_mask = [o.is_floating_point() for o in outs]
    analytical = _analytical(fn, ins, diff_idx, outs)
    for k_pos, k in enumerate(diff_idx):
        numerical = _numerical(fn, ins, k, eps, out_mask)
        for j, o in enumerate(outs):
            if not out_mask[j]:
                continue
            a, n = analytical[j][k_pos], numerical[j]
            with np.errstate(invalid="ignore"):
                excess = np.abs(a - n) - (atol + rtol * np.abs(n))
            bad = ~(excess <= 0)  # NaN counts as a mismatch unless both sides are NaN at the same place
            bad &= ~(np.isnan(a) & np.isnan(n))
            if bad.any():
                flat = int(np.argmax(np.where(bad, np.nan_to_num(excess, nan=np.inf), -np.inf)))
                r, c = np.unravel_index(flat, a.shape)
                in_el = tuple(int(v) for v in np.unravel_index(int(c), ins[k]._data.shape))
                out_el = tuple(int(v) for v in np.unravel_index(int(r), o._data.shape))
                msg = (f"Jacobian mismatch for output {j} with respect to input {k}: worst at input element "
                       f"{list(in_el)}, output element {list(out_el)}: numerical {float(n[r, c]):.6g} vs analytical "
                       f"{float(a[r, c]):.6g} (|diff| {float(abs(a[r, c] - n[r, c])):.3g} > atol {atol} + rtol {rtol} "
                       f"* |numerical|); "
                       f"{int(bad.sum())} of {bad.size} entries differ")
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True
