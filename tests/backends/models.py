"""Small int8 test models for the backend tests (tests/backends, tests/edge/test_ops_check.py), each quantized with
dt.quant.quantize on two calibration batches and exported: a few milliseconds each."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import dtorch as dt
from dtorch import nn

F = nn.functional


class Mixed(nn.Module):
    """Everything the simulated NPU takes (conv, depthwise, relu / relu6, add, max pool, global pool, flatten, linear)
    around a float concat (quantized with float_ops=("concat",), where dt.quant would make it a qconcat): the NPU part
    splits in two subgraphs with the CPU between."""

    FLOAT_OPS = ("concat",)

    def __init__(self) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.pw = nn.Conv2d(16, 16, 1)
        self.c3 = nn.Conv2d(32, 16, 3, stride=2, padding=1)
        self.head = nn.Linear(16, 4)

    def forward(self, x):  # type: ignore[no-untyped-def]
        a = F.relu(self.c1(x))
        s = a + F.relu6(self.pw(F.relu(self.dw(a))))
        c = dt.cat([F.max_pool2d(s, 2), F.max_pool2d(a, 2)], 1)
        y = F.relu(self.c3(c))
        return self.head(F.adaptive_avg_pool2d(y, 1).flatten(1))


class WideStride(nn.Module):
    """A convolution with stride 8, beyond the NPU's [1, 7]: it falls back to the CPU between two NPU subgraphs."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.patch = nn.Conv2d(16, 16, 8, stride=8)
        self.c2 = nn.Conv2d(16, 16, 1)
        self.head = nn.Linear(16, 4)

    def forward(self, x):  # type: ignore[no-untyped-def]
        y = F.relu(self.c2(F.relu(self.patch(F.relu(self.c1(x))))))
        return self.head(F.adaptive_avg_pool2d(y, 1).flatten(1))


def batches(n: int = 2, batch: int = 2, size: int = 16, seed: int = 0) -> list[np.ndarray]:
    return [np.random.default_rng(seed + i).standard_normal((batch, 3, size, size)).astype(np.float32)
            for i in range(n)]


def int8_model(net: nn.Module, path: Path, size: int = 16) -> Path:
    """`net` quantized on two calibration batches and exported to `path` (batch 2, a dynamic batch dimension)."""
    dt.manual_seed(0)
    net = net.eval()
    calib = batches(size=size)
    qmodel = dt.quant.quantize(net, calib, float_ops=getattr(net, "FLOAT_OPS", ()))
    dt.export(qmodel, dt.tensor(calib[0]), path)
    return path
