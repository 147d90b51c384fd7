"""Size of the pruned board runtime (issue 4): SimpleNet's bundle for rk3588 (aarch64) with each toolchain family,
pruned vs the full runtime of the same board and toolchain, and the installed size of peer runtimes.

Run: .venv/bin/python benchmarks/bench_size.py --write
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from results import write_section  # noqa: E402


def _peer_sizes() -> list[str]:
    lines = []
    spec = importlib.util.find_spec("onnxruntime")
    if spec is not None and spec.origin:
        folder = Path(spec.origin).parent
        total = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        lines.append(f"- ONNX Runtime (onnxruntime wheel, x86-64, installed package folder): {total / 1e6:.1f} MB "
                     f"(the host build; the aarch64 one, like for like with a board bundle, follows when prepared)")
    ort_arm = HERE.parent / "build" / "ort-aarch64" / "site" / "onnxruntime"
    if ort_arm.is_dir():
        total = sum(p.stat().st_size for p in ort_arm.rglob("*") if p.is_file())
        lines.append(f"- ONNX Runtime's aarch64 wheel (manylinux, the package folder; prepared by "
                     f"benchmarks/bench_emulated.py --prepare): {total / 1e6:.1f} MB, like for like with the bundle")
    else:
        lines.append("- ONNX Runtime's aarch64 wheel: not measured (run benchmarks/bench_emulated.py --prepare first)")
    et = _executorch_wheel()
    if et is not None:
        lines.append(et)
    return lines


def _executorch_wheel() -> str | None:
    """ExecuTorch's x86-64 wheel (pip download executorch --no-deps; not installed: it depends on torch): the
    size of its installed files and of its core runtime library (libexecutorch.so, without kernels)."""
    import subprocess
    import zipfile

    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([sys.executable, "-m", "pip", "download", "executorch", "--no-deps", "-q", "-d", d],
                           capture_output=True, text=True, timeout=600)
        wheels = list(Path(d).glob("executorch-*.whl"))
        if r.returncode != 0 or not wheels:
            return "- ExecuTorch: its wheel could not be downloaded here, so it is not measured"
        with zipfile.ZipFile(wheels[0]) as z:
            infos = z.infolist()
            total = sum(i.file_size for i in infos)
            core = sum(i.file_size for i in infos if i.filename.endswith("lib/libexecutorch.so"))
            kernels = sum(i.file_size for i in infos if i.filename.endswith("lib/libexecutorch_kernels_optimized.so"))
        return (f"- ExecuTorch {wheels[0].name.split('-')[1]} (x86-64 wheel, downloaded, not installed): "
                f"{total / 1e6:.1f} MB installed; its core runtime libexecutorch.so {core / 1024:.0f} KiB (no "
                f"kernels, shared, x86-64) plus libexecutorch_kernels_optimized.so {kernels / 1e6:.1f} MB. An aarch64 "
                f"static ExecuTorch build would need its CMake cross build, not attempted here")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--board", default="rk3588")
    p.add_argument("--write", action="store_true")
    args = p.parse_args()

    import dtorch as dt
    from dtorch.edge.build import build_bundle
    from dtorch.models import SimpleNet

    rows, verdicts = [], []
    with tempfile.TemporaryDirectory() as d:
        model = Path(d) / "simplenet.dtm"
        dt.manual_seed(0)
        dt.export(SimpleNet().eval(), dt.randn(1, 3, 32, 32), str(model), bundle_example=True)
        for family in ("zig", "gcc-cross"):
            r = build_bundle(args.board, [model], toolchain=family, out=Path(d) / "dist", log=lambda _m: None,
                             progress=False)
            kernels = ", ".join(f"{Path(k).stem} {v / 1024:.1f}" for k, v in
                                sorted(r.kernel_bytes.items(), key=lambda kv: -kv[1]))
            ratio = r.full_bytes / r.binary_bytes
            rows.append(f"| {family} | {r.manifest['toolchain']['version']} | {r.binary_bytes / 1024:.0f} | "
                        f"{r.full_bytes / 1024:.0f} | {ratio:.2f}x | {kernels} |")
            verdicts.append(f"- {family}: {r.binary_bytes / 1000:.0f} KB pruned "
                            f"({'met' if r.binary_bytes <= 300_000 else 'NOT met'} <= 300 KB; "
                            f"{'met' if r.binary_bytes <= 150_000 else 'not reached'} the 150 KB aim), "
                            f"{ratio:.2f}x smaller than the full runtime ({'met' if ratio >= 3 else 'NOT met'} >= 3x)")
            print(rows[-1], flush=True)
    table = ("| toolchain | version | pruned dtorch-run KiB | full runtime KiB | full / pruned | kernel KiB (non-LTO "
             "objects) |\n|---|---|---:|---:|---:|---|\n" + "\n".join(rows))
    body = (f"SimpleNet (1x3x32x32, 4 operators: conv2d, adaptive_avg_pool2d, reshape, linear) built with "
            f"`dtorch-edge build --board {args.board}`: static, stripped aarch64 `dtorch-run` (-O2, sections + "
            f"--gc-sections, LTO, -fno-exceptions -fno-rtti, no demangler). Targets: pruned <= 300 KB (aim 150 KB) "
            f"and >= 3x smaller than the full runtime.\n\n{table}\n\n" + "\n".join(_peer_sizes()) +
            "\n\nReading:\n" + "\n".join(verdicts) +
            "\n\nThe pruned binary is dominated by what every build carries, not by kernels (the four kernels are "
            "~40 KB): the loader with its FlatBuffers verifier, the executor and planner, dtorch-run's .npy and CLI "
            "code, and the C/C++ libraries (static glibc alone is ~535 KB, which is why gcc-cross binaries are "
            "larger; zig links musl and libc++). So the full runtime is only 1.5-2x the pruned one: reaching 3x "
            "needs a smaller fixed core, not more pruning.")
    print(body)
    if args.write:
        write_section("Board runtime size (issue 4)", body, command=".venv/bin/python benchmarks/bench_size.py --write")


if __name__ == "__main__":
    main()
