"""Emulated boards (issue 5): dtorch-edge emulate's figures per board, and ONNX Runtime's aarch64 build beside
dtorch's rk3588 bundle in the same emulated environment.

Per board (rk3588 aarch64, rv1126 armv7, licheepi4a and k230 riscv64) and model (SimpleNet and a standard
MobileNetV2 1.0, both at 1x3x224x224, exported from PyTorch and imported from ONNX as in bench_onnx.py): parity,
cold start, latency, guest instructions per inference with the fast kernels (the board's SIMD set where its ISA has
one: neon64 on rk3588) and with the portable ones (--kernels exact), runtime peak memory, sizes and the board
estimate, all from dtorch.edge.emulate (local runner).

ONNX Runtime beside it (rk3588 only: ORT publishes no armv7 or riscv64 wheel): its manylinux aarch64 wheel, run by an
aarch64 CPython 3.11 from Debian's arm64 packages (extracted into build/ort-aarch64/, never installed), under the
same QEMU 7.2 `-cpu cortex-a76`:
  - latency: both engines in FROM scratch containers from the static qemu-aarch64 (ORT's process is Python, one
    session.run per timing, as in bench_runtime.py), p50 of the timed runs;
  - guest instructions per inference: both counted with the project's TCG plugin (local qemu-aarch64; ORT's count
    is run(11) - run(1) over 10 with the spread of two run(1) beside it (ORT_RUNS), dtorch's
    --repeat 2 - --repeat 1);
  - installed size: ORT's aarch64 package folder vs dtorch's bundle.
ORT's CPU detection (cpuinfo) crashes on the x86 /proc/cpuinfo that QEMU user mode passes through, so its runs see a
Cortex-A76 /proc/cpuinfo (benchmarks/aarch64_cpuinfo.txt): bind-mounted over /proc/cpuinfo in a private mount
namespace (local) or the container. Preparing build/ort-aarch64/ needs root and the package registries (apt and
pip): --prepare does it (dpkg --add-architecture arm64, apt-get download, pip download); without it the ORT columns
say why they are missing.

Run: .venv/bin/python benchmarks/bench_emulated.py --prepare --write
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import bench_onnx  # noqa: E402
from results import write_section  # noqa: E402

ORT_DIR = ROOT / "build" / "ort-aarch64"
CPUINFO = HERE / "aarch64_cpuinfo.txt"
ARM64_DEBS = ["python3.11-minimal", "libpython3.11-minimal", "libpython3.11-stdlib", "libc6", "zlib1g", "libexpat1",
              "libffi8", "libgcc-s1", "libstdc++6", "libbz2-1.0", "liblzma5", "libssl3", "libcrypt1", "libuuid1",
              "libsqlite3-0", "libtinfo6", "libncursesw6", "libreadline8", "libdb5.3", "libnsl2", "libtirpc3"]

ORT_SCRIPT = """
import sys, time, numpy as np, onnxruntime as ort
so = ort.SessionOptions(); so.intra_op_num_threads = 1; so.inter_op_num_threads = 1
s = ort.InferenceSession(sys.argv[1], so, providers=["CPUExecutionProvider"])
x = np.load(sys.argv[2]); n = int(sys.argv[3]); timed = sys.argv[4] == "1"
if not timed:
    for _ in range(n): s.run(None, {"input": x})
    sys.exit(0)
s.run(None, {"input": x})
ts = []
for _ in range(n):
    t0 = time.perf_counter(); s.run(None, {"input": x}); ts.append((time.perf_counter() - t0) * 1e3)
ts.sort(); print("p50", ts[len(ts) // 2])
"""


def prepare() -> None:
    """build/ort-aarch64/: root/ (aarch64 CPython + the libraries it and ORT link) and site/ (ORT, numpy wheels)."""
    root, site, debs = ORT_DIR / "root", ORT_DIR / "site", ORT_DIR / "debs"
    if (root / "usr" / "bin" / "python3.11").exists() and (site / "onnxruntime").is_dir():
        return
    for d in (root, site, debs):
        d.mkdir(parents=True, exist_ok=True)
    if "arm64" not in subprocess.run(["dpkg", "--print-foreign-architectures"], capture_output=True, text=True).stdout:
        subprocess.run(["dpkg", "--add-architecture", "arm64"], check=True)
        subprocess.run(["apt-get", "update", "-q"], check=True, capture_output=True)
    for p in ARM64_DEBS:
        subprocess.run(["apt-get", "download", f"{p}:arm64"], cwd=debs, check=True, capture_output=True)
    for deb in debs.glob("*.deb"):
        subprocess.run(["dpkg", "-x", str(deb), str(root)], check=True)
    whl = ORT_DIR / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "--python-version", "3.11",
                    "--platform", "manylinux_2_28_aarch64", "--platform", "manylinux2014_aarch64", "-d", str(whl),
                    "onnxruntime==1.32.0", "numpy"], check=True)
    import zipfile

    for w in whl.glob("*.whl"):
        with zipfile.ZipFile(w) as z:
            z.extractall(site)


def _ort_ready() -> str:
    if not (ORT_DIR / "root" / "usr" / "bin" / "python3.11").exists():
        return "build/ort-aarch64/ is not prepared (run with --prepare as root)"
    if shutil.which("unshare") is None:
        return "unshare is missing"
    return ""


#: ORT's count is the difference of separate processes (a CPython process cannot count one inference alone), and
#: a process's start-up count moves by millions of instructions from one process to the next. Each count is
#: therefore (run(1 + ORT_RUNS) - run(1)) / ORT_RUNS, and the spread of two run(1) processes, divided the same way,
#: is reported beside it.
ORT_RUNS = 10


def ort_count(onnx: Path, npy: Path, plugin: Path) -> tuple[int, int]:
    """ORT's guest instructions per inference and its noise (instructions), in a mount namespace with the A76
    cpuinfo: see ORT_RUNS."""
    counts = []
    with tempfile.TemporaryDirectory() as d:
        script = Path(d) / "ort.py"
        script.write_text(ORT_SCRIPT)
        for k, n in enumerate((1, 1, 1 + ORT_RUNS)):
            out = Path(d) / f"c{k}.txt"
            inner = (f"mount --bind {CPUINFO} /proc/cpuinfo && PYTHONHASHSEED=0 PYTHONPATH={ORT_DIR / 'site'} "
                     f"setarch x86_64 -R qemu-aarch64 -cpu cortex-a76 -plugin {plugin},outfile={out} "
                     f"-L {ORT_DIR / 'root'} {ORT_DIR / 'root/usr/bin/python3.11'} {script} {onnx} {npy} {n} 0")
            subprocess.run(["unshare", "--mount", "sh", "-c", inner], check=True, capture_output=True, timeout=1800)
            counts.append(int(out.read_text().split()[0]))
    base = (counts[0] + counts[1]) // 2
    return (counts[2] - base) // ORT_RUNS, abs(counts[1] - counts[0]) // ORT_RUNS


def docker_p50(image_ctx: Path, argv: list[str]) -> float:
    """Build a FROM scratch image from `image_ctx` and return the p50 it prints ('p50 X')."""
    tag = f"dtorch-bench-emulated:{abs(hash(str(image_ctx))) % 10**8}"
    subprocess.run(["docker", "build", "--network", "none", "-q", "-t", tag, str(image_ctx)], check=True,
                   capture_output=True, timeout=900)
    r = subprocess.run(["docker", "run", "--rm", "--network", "none", "-v", f"{CPUINFO}:/proc/cpuinfo:ro", tag, *argv],
                       check=True, capture_output=True, text=True, timeout=3600)
    return float(r.stdout.split("p50")[-1].split()[0])


def ort_docker_p50(onnx: Path, npy: Path, runs: int) -> float:
    with tempfile.TemporaryDirectory() as d:
        ctx = Path(d)
        shutil.copy2(shutil.which("qemu-aarch64-static"), ctx / "qemu")  # type: ignore[arg-type]
        shutil.copytree(ORT_DIR / "root", ctx / "root", symlinks=True)
        shutil.copytree(ORT_DIR / "site", ctx / "root" / "site")
        shutil.copy2(onnx, ctx / "root" / "model.onnx")
        shutil.copy2(npy, ctx / "root" / "x.npy")
        (ctx / "root" / "ort.py").write_text(ORT_SCRIPT)
        (ctx / "Dockerfile").write_text("FROM scratch\nCOPY qemu /qemu\nCOPY root/ /\nENV PYTHONPATH=/site\n"
                                        'ENTRYPOINT ["/qemu", "-cpu", "cortex-a76"]\n')
        return docker_p50(ctx, ["/usr/bin/python3.11", "/ort.py", "/model.onnx", "/x.npy", str(runs), "1"])


def _node_sets(dist: Path, npy: Path, board: str) -> list[str]:
    """The kernel sets the board's dtorch-run runs the bundle's model's conv2d nodes with (fast policy)."""
    import json

    from dtorch.edge.boards import load_board

    (model,) = sorted(dist.glob("*.dtm"))  # a bundle built for one model
    argv = load_board(board).emulator.command(dist / "dtorch-run", str(model), "--input", str(npy), "--bench",
                                              "1", "--profile", "--json", "--threads", "1")
    out = subprocess.run(argv, check=True, capture_output=True, text=True, timeout=3600).stdout
    rep = [json.loads(line) for line in out.splitlines() if '"profile"' in line][-1]
    return [n["kernel_set"] for n in rep["profile"] if n["op"] == "conv2d"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--boards", default="rk3588,rv1126,licheepi4a,k230")
    p.add_argument("--models", default="simplenet,mobilenet_v2")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--bench-runs", type=int, default=10)
    p.add_argument("--prepare", action="store_true", help="prepare build/ort-aarch64/ (root, apt and pip registries)")
    p.add_argument("--write", action="store_true")
    args = p.parse_args()
    from dtorch.edge.emulate import emulate
    from dtorch.edge.emulate.docker import docker_engine_answers
    from dtorch.edge.emulate.plugin import build_plugin

    if args.prepare:
        prepare()
    rows, ort_rows = [], []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for name in args.models.split(","):
            opath, dpath, npy, _ = bench_onnx.export_and_import(name, tmp)
            shape = np.load(npy).shape
            reports = {}
            for board in args.boards.split(","):
                rep = emulate(board, model=dpath, runner="local", runs=args.runs, bench_runs=args.bench_runs,
                              data=[npy], out=tmp / "dist", log=lambda _m: None, progress=False)
                reports[board] = rep
                f = rep.figures
                portable = emulate(board, bundle=tmp / "dist" / board, model=None, runner="local", runs=1,
                                   bench_runs=1, data=[npy], kernels="exact", log=lambda _m: None,
                                   progress=False).figures["instructions"]["per_inference"]
                ins = f["instructions"]["per_inference"]
                sets = sorted(set(_node_sets(tmp / "dist" / board, npy, board)))
                est = f["estimate"]["latency_ms"] if f.get("estimate") else float("nan")
                rows.append(f"| {name} {shape[2]}x{shape[3]} | {board} | {', '.join(sets)} | "
                            f"{'PASS' if f['parity']['pass'] else 'FAIL'} | "
                            f"{f['parity']['fast_vs_portable_max_rel']:.1e} | "
                            f"{f['cold_start']['median_ms']:.0f} | {f['latency_ms']['p50']:.1f} / "
                            f"{f['latency_ms']['p90']:.1f} / {f['latency_ms']['p99']:.1f} | "
                            f"{ins / 1e6:.1f} / {portable / 1e6:.1f} ({ins / portable:.2f}x) | "
                            f"{f['memory']['runtime_peak_bytes'] / 2**20:.2f} | "
                            f"{'yes' if f['memory']['fits'] else 'NO'} | {f['size']['dtorch_run_bytes'] / 1024:.0f} | "
                            f"{f['size']['bundle_bytes'] / 1024:.0f} | {est:.2f} |")
                print(rows[-1], flush=True)
            why = _ort_ready()
            if "rk3588" in reports and not why:
                ok, what = docker_engine_answers()
                rk = reports["rk3588"]
                ort_ins, ort_noise = ort_count(opath, npy, build_plugin())
                ort_lat = ort_docker_p50(opath, npy, args.bench_runs) if ok else float("nan")
                dt_lat = emulate("rk3588", bundle=tmp / "dist" / "rk3588", model=None, runner="docker", runs=1,
                                 bench_runs=args.bench_runs, count_instructions=False, log=lambda _m: None,
                                 progress=False).figures["latency_ms"]["p50"] if ok else float("nan")
                ort_size = sum(f.stat().st_size for f in (ORT_DIR / "site" / "onnxruntime").rglob("*") if f.is_file())
                dt_ins = rk.figures["instructions"]["per_inference"]
                ort_rows.append(f"| {name} {shape[2]}x{shape[3]} | {dt_lat:.1f} / {ort_lat:.1f} "
                                f"({dt_lat / ort_lat:.2f}x) | {dt_ins / 1e6:.1f} / {ort_ins / 1e6:.1f} +- {ort_noise / 1e6:.1f} "
                                f"({dt_ins / ort_ins:.2f}x) | {rk.figures['size']['bundle_bytes'] / 1024:.0f} KiB / "
                                f"{ort_size / 2**20:.1f} MiB |")
                print(ort_rows[-1], flush=True)
            elif why:
                ort_rows.append(f"| {name} | n/a | n/a | n/a ({why}) |")
    head = ("| model | board | conv kernels (fast) | parity | fast vs portable (x scale) | cold start ms | "
            "latency p50 / p90 / p99 ms | instructions / inference (M): fast / portable | runtime peak MiB | fits | "
            "dtorch-run KiB | bundle KiB | board latency ms (estimate) |\n"
            "|---|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|")
    ort_head = ("| model | latency p50 ms, docker: dtorch / ORT | instructions / inference (M): dtorch / ORT | "
                "installed: dtorch bundle / ORT aarch64 package |\n|---|---:|---:|---:|")
    body = ("Every figure is emulated (QEMU 7.2 user mode on this x86-64 VM, local runner, 1 thread) except the last "
            "column, an estimate for the real board from its board file (dtorch/edge/emulate/estimate.py). Instructions "
            "are guest instructions counted by the project's TCG plugin: deterministic, the figure to compare across "
            "changes. Fast = the board's SIMD kernel set where its ISA has one (neon64: aarch64 boards listing neon; neon32: "
            "armv7 boards listing neon and vfpv4; rvv: riscv64 boards listing rvv1.0; licheepi4a's RVV 0.7.1 has "
            "none, so fast = portable there), portable = the same bundle run with --kernels exact (k230's portable "
            "build is auto-vectorized by LLVM for RVV). Cold start, latency, memory and the estimate are of the fast "
            "kernels; runtime peak includes the mapped model.\n\n" + head + "\n"
            + "\n".join(rows) + "\n\nONNX Runtime 1.32.0 (manylinux aarch64 wheel) beside dtorch's rk3588 bundle, "
            "same qemu-aarch64 -cpu cortex-a76. Comparable: both run single-threaded on the same emulated CPU; "
            "latency is the p50 of in-process runs, both in FROM scratch containers. Not comparable: ORT's process is "
            "CPython (each timed run includes a Python call), and ORT's instruction count is the difference of two "
            "CPython processes "
            f"({1 + ORT_RUNS} inferences minus 1, over {ORT_RUNS}), whose start-up counts differ from process to "
            "process: the +- is that spread, from two 1-inference processes, per inference. ORT needs a Cortex-A76 "
            "/proc/cpuinfo under QEMU (see the script).\n\n"
            + ort_head + "\n" + "\n".join(ort_rows) + "\n")
    print(body)
    if args.write:
        argv = " ".join(a for a in sys.argv[1:] if a != "--write")
        write_section("Emulated boards (issue 5)", body, command=".venv/bin/python benchmarks/bench_emulated.py "
                                                                  f"{argv + ' ' if argv else ''}--write")


if __name__ == "__main__":
    main()
