"""The NumPy twin of the int8 products (qconv2d, qlinear), for the ONNX tests that check DTorch's int8 operators bit for
bit: exact int64 accumulators, then the per-channel fixed-point requantization of dtorch/quant/_fixed_point.py
(quantize, dequantize, qadd and qmean are there as they are)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dtorch.quant import _fixed_point as fp


def requantize(acc: np.ndarray, x_scale: float, w_scales: np.ndarray, y_scale: float, y_zero_point: int, axis: int,
               activation: str = "none") -> np.ndarray:
    """int8 outputs of int64 accumulators whose channel `axis` has the weight scales `w_scales`."""
    lo, hi = fp.activation_range(activation, y_scale, y_zero_point)
    out = np.empty(acc.shape, np.int8)
    for o, ws in enumerate(np.asarray(w_scales).reshape(-1)):
        m, e = fp.quantize_multiplier(float(x_scale) * float(ws) / float(y_scale))
        at = (slice(None),) * (axis % acc.ndim) + (slice(o, o + 1),)
        out[at] = fp.requantize(acc[at], m, e, y_zero_point, lo, hi)
    return out


def _attrs(attrs: dict[str, Any]) -> dict[str, Any]:
    return {"stride": [1, 1], "padding": [0, 0, 0, 0], "dilation": [1, 1], "groups": 1, "activation": "none", **attrs}


def qconv2d(x: np.ndarray, w: np.ndarray, w_scale: np.ndarray, b: np.ndarray | None, attrs: dict[str, Any]
            ) -> np.ndarray:
    """The catalogue's qconv2d (padding top, bottom, left, right; a padding tap reads the real value 0)."""
    a = _attrs(attrs)
    top, bottom, left, right = a["padding"]
    xs = np.pad(x.astype(np.int64) - a["x_zero_point"], ((0, 0), (0, 0), (top, bottom), (left, right)))
    n, _, h, width = xs.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (dh, dw), g = a["stride"], a["dilation"], a["groups"]
    oh, ow = (h - (kh - 1) * dh - 1) // sh + 1, (width - (kw - 1) * dw - 1) // sw + 1
    og = o // g
    acc = np.zeros((n, o, oh, ow), np.int64)
    for i in range(kh):
        for j in range(kw):
            patch = xs[:, :, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]
            for gi in range(g):
                acc[:, gi * og:(gi + 1) * og] += np.einsum(
                    "nchw,oc->nohw", patch[:, gi * cg:(gi + 1) * cg], w[gi * og:(gi + 1) * og, :, i, j].astype(np.int64))
    if b is not None:
        acc += b.astype(np.int64).reshape(1, -1, 1, 1)
    return requantize(acc, a["x_scale"], w_scale, a["y_scale"], a["y_zero_point"], 1, a["activation"])


def qlinear(x: np.ndarray, w: np.ndarray, w_scale: np.ndarray, b: np.ndarray | None, attrs: dict[str, Any]
            ) -> np.ndarray:
    """The catalogue's qlinear: x (..., K) int8, w (M, K) int8."""
    a = _attrs(attrs)
    acc = (x.astype(np.int64) - a["x_zero_point"]) @ w.astype(np.int64).T
    if b is not None:
        acc = acc + b.astype(np.int64)
    return requantize(acc, a["x_scale"], w_scale, a["y_scale"], a["y_zero_point"], -1, a["activation"])
