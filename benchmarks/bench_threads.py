"""Concurrent runs: 2 Python threads on one session vs one session per thread, dtorch and ONNX Runtime side by side.

A server calls `run` from several threads on one session. dtorch runs those calls in parallel, each in an execution
state of its own with the weights shared (runtime/include/dtorch/runtime.h); ONNX Runtime's InferenceSession.run is
thread-safe the same way. For each model (exported with `dt.export`, its PyTorch twin with `torch.onnx.export`, as in
bench_runtime.py) and each engine, in fresh processes, with one intra-op thread per session:
  - one:      1 thread, 1 session (the baseline);
  - shared:   2 threads calling run on 1 session;
  - separate: 2 threads, a session each.
Each process runs for a fixed time after warm-up and reports runs per second and its peak RSS; the configurations
alternate in rounds (this shared VM changes speed from minute to minute) and the figures are medians over rounds.
Run: .venv/bin/python benchmarks/bench_threads.py --write   (needs `pip install -e .[bench]` and torch==2.13.0)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_runtime import export_pair  # noqa: E402
from results import write_section  # noqa: E402

MODES = ("one", "shared", "separate")
ENGINES = ("dtorch", "onnxruntime")

WORKER = """
import json, sys, threading, time
import numpy as np
engine, model, npy, mode, seconds = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5])
x = np.load(npy)
if engine == "onnxruntime":
    import onnxruntime as ort
    def make():
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        return lambda: s.run(None, {"input": x})[0]
else:
    import dtorch.runtime as rt
    def make():
        s = rt.InferenceSession(model, threads=1)
        return lambda: s.run(None, {"input": x})[0]
n = 1 if mode == "one" else 2
runs = [make()] * n if mode != "separate" else [make() for _ in range(n)]
first = runs[0]()
for r in runs:
    for _ in range(10):  # warm-up
        r()
counts = [0] * n
start = threading.Barrier(n + 1)
stop = threading.Event()
def work(i):
    start.wait()
    while not stop.is_set():
        y = runs[i]()
        counts[i] += 1
    if not np.array_equal(y, first):
        counts[i] = -10**9  # a wrong result voids the figure
threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
for t in threads:
    t.start()
start.wait()
t0 = time.perf_counter()
time.sleep(seconds)
stop.set()
for t in threads:
    t.join()
elapsed = time.perf_counter() - t0
# VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec (it would report the parent's, which imported torch).
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(json.dumps({"runs_per_s": sum(counts) / elapsed, "rss_mb": hwm / 1024}))
"""


def measure(dpath: Path, opath: Path, npy: Path, rounds: int, seconds: float) -> dict[str, dict[str, float]]:
    per: dict[str, list[dict[str, float]]] = {f"{e}/{m}": [] for e in ENGINES for m in MODES}
    for _ in range(rounds):
        for engine in ENGINES:
            for mode in MODES:
                model = opath if engine == "onnxruntime" else dpath
                proc = subprocess.run([sys.executable, "-c", WORKER, engine, str(model), str(npy), mode, str(seconds)],
                                      check=True, capture_output=True, text=True)
                r = json.loads(proc.stdout.strip().splitlines()[-1])
                if r["runs_per_s"] < 0:
                    raise SystemExit(f"{engine} {mode}: a concurrent run gave a wrong result")
                per[f"{engine}/{mode}"].append(r)
    return {k: {f: statistics.median(r[f] for r in v) for f in ("runs_per_s", "rss_mb")} for k, v in per.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="simplenet,mobilenet")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--write", action="store_true", help="write the section of benchmarks/RESULTS.md")
    args = ap.parse_args()
    import onnxruntime

    rows, reading = [], []
    with tempfile.TemporaryDirectory() as d:
        for name in args.models.split(","):
            dpath, opath, _x = export_pair(name, Path(d))
            m = measure(dpath, opath, Path(d) / f"{name}.npy", args.rounds, args.seconds)
            cells = []
            for e in ENGINES:
                one, sh, sep = (m[f"{e}/{k}"] for k in MODES)
                cells.append(f"{one['runs_per_s']:.0f} / {sh['runs_per_s']:.0f} / {sep['runs_per_s']:.0f} "
                             f"({sh['runs_per_s'] / sep['runs_per_s']:.2f}x)")
                cells.append(f"{sh['rss_mb']:.0f} / {sep['rss_mb']:.0f}")
            ratio = m["dtorch/shared"]["runs_per_s"] / m["onnxruntime/shared"]["runs_per_s"]
            rows.append(f"| {name} | " + " | ".join(cells) + f" | {ratio:.2f}x |")
            dsh, dsep, done = m["dtorch/shared"], m["dtorch/separate"], m["dtorch/one"]
            reading.append(f"- {name}: dtorch, 2 threads on one session do {dsh['runs_per_s'] / dsep['runs_per_s']:.2f}x "
                           f"the runs of a session per thread ({dsh['runs_per_s'] / done['runs_per_s']:.2f}x one "
                           f"thread), in {dsh['rss_mb']:.0f} vs {dsep['rss_mb']:.0f} MB peak RSS; ONNX Runtime "
                           f"{m['onnxruntime/shared']['runs_per_s'] / m['onnxruntime/separate']['runs_per_s']:.2f}x.")
    cpu = platform.processor() or platform.machine()
    body = "\n".join([
        f"Runs per second over {args.seconds:g} s after warm-up, median of {args.rounds} rounds (the configurations "
        "alternating), each in a fresh process, batch 1, float32, one intra-op thread per session, dtorch's "
        f"default kernels. Machine: {cpu}, {os.cpu_count()} CPUs. ONNX Runtime {onnxruntime.__version__} "
        "(CPUExecutionProvider, models from torch.onnx.export of the PyTorch twins). Every thread's last result is "
        "checked against the first run's.",
        "",
        "| model | dtorch runs/s: 1 thread / 2 threads one session / 2 threads two sessions (shared / separate) | "
        "dtorch peak RSS MB: one session / two | ORT runs/s, same | ORT peak RSS MB | dtorch / ORT runs/s, 2 threads "
        "one session |",
        "|---|---:|---:|---:|---:|---:|",
        *rows,
        "",
        "Reading: a Session serves concurrent runs in parallel, an execution state (plan, arena, outputs) per run "
        "from a small pool with the weights (memory-mapped) and prepared kernels shared; the target is that two "
        "threads on one session do at least the runs of a session per thread.",
        *reading,
    ])
    print(body)
    if args.write:
        write_section("Concurrent runs on one session (issue 13)", body,
                      ".venv/bin/python benchmarks/bench_threads.py --write")


if __name__ == "__main__":
    main()
