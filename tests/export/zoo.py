"""The export model zoo: small versions of the model families the .dtm format must carry, with example inputs."""

from __future__ import annotations

import math
from collections.abc import Callable

import dtorch as dt
import dtorch.nn.functional as F
from dtorch import nn
from dtorch.models import SimpleNet


def _randomize_bn(model: nn.Module) -> nn.Module:
    """Non-trivial running statistics and affine parameters, so BatchNorm folding is really tested."""
    with dt.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.BatchNorm2d, nn.BatchNorm1d)):
                m.running_mean.copy_(dt.randn(m.num_features) * 0.1)
                m.running_var.copy_(dt.rand(m.num_features) + 0.5)
                m.weight.copy_(dt.rand(m.num_features) + 0.5)
                m.bias.copy_(dt.randn(m.num_features) * 0.1)
    return model


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = cin * expand
        self.use_res = stride == 1 and cin == cout
        self.block = nn.Sequential(
            nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(inplace=True),
            nn.Conv2d(hidden, hidden, 3, stride=stride, padding=1, groups=hidden, bias=False), nn.BatchNorm2d(hidden),
            nn.ReLU6(inplace=True),
            nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: dt.Tensor) -> dt.Tensor:
        return x + self.block(x) if self.use_res else self.block(x)


class MobileNetV2Tiny(nn.Module):
    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16),
                                  nn.ReLU6(inplace=True))
        self.blocks = nn.Sequential(InvertedResidual(16, 16, 1, 1), InvertedResidual(16, 24, 2, 4),
                                    InvertedResidual(24, 24, 1, 4), InvertedResidual(24, 32, 2, 4),
                                    InvertedResidual(32, 32, 1, 4))
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(32, num_classes))

    def forward(self, x: dt.Tensor) -> dt.Tensor:
        return self.head(self.blocks(self.stem(x)))


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Linear(128, 64), nn.GELU(),
                                 nn.Dropout(0.1), nn.Linear(64, 10), nn.Sigmoid())

    def forward(self, x: dt.Tensor) -> dt.Tensor:
        return self.net(x)


class EncoderBlock(nn.Module):
    """Pre-norm transformer encoder block, attention written with Linear/matmul/reshape/permute/softmax."""

    def __init__(self, dim: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads, self.dh = heads, dim // heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x: dt.Tensor) -> dt.Tensor:
        b, s, d = x.shape
        qkv = self.qkv(self.ln1(x)).reshape(b, s, 3, self.heads, self.dh).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        att = F.softmax(dt.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(self.dh)), dim=-1)
        y = dt.matmul(att, v).permute(0, 2, 1, 3).reshape(b, s, d)
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


def _cbr(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())


class UNetTiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc1, self.enc2, self.mid = _cbr(3, 8), _cbr(8, 16), _cbr(16, 16)
        self.pool = nn.MaxPool2d(2)
        self.up_nearest = nn.Upsample(scale_factor=2, mode="nearest")
        self.dec2, self.dec1 = _cbr(32, 8), _cbr(16, 8)
        self.out = nn.Conv2d(8, 2, 1)

    def forward(self, x: dt.Tensor) -> dt.Tensor:
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        m = self.mid(self.pool(e2))
        d2 = self.dec2(dt.cat([self.up_nearest(m), e2], dim=1))
        up = F.interpolate(d2, scale_factor=2, mode="bilinear", align_corners=False)
        return self.out(self.dec1(dt.cat([up, e1], dim=1)))


# name -> (model factory, example-input factory for a batch size)
ZOO: dict[str, tuple[Callable[[], nn.Module], Callable[[int], dt.Tensor]]] = {
    "simplenet": (lambda: _randomize_bn(SimpleNet()), lambda n: dt.randn(n, 3, 32, 32)),
    "mobilenetv2": (lambda: _randomize_bn(MobileNetV2Tiny()), lambda n: dt.randn(n, 3, 32, 32)),
    "mlp": (lambda: _randomize_bn(MLP()), lambda n: dt.randn(n, 64)),
    "transformer": (lambda: EncoderBlock(), lambda n: dt.randn(n, 6, 32)),
    "unet": (lambda: _randomize_bn(UNetTiny()), lambda n: dt.randn(n, 3, 16, 16)),
}
