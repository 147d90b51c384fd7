"""Per-call cost of a run through Python: dtorch's InferenceSession.run vs ONNX Runtime's, side by side in one run.

Small models (keyword spotting, sensor classifiers) run in microseconds, so what a call costs around the kernels
decides their latency. Two models, each written once as ONNX (onnx.helper, fixed random weights) and imported by
`dtorch.onnx.import_model`, so both engines run the same graph at batch 1 on 1 thread:
  - relu: one Relu on 1 x 10 (the call and nothing else);
  - mlp: Gemm 64 -> 128, Relu, Gemm 128 -> 10 (a small classifier head).
Each engine runs in its own process, the processes alternating in rounds; a process times each of `--calls` calls
(`session.run(None, {"input": x})`, the usual call) after 2,000 warm-up calls and prints the median; the figure is
the median over rounds, the ratio dtorch / ONNX Runtime paired per round.
Run: .venv/bin/python benchmarks/bench_call.py --write
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_runtime import STEADY_ENV, cpu_description  # noqa: E402
from results import write_section  # noqa: E402

TIMER = """
import statistics, sys, time
import numpy as np
engine, path, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
x = np.load(path.rsplit(".", 1)[0] + ".npy")
if engine == "ort":
    import onnxruntime as ort
    so = ort.SessionOptions(); so.intra_op_num_threads = 1; so.inter_op_num_threads = 1
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
else:
    import dtorch.runtime as rt
    s = rt.InferenceSession(path, threads=1)
feed = {"input": x}
for _ in range(2000):
    s.run(None, feed)
ts = []
for _ in range(calls):
    t0 = time.perf_counter(); s.run(None, feed); ts.append(time.perf_counter() - t0)
print(statistics.median(ts) * 1e6)
"""


def make_models(tmp: Path) -> dict[str, tuple[Path, Path]]:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from dtorch.onnx import import_model

    rng = np.random.default_rng(0)

    def io(name: str, n: int) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, n])

    def weight(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name)

    graphs = {
        "relu": helper.make_graph([helper.make_node("Relu", ["input"], ["output"])], "relu", [io("input", 10)],
                                  [io("output", 10)]),
        "mlp": helper.make_graph(
            [helper.make_node("Gemm", ["input", "w1", "b1"], ["h"], transB=1),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "w2", "b2"], ["output"], transB=1)],
            "mlp", [io("input", 64)], [io("output", 10)],
            [weight("w1", 128, 64), weight("b1", 128), weight("w2", 10, 128), weight("b2", 10)]),
    }
    out = {}
    for name, graph in graphs.items():
        onnx_path, dtm_path = tmp / f"{name}.onnx", tmp / f"{name}.dtm"
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), onnx_path)
        import_model(onnx_path, dtm_path)
        n = graph.input[0].type.tensor_type.shape.dim[1].dim_value
        x = rng.standard_normal((1, n)).astype(np.float32)
        np.save(tmp / f"{name}.npy", x)
        out[name] = (dtm_path, onnx_path)
    return out


def time_calls(engine: str, path: Path, calls: int) -> float:
    r = subprocess.run([sys.executable, "-c", TIMER, engine, str(path), str(calls)], capture_output=True, text=True,
                       env=STEADY_ENV, check=False)
    if r.returncode != 0:
        raise SystemExit(f"{engine} on {path.name} failed:\n{r.stderr}")
    return float(r.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--write", action="store_true")
    args = p.parse_args()
    import onnxruntime

    rows = []
    with tempfile.TemporaryDirectory() as d:
        for name, (dtm, onnx_path) in make_models(Path(d)).items():
            dt_us, ort_us, ratios = [], [], []
            for _ in range(args.rounds):
                a, b = time_calls("dtorch", dtm, args.calls), time_calls("ort", onnx_path, args.calls)
                dt_us.append(a)
                ort_us.append(b)
                ratios.append(a / b)
            rows.append(f"| {name} | {statistics.median(dt_us):.2f} / {statistics.median(ort_us):.2f} | "
                        f"{statistics.median(ratios):.2f}x [{min(ratios):.2f}-{max(ratios):.2f}] |")
            print(rows[-1], flush=True)
    body = "\n".join([
        f"CPU: {cpu_description()}; ONNX Runtime {onnxruntime.__version__}. Median microseconds per "
        f"`session.run(None, {{\"input\": x}})` over {args.calls} calls per process after 2,000 warm-up calls, "
        f"{args.rounds} rounds of one process per engine; ratio dtorch / ORT paired per round [range].",
        "",
        "| model | us per call: dtorch / ORT | ratio |",
        "|---|---:|---:|",
        *rows,
    ])
    print(body)
    if args.write:
        write_section("Per-call cost through Python (issue 16)", body,
                      ".venv/bin/python benchmarks/bench_call.py --write")


if __name__ == "__main__":
    main()
