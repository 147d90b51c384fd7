"""Microcontrollers and the Hexagon DSP (issue 18): SimpleNet-32 (tests/export/zoo.py, seed 0, a 3x32x32 input)
float32 and int8 built with `dtorch-edge build` for each Cortex-M board (a firmware ELF) and for qcs6490-cdsp (a
hexagon dtorch-run), run with `dtorch-edge emulate`. Per board: parity with the host's portable kernels, guest
instructions per inference (deterministic, emulated), the estimated latency on the real part, and for the
firmware its flash and RAM by part, the runtime's own share of the flash and the arena the model used.

    .venv/bin/python benchmarks/bench_mcu.py [--write]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from results import write_section  # noqa: E402

MCU_BOARDS = ("stm32f746-disco", "stm32f407-disco", "corstone-300")
DSP_BOARD = "qcs6490-cdsp"


def _models(out: Path) -> dict[str, Path]:
    import dtorch as dt

    spec = importlib.util.spec_from_file_location("zoo", ROOT / "tests" / "export" / "zoo.py")
    zoo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(zoo)  # type: ignore[union-attr]
    make_model, make_input = zoo.ZOO["simplenet"]
    dt.manual_seed(0)
    model = make_model().eval()
    paths = {"float32": out / "simplenet32.dtm", "int8": out / "simplenet32_int8.dtm"}
    dt.export(model, make_input(1), str(paths["float32"]), bundle_example=True)
    dt.manual_seed(1)
    q = dt.quant.quantize(model, [make_input(1).numpy() for _ in range(4)])
    dt.export(q, make_input(1), str(paths["int8"]), bundle_example=True)
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite the section of benchmarks/RESULTS.md")
    args = ap.parse_args()
    from dtorch.edge.build import BuildError, build_bundle
    from dtorch.edge.emulate import emulate

    quiet = lambda _m: None  # noqa: E731
    rows, dsp_rows, misses = [], [], []
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        models = _models(work)
        for board in MCU_BOARDS:
            for dtype, path in models.items():
                try:
                    res = build_bundle(board, [path], out=work / dtype, log=quiet, progress=False)
                except BuildError as e:
                    misses.append(f"- {board}, {dtype}: {e}")
                    continue
                rep = emulate(board, bundle=res.dist, log=quiet, progress=False)
                f, s = rep.figures, res.manifest["sizes"]
                rows.append(f"| {board} | {dtype} | {'PASS' if f['parity']['pass'] else 'FAIL'} | "
                            f"{f['instructions']['per_inference']:,} | {f['estimate']['latency_ms']:.1f} | "
                            f"{s['flash']:,} | {s['runtime_flash']:,} ({s['text']:,} code) | {s['model']:,} | "
                            f"{s['ram']:,} | {f['memory']['arena_bytes']:,} / {f['memory']['arena_used_bytes']:,} | "
                            f"{s['stack']:,} |")
                print(rows[-1], flush=True)
        for dtype, path in models.items():
            res = build_bundle(DSP_BOARD, [path], out=work / f"dsp-{dtype}", log=quiet, progress=False,
                               compare_full=False, agent=False)
            rep = emulate(DSP_BOARD, bundle=res.dist, model=res.dist / "model.dtm", runner="local", runs=1,
                          bench_runs=3, log=quiet, progress=False)
            f = rep.figures
            dsp_rows.append(f"| {DSP_BOARD} | {dtype} | {'PASS' if f['parity']['pass'] else 'FAIL'} | "
                            f"{f['instructions']['per_inference']:,} | {f['estimate']['latency_ms']:.2f} | "
                            f"{f['size']['dtorch_run_bytes']:,} |")
            print(dsp_rows[-1], flush=True)
    body = "\n".join([
        "SimpleNet-32 (3x32x32 input; int8 through `dt.quant.quantize`), `dtorch-edge build` + `dtorch-edge emulate`. "
        "Every figure is emulated (qemu-system-arm on the MPS2/MPS3 machine of the board, qemu-hexagon v67) except "
        "the latency, an estimate from the board file's clock and cycles per instruction. Parity: the firmware's bits "
        "against the host's portable kernels on the bundled test vector.",
        "",
        "| board | model | parity | instructions / inference | est. ms | flash B | runtime flash B | model B | RAM B "
        "| arena B (static / used) | stack B |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
        *(["Did not fit (the build's own message):", *misses, ""] if misses else []),
        "| DSP board | model | parity | instructions / inference | est. ms | dtorch-run B |",
        "|---|---|---|---:|---:|---:|",
        *dsp_rows,
    ])
    print(body)
    if args.write:
        write_section("Microcontrollers and the Hexagon DSP (issue 18)", body, "python benchmarks/bench_mcu.py --write")


if __name__ == "__main__":
    main()
