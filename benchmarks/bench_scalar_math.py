"""The portable kernels' transcendental functions (runtime/kernels/common/scalar_math.h) against the C libraries'
(issue 16): how often glibc's and musl's disagree (the reason for scalar_math.h), how far each is from float64, and
what a value costs.

benchmarks/native/scalar_math_bench.cc is built twice for this machine: with the host compiler (glibc's libm) and
with zig for x86_64-linux-musl (musl's libm, as the boards' static builds link it), both with the runtime's language
flags at -O2. Both run here; their outputs are compared bit for bit, and against PyTorch in float64.

Run: .venv/bin/python benchmarks/bench_scalar_math.py [--write]
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from results import write_section  # noqa: E402

SRC = HERE / "native" / "scalar_math_bench.cc"
FUNCS = ("exp", "expm1", "log", "log1p", "tanh", "erf", "sin", "cos")
TORCH = {"exp": torch.exp, "expm1": torch.expm1, "log": torch.log, "log1p": torch.log1p, "tanh": torch.tanh,
         "erf": torch.erf, "sin": torch.sin, "cos": torch.cos}


def _inputs() -> np.ndarray:
    rng = np.random.default_rng(7)
    dense = [np.linspace(-12, 12, 400001, dtype=np.float32), np.linspace(-105, 90, 200001, dtype=np.float32),
             np.linspace(-1, 4, 200001, dtype=np.float32)]
    wide = (np.exp(rng.uniform(-100, 88, 200000)) * rng.choice([-1, 1], 200000)).astype(np.float32)
    raw = rng.integers(0, 2 ** 32, 1_000_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.concatenate([*dense, wide, raw])


def _build(out: Path, cxx: list[str]) -> Path:
    from dtorch.edge.build_plan import LANGUAGE_FLAGS

    argv = [*cxx, *LANGUAGE_FLAGS, "-O2", f"-I{ROOT / 'runtime'}", str(SRC), "-o", str(out)]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"building {out.name} failed: {' '.join(argv)}\n{r.stderr[-2000:]}")
    return out


def float32_ulps(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|got - ref| in units of the float32 spacing at ref (ref in float64); 0 where both are NaN or equal
    (tests/runtime/test_scalar_math.py uses it too)."""
    with np.errstate(all="ignore"):
        ref32 = ref.astype(np.float32)
        finite = np.isfinite(ref32)
        spacing = np.spacing(np.abs(np.where(finite, ref32, np.float32(1)))).astype(np.float64)
        d = np.abs(got.astype(np.float64) - ref) / np.maximum(spacing, 2.0 ** -149)
        d = np.where(finite, d, np.where(got == ref32, 0.0, np.inf))
        same = (np.isnan(got) & np.isnan(ref)) | (got.astype(np.float64) == ref)
    return np.where(same, 0.0, d)


def _differ(a: np.ndarray, b: np.ndarray) -> int:
    both_nan = np.isnan(a) & np.isnan(b)
    return int(((a.view(np.uint32) != b.view(np.uint32)) & ~both_nan).sum())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write the section of benchmarks/RESULTS.md")
    args = ap.parse_args()
    if platform.machine() != "x86_64":
        raise SystemExit("this benchmark builds an x86_64-linux-musl binary to run here: run it on an x86-64 machine")
    x = _inputs()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        glibc = _build(tmp / "bench-glibc", ["g++"])
        musl = _build(tmp / "bench-musl", [sys.executable, "-m", "ziglang", "c++", "-target", "x86_64-linux-musl"])
        x.tofile(tmp / "in.bin")
        outs = {}
        for name, exe in (("glibc", glibc), ("musl", musl)):
            subprocess.run([str(exe), "values", str(tmp / "in.bin"), str(tmp / f"{name}.bin")], check=True)
            outs[name] = np.fromfile(tmp / f"{name}.bin", dtype=np.float32).reshape(2, len(FUNCS), x.size)
        times = {}
        for line in subprocess.run([str(glibc), "time"], check=True, capture_output=True, text=True).stdout.splitlines():
            fn, libm_ns, own_ns = line.split()
            times[fn] = (float(libm_ns), float(own_ns))
    finite = np.isfinite(x)
    rows = ["| function | glibc vs musl libm: values that differ | scalar_math.h glibc vs musl build | glibc libm max ulp | "
            "musl libm max ulp | scalar_math.h max ulp | glibc libm ns/value | scalar_math.h ns/value |",
            "|---|---|---|---|---|---|---|---|"]
    for i, fn in enumerate(FUNCS):
        with np.errstate(invalid="ignore"):
            ref = TORCH[fn](torch.from_numpy(x.astype(np.float64))).numpy()
        g_libm, m_libm = outs["glibc"][0, i], outs["musl"][0, i]
        g_own, m_own = outs["glibc"][1, i], outs["musl"][1, i]
        n_libm = _differ(g_libm[finite], m_libm[finite])
        rows.append(f"| {fn} | {n_libm:,} of {int(finite.sum()):,} ({100 * n_libm / finite.sum():.2f}%) | "
                    f"{_differ(g_own, m_own):,} | {float32_ulps(g_libm, ref).max():.2f} | "
                    f"{float32_ulps(m_libm, ref).max():.2f} | {float32_ulps(g_own, ref).max():.2f} | "
                    f"{times[fn][0]:.2f} | {times[fn][1]:.2f} |")
    body = "\n".join([
        f"{x.size:,} float32 inputs (dense grids over -105..90, -12..12 and -1..4, 200,000 magnitudes up to 1e38 and "
        f"1,000,000 random bit patterns; NaN inputs left out of the first column, where the libraries' NaN payloads "
        f"differ), through benchmarks/native/scalar_math_bench.cc built with g++ (glibc "
        f"{platform.libc_ver()[1] or '?'}) and with zig for x86_64-linux-musl, both run on this machine "
        f"({platform.processor() or platform.machine()}). Ulps against PyTorch in float64; time per value through a "
        f"function pointer (the kernels inline scalar_math.h's), best of 30 passes over 65,536 values.",
        "", *rows, "",
        "The portable kernels (and the bit-exact x86 set's fused activations) call scalar_math.h's, so the exact policy "
        "gives the same bits on the host and on every board: tests/runtime/test_scalar_math.py builds the functions "
        "with each board's toolchain and compares them under QEMU."])
    print(body)
    if args.write:
        write_section("Portable transcendental functions (issue 16)", body,
                      ".venv/bin/python benchmarks/bench_scalar_math.py --write")


if __name__ == "__main__":
    main()
