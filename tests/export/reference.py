"""A pure-NumPy reference interpreter for .dtm files, written from runtime/OPS.md (independent of the exporter).

`run(model, feeds)` executes the nodes in file order on float64-free NumPy arrays, at any input size (dynamic
dims are re-derived from the actual arrays), reusing the eager primitives for conv, pooling and upsampling.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import erf

from dtorch._export.reader import DtmFile
from dtorch._prims.conv import Conv2d, ConvTranspose2d
from dtorch._prims.pooling import AdaptiveAvgPool2d, AdaptiveMaxPool2d, AvgPool2d, MaxPool2d
from dtorch._prims.upsampling import UpsampleBilinear2d, UpsampleNearest2d


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _gelu(x: np.ndarray, tanh: bool = False) -> np.ndarray:
    if tanh:
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


UNARY = {
    "relu": lambda x, a: np.maximum(x, 0), "sigmoid": lambda x, a: _sigmoid(x), "tanh": lambda x, a: np.tanh(x),
    "silu": lambda x, a: x * _sigmoid(x), "hardswish": lambda x, a: x * np.clip(x + 3, 0, 6) / 6,
    "hardsigmoid": lambda x, a: np.clip(x + 3, 0, 6) / 6,
    "gelu": lambda x, a: _gelu(x, a.get("approximate", "none") == "tanh"),
    "exp": lambda x, a: np.exp(x), "log": lambda x, a: np.log(x), "sqrt": lambda x, a: np.sqrt(x),
    "rsqrt": lambda x, a: 1 / np.sqrt(x), "neg": lambda x, a: -x, "abs": lambda x, a: np.abs(x),
    "erf": lambda x, a: erf(x), "sin": lambda x, a: np.sin(x), "cos": lambda x, a: np.cos(x),
    "reciprocal": lambda x, a: 1 / x,
    "hardtanh": lambda x, a: np.clip(x, a["min_val"], a["max_val"]),
    "leaky_relu": lambda x, a: np.where(x > 0, x, x * a["alpha"]),
    "elu": lambda x, a: np.where(x > 0, x, a["alpha"] * np.expm1(np.minimum(x, 0))),
    "softplus": lambda x, a: np.where(x * a["beta"] > a["threshold"], x, np.logaddexp(x * a["beta"], 0) / a["beta"]),
}
BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "pow": np.power,
          "maximum": np.maximum, "minimum": np.minimum}
ACT = {"relu": "relu", "relu6": None, "hardtanh": "hardtanh", "leaky_relu": "leaky_relu", "sigmoid": "sigmoid",
       "tanh": "tanh", "silu": "silu", "hardswish": "hardswish", "hardsigmoid": "hardsigmoid", "gelu": "gelu"}


def _activation(y: np.ndarray, a: dict[str, Any]) -> np.ndarray:
    act = a.get("activation", "none")
    if act == "none":
        return y
    if act == "relu6":
        return np.clip(y, 0, 6)
    if act == "gelu_tanh":
        return _gelu(y, True)
    return UNARY[act](y, a)


def _norm_shape(x: np.ndarray, shape: list[int]) -> tuple[int, ...]:
    out = [x.shape[i] if s == 0 else s for i, s in enumerate(shape)]
    if -1 in out:
        known = int(np.prod([s for s in out if s != -1]))
        out[out.index(-1)] = x.size // known if known else 0
    return tuple(out)


def _softmax(x: np.ndarray, dim: int, log: bool) -> np.ndarray:
    z = x - x.max(axis=dim, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=dim, keepdims=True))
    return z - lse if log else np.exp(z - lse)


def _upsample(op: str, x: np.ndarray, a: dict[str, Any]) -> np.ndarray:
    h, w = x.shape[2:]
    if "scales" in a:
        sh, sw = a["scales"]
        size, scales = (math.floor(h * sh), math.floor(w * sw)), (sh, sw)
    else:
        size, scales = tuple(a["size"]), (None, None)
    if op == "upsample_nearest2d":
        return UpsampleNearest2d().forward(x, output_size=size, scales=scales)
    return UpsampleBilinear2d().forward(x, output_size=size, scales=scales, align_corners=bool(a["align_corners"]))


def run_node(op: str, xs: list[np.ndarray | None], a: dict[str, Any]) -> np.ndarray:
    x = xs[0]
    assert x is not None or op == "embedding"
    if op == "conv2d":
        y = Conv2d().forward(x, xs[1], xs[2], stride=tuple(a["stride"]), padding=tuple(a["padding"]),
                             dilation=tuple(a["dilation"]), groups=a["groups"])
        return _activation(y, a)
    if op == "conv_transpose2d":
        y = ConvTranspose2d().forward(x, xs[1], xs[2], stride=tuple(a["stride"]), padding=tuple(a["padding"]),
                                      output_padding=tuple(a["output_padding"]), dilation=tuple(a["dilation"]),
                                      groups=a["groups"])
        return _activation(y, a)
    if op == "linear":
        y = x @ xs[1].T
        return _activation(y if xs[2] is None else y + xs[2], a)
    if op == "matmul":
        return np.matmul(x, xs[1])
    if op in BINARY:
        return _activation(BINARY[op](x, xs[1]), a)
    if op in UNARY:
        return UNARY[op](x, a)
    if op == "clamp":
        y = np.maximum(x, a["min"]) if a["has_min"] else x
        return np.minimum(y, a["max"]) if a["has_max"] else y
    if op in ("softmax", "log_softmax"):
        return _softmax(x, a["dim"], op == "log_softmax")
    if op == "batch_norm":
        shape = (1, -1) + (1,) * (x.ndim - 2)
        y = (x - xs[1].reshape(shape)) / np.sqrt(xs[2].reshape(shape) + a["eps"])
        y = y * xs[3].reshape(shape) if xs[3] is not None else y
        return y + xs[4].reshape(shape) if xs[4] is not None else y
    if op == "layer_norm":
        axes = tuple(range(x.ndim - a["normalized_ndim"], x.ndim))
        mu = x.mean(axis=axes, keepdims=True)
        y = (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=axes, keepdims=True) + a["eps"])
        y = y * xs[1] if xs[1] is not None else y
        return y + xs[2] if xs[2] is not None else y
    if op == "group_norm":
        n, c = x.shape[:2]
        g = x.reshape(n, a["groups"], -1)
        mu = g.mean(axis=2, keepdims=True)
        y = ((g - mu) / np.sqrt(((g - mu) ** 2).mean(axis=2, keepdims=True) + a["eps"])).reshape(x.shape)
        shape = (1, c) + (1,) * (x.ndim - 2)
        y = y * xs[1].reshape(shape) if xs[1] is not None else y
        return y + xs[2].reshape(shape) if xs[2] is not None else y
    if op == "max_pool2d":
        return MaxPool2d().forward(x, tuple(a["kernel"]), tuple(a["stride"]), tuple(a["padding"]),
                                   tuple(a["dilation"]), bool(a["ceil_mode"]))
    if op == "avg_pool2d":
        return AvgPool2d().forward(x, tuple(a["kernel"]), tuple(a["stride"]), tuple(a["padding"]),
                                   bool(a["ceil_mode"]), bool(a["count_include_pad"]), a["divisor_override"] or None)
    if op == "adaptive_avg_pool2d":
        return AdaptiveAvgPool2d().forward(x, tuple(a["output_size"]))
    if op == "adaptive_max_pool2d":
        return AdaptiveMaxPool2d().forward(x, tuple(a["output_size"]))
    if op in ("upsample_nearest2d", "upsample_bilinear2d"):
        return _upsample(op, x, a)
    if op == "concat":
        return np.concatenate(xs, axis=a["axis"])  # type: ignore[arg-type]
    if op == "reshape":
        return x.reshape(_norm_shape(x, a["shape"]))
    if op == "permute":
        return np.ascontiguousarray(x.transpose(a["perm"]))
    if op == "slice":
        key = [slice(None)] * x.ndim
        for ax, s, e, st in zip(a["axes"], a["starts"], a["ends"], a["steps"]):
            key[ax] = slice(s, e, st)
        return np.ascontiguousarray(x[tuple(key)])
    if op == "index_select":
        return np.take(x, xs[1], axis=a["axis"])
    if op == "embedding":
        return xs[1][xs[0]]  # type: ignore[index]
    if op in ("mean", "sum"):
        f = np.mean if op == "mean" else np.sum
        return f(x, axis=tuple(a["axes"]), keepdims=bool(a["keepdim"])).astype(x.dtype)
    if op == "pad":
        widths = [(0, 0)] * x.ndim
        p = a["pads"]
        for i in range(len(p) // 2):
            widths[x.ndim - 1 - i] = (p[2 * i], p[2 * i + 1])
        return np.pad(x, widths, constant_values=a["value"])
    if op == "expand":
        shape = list(a["shape"])
        lead = len(shape) - x.ndim
        return np.ascontiguousarray(np.broadcast_to(x, [x.shape[i - lead] if s == 0 else s for i, s in
                                                        enumerate(shape)]))
    raise NotImplementedError(f"reference interpreter: no operator {op!r}")


def run(model: DtmFile, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    env: dict[int, np.ndarray] = {}
    for i, t in enumerate(model.tensors):
        if t.kind == "constant":
            assert t.data is not None
            env[i] = np.asarray(t.data, dtype=t.data.dtype.newbyteorder("="))
    for i in model.inputs:
        env[i] = feeds[model.tensors[i].name]
    for n in model.nodes:
        xs = [None if i < 0 else env[i] for i in n.inputs]
        y = run_node(n.op, xs, n.attrs)
        env[n.outputs[0]] = np.asarray(y, dtype=model.tensors[n.outputs[0]].dtype)
    return [env[i] for i in model.outputs]
