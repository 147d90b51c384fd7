"""`linear` and `bilinear` of `dtorch.nn.functional`."""

from __future__ import annotations

from ... import _functions as _F
from ..._prims.linear import Linear
from ...amp.autocast_mode import autocast_args
from ...tensor import Tensor

__all__ = ["bilinear", "linear"]


def _shape(t: Tensor) -> str:
    return "x".join(map(str, t.shape)) if t.ndim else "scalar"


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y = input @ weight.T + bias, for input (*, in_features) and weight (out_features, in_features)."""
    for name, t in (("input", input), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"linear(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if bias is not None and not isinstance(bias, Tensor):
        raise TypeError(f"linear(): argument 'bias' must be Tensor, not {type(bias).__name__}")
    input, weight, bias = autocast_args("lower", input, weight, bias)
    if input.ndim == 0 or weight.ndim not in (1, 2):
        raise RuntimeError(f"linear(): expected input of at least 1 dimension and a 2-D weight, got input of shape "
                           f"{list(input.shape)} and weight of shape {list(weight.shape)}")
    if weight.ndim == 1:  # PyTorch treats a 1-D weight as a single output feature that is squeezed away
        out = linear(input, weight.unsqueeze(0), None).squeeze(-1)
        return out if bias is None else _F.add(out, bias)
    if input.shape[-1] != weight.shape[1]:
        rows = input.numel() // input.shape[-1] if input.shape[-1] else 0
        lhs = f"{rows}x{input.shape[-1]}" if input.ndim > 1 else f"1x{input.shape[-1]}"
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({lhs} and {weight.shape[1]}x"
                           f"{weight.shape[0]}): input's last dim ({input.shape[-1]}) must equal in_features "
                           f"({weight.shape[1]}) of the weight of shape {list(weight.shape)}")
    if input.dtype is not weight.dtype or (bias is not None and bias.dtype is not input.dtype):
        got = f"{input.dtype} and {weight.dtype}" + (f" (bias {bias.dtype})" if bias is not None else "")
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {got}; convert the input with "
                           f".to(weight.dtype) or the layer with .to(input.dtype)")
    if bias is not None and bias.shape != (weight.shape[0],):
        if bias.numel() == 1 or bias.ndim == 0:
            return _F.add(Linear.apply(input, weight), bias)
        raise RuntimeError(f"linear(): bias of shape {list(bias.shape)} does not match out_features "
                           f"({weight.shape[0]}); expected shape [{weight.shape[0]}]")
    return Linear.apply(input, weight, bias) if bias is not None else Linear.apply(input, weight)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y_k = input1 @ weight[k] @ input2 + bias[k], for weight (out, in1, in2); composed from matmul."""
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D (out_features, in1_features, in2_features), got "
                           f"shape {list(weight.shape)}")
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear(): input1 and input2 must have the same leading dims, got "
                           f"{list(input1.shape)} and {list(input2.shape)}")
    if input1.shape[-1] != weight.shape[1] or input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input1 last dim {input1.shape[-1]} and input2 last dim {input2.shape[-1]}"
                           f" must match weight dims 1 and 2 of {list(weight.shape)}")
    lead = tuple(input1.shape[:-1])
    a = input1.reshape(-1, 1, 1, input1.shape[-1])
    b = input2.reshape(-1, 1, input2.shape[-1], 1)
    y = _F.matmul(_F.matmul(a, weight.unsqueeze(0)), b)  # (M, out, 1, 1)
    y = y.reshape(lead + (weight.shape[0],))
    return y if bias is None else _F.add(y, bias)
