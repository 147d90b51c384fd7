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
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["ADD_LEFT_SHIFT", "QMAX", "QMIN", "WMAX", "activation_range", "dequantize", "multiply_by_multiplier", "qadd",
           "qmean", "quantize", "quantize_multiplier", "requantize"]

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
