"""Benchmark models written once and built on either framework (dtorch.nn or torch.nn), weights copied.

The class bodies use only the API the two share, so `build(name)` returns a dtorch model, its
PyTorch twin with identical weights (for ONNX export), and the input shape.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _simplenet(nn: Any) -> Any:
    class SimpleNet(nn.Module):
        def __init__(self, num_classes: int = 10) -> None:
            super().__init__()
            self.backbone = nn.Sequential(
                nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
                nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
                nn.AdaptiveAvgPool2d(1))
            self.head = nn.Linear(128, num_classes)

        def forward(self, x: Any) -> Any:
            return self.head(self.backbone(x).flatten(1))

    return SimpleNet()


def _mobilenet(nn: Any) -> Any:
    class InvertedResidual(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
            super().__init__()
            hidden = cin * expand
            self.use_res = stride == 1 and cin == cout
            self.block = nn.Sequential(
                nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(),
                nn.Conv2d(hidden, hidden, 3, stride=stride, padding=1, groups=hidden, bias=False),
                nn.BatchNorm2d(hidden), nn.ReLU6(),
                nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x: Any) -> Any:
            y = self.block(x)
            return x + y if self.use_res else y

    class MobileNetLike(nn.Module):
        def __init__(self, num_classes: int = 10) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16),
                                      nn.ReLU6())
            self.blocks = nn.Sequential(
                InvertedResidual(16, 24, 2, 4), InvertedResidual(24, 24, 1, 4),
                InvertedResidual(24, 32, 2, 4), InvertedResidual(32, 32, 1, 4),
                InvertedResidual(32, 64, 2, 4), InvertedResidual(64, 64, 1, 4))
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.head = nn.Linear(64, num_classes)

        def forward(self, x: Any) -> Any:
            return self.head(self.pool(self.blocks(self.stem(x))).flatten(1))

    return MobileNetLike()


MODELS = {"simplenet": (_simplenet, (1, 3, 224, 224)), "mobilenet": (_mobilenet, (1, 3, 128, 128))}


def build(name: str) -> tuple[Any, Any, tuple[int, ...]]:
    import torch

    import dtorch as dt
    import dtorch.nn as dnn

    make, shape = MODELS[name]
    dt.manual_seed(0)
    dmodel = make(dnn)
    tmodel = make(torch.nn)
    # non-trivial BatchNorm statistics, so folding is exercised
    rng = np.random.default_rng(1)
    for _, buf in dmodel.named_buffers():
        if buf.is_floating_point():
            buf.data.copy_(dt.from_numpy(rng.uniform(0.5, 1.5, tuple(buf.shape)).astype(np.float32)))
    state = {k: torch.from_numpy(np.array(v.numpy())) for k, v in dmodel.state_dict().items()}
    tmodel.load_state_dict(state)
    return dmodel.eval(), tmodel.eval(), shape
