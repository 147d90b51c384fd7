"""SimpleNet throughput, dtorch vs PyTorch in the same run: a training step and inference.

Batch 64 of 3x32x32, AdamW, CrossEntropyLoss. Each framework is measured in fresh worker processes,
alternating dtorch / PyTorch for several rounds so that load on a shared machine hits both alike; the
table gives the median over rounds. Each framework runs with its own defaults (dtorch tunes glibc's
allocator at import, see dtorch/_memory.py); for transparency PyTorch is also measured with that same
allocator tuning. Prints a table and, with --write, replaces the "Host training" section of
benchmarks/RESULTS.md. Run: .venv/bin/python benchmarks/bench_train.py --write
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
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


def _measure(model, opt, crit, xb, yb, no_grad, args) -> tuple[float, float]:
    """Seconds per training step and per inference batch; the same code drives both frameworks."""

    def train_step():
        opt.zero_grad()
        loss = crit(model(xb), yb)
        loss.backward()
        opt.step()

    train = _time(train_step, args.warmup, args.iters, args.repeats)
    model.eval()

    def infer():
        with no_grad():
            model(xb)

    return train, _time(infer, args.warmup, args.iters, args.repeats)


def bench_dtorch(x: np.ndarray, y: np.ndarray, args) -> tuple[float, float]:
    import dtorch as dt
    import dtorch.nn as nn
    from dtorch.models import SimpleNet

    dt.manual_seed(0)
    model = SimpleNet(10)
    opt = dt.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    return _measure(model, opt, nn.CrossEntropyLoss(), dt.from_numpy(x), dt.from_numpy(y), dt.no_grad, args)


def bench_torch(x: np.ndarray, y: np.ndarray, args) -> tuple[float, float]:
    import torch
    import torch.nn as nn

    torch.manual_seed(0)

    class SimpleNet(nn.Module):  # the same architecture as dtorch.models.SimpleNet
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
    return _measure(model, opt, nn.CrossEntropyLoss(), torch.from_numpy(x), torch.from_numpy(y), torch.no_grad,
                    args)


def _worker(framework: str, args) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.batch, 3, 32, 32), dtype=np.float32)
    y = rng.integers(0, 10, size=args.batch).astype(np.int64)
    fn = bench_dtorch if framework == "dtorch" else bench_torch
    train, infer = fn(x, y, args)
    print(json.dumps({"train": args.batch / train, "infer": args.batch / infer}))


TUNED_ENV = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}


def _run(framework: str, args, extra_env: dict[str, str] | None = None) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--worker", framework, "--batch", str(args.batch), "--iters", str(args.iters),
           "--repeats", str(args.repeats), "--warmup", str(args.warmup)]
    env = dict(os.environ, **(extra_env or {}))
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3, help="alternating dtorch/PyTorch process pairs")
    p.add_argument("--worker", choices=["dtorch", "torch"], help=argparse.SUPPRESS)
    p.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    args = p.parse_args()
    if args.worker:
        _worker(args.worker, args)
        return

    runs: dict[str, list[dict[str, float]]] = {"dtorch": [], "torch": [], "torch_tuned": []}
    for r in range(args.rounds):
        runs["dtorch"].append(_run("dtorch", args))
        runs["torch"].append(_run("torch", args))
        runs["torch_tuned"].append(_run("torch", args, TUNED_ENV))
        print(f"round {r + 1}/{args.rounds}: " + ", ".join(
            f"{k} train {v[-1]['train']:.0f} img/s" for k, v in runs.items()), flush=True)

    def med(key: str, what: str) -> float:
        return statistics.median(run[what] for run in runs[key])

    import torch

    b = args.batch
    lines = ["| workload | dtorch img/s | PyTorch img/s | dtorch / PyTorch | PyTorch, same allocator tuning | ratio |",
             "|---|---:|---:|---:|---:|---:|"]
    for what, name in (("train", "training step (fwd+bwd+AdamW)"), ("infer", "inference (no_grad, eval)")):
        d, t, tt = med("dtorch", what), med("torch", what), med("torch_tuned", what)
        lines.append(f"| {name} | {d:,.0f} | {t:,.0f} | {d / t:.2f}x | {tt:,.0f} | {d / tt:.2f}x |")
    env = (f"SimpleNet, batch {b} of 3x32x32, float32; per process the median of {args.repeats} blocks of "
           f"{args.iters} steps after {args.warmup} warm-up steps; the table is the median over {args.rounds} "
           f"alternating rounds of fresh processes. Machine: {platform.machine()}, {os.cpu_count()} cores (a shared "
           f"VM: single runs vary by up to 30%); PyTorch {torch.__version__} ({torch.get_num_threads()} threads), "
           f"NumPy {np.__version__}. Target: training throughput >= 0.5x PyTorch.")
    table = "\n".join(lines)
    print(table)
    print(env)
    if args.write:
        write_section("Host training (issue 2)", f"{env}\n\n{table}\n",
                      command=".venv/bin/python benchmarks/bench_train.py --write")


if __name__ == "__main__":
    main()
