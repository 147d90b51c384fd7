"""SimpleNet throughput, dtorch vs PyTorch in the same run: a training step and inference.

Batch 64 of 3x32x32, AdamW, CrossEntropyLoss. Prints a table and, with --write, replaces the
"Host training" section of benchmarks/RESULTS.md. Run: .venv/bin/python benchmarks/bench_train.py --write
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from results import write_section  # noqa: E402


def _time(step, warmup: int, iters: int, repeats: int) -> float:
    """Median seconds per call over `repeats` blocks of `iters` calls."""
    for _ in range(warmup):
        step()
    blocks = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(iters):
            step()
        blocks.append((time.perf_counter() - t0) / iters)
    return statistics.median(blocks)


def bench_dtorch(x: np.ndarray, y: np.ndarray, args) -> tuple[float, float]:
    import dtorch as dt
    import dtorch.nn as nn
    from dtorch.models import SimpleNet

    dt.manual_seed(0)
    model = SimpleNet(10)
    opt = dt.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    crit = nn.CrossEntropyLoss()
    xb, yb = dt.from_numpy(x), dt.from_numpy(y)

    def train_step():
        opt.zero_grad()
        loss = crit(model(xb), yb)
        loss.backward()
        opt.step()

    train = _time(train_step, args.warmup, args.iters, args.repeats)
    model.eval()

    def infer():
        with dt.no_grad():
            model(xb)

    infer_t = _time(infer, args.warmup, args.iters, args.repeats)
    return train, infer_t


def bench_torch(x: np.ndarray, y: np.ndarray, args) -> tuple[float, float]:
    import torch
    import torch.nn as nn

    torch.manual_seed(0)

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

    model = SimpleNet(10)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    crit = nn.CrossEntropyLoss()
    xb, yb = torch.from_numpy(x), torch.from_numpy(y)

    def train_step():
        opt.zero_grad()
        loss = crit(model(xb), yb)
        loss.backward()
        opt.step()

    train = _time(train_step, args.warmup, args.iters, args.repeats)
    model.eval()

    def infer():
        with torch.no_grad():
            model(xb)

    infer_t = _time(infer, args.warmup, args.iters, args.repeats)
    return train, infer_t


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    args = p.parse_args()

    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.batch, 3, 32, 32), dtype=np.float32)
    y = rng.integers(0, 10, size=args.batch).astype(np.int64)

    d_train, d_inf = bench_dtorch(x, y, args)
    t_train, t_inf = bench_torch(x, y, args)
    import torch

    b = args.batch
    rows = [
        ("training step (fwd+bwd+AdamW)", b / d_train, b / t_train),
        ("inference (no_grad, eval)", b / d_inf, b / t_inf),
    ]
    lines = ["| workload | dtorch img/s | PyTorch img/s | dtorch / PyTorch |", "|---|---:|---:|---:|"]
    for name, d, t in rows:
        lines.append(f"| {name} | {d:,.0f} | {t:,.0f} | {d / t:.2f}x |")
    env = (f"SimpleNet, batch {b} of 3x32x32, float32; median of {args.repeats} blocks of {args.iters} steps after "
           f"{args.warmup} warm-up steps. Machine: {platform.machine()}, {os.cpu_count()} cores; "
           f"PyTorch {torch.__version__} ({torch.get_num_threads()} threads), NumPy {np.__version__}. "
           f"Target: training throughput >= 0.5x PyTorch.")
    table = "\n".join(lines)
    print(table)
    print(env)
    if args.write:
        write_section("Host training (issue 2)", f"{env}\n\n{table}\n",
                      command=".venv/bin/python benchmarks/bench_train.py --write")


if __name__ == "__main__":
    main()
