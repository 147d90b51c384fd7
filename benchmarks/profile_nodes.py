"""Where the time goes, per node: dtorch-run's profile beside ONNX Runtime's own node profile on the same .onnx file,
with each convolution's and linear layer's arithmetic, so every node reads against the float32 FMA floor (issue 16).

Models at 1x3x224x224: SimpleNet (benchmarks/zoo_twins.py, the PyTorch twin), ResNet-18 and MobileNetV2
(tests/onnx/torch_models.py). Each is exported once by torch.onnx and imported by dtorch.onnx.import_model exactly
as benchmarks/bench_onnx.py does; dtorch runs the .dtm with `dtorch-run --bench N --profile --json` (its default 'fast'
kernels), ONNX Runtime runs the .onnx with enable_profiling (one intra-op thread, graph optimizations on). Per node:
the median over the runs. Both engines keep one node per ONNX Conv/Gemm (BatchNorm and activations fold into
them) but ORT also fuses a residual Add (and reorders to NCHWc), so the engines are compared per operator, and
dtorch's nodes one by one against the arithmetic.
Run: .venv/bin/python benchmarks/profile_nodes.py [--threads 1] [--write]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests" / "onnx"))
from bench_onnx import export_and_import  # noqa: E402
from bench_runtime import cpu_description  # noqa: E402
from results import write_section  # noqa: E402

MODELS = ("simplenet", "resnet18", "mobilenet_v2")
MATH_OPS = {"Conv": "conv2d", "Gemm": "linear", "MatMul": "matmul"}


def math_nodes(onnx_path: Path) -> list[tuple[str, str, float]]:
    """(ONNX op, node name, GFLOP) of every Conv/Gemm/MatMul in graph order (2 flops per multiply-add)."""
    import onnx
    from onnx import shape_inference

    m = shape_inference.infer_shapes(onnx.load(str(onnx_path)))
    shapes = {}
    for vi in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
        shapes[vi.name] = [d.dim_value or 1 for d in vi.type.tensor_type.shape.dim]  # the dynamic batch: 1
    inits = {t.name: list(t.dims) for t in m.graph.initializer}
    out = []
    for n in m.graph.node:
        if n.op_type not in MATH_OPS:
            continue
        w = inits.get(n.input[1]) or shapes.get(n.input[1])
        y = shapes.get(n.output[0])
        if n.op_type == "Conv":  # out elements x (Cin/groups x kh x kw)
            macs = int(np.prod(y)) * int(np.prod(w[1:]))
        else:  # Gemm / MatMul: out elements x K
            a = shapes.get(n.input[0]) or inits.get(n.input[0])
            macs = int(np.prod(y)) * int(a[-1])
        out.append((n.op_type, n.name, 2.0 * macs / 1e9))
    return out


def dtorch_profile(dtm: Path, npy: Path, threads: int, runs: int) -> list[tuple[str, str, float]]:
    exe = shutil.which("dtorch-run", path=str(ROOT / ".venv" / "bin")) or shutil.which("dtorch-run")
    if exe is None:
        raise SystemExit("dtorch-run is not installed: run scripts/setup.sh")
    proc = subprocess.run([exe, str(dtm), "--input", str(npy), "--bench", str(runs), "--profile", "--threads",
                           str(threads), "--json"], capture_output=True, text=True, check=True)
    report = next(json.loads(ln) for ln in proc.stdout.splitlines() if '"report"' in ln)
    return [(p["op"], p["kernel_set"], float(p["ms"])) for p in report["profile"]]


def ort_profile(onnx_path: Path, npy: Path, threads: int, runs: int, tmp: Path) -> list[tuple[str, str, float]]:
    """(op type, node name, median ms) per node in ONNX Runtime's execution order."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.enable_profiling = True
    opts.profile_file_prefix = str(tmp / f"ort_{onnx_path.stem}")
    s = ort.InferenceSession(str(onnx_path), opts, providers=["CPUExecutionProvider"])
    x = np.load(npy)
    for _ in range(runs + 5):
        s.run(None, {"input": x})
    events = json.loads(Path(s.end_profiling()).read_text())
    times: dict[str, list[float]] = defaultdict(list)
    order: dict[str, str] = {}
    for e in events:
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time"):
            continue
        node = e["name"][: -len("_kernel_time")]
        order.setdefault(node, e.get("args", {}).get("op_name", "?"))
        times[node].append(e["dur"] / 1000.0)
    # the first 5 runs are warm-up
    return [(order[n], n, statistics.median(t[5:] if len(t) > 5 else t)) for n, t in times.items()]


def model_rows(name: str, tmp: Path, threads: int, runs: int) -> tuple[list[str], dict[str, float]]:
    onnx_path, dtm, npy, _info = export_and_import(name, tmp)
    maths = math_nodes(onnx_path)
    d = dtorch_profile(dtm, npy, threads, runs)
    o = ort_profile(onnx_path, npy, threads, runs, tmp)
    d_math = [(op, ks, ms) for op, ks, ms in d if op in MATH_OPS.values()]
    o_math = [(op, n, ms) for op, n, ms in o if op in ("Conv", "FusedConv", "Gemm", "FusedGemm", "MatMul",
                                                       "FusedMatMul")]
    if len(maths) != len(d_math):
        raise SystemExit(f"{name}: {len(maths)} ONNX Conv/Gemm/MatMul nodes but {len(d_math)} in dtorch's profile")
    o_kind = {"Conv": "Conv", "FusedConv": "Conv", "Gemm": "Gemm", "FusedGemm": "Gemm", "MatMul": "MatMul",
              "FusedMatMul": "MatMul"}
    o_ms: dict[str, float] = defaultdict(float)
    for op, _n, ms in o_math:
        o_ms[o_kind[op]] += ms
    per_op: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])  # gflop, dtorch ms, count
    rows = []
    for (op, node, gf), (_dop, ks, dms) in zip(maths, d_math, strict=True):
        acc = per_op[op]
        acc[0] += gf
        acc[1] += dms
        acc[2] += 1
        rows.append((dms, node, op, ks, gf))
    sets = {op: ",".join(sorted({ks for (o, _n, _g), (_d, ks, _m) in zip(maths, d_math, strict=True) if o == op}))
            for op in per_op}
    other_d: dict[str, float] = defaultdict(float)
    other_o: dict[str, float] = defaultdict(float)
    for op, ks, ms in d:
        if op not in MATH_OPS.values():
            other_d[f"{op} ({ks})"] += ms
    for op, _n, ms in o:
        if op not in o_kind:
            other_o[op] += ms
    total_gf = sum(g for _o, _n, g in maths)
    d_sum, o_sum = sum(ms for *_x, ms in d), sum(ms for *_x, ms in o)
    lines = [f"### {name}: {total_gf:.2f} GFLOP in Conv/Gemm; node sums dtorch {d_sum:.2f} ms, ORT {o_sum:.2f} ms "
             f"({d_sum / o_sum:.2f}x)", "",
             "| nodes | count | GFLOP | dtorch ms (set) | GFLOP/s | ORT ms | GFLOP/s | ratio |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for key, (gf, dms, cnt) in sorted(per_op.items(), key=lambda kv: -kv[1][1]):
        oms = o_ms.get(key, 0.0)
        ratio = f"{dms / oms:.2f}x" if oms > 0 else "-"
        orate = f"{gf / oms * 1e3:.0f}" if oms > 0 else "-"
        lines.append(f"| {key} | {int(cnt)} | {gf:.3f} | {dms:.2f} ({sets[key]}) | {gf / dms * 1e3:.0f} | {oms:.2f} | "
                     f"{orate} | {ratio} |")
    fmt = lambda m: ", ".join(f"{k} {v:.2f}" for k, v in sorted(m.items(), key=lambda kv: -kv[1]) if v >= 0.005)  # noqa: E731
    lines.append(f"| the rest | | | {sum(other_d.values()):.2f}: {fmt(other_d) or '-'} | | "
                 f"{sum(other_o.values()):.2f}: {fmt(other_o) or '-'} | | |")
    lines += ["", f"dtorch's slowest Conv/Gemm nodes ({name}):", "",
              "| node | set | GFLOP | ms | GFLOP/s |", "|---|---|---:|---:|---:|"]
    for dms, node, _op, ks, gf in sorted(rows, reverse=True)[:5]:
        lines.append(f"| {node} | {ks} | {gf:.3f} | {dms:.2f} | {gf / dms * 1e3:.0f} |")
    return lines, {"dtorch": d_sum, "ort": o_sum}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--write", action="store_true")
    args = p.parse_args()
    import onnxruntime as ort

    body = [f"CPU: {cpu_description()}; ONNX Runtime {ort.__version__}; {args.threads} thread(s), median of "
            f"{args.runs} runs per node, both engines at their default kernels (dtorch: the best set the CPU has). "
            f"GFLOP/s counts 2 flops per multiply-add.", ""]
    with tempfile.TemporaryDirectory() as td:
        for name in args.models.split(","):
            lines, _ = model_rows(name, Path(td), args.threads, args.runs)
            body += lines + [""]
    text = "\n".join(body)
    print(text)
    if args.write:
        write_section("Where the time goes, per node (issue 16)", text,
                      f".venv/bin/python benchmarks/profile_nodes.py --threads {args.threads} --write")


if __name__ == "__main__":
    main()
