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
        for family, profile in (("zig", None), ("zig", "size"), ("gcc-cross", None)):
            r = build_bundle(args.board, [model], toolchain=family, out=Path(d) / "dist", log=lambda _m: None,
                             progress=False, profile=profile)
            kernels = ", ".join(f"{Path(k).stem} {v / 1024:.1f}" for k, v in
                                sorted(r.kernel_bytes.items(), key=lambda kv: -kv[1]))
            ratio = r.full_bytes / r.binary_bytes
            prof = r.manifest["profile"]
            rows.append(f"| {family} | {prof} | {r.manifest['toolchain']['version']} | {r.binary_bytes / 1024:.0f} | "
                        f"{r.full_bytes / 1024:.0f} | {ratio:.2f}x | {kernels} |")
            verdicts.append(f"- {family}, profile {prof}: {r.binary_bytes / 1000:.0f} KB pruned "
                            f"({'met' if r.binary_bytes <= 300_000 else 'NOT met'} <= 300 KB; "
                            f"{'met' if r.binary_bytes <= 150_000 else 'not reached'} the 150 KB aim), "
                            f"{ratio:.2f}x smaller than the full runtime ({'met' if ratio >= 3 else 'NOT met'} >= 3x)")
            print(rows[-1], flush=True)
    table = ("| toolchain | profile | version | pruned dtorch-run KiB | full runtime KiB | full / pruned | kernel KiB "
             "(non-LTO objects) |\n|---|---|---|---:|---:|---:|---|\n" + "\n".join(rows))
    body = (f"SimpleNet (1x3x32x32, 4 operators: conv2d, adaptive_avg_pool2d, reshape, linear) built with "
            f"`dtorch-edge build --board {args.board}` (and `--profile size`): static, stripped aarch64 `dtorch-run`; "
            f"kernels -O2 (the board's speed profile) or -Os (size), the core (loader, verifier, planner, executor, "
            f"CLI) -Os on both; sections + --gc-sections, LTO, -fno-exceptions -fno-rtti, no unwind tables. With zig "
            f"(musl + libc++) the binary also links no C++ unwinder or exception runtime (runtime/apps/"
            f"no_exceptions.cc), no printf (runtime/core/format.cc) and no unwind tables of the libraries "
            f"(toolchains/zig_no_unwind.ld). Targets: pruned <= 300 KB (aim 150 KB) and >= 3x smaller than the full "
            f"runtime.\n\n{table}\n\n" + "\n".join(_peer_sizes()) +
            "\n\nReading:\n" + "\n".join(verdicts) +
            "\n\nWhy 3x is out of reach: what every build carries is larger than the kernels a small model needs. For "
            "zig at the speed profile the four kernels are ~43 KB of the pruned binary and all 54 ~255 KB, so full / "
            "pruned = (core + 255) / (core + 43) reaches 3 only with a core of ~65 KB; today's is ~125 KB: the loader "
            "and FlatBuffers verifier (~18 KB), executor, planner, thread pool and formatter (~21 KB), dtorch-run's "
            "CLI and .npy code (~24 KB), static musl with threads and stdio (~30 KB), libc++'s string and vector code "
            "(~15 KB) and string constants (~15 KB). gcc-cross links static glibc (~535 KB alone) and libstdc++'s "
            "unwinder.")
    print(body)
    if args.write:
        write_section("Board runtime size (issue 4)", body, command=".venv/bin/python benchmarks/bench_size.py --write")


if __name__ == "__main__":
    main()
