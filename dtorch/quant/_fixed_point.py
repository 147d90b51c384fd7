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

__all__ = ["QMAX", "QMIN", "WMAX", "dequantize", "multiply_by_multiplier", "quantize", "quantize_multiplier",
           "requantize"]

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
