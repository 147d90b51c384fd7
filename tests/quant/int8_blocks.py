"""Small networks built from the int8 operators beyond convolutions, shared by tests/quant/test_quantize_blocks.py
and tests/edge/test_emulate_int8_ops.py: `Blocks` (a squeeze-excite gate: sigmoid and a broadcast mul; two branches,
hardswish and a 3x3 avg_pool2d, concatenated; an avg_pool2d before the head) on (N, 3, 16, 16) images, and
`Attention` (q @ k^T, a constant scale, softmax, scores @ v, a gelu MLP, tanh, a matmul with a constant) on
(N, tokens, 32)."""

from __future__ import annotations

import dtorch as dt
import dtorch.nn.functional as F
from dtorch import nn


class Blocks(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.se1 = nn.Linear(16, 8)
        self.se2 = nn.Linear(8, 16)
        self.left = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16))
        self.right = nn.Sequential(nn.Conv2d(16, 16, 1), nn.BatchNorm2d(16))
        self.mix = nn.Sequential(nn.Conv2d(32, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU())
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        x = self.stem(x)
        gate = F.sigmoid(self.se2(F.relu(self.se1(x.mean((2, 3))))))  # squeeze-excite
        x = x * gate.reshape(-1, 16, 1, 1)
        x = dt.cat([F.hardswish(self.left(x)), F.avg_pool2d(self.right(x), 3, 1, 1)], 1)
        return self.head(F.avg_pool2d(self.mix(x), 2).mean((2, 3)))


class Attention(nn.Module):
    def __init__(self, d: int = 32) -> None:
        super().__init__()
        self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.up, self.down = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)
        self.scale = d**-0.5
        self.w = nn.Parameter(dt.randn(d, 8) * 0.3)

    def forward(self, x):
        att = F.softmax((self.q(x) @ self.k(x).transpose(1, 2)) * self.scale, -1)
        h = att @ self.v(x) + x
        h = h + self.down(F.gelu(self.up(h)))
        return F.tanh(h) @ self.w  # a matmul with a constant operand
