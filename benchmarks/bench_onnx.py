"""Imported ONNX models: dtorch (the .dtm `dtorch-edge import` writes) vs ONNX Runtime on the same .onnx file,
side by side in one run (issues 15 and 16).

SimpleNet (benchmarks/zoo_twins.py's PyTorch twin), ResNet-18 and MobileNetV2 (tests/onnx/torch_models.py, the
published layer configurations, seeded weights), all at 1x3x224x224, are exported with torch.onnx (legacy
exporter, opset 17, dynamic batch) and imported with dtorch.onnx.import_model. Measured with bench_runtime.py's
methods: steady latency at batch 1 with 1 and 2 threads (fresh processes, engines alternating, ratios paired per
round), cold start (a fresh process from import to the first output) and its peak RSS, and dtorch-run's native cold
start.
Run: .venv/bin/python benchmarks/bench_onnx.py --write
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests" / "onnx"))
from bench_runtime import COLD_DTORCH, COLD_ORT, cold, cold_native, cpu_description, steady  # noqa: E402
from results import write_section  # noqa: E402

MODELS = ("simplenet", "resnet18", "mobilenet_v2")
SHAPE = (1, 3, 224, 224)


def torch_model(name: str):
    """The PyTorch model of `name` (eval mode) and its input shape."""
    if name == "simplenet":
        from zoo_twins import build as zoo_build

        _d, model, _shape = zoo_build(name)  # the zoo's SimpleNet pools globally: any input size
        return model.eval(), SHAPE
    import torch_models as tm

    model, shape = tm.build(name)
    return model.eval(), shape


def export_and_import(name: str, tmp: Path) -> tuple[Path, Path, Path, dict[str, object]]:
    import torch

    import dtorch.onnx as don

    model, shape = torch_model(name)
    x = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
    onnx_path, dtm_path, npy = tmp / f"{name}.onnx", tmp / f"{name}.dtm", tmp / f"{name}.npy"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.from_numpy(x),), str(onnx_path), input_names=["input"],
                          output_names=["output"], dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                          opset_version=17, dynamo=False)
    rep = don.import_model(onnx_path, dtm_path)
    np.save(npy, x)
    info = {"onnx_nodes": rep.onnx_nodes, "nodes": rep.nodes_after_passes, "parity": max(rep.parity.values()),
            "arena_kib": rep.arena_size / 1024}
    return onnx_path, dtm_path, npy, info


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--iters", type=int, default=60)
    p.add_argument("--cold-runs", type=int, default=5)
    p.add_argument("--write", action="store_true")
    args = p.parse_args()
    rows, res = [], {}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for name in args.models.split(","):
            onnx_path, dtm_path, npy, info = export_and_import(name, tmp)
            r: dict[str, object] = dict(info)
            for th in (1, 2):
                for k, v in steady(dtm_path, onnx_path, npy, th, args.iters).items():
                    r[f"t{th}_{k}"] = v
            r["cold_dtorch_s"], r["rss_dtorch_mb"] = cold(COLD_DTORCH, dtm_path, npy, args.cold_runs)
            r["cold_ort_s"], r["rss_ort_mb"] = cold(COLD_ORT, onnx_path, npy, args.cold_runs)
            native = cold_native(dtm_path, npy, args.cold_runs)
            if native:
                r["cold_native_s"], r["rss_native_mb"] = native
            res[name] = r
            print(name, json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}), flush=True)
            f = {k: v for k, v in r.items() if isinstance(v, float)}
            rows.append(
                f"| {name} | {info['onnx_nodes']} -> {info['nodes']} | "
                f"{f['t1_dtorch_p50']:.2f} / {f['t1_onnxruntime_p50']:.2f} ({f['t1_ratio']:.2f}x "
                f"[{f['t1_ratio_lo']:.2f}-{f['t1_ratio_hi']:.2f}]) | {f['t2_dtorch_p50']:.2f} / "
                f"{f['t2_onnxruntime_p50']:.2f} ({f['t2_ratio']:.2f}x [{f['t2_ratio_lo']:.2f}-{f['t2_ratio_hi']:.2f}]) | "
                f"{f['cold_dtorch_s'] * 1e3:.0f} / {f['cold_ort_s'] * 1e3:.0f} | "
                f"{f['rss_dtorch_mb']:.0f} / {f['rss_ort_mb']:.0f} | "
                + (f"{f['cold_native_s'] * 1e3:.0f} ms, {f['rss_native_mb']:.1f} MB" if native else "n/a")
                + f" | {f['t1_max_abs_diff']:.1e} | {r.get('t1_kernel_sets', '?')} | "
                + (f"{f['t1_dtorch_avx2_p50']:.2f} ({f['t1_ratio_avx2']:.2f}x) / {f['t2_dtorch_avx2_p50']:.2f} "
                   f"({f['t2_ratio_avx2']:.2f}x)" if "t1_ratio_avx2" in f else "n/a (the CPU has one FMA set)") + " |")
    import onnxruntime

    text = "\n".join([
        f"CPU: {cpu_description()}; ONNX Runtime {onnxruntime.__version__}. Each model exported once by torch.onnx "
        f"(opset 17, dynamic batch), imported by `dtorch.onnx.import_model`; both engines run at batch 1, "
        f"1x3x224x224. Latency: median ms (dtorch / ORT), the ratio paired per round [range over rounds]. "
        f"dtorch runs its default kernel policy, \"fast\"; \"kernel sets\" lists the sets its nodes ran. On a CPU "
        f"with both x86 FMA sets the last column times the avx2 set too (exclude_kernel_sets=[\"avx512\"]), in the "
        f"same paired rounds.",
        "",
        "| model | ONNX nodes -> runtime nodes | 1 thread ms | 2 threads ms | cold start ms (Python) | peak RSS MB | "
        "dtorch-run cold start, RSS | max abs diff | kernel sets | avx2 set, 1 / 2 threads ms (x ORT) |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        "Aim (issues 15, 16): latency at most 1.0x ONNX Runtime's at 1 and 2 threads; cold start and peak RSS below "
        "ONNX Runtime's. The import adds no node a native export would not have (ResNet-18: 20 conv + 8 add + max "
        "pool + global pool + reshape + linear = 32, BatchNorm and ReLU fused; MobileNetV2: 52 conv + 10 add + mean "
        "+ linear = 64, ReLU6 fused); where the time goes per node: the section \"Where the time goes, per node\".",
    ])
    print(text)
    if args.write:
        write_section("Models at 224 vs ONNX Runtime, imported from ONNX (issues 15, 16)", text,
                      ".venv/bin/python benchmarks/bench_onnx.py --write")


if __name__ == "__main__":
    main()
