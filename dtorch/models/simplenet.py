"""SimpleNet: three stride-2 conv/BN/ReLU stages, global average pooling and a linear head."""

from __future__ import annotations

from .. import nn
from ..tensor import Tensor


class SimpleNet(nn.Module):
    def __init__(self, num_classes: int = 10, in_channels: int = 3) -> None:
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(in_channels, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(128, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.backbone(x).flatten(1))
