"""The host framework as a PyTorch user writes it: the example of issue 2, run as written."""

from __future__ import annotations

import math

import pytest

import dtorch as dt
import dtorch.nn as nn
from dtorch.data import DataLoader, Dataset
from dtorch.vision import transforms
from dtorch.vision.datasets import ImageFolder, write_digits_image_folder


class SimpleNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(128, num_classes)

    def forward(self, x):
        return self.head(self.backbone(x).flatten(1))


@pytest.mark.parametrize("amp_dtype", [dt.float16, "float16", dt.bfloat16])
def test_issue_example_runs_as_written(tmp_path, amp_dtype):
    assert isinstance(dt.__version__, str) and "cpu" in dt.available_backends()
    x = dt.randn(4, 3)
    y = dt.randn(3, 5)
    z = dt.matmul(x, y)
    assert z.shape == (4, 5)

    root = write_digits_image_folder(tmp_path, size=32, rgb=True, split="test")
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5,) * 3, (0.5,) * 3)])
    dataset = ImageFolder(root, transform=tf)
    assert isinstance(dataset, Dataset) and len(dataset.classes) == 10
    train_loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=2,
                              generator=dt.Generator().manual_seed(0))

    model = SimpleNet(10)
    model.to("cpu")
    criterion = nn.CrossEntropyLoss()
    optimizer = dt.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    scheduler = dt.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=50)
    losses = []
    for images, labels in train_loader:
        assert images.shape[1:] == (3, 32, 32) and images.dtype == dt.float32 and labels.dtype == dt.int64
        optimizer.zero_grad()
        with dt.autocast(dtype=amp_dtype):
            loss = criterion(model(images), labels)
        assert loss.dtype == dt.float32
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    scheduler.step()
    assert scheduler.get_last_lr()[0] == pytest.approx(1e-3 * (1 + math.cos(math.pi / 50)) / 2)
    assert len(losses) == 6 and all(l == l for l in losses)  # 360 images / 64, no NaN
    sched = dt.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / 10))
    assert sched.get_last_lr()[0] == pytest.approx(optimizer.param_groups[0]["initial_lr"] * 0.1)


@pytest.mark.parametrize("device", ["cuda", "cuda:0", "mps", "cpu:1"])
def test_unavailable_device_names_it_and_the_available_ones(device):
    model = SimpleNet(10)
    with pytest.raises(dt.DeviceError) as err:
        model.to(device)
    assert device.split(":")[0] in str(err.value) and "['cpu']" in str(err.value)
    with pytest.raises(dt.DeviceError):
        dt.randn(2, device=device)
    with pytest.raises(dt.DeviceError):
        dt.randn(2).to(device)


def test_training_reduces_the_loss_and_is_reproducible():
    def run():
        dt.manual_seed(3)
        model = SimpleNet(10)
        opt = dt.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        x, y = dt.randn(32, 3, 16, 16), dt.randint(0, 10, (32,))
        out = []
        for _ in range(15):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            out.append(loss.item())
        return out

    a, b = run(), run()
    assert a == b
    assert a[-1] < 0.5 * a[0]
