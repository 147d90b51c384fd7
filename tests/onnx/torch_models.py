"""Standard architectures written in PyTorch (torchvision cannot be installed next to the pinned torch), at their
published layer configurations, for the ONNX import tests: ResNet-18, MobileNetV2, MobileNetV3-Small
(hardswish, squeeze-excite), an EfficientNet-B0-style network (SiLU, SE, MBConv), a U-Net and a ViT-tiny-style
encoder. `width`/`depth` knobs shrink them for fast tests; the defaults are the real sizes."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F


def _randomize_bn(model: nn.Module, seed: int = 0) -> nn.Module:
    """Non-trivial BatchNorm statistics, so folding them is checked."""
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.weight.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.num_features, generator=g) * 0.1)
    return model.eval()


# --- ResNet-18 ---------------------------------------------------------------------------------------------------
class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    def __init__(self, num_classes: int = 1000, width: int = 64) -> None:
        super().__init__()
        w = [width, width * 2, width * 4, width * 8]
        self.stem = nn.Sequential(nn.Conv2d(3, w[0], 7, 2, 3, bias=False), nn.BatchNorm2d(w[0]), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        layers, cin = [], w[0]
        for i, c in enumerate(w):
            layers += [BasicBlock(cin, c, 1 if i == 0 else 2), BasicBlock(c, c, 1)]
            cin = c
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(w[3], num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


# --- MobileNetV2 ------------------------------------------------------------------------------------------------
class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hid = cin * expand
        layers: list[nn.Module] = []
        if expand != 1:
            layers += [nn.Conv2d(cin, hid, 1, bias=False), nn.BatchNorm2d(hid), nn.ReLU6()]
        layers += [nn.Conv2d(hid, hid, 3, stride, 1, groups=hid, bias=False), nn.BatchNorm2d(hid), nn.ReLU6(),
                   nn.Conv2d(hid, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.conv = nn.Sequential(*layers)
        self.res = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv(x) if self.res else self.conv(x)


class MobileNetV2(nn.Module):
    CFG = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]

    def __init__(self, num_classes: int = 1000, depth: int = 99) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU6()]
        cin = 32
        for t, c, n, s in self.CFG:
            for i in range(min(n, depth)):
                layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers += [nn.Conv2d(cin, 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.ReLU6()]
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x).mean([2, 3]))


# --- MobileNetV3-Small ------------------------------------------------------------------------------------------
class SqueezeExcite(nn.Module):
    def __init__(self, c: int, squeeze: int, gate: Callable[[torch.Tensor], torch.Tensor] = F.hardsigmoid,
                 act: Callable[[torch.Tensor], torch.Tensor] = F.relu) -> None:
        super().__init__()
        self.fc1, self.fc2, self.gate, self.act = nn.Conv2d(c, squeeze, 1), nn.Conv2d(squeeze, c, 1), gate, act

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = F.adaptive_avg_pool2d(x, 1)
        return x * self.gate(self.fc2(self.act(self.fc1(s))))


def _div8(v: float) -> int:
    return max(8, int(v + 4) // 8 * 8)


class V3Block(nn.Module):
    def __init__(self, cin: int, k: int, exp: int, cout: int, se: bool, hs: bool, stride: int) -> None:
        super().__init__()
        act: type[nn.Module] = nn.Hardswish if hs else nn.ReLU
        layers: list[nn.Module] = []
        if exp != cin:
            layers += [nn.Conv2d(cin, exp, 1, bias=False), nn.BatchNorm2d(exp), act()]
        layers += [nn.Conv2d(exp, exp, k, stride, k // 2, groups=exp, bias=False), nn.BatchNorm2d(exp), act()]
        if se:
            layers.append(SqueezeExcite(exp, _div8(exp / 4)))
        layers += [nn.Conv2d(exp, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.block = nn.Sequential(*layers)
        self.res = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.block(x) if self.res else self.block(x)


class MobileNetV3Small(nn.Module):
    CFG = [(3, 16, 16, True, False, 2), (3, 72, 24, False, False, 2), (3, 88, 24, False, False, 1),
           (5, 96, 40, True, True, 2), (5, 240, 40, True, True, 1), (5, 240, 40, True, True, 1),
           (5, 120, 48, True, True, 1), (5, 144, 48, True, True, 1), (5, 288, 96, True, True, 2),
           (5, 576, 96, True, True, 1), (5, 576, 96, True, True, 1)]

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.Hardswish()]
        cin = 16
        for k, exp, c, se, hs, s in self.CFG:
            layers.append(V3Block(cin, k, exp, c, se, hs, s))
            cin = c
        layers += [nn.Conv2d(cin, 576, 1, bias=False), nn.BatchNorm2d(576), nn.Hardswish()]
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Linear(576, 1024), nn.Hardswish(), nn.Dropout(0.2),
                                        nn.Linear(1024, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


# --- EfficientNet-B0-style ----------------------------------------------------------------------------------------
class MBConv(nn.Module):
    def __init__(self, cin: int, cout: int, k: int, stride: int, expand: int) -> None:
        super().__init__()
        hid = cin * expand
        layers: list[nn.Module] = []
        if expand != 1:
            layers += [nn.Conv2d(cin, hid, 1, bias=False), nn.BatchNorm2d(hid), nn.SiLU()]
        layers += [nn.Conv2d(hid, hid, k, stride, k // 2, groups=hid, bias=False), nn.BatchNorm2d(hid), nn.SiLU(),
                   SqueezeExcite(hid, max(1, cin // 4), gate=torch.sigmoid, act=F.silu),
                   nn.Conv2d(hid, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.block = nn.Sequential(*layers)
        self.res = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.block(x) if self.res else self.block(x)


class EfficientNetB0(nn.Module):
    CFG = [(1, 16, 1, 1, 3), (6, 24, 2, 2, 3), (6, 40, 2, 2, 5), (6, 80, 3, 2, 3), (6, 112, 3, 1, 5),
           (6, 192, 4, 2, 5), (6, 320, 1, 1, 3)]

    def __init__(self, num_classes: int = 1000, depth: int = 99) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.SiLU()]
        cin = 32
        for t, c, n, s, k in self.CFG:
            for i in range(min(n, depth)):
                layers.append(MBConv(cin, c, k, s if i == 0 else 1, t))
                cin = c
        layers += [nn.Conv2d(cin, 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.SiLU()]
        self.features = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


# --- U-Net -------------------------------------------------------------------------------------------------------
def _double_conv(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


class UNet(nn.Module):
    """Encoder-decoder with skip connections: max-pool down, one bilinear-upsampling and one transposed-conv
    decoder path, concatenated skips, a 1x1 head (2 classes)."""

    def __init__(self, width: int = 16, classes: int = 2) -> None:
        super().__init__()
        w = width
        self.d1, self.d2, self.d3 = _double_conv(3, w), _double_conv(w, 2 * w), _double_conv(2 * w, 4 * w)
        self.mid = _double_conv(4 * w, 8 * w)
        self.up3 = nn.ConvTranspose2d(8 * w, 4 * w, 2, 2)
        self.u3 = _double_conv(8 * w, 4 * w)
        self.u2 = _double_conv(4 * w + 2 * w, 2 * w)
        self.up1 = nn.ConvTranspose2d(2 * w, w, 2, 2)
        self.u1 = _double_conv(2 * w, w)
        self.head = nn.Conv2d(w, classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.d1(x)
        b = self.d2(F.max_pool2d(a, 2))
        c = self.d3(F.max_pool2d(b, 2))
        m = self.mid(F.max_pool2d(c, 2))
        y = self.u3(torch.cat([self.up3(m), c], 1))
        y = self.u2(torch.cat([F.interpolate(y, scale_factor=2, mode="bilinear", align_corners=False), b], 1))
        y = self.u1(torch.cat([self.up1(y), a], 1))
        return self.head(y)


# --- ViT-tiny-style encoder -----------------------------------------------------------------------------------
class EncoderBlock(nn.Module):
    def __init__(self, d: int, heads: int, mlp: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-6), nn.LayerNorm(d, eps=1e-6)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, mlp), nn.GELU(), nn.Linear(mlp, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.ln1(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class ViTTiny(nn.Module):
    """ViT-Ti/16 shape (192 wide, 3 heads, MLP 768, 12 blocks) with a class token and learned positions."""

    def __init__(self, image: int = 224, patch: int = 16, d: int = 192, depth: int = 12, heads: int = 3,
                 mlp: int = 768, num_classes: int = 1000) -> None:
        super().__init__()
        n = (image // patch) ** 2
        self.patch = nn.Conv2d(3, d, patch, patch)
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, n + 1, d) * 0.02)
        self.blocks = nn.Sequential(*[EncoderBlock(d, heads, mlp) for _ in range(depth)])
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.head = nn.Linear(d, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        x = self.norm(self.blocks(x))
        return self.head(x[:, 0])


def build(name: str, small: bool = False) -> tuple[nn.Module, tuple[int, ...]]:
    """(model in eval mode with seeded weights, example input shape). `small`: fewer channels/blocks and a
    smaller image, for the emulated-board and fast checks."""
    torch.manual_seed(0)
    hw = 64 if small else 224
    if name == "resnet18":
        m: nn.Module = ResNet18(num_classes=100 if small else 1000, width=16 if small else 64)
    elif name == "mobilenet_v2":
        m = MobileNetV2(num_classes=100 if small else 1000, depth=1 if small else 99)
    elif name == "mobilenet_v3_small":
        m = MobileNetV3Small(num_classes=100 if small else 1000)
    elif name == "efficientnet_b0":
        m = EfficientNetB0(num_classes=100 if small else 1000, depth=1 if small else 99)
    elif name == "unet":
        m = UNet(width=8 if small else 16)
        hw = 64 if small else 128
    elif name == "vit_tiny":
        m = ViTTiny(image=32 if small else 224, patch=8 if small else 16, depth=2 if small else 12,
                    num_classes=100 if small else 1000)
        hw = 32 if small else 224
    else:
        raise ValueError(name)
    return _randomize_bn(m), (1, 3, hw, hw)


NAMES = ["resnet18", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "unet", "vit_tiny"]
