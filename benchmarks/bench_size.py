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


def _parts(board: str, model: Path, pruned: int, full: int, work: Path) -> list[str]:
    """What the zig speed-profile binary is made of, measured by linking the pruned build's own objects (same
    flags, LTO, stripped) into smaller programs: the C library alone (size_parts/libc_floor.cc), the core with the
    smallest useful main (size_parts/min_main.cc) without and with the model's kernels. From these, the largest
    fixed part (everything but kernels) that a 3x ratio allows."""
    import subprocess

    from dtorch.edge.build_plan import CORE_FLAGS, make_plan
    from dtorch.edge.oplist import OpList

    root = HERE.parent
    plan = make_plan(board, toolchain="zig", ops=OpList.from_model(model), root=str(root))
    cxx = list(plan.found.cxx)

    def compile_(src: Path) -> Path:
        out = work / (src.stem + ".o")
        subprocess.run([*cxx, *plan.compile_flags, *CORE_FLAGS, "-DNDEBUG", "-I", str(root / "runtime" / "include"),
                        "-I", str(root / "runtime"), "-c", str(src), "-o", str(out)], check=True, cwd=root,
                       capture_output=True, text=True, timeout=600)
        return out

    def link(name: str, objs: list[Path]) -> int:
        out = work / name
        subprocess.run([*cxx, *plan.link_flags, *map(str, objs), *plan.flags.libs, "-o", str(out)], check=True,
                       cwd=root, capture_output=True, text=True, timeout=600)
        return out.stat().st_size

    # this build's own objects (the objects folder is shared by every build of these flags: other models' too)
    objs = {s.rel: root / plan.object_path(s) for s in plan.sources}
    core = sorted(o for rel, o in objs.items() if rel.startswith("core/"))
    support = [objs[f"apps/{n}.cc"] for n in ("heap_meter", "no_demangle", "no_exceptions")]
    kernels = sorted(o for rel, o in objs.items() if rel.startswith("kernels/"))
    main_o = compile_(HERE / "size_parts" / "min_main.cc")
    floor = link("libc-floor", [compile_(HERE / "size_parts" / "libc_floor.cc")])
    bare = link("core-min-main", core + support + [main_o])
    with_k = link("core-min-main-kernels", core + support + kernels + [main_o])
    k_model = with_k - bare
    fixed = pruned - k_model                    # all but the model's kernels
    k_all = full - fixed                        # all 54 kernels (the full runtime minus the same fixed part)
    allowed = (k_all - 3 * k_model) / 2         # fixed + k_all >= 3 (fixed + k_model)
    n_kernels = len(list((root / "runtime" / "kernels" / "portable").glob("*.cc")))
    kb = lambda n: f"{n / 1000:.1f} KB"  # noqa: E731
    return [
        f"- the C library alone (musl with threads, clock, malloc, file I/O; no C++ library, no stdio): {kb(floor)}",
        f"- the core (loader and verifier, planner, executor, thread pool, formatter) with the smallest main, no "
        f"kernels: {kb(bare)}; with the model's kernels: {kb(with_k)}, so the kernels are {kb(k_model)}",
        f"- dtorch-run's CLI (options, .npy files, self-test, bench and profile, JSON report, manifest check) on top: "
        f"{kb(pruned - with_k)}",
        f"- everything but the model's kernels: {kb(fixed)}; all {n_kernels} kernels: {kb(k_all)}. For 3x the fixed "
        f"part could be at most (all kernels - 3 x the model's) / 2 = {kb(allowed)}: {allowed / floor:.1f}x the bare C "
        f"library, {'less' if allowed < bare else 'more'} than the core with a 20-line main ({kb(bare)}) "
        f"{'even before' if allowed < bare else 'before'} the CLI",
    ]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--board", default="rk3588")
    p.add_argument("--write", action="store_true")
    args = p.parse_args()

    import dtorch as dt
    from dtorch.edge.build import build_bundle
    from dtorch.models import SimpleNet

    rows, verdicts, parts = [], [], []
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
            if family == "zig" and profile is None and r.full_bytes:
                parts = _parts(args.board, model, r.binary_bytes, r.full_bytes, Path(d))
                print("\n".join(parts), flush=True)
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
            "\n\nWhy 3x is out of reach: what every build carries is larger than the kernels a small model needs. "
            "The zig speed-profile binary, taken apart by linking its own objects (same flags, LTO, stripped) into "
            "smaller programs:\n" + "\n".join(parts) +
            "\n\nSo 3x needs a different runtime, not trimming: no std::string or std::vector in the API and core "
            "(Status, IOInfo and ModelInfo carry strings today), no stdio and a much smaller CLI. gcc-cross links "
            "static glibc (~535 KB alone) and libstdc++'s unwinder.")
    print(body)
    if args.write:
        write_section("Board runtime size (issue 4)", body, command=".venv/bin/python benchmarks/bench_size.py --write")


if __name__ == "__main__":
    main()
