"""The integer arithmetic of DTorch's int8 operators, in NumPy: the reference the C++ kernels
(runtime/kernels/common/requant.h) follow bit for bit.

The scheme is the widely used one (TFLite's int8 specification, gemmlowp): a real value r is held as an int8 q with
r = scale * (q - zero_point). Weights are symmetric per output channel (zero_point 0, values in [-127, 127]),
activations asymmetric per tensor ([-128, 127]), biases int32 with scale x_scale * w_scale[o] and zero point 0.

A product's int32 accumulator `acc` (scale x_scale * w_scale[o]) becomes the output's int8 with the real multiplier
M = x_scale * w_scale[o] / y_scale, held as an int32 `m` in [2^30, 2^31) and an exponent `e` with M ~= m * 2^(e-31):

    y = clamp(((acc * m + 2^(s-1)) >> s) + y_zero_point, lo, hi),    s = 31 - e,  1 <= s <= 62

in 64-bit integers, where >> is the arithmetic shift (a floor): the rounding adds half and floors, so ties go up
(toward +infinity). This is the single-rounding form of TFLite's MultiplyByQuantizedMultiplier; it needs one 64-bit
product per value, which every target has (x86 vpmuldq, NEON smull + srshr, RVV vwmul), and nothing in it is
implementation-defined.

quantize (float32 -> int8) follows ONNX QuantizeLinear: saturate(round_half_even(x / scale) + zero_point), the
division in float32; NaN becomes the zero point. dequantize: float32(q - zero_point) * scale in float32.

The operators on int8 activations follow TFLite's int8 reference kernels (tensorflow/lite/kernels/internal/reference/
integer_ops), with the single-rounding multiplier above in place of TFLite's two roundings:

- qadd (ADD): both inputs shifted left 20 bits and rescaled to twice the larger input scale, summed, requantized.
- qmul (MUL): (a - a_zp) * (b - b_zp), an exact int32, times a_scale * b_scale / y_scale.
- qmatmul (BatchMatMul / FullyConnected of two activations): the int32 sum over k of (a - a_zp) * (b - b_zp), times
  a_scale * b_scale / y_scale.
- qconcat (CONCATENATION): an input whose scale or zero point differs from the output's is requantized as TFLite's
  int8 -> int8 QUANTIZE does, (q - zp_in) times s_in / s_out + zp_out (TFLite's int8 concatenation requires equal
  scales; its converter makes them equal, DTorch requantizes).
- qavg_pool2d (AVERAGE_POOL_2D): the output keeps the input's scale and zero point; the window's integer sum divided by
  the divisor as `acc > 0 ? (acc + d / 2) / d : (acc - d / 2) / d` in C's truncating division (half away from zero).
- qmean (MEAN): the int32 sum of (x - zp) times x_scale / (y_scale * count).
- qlut (LOGISTIC, TANH, HARD_SWISH, ... as TFLite's and ONNX Runtime's kernels build them): a 256-entry table,
  table[q + 128] = quantize(f(dequantize(q))), with f in float64 here, when the model is quantized; the runtime only
  indexes it, so every target gives the same bits.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["ADD_LEFT_SHIFT", "LUT_DEFAULTS", "LUT_FUNCTIONS", "QMAX", "QMIN", "WMAX", "activation_range", "dequantize",
           "lut_table", "multiply_by_multiplier", "qadd", "qavg_pool2d", "qconcat", "qlut", "qmatmul", "qmean", "qmul",
           "quantize", "quantize_multiplier", "requantize", "rounded_average"]

QMIN, QMAX = -128, 127  #: the int8 range of activations
WMAX = 127  #: weights are symmetric: [-127, 127]


def quantize_multiplier(real: float) -> tuple[int, int]:
    """(m, e) with real ~= m * 2^(e - 31), m in [2^30, 2^31) (or (0, 0) for a multiplier below 2^-32). The
    rounding of m is half away from zero; real must be finite, >= 0 and below 2^30."""
    real = float(real)
    if not math.isfinite(real) or real < 0.0:
        raise ValueError(f"a requantization multiplier must be finite and >= 0, got {real!r}")
    if real == 0.0:
        return 0, 0
    q, e = math.frexp(real)  # real = q * 2^e, 0.5 <= q < 1: q * 2^31 is exact in a double, + 0.5 too
    m = int(math.floor(q * 2147483648.0 + 0.5))
    if m == 2147483648:
        m //= 2
        e += 1
    if e < -31:  # smaller than 2^-32: every int32 accumulator rounds to 0 or -0
        return 0, 0
    if e > 30:
        raise ValueError(f"a requantization multiplier of {real!r} is too large (the scales are inconsistent)")
    return m, e


def multiply_by_multiplier(acc: np.ndarray, m: np.ndarray | int, e: np.ndarray | int) -> np.ndarray:
    """round(acc * m * 2^(e - 31)) with ties toward +infinity, saturated to int32 (m, e broadcast against acc)."""
    acc = np.asarray(acc, dtype=np.int64)
    m = np.asarray(m, dtype=np.int64)
    s = 31 - np.asarray(e, dtype=np.int64)
    if np.any((s < 1) | (s > 62)):
        raise ValueError("requantization exponent out of range")
    # acc fits int32 and m < 2^31, so the product fits int64 with room for the rounding term.
    out = (acc * m + (np.int64(1) << (s - 1))) >> s
    return np.clip(out, -(2**31), 2**31 - 1).astype(np.int32)


def requantize(acc: np.ndarray, m: np.ndarray | int, e: np.ndarray | int, zero_point: int, lo: int = QMIN,
               hi: int = QMAX) -> np.ndarray:
    """The int8 output of int32 accumulators: the multiplier, the zero point, the clamp [lo, hi]."""
    y = multiply_by_multiplier(acc, m, e).astype(np.int64) + int(zero_point)
    return np.clip(y, lo, hi).astype(np.int8)


def quantize(x: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """float32 -> int8 as ONNX QuantizeLinear (ties to even; NaN -> the zero point)."""
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        r = np.rint(x / np.float32(scale))
    r = np.where(np.isnan(r), 0.0, r)
    r = np.clip(r, -512.0, 512.0).astype(np.int64) + int(zero_point)
    return np.clip(r, QMIN, QMAX).astype(np.int8)


def dequantize(q: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """int8 -> float32: (q - zero_point) * scale, the product in float32."""
    d = (np.asarray(q).astype(np.int32) - int(zero_point)).astype(np.float32)
    return d * np.float32(scale)


def activation_range(activation: str, y_scale: float, y_zero_point: int) -> tuple[int, int]:
    """The int8 clamp of a fused activation: none [-128, 127], relu [zp, 127], relu6 [zp, quantize(6)]."""
    lo, hi = QMIN, QMAX
    if activation in ("relu", "relu6"):
        lo = max(lo, int(y_zero_point))
    if activation == "relu6":
        hi = min(hi, int(quantize(np.float32(6.0), y_scale, y_zero_point)))
    return lo, max(lo, hi)


ADD_LEFT_SHIFT = 20


def qadd(a: np.ndarray, b: np.ndarray, a_scale: float, a_zero_point: int, b_scale: float, b_zero_point: int,
         y_scale: float, y_zero_point: int, activation: str = "none") -> np.ndarray:
    """int8 a + b as the qadd kernel (TFLite's ADD): both inputs shifted left 20 bits and rescaled to twice the larger
    input scale, summed, requantized to the output."""
    twice = 2.0 * max(float(a_scale), float(b_scale))
    ma, ea = quantize_multiplier(float(a_scale) / twice)
    mb, eb = quantize_multiplier(float(b_scale) / twice)
    my, ey = quantize_multiplier(twice / (float(1 << ADD_LEFT_SHIFT) * float(y_scale)))
    sa = multiply_by_multiplier((np.asarray(a, np.int64) - a_zero_point) << ADD_LEFT_SHIFT, ma, ea).astype(np.int64)
    sb = multiply_by_multiplier((np.asarray(b, np.int64) - b_zero_point) << ADD_LEFT_SHIFT, mb, eb).astype(np.int64)
    lo, hi = activation_range(activation, y_scale, y_zero_point)
    return requantize(sa + sb, my, ey, y_zero_point, lo, hi)


def qmean(x: np.ndarray, axes: tuple[int, ...], keepdims: bool, x_scale: float, x_zero_point: int, y_scale: float,
          y_zero_point: int) -> np.ndarray:
    """int8 mean over `axes` as the qmean kernel: the int32 sum of (x - zp) times x_scale / (y_scale * count)."""
    x = np.asarray(x, np.int64) - x_zero_point
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64)) if axes else 1
    acc = x.sum(axis=axes, keepdims=keepdims)
    m, e = quantize_multiplier(float(x_scale) / (float(y_scale) * float(count)))
    return requantize(acc, m, e, y_zero_point)


def _product_multiplier(a_scale: float, b_scale: float, y_scale: float) -> tuple[int, int]:
    """The multiplier of qmul and qmatmul: a_scale * b_scale / y_scale in double, in that order (as the kernels)."""
    return quantize_multiplier(float(a_scale) * float(b_scale) / float(y_scale))


def qmul(a: np.ndarray, b: np.ndarray, a_scale: float, a_zero_point: int, b_scale: float, b_zero_point: int,
         y_scale: float, y_zero_point: int, activation: str = "none") -> np.ndarray:
    """int8 a * b (NumPy broadcasting) as the qmul kernel (TFLite's MUL): (a - a_zp) * (b - b_zp) requantized once."""
    m, e = _product_multiplier(a_scale, b_scale, y_scale)
    prod = (np.asarray(a, np.int64) - a_zero_point) * (np.asarray(b, np.int64) - b_zero_point)
    lo, hi = activation_range(activation, y_scale, y_zero_point)
    return requantize(prod, m, e, y_zero_point, lo, hi)


def qmatmul(a: np.ndarray, b: np.ndarray, a_scale: float, a_zero_point: int, b_scale: float, b_zero_point: int,
            y_scale: float, y_zero_point: int, activation: str = "none") -> np.ndarray:
    """int8 torch.matmul(a, b) as the qmatmul kernel: the int32 sums of (a - a_zp) * (b - b_zp) (wrapping modulo
    2^32, as the kernel) requantized once with a_scale * b_scale / y_scale."""
    m, e = _product_multiplier(a_scale, b_scale, y_scale)
    acc = np.matmul(np.asarray(a, np.int64) - a_zero_point, np.asarray(b, np.int64) - b_zero_point)
    acc = ((acc + 2**31) % 2**32) - 2**31
    lo, hi = activation_range(activation, y_scale, y_zero_point)
    return requantize(acc, m, e, y_zero_point, lo, hi)


def qconcat(xs: list[np.ndarray], axis: int, x_scales: list[float], x_zero_points: list[int], y_scale: float,
            y_zero_point: int) -> np.ndarray:
    """int8 concatenation as the qconcat kernel: each input requantized to the output's scale and zero point (copied
    where they are the same)."""
    parts = []
    for x, s, zp in zip(xs, x_scales, x_zero_points):
        m, e = quantize_multiplier(float(s) / float(y_scale))
        parts.append(requantize(np.asarray(x, np.int64) - zp, m, e, y_zero_point))
    return np.concatenate(parts, axis=axis)


def rounded_average(acc: np.ndarray, d: np.ndarray | int) -> np.ndarray:
    """TFLite's int8 average: acc > 0 ? (acc + d / 2) / d : (acc - d / 2) / d in C's truncating division (half away
    from zero), saturated to int8."""
    acc = np.asarray(acc, np.int64)
    d = np.asarray(d, np.int64)
    q = np.sign(acc) * ((np.abs(acc) + d // 2) // d)
    return np.clip(q, QMIN, QMAX).astype(np.int8)


def _pool_out_size(size: int, k: int, s: int, p: int, ceil_mode: bool) -> int:
    span = size + 2 * p - (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = span // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def qavg_pool2d(x: np.ndarray, kernel: tuple[int, int], stride: tuple[int, int] | None, padding: tuple[int, int],
                zero_point: int, ceil_mode: bool = False, count_include_pad: bool = True, divisor_override: int = 0
                ) -> np.ndarray:
    """int8 avg_pool2d as the qavg_pool2d kernel: PyTorch's windows and divisor d; acc = sum(x - zp) over the taps
    inside the input + d * zp (the int8 values' own sum when d counts the taps, a padding tap holding zp), then
    rounded_average(acc, d). The output keeps the input's scale and zero point."""
    x = np.asarray(x, np.int64)
    n, c, h, w = x.shape
    (kh, kw), (ph, pw) = kernel, padding
    sh, sw = stride if stride is not None else kernel
    oh, ow = _pool_out_size(h, kh, sh, ph, ceil_mode), _pool_out_size(w, kw, sw, pw, ceil_mode)
    out = np.empty((n, c, oh, ow), np.int8)
    for i in range(oh):
        h0 = i * sh - ph
        h1p = min(h0 + kh, h + ph)
        a0, a1 = max(h0, 0), min(h1p, h)
        for j in range(ow):
            w0 = j * sw - pw
            w1p = min(w0 + kw, w + pw)
            b0, b1 = max(w0, 0), min(w1p, w)
            taps = (a1 - a0) * (b1 - b0)
            d = divisor_override or ((h1p - h0) * (w1p - w0) if count_include_pad else taps)
            s = (x[:, :, a0:a1, b0:b1] - zero_point).sum(axis=(2, 3))
            out[:, :, i, j] = rounded_average(s + d * zero_point, d) if d > 0 else zero_point
    return out


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x)


#: The float functions a qlut table may hold (dtorch/catalogue/quant.py QLUT_FUNCTIONS), in float64, each with the
#: qlut attributes it reads (the catalogue's float operator of the same name computes the same function).
LUT_FUNCTIONS: dict[str, Any] = {
    "relu": lambda x, a: np.maximum(x, 0.0),
    "sigmoid": lambda x, a: _sigmoid(x),
    "tanh": lambda x, a: np.tanh(x),
    "silu": lambda x, a: x * _sigmoid(x),
    "hardswish": lambda x, a: x * np.clip(x + 3.0, 0.0, 6.0) / 6.0,
    "hardsigmoid": lambda x, a: np.clip(x + 3.0, 0.0, 6.0) / 6.0,
    "gelu": lambda x, a: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0))),
    "gelu_tanh": lambda x, a: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3))),
    "hardtanh": lambda x, a: np.clip(x, a["min_val"], a["max_val"]),
    "leaky_relu": lambda x, a: np.where(x > 0, x, a["alpha"] * x),
    "elu": lambda x, a: np.where(x > 0, x, a["alpha"] * np.expm1(np.minimum(x, 0.0))),
    "softplus": lambda x, a: np.where(a["beta"] * x > a["threshold"], x,
                                      np.log1p(np.exp(np.minimum(a["beta"] * x, a["threshold"]))) / a["beta"]),
}
#: The defaults of the functions' parameters (the qlut attributes' defaults).
LUT_DEFAULTS = {"alpha": 0.01, "min_val": -1.0, "max_val": 1.0, "beta": 1.0, "threshold": 20.0}


def lut_table(function: str, x_scale: float, x_zero_point: int, y_scale: float, y_zero_point: int,
              **params: float) -> np.ndarray:
    """The 256-entry int8 table of qlut: entry q + 128 = quantize(f(dequantize(q, x)), y) for q in [-128, 127], f
    computed in float64 from the dequantized float32 input and rounded to float32 before the quantization (as ONNX
    QuantizeLinear). `params`: the function's parameters (alpha, min_val, max_val, beta, threshold)."""
    if function not in LUT_FUNCTIONS:
        raise ValueError(f"qlut has no function {function!r}; one of {', '.join(LUT_FUNCTIONS)}")
    unknown = set(params) - set(LUT_DEFAULTS)
    if unknown:
        raise ValueError(f"unknown qlut parameter(s) {sorted(unknown)}; the parameters are {sorted(LUT_DEFAULTS)}")
    a = {**LUT_DEFAULTS, **{k: float(v) for k, v in params.items()}}
    q = np.arange(QMIN, QMAX + 1, dtype=np.int64)
    x = dequantize(q, x_scale, x_zero_point).astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        y = np.asarray(LUT_FUNCTIONS[function](x, a), np.float64).astype(np.float32)
    return quantize(y, y_scale, y_zero_point)


def qlut(x: np.ndarray, table: np.ndarray) -> np.ndarray:
    """The qlut kernel: table[x + 128]."""
    return np.asarray(table, np.int8)[np.asarray(x, np.int64) + 128]
