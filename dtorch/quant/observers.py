"""Calibration observers: what range of an activation tensor its int8 scale and zero point cover.

Each observer sees the tensor's float32 values batch by batch (`observe`) and then gives the range [lo, hi]
(`range`), which `qparams` turns into a scale and zero point (0.0 exactly representable).

- minmax: the smallest and largest value seen.
- percentile: the `percentile`-th and (100 - percentile)-th percentiles of the values seen (99.99 by default),
  from a histogram, so a few outliers do not stretch the range.
- mse: the range that minimizes the expected squared error of quantizing the values seen (clipping plus
  rounding), searched over ranges inside [min, max], from the same histogram.

The histogram has a fixed number of bins over [-R, R]; when a batch exceeds R, R doubles and neighbouring bins
merge, so memory stays constant whatever the number of batches.
"""

from __future__ import annotations

import math

import numpy as np

from ._fixed_point import QMAX, QMIN

__all__ = ["METHODS", "HistogramObserver", "MinMaxObserver", "Observer", "make_observer", "qparams"]

METHODS = ("minmax", "percentile", "mse")


def qparams(lo: float, hi: float) -> tuple[float, int]:
    """The (scale, zero_point) of an asymmetric int8 tensor covering [lo, hi] widened to include 0. The scale is a
    float32 value; the zero point maps 0.0 exactly."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"cannot quantize a tensor whose range [{lo}, {hi}] is not finite")
    if hi - lo < 1e-30:
        return 1.0, 0
    scale = float(np.float32((hi - lo) / (QMAX - QMIN)))
    if scale <= 0.0:  # (hi - lo) / 255 below float32's smallest value
        scale = float(np.float32(1e-38))
    zp = int(round(QMIN - lo / scale))
    return scale, max(QMIN, min(QMAX, zp))


class Observer:
    """Watches one tensor's values."""

    def observe(self, x: np.ndarray) -> None:
        raise NotImplementedError

    def range(self) -> tuple[float, float]:
        raise NotImplementedError

    @property
    def seen(self) -> bool:
        raise NotImplementedError

    def qparams(self) -> tuple[float, int]:
        lo, hi = self.range()
        return qparams(lo, hi)


class MinMaxObserver(Observer):
    def __init__(self) -> None:
        self.lo = math.inf
        self.hi = -math.inf

    def observe(self, x: np.ndarray) -> None:
        x = np.asarray(x, dtype=np.float32)
        finite = x[np.isfinite(x)] if not np.isfinite(x).all() else x
        if finite.size:
            self.lo = min(self.lo, float(finite.min()))
            self.hi = max(self.hi, float(finite.max()))

    @property
    def seen(self) -> bool:
        return self.lo <= self.hi

    def range(self) -> tuple[float, float]:
        return (self.lo, self.hi) if self.seen else (0.0, 0.0)


class HistogramObserver(MinMaxObserver):
    """Min and max plus a histogram of the values over [-R, R] (R a power of two times the first batch's extent)."""

    BINS = 2048

    def __init__(self, method: str = "percentile", percentile: float = 99.99) -> None:
        super().__init__()
        if method not in ("percentile", "mse"):
            raise ValueError(f"histogram observer method must be 'percentile' or 'mse', got {method!r}")
        if not 50.0 < percentile <= 100.0:
            raise ValueError(f"percentile must be in (50, 100], got {percentile!r}")
        self.method = method
        self.percentile = percentile
        self.r = 0.0
        self.hist = np.zeros(self.BINS, dtype=np.int64)

    def observe(self, x: np.ndarray) -> None:
        x = np.asarray(x, dtype=np.float32).ravel()
        x = x[np.isfinite(x)]
        if x.size == 0:
            return
        super().observe(x)
        m = float(np.max(np.abs(x)))
        if self.r == 0.0:
            self.r = m if m > 0 else 1.0
        while m > self.r:  # double the range: neighbouring bins merge, the new outer halves start empty
            merged = self.hist.reshape(-1, 2).sum(axis=1)
            self.hist = np.zeros(self.BINS, dtype=np.int64)
            self.hist[self.BINS // 4: 3 * self.BINS // 4] = merged
            self.r *= 2.0
        idx = np.floor((x.astype(np.float64) + self.r) / (2 * self.r) * self.BINS).astype(np.int64)
        self.hist += np.bincount(np.clip(idx, 0, self.BINS - 1), minlength=self.BINS)

    def _edges(self) -> np.ndarray:
        return np.linspace(-self.r, self.r, self.BINS + 1)

    def range(self) -> tuple[float, float]:
        if not self.seen:
            return (0.0, 0.0)
        if self.method == "percentile":
            return self._percentile_range()
        return self._mse_range()

    def _percentile_range(self) -> tuple[float, float]:
        cdf = np.cumsum(self.hist) / max(1, int(self.hist.sum()))
        edges = self._edges()
        tail = (100.0 - self.percentile) / 100.0
        lo_bin = int(np.searchsorted(cdf, tail, side="left"))
        hi_bin = int(np.searchsorted(cdf, 1.0 - tail, side="left"))
        lo = max(self.lo, float(edges[lo_bin]))
        hi = min(self.hi, float(edges[min(hi_bin + 1, self.BINS)]))
        return lo, max(lo, hi)

    def _mse_range(self) -> tuple[float, float]:
        """The candidate [lo, hi] (lo = min * a, hi = max * b, a and b from 1 down to 0.05) that minimizes the
        histogram's expected error: values outside clip to the range's ends, values inside are off by the
        rounding, a step^2 / 12 each."""
        centers = (self._edges()[:-1] + self._edges()[1:]) / 2
        counts = self.hist.astype(np.float64)
        keep = counts > 0
        c, w = centers[keep], counts[keep]
        fracs = np.linspace(1.0, 0.05, 40)
        lo0, hi0 = min(self.lo, 0.0), max(self.hi, 0.0)
        los = lo0 * fracs
        his = hi0 * fracs
        best, best_err = (lo0, hi0), math.inf
        for lo in los:
            # every hi for this lo at once: (len(his), bins)
            step = np.maximum((his - lo) / (QMAX - QMIN), 1e-30)[:, None]
            clipped = np.clip(c[None, :], lo, his[:, None])
            err = ((c[None, :] - clipped) ** 2 + step**2 / 12.0) * w[None, :]
            tot = err.sum(axis=1)
            k = int(np.argmin(tot))
            if tot[k] < best_err:
                best_err, best = float(tot[k]), (float(lo), float(his[k]))
        return best


def make_observer(method: str, percentile: float = 99.99) -> Observer:
    if method == "minmax":
        return MinMaxObserver()
    if method in ("percentile", "mse"):
        return HistogramObserver(method, percentile)
    raise ValueError(f"unknown calibration method {method!r}; use one of {', '.join(METHODS)}")
