"""Int8 on the emulated rk3588 against float32 and ONNX Runtime's aarch64 int8, side by side in one run (issue 17).

SimpleNet and MobileNetV2 at 1x3x224x224 (bench_onnx.py's models), quantized as bench_int8.py does (dt.quant.quantize
from the float .dtm; onnxruntime.quantization's static QDQ, per-channel QInt8, from the .onnx; the same 8
calibration batches). Guest instructions per inference under qemu-aarch64 -cpu cortex-a76, counted by the project's
TCG plugin:
  - dtorch float32 and dtorch int8: `dtorch-edge emulate --board rk3588` (the board's fast kernels: neon64 for float,
    neon64dot for int8; 1 thread; --repeat 2 minus --repeat 1);
  - ONNX Runtime 1.32.0's aarch64 wheel on its QDQ model and on the float model, under the same QEMU CPU (see
    bench_emulated.py: run(11) - run(1) over 10, the spread of two run(1) processes beside it); needs
    build/ort-aarch64/ (bench_emulated.py --prepare).
Issue target: dtorch int8 at most 0.5x of dtorch float32's instructions. Also each int8 model's output error
against its float model on the bundled input (relative RMS), and parity: the board's int8 bits equal the host's.
Run: .venv/bin/python benchmarks/bench_int8_board.py [--write]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_emulated  # noqa: E402
from bench_int8 import MODELS, models_of, rel  # noqa: E402
from results import write_section  # noqa: E402

BOARD = "rk3588"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--write", action="store_true")
    args = p.parse_args()
    import dtorch.runtime as rt
    from dtorch.edge.emulate import emulate
    from dtorch.edge.emulate.plugin import build_plugin

    why = bench_emulated._ort_ready()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for name in args.models.split(","):
            onnx_path, dtm_path, npy, q_dtm, q_onnx, _float_layers = models_of(name, tmp)
            counts, parity = {}, {}
            for tag, model in (("float", dtm_path), ("int8", q_dtm)):
                rep = emulate(BOARD, model=model, runner="local", runs=1, bench_runs=1, data=[npy],
                              out=tmp / f"dist_{name}_{tag}", log=lambda _m: None, progress=False)
                counts[tag] = rep.figures["instructions"]["per_inference"]
                parity[tag] = rep.figures["parity"]["pass"]
            x = np.load(npy)
            outs = {}
            for tag, model in (("float", dtm_path), ("int8", q_dtm)):
                s = rt.InferenceSession(str(model))
                outs[tag] = s.run(None, {s.get_inputs()[0].name: x})[0]
            if why:
                ort = {"int8": (float("nan"), 0), "float": (float("nan"), 0)}
            else:
                plugin = build_plugin()
                ort = {"int8": bench_emulated.ort_count(q_onnx, npy, plugin),
                       "float": bench_emulated.ort_count(onnx_path, npy, plugin)}
            ratio = counts["int8"] / counts["float"]
            rows.append(f"| {name} 224x224 | {counts['float'] / 1e6:.1f} | {counts['int8'] / 1e6:.1f} | "
                        f"**{ratio:.2f}x** | {ort['float'][0] / 1e6:.1f} +- {ort['float'][1] / 1e6:.1f} | "
                        f"{ort['int8'][0] / 1e6:.1f} +- {ort['int8'][1] / 1e6:.1f} | "
                        f"{counts['int8'] / ort['int8'][0]:.2f}x | "
                        f"{'PASS' if parity['int8'] and parity['float'] else 'FAIL'} | "
                        f"{rel(outs['int8'], outs['float']):.4f} |")
            print(rows[-1], flush=True)
    head = ("| model | dtorch float32 (M) | dtorch int8 (M) | int8 / float32 (target <= 0.5x) | ORT float32 (M) | "
            "ORT int8 QDQ (M) | dtorch int8 / ORT int8 | parity (board = host bits) | int8 output error vs float |\n"
            "|---|---:|---:|---:|---:|---:|---:|---|---:|")
    note = ("Guest instructions per inference, QEMU 7.2 user mode, -cpu cortex-a76, 1 thread. dtorch float32 runs "
            "the neon64 set, dtorch int8 the neon64dot set (SDOT; the board file lists dotprod). ORT's counts are the "
            "difference of CPython processes (see bench_emulated.py), +- their spread.")
    if why:
        note += f" ONNX Runtime's columns are missing: {why}."
    body = note + "\n\n" + head + "\n" + "\n".join(rows) + "\n"
    print(body)
    if args.write:
        write_section("Int8 on the emulated rk3588 (issue 17)", body,
                      ".venv/bin/python benchmarks/bench_int8_board.py --write")


if __name__ == "__main__":
    main()
