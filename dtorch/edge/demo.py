"""The main job: train SimpleNet on the bundled digits, shown as 32x32 RGB images, and save it.

The data goes the way a user's own data would: an ImageFolder tree on disk, Pillow transforms, a
DataLoader with worker processes. The CLI (dtorch-edge demo) then exports it, builds a bundle for a board and runs
it on the emulated board.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import dtorch as dt
import dtorch.nn as nn
from dtorch.data import DataLoader
from dtorch.models import SimpleNet
from dtorch.vision import transforms
from dtorch.vision.datasets import ImageFolder, write_digits_image_folder

MEAN, STD = (0.5, 0.5, 0.5), (0.5, 0.5, 0.5)


@dataclass
class DemoConfig:
    out: Path = Path("runs/demo")
    epochs: int = 8
    batch_size: int = 64
    lr: float = 3e-3
    weight_decay: float = 1e-4
    workers: int = 2
    seed: int = 0
    amp: str | None = None  # "float16" / "bfloat16" to train under autocast
    progress: bool = True


@dataclass
class ExportReport:
    path: str
    nodes_traced: int
    nodes_after_passes: int
    arena_bytes: int
    sum_of_intermediates: int
    parameter_bytes: int
    op_list: list[str]
    runtime_accuracy: float
    max_abs_error: float
    predictions_agree: float
    sample_input: str = ""   # a batch of test images (.npy) for the emulated board, with
    sample_eager: str = ""   # the eager model's outputs for it (.npy)


@dataclass
class DemoResult:
    test_accuracy: float
    train_images: int
    test_images: int
    epochs: int
    seconds: float
    checkpoint: str
    history: list[dict[str, float]] = field(default_factory=list)
    export: ExportReport | None = None
    emulated: dict[str, Any] | None = None  # dtorch-edge emulate's figures for the bundle (set by the CLI)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


def build_loaders(cfg: DemoConfig) -> tuple[DataLoader, DataLoader]:
    data_root = cfg.out / "data"
    train_dir = write_digits_image_folder(data_root, size=32, rgb=True, split="train")
    test_dir = write_digits_image_folder(data_root, size=32, rgb=True, split="test")
    train_tf = transforms.Compose([
        transforms.RandomCrop(32, padding=2),
        transforms.ToTensor(),
        transforms.Normalize(MEAN, STD),
    ])
    test_tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
    train_set = ImageFolder(train_dir, transform=train_tf)
    test_set = ImageFolder(test_dir, transform=test_tf)
    g = dt.Generator().manual_seed(cfg.seed)
    train_loader = DataLoader(train_set, batch_size=cfg.batch_size, shuffle=True, num_workers=cfg.workers,
                              generator=g, persistent_workers=cfg.workers > 0)
    test_loader = DataLoader(test_set, batch_size=256, shuffle=False, num_workers=cfg.workers)
    return train_loader, test_loader


def evaluate(model: nn.Module, loader: DataLoader) -> float:
    model.eval()
    correct = total = 0
    with dt.no_grad():
        for images, labels in loader:
            pred = model(images).argmax(1)
            correct += int((pred == labels).sum().item())
            total += labels.shape[0]
    return correct / max(total, 1)


def export_and_check(model: nn.Module, loader: DataLoader, path: Path) -> ExportReport:
    """Export the trained model to .dtm (dynamic batch, bundled test vector) and run the whole test set
    through the C++ runtime: accuracy, max abs error vs eager, and how often the predictions agree."""
    import numpy as np

    import dtorch.runtime as rt

    model.eval()
    images, _ = next(iter(loader))
    res = dt.export(model, images[:1], str(path), input_names=["input"], output_names=["logits"],
                    dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}}, bundle_example=True)
    session = rt.InferenceSession(str(path))
    correct = agree = total = 0
    max_err = 0.0
    sample_in, sample_eager = path.with_name("sample_input.npy"), path.with_name("sample_eager.npy")
    with dt.no_grad():
        first, _ = next(iter(loader))
        np.save(sample_in, first[:16].numpy())  # real digits through the test transforms, for the emulated run
        np.save(sample_eager, model(first[:16]).numpy())
        for images, labels in loader:
            eager = model(images).numpy()
            got = session.run(None, {"input": images.numpy()})[0]
            max_err = max(max_err, float(np.max(np.abs(got - eager))))
            agree += int((got.argmax(1) == eager.argmax(1)).sum())
            correct += int((got.argmax(1) == labels.numpy()).sum())
            total += labels.shape[0]
    return ExportReport(path=str(path), nodes_traced=res.nodes_traced, nodes_after_passes=res.nodes_after_passes,
                        arena_bytes=res.arena_size, sum_of_intermediates=res.sum_of_intermediates,
                        parameter_bytes=res.parameter_bytes, op_list=list(res.op_list),
                        runtime_accuracy=correct / max(total, 1), max_abs_error=max_err,
                        predictions_agree=agree / max(total, 1), sample_input=str(sample_in),
                        sample_eager=str(sample_eager))


def run_demo(cfg: DemoConfig, log: Callable[[str], Any] = print) -> DemoResult:
    from tqdm import tqdm

    dt.manual_seed(cfg.seed)
    cfg.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    train_loader, test_loader = build_loaders(cfg)
    model = SimpleNet(10)
    model.to("cpu")
    criterion = nn.CrossEntropyLoss()
    optimizer = dt.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    scheduler = dt.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=cfg.epochs)
    amp = dt.autocast(dtype=cfg.amp) if cfg.amp else None
    history = []
    for epoch in range(cfg.epochs):
        model.train()
        seen = 0
        loss_sum = 0.0
        bar = tqdm(train_loader, desc=f"epoch {epoch + 1}/{cfg.epochs}", unit="batch", disable=not cfg.progress,
                   leave=True, dynamic_ncols=True)
        for images, labels in bar:
            optimizer.zero_grad()
            if amp is not None:
                with amp:
                    loss = criterion(model(images), labels)
            else:
                loss = criterion(model(images), labels)
            loss.backward()
            optimizer.step()
            n = labels.shape[0]
            seen += n
            loss_sum += float(loss.item()) * n
            bar.set_postfix(loss=f"{loss_sum / seen:.4f}", lr=f"{scheduler.get_last_lr()[0]:.2e}")
        scheduler.step()
        acc = evaluate(model, test_loader)
        history.append({"epoch": epoch + 1, "train_loss": loss_sum / max(seen, 1), "test_accuracy": acc})
        log(f"epoch {epoch + 1}/{cfg.epochs}: train loss {loss_sum / max(seen, 1):.4f}, test accuracy {acc:.2%}")
    ckpt = cfg.out / "simplenet.safetensors"
    dt.save(model.state_dict(), ckpt)
    report = export_and_check(model, test_loader, cfg.out / "simplenet.dtm")
    return DemoResult(test_accuracy=history[-1]["test_accuracy"] if history else 0.0,
                      train_images=len(train_loader.dataset), test_images=len(test_loader.dataset),
                      epochs=cfg.epochs, seconds=time.perf_counter() - t0, checkpoint=str(ckpt), history=history,
                      export=report)
