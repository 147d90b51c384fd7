"""`dtorch-edge`: the command line of the edge SDK."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import click

from .._version import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dtorch-edge")
def main() -> None:
    """Train, export, build and run DTorch models on edge boards."""


@main.command()
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("runs/demo"), show_default=True,
              help="Folder for the image-folder data and the checkpoint.")
@click.option("--epochs", type=click.IntRange(min=1), default=8, show_default=True)
@click.option("--batch-size", type=click.IntRange(min=1), default=64, show_default=True)
@click.option("--lr", type=click.FloatRange(min=0, min_open=True), default=3e-3, show_default=True)
@click.option("--workers", type=click.IntRange(min=0), default=2, show_default=True,
              help="DataLoader worker processes.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--amp", type=click.Choice(["float16", "bfloat16"]), default=None,
              help="Train under dt.autocast with this dtype.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the figures as JSON to this file ('-' for stdout).")
@click.option("--quiet", is_flag=True, help="No progress bars.")
@click.option("--board", default="rk3588", show_default=True,
              help="Build a bundle for this board at the end (dtorch-edge build) and run it emulated (dtorch-edge "
                   "emulate); 'none' to skip.")
@click.option("--onnx", "onnx_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Skip training: run the deploy half (import, build, emulate) on this ONNX model.")
def demo(out: Path, epochs: int, batch_size: int, lr: float, workers: int, seed: int, amp: str | None,
         json_out: Path | None, quiet: bool, board: str, onnx_file: Path | None) -> None:
    """Train SimpleNet on the bundled 8x8 digits (as 32x32 RGB images), save it, export it to .dtm, check the C++
    runtime against eager mode, build a bundle for --board and run it on the emulated board. With --onnx FILE: the
    same deploy half for a model trained anywhere."""
    if onnx_file is not None:
        _demo_onnx(onnx_file, out, board, quiet, json_out)
        return
    from .demo import DemoConfig, run_demo

    cfg = DemoConfig(out=out, epochs=epochs, batch_size=batch_size, lr=lr, workers=workers, seed=seed, amp=amp,
                     progress=not quiet)
    click.echo(f"dtorch {__version__}: training SimpleNet on the digits set ({out / 'data'})")
    res = run_demo(cfg, log=click.echo)
    click.echo(f"test accuracy: {res.test_accuracy:.2%} on {res.test_images} held-out images "
               f"({res.train_images} training images, {res.epochs} epochs, {res.seconds:.1f} s)")
    click.echo(f"checkpoint: {res.checkpoint}")
    ex = res.export
    if ex is not None:
        click.echo(f"exported: {ex.path} ({ex.nodes_traced} nodes traced -> {ex.nodes_after_passes} after BatchNorm "
                   f"folding and activation fusion; ops {', '.join(ex.op_list)}; {ex.parameter_bytes / 1024:.1f} KiB "
                   f"of weights; arena {ex.arena_bytes / 1024:.1f} KiB vs {ex.sum_of_intermediates / 1024:.1f} KiB "
                   f"of intermediates)")
        click.echo(f"runtime parity (C++ InferenceSession vs eager, {res.test_images} test images): max abs error "
                   f"{ex.max_abs_error:.2e}, predictions agree {ex.predictions_agree:.2%}, runtime accuracy "
                   f"{ex.runtime_accuracy:.2%}")
    if ex is not None and board != "none":
        from .build import BuildError, build_bundle

        try:
            b = build_bundle(board, [ex.path], out=out / "dist", log=click.echo, progress=not quiet)
        except BuildError as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(1)
        full = f", full runtime {b.full_bytes / 1024:.0f} KiB" if b.full_bytes else ""
        model_kib = b.manifest["files"]["model.dtm"]["bytes"] / 1024
        click.echo(f"bundle for {b.board} ({b.toolchain}): {b.dist}/ - dtorch-run {b.binary_bytes / 1024:.0f} KiB "
                   f"pruned to {len(b.manifest['ops'])} ops{full}; model {model_kib:.0f} KiB")
        import numpy as np

        from .emulate import EmulateError
        from .emulate import emulate as run_emulation

        eager_out = np.load(ex.sample_eager)
        try:
            rep = run_emulation(board, bundle=b.dist, data=[ex.sample_input], eager=lambda _inputs: [eager_out],
                                runs=3, bench_runs=10, log=click.echo, progress=not quiet, runner="local")
        except EmulateError as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(1)
        for line in rep.lines():
            click.echo(line)
        res.emulated = rep.to_json()
        if not rep.parity_pass:
            click.echo(f"error: the emulated {board} does not match the host", err=True)
            sys.exit(1)
    if json_out is not None:
        if str(json_out) == "-":
            click.echo(res.to_json())
        else:
            json_out.write_text(res.to_json() + "\n")


def _demo_onnx(src: Path, out: Path, board: str, quiet: bool, json_out: Path | None) -> None:
    """dtorch-edge demo --onnx: import the file, build a bundle for `board`, run it emulated against the host."""
    import json

    import numpy as np

    from .. import runtime as rt
    from ..onnx import OnnxImportError, import_model
    from .build import BuildError, build_bundle
    from .emulate import EmulateError
    from .emulate import emulate as run_emulation

    out.mkdir(parents=True, exist_ok=True)
    dtm = out / f"{src.stem}.dtm"
    try:
        report = import_model(src, dtm, dynamic_axes=[])
    except OnnxImportError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    click.echo(report.summary())
    figures: dict[str, object] = {"import": {"onnx_nodes": report.onnx_nodes, "nodes": report.nodes_after_passes,
                                             "parity": report.parity, "arena_bytes": report.arena_size}}
    if board != "none":
        sess = rt.InferenceSession(str(dtm))
        rng = np.random.default_rng(0)
        inputs = []
        specs = sess.get_inputs()
        for spec in specs:
            shape = [int(d) for d in spec.shape]
            dt = np.dtype(spec.dtype)
            # emulate takes one .npy per run for a one-input model; others run on zeros (its default)
            rand = dt.kind == "f" and len(specs) == 1
            inputs.append(rng.standard_normal(shape).astype(dt) if rand else np.zeros(shape, dt))
        data = []
        if len(specs) == 1:
            np.save(out / "input.npy", inputs[0])
            data = [out / "input.npy"]
        host = sess.run(None, {s.name: x for s, x in zip(specs, inputs)})
        try:
            b = build_bundle(board, [dtm], out=out / "dist", log=click.echo, progress=not quiet)
            rep = run_emulation(board, bundle=b.dist, data=data,
                                eager=lambda _inputs: host, runs=3, bench_runs=10, log=click.echo, progress=not quiet,
                                runner="local")
        except (BuildError, EmulateError) as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(1)
        for line in rep.lines():
            click.echo(line)
        figures["emulated"] = rep.to_json()
        if not rep.parity_pass:
            click.echo(f"error: the emulated {board} does not match the host", err=True)
            sys.exit(1)
    if json_out is not None:
        text = json.dumps(figures, indent=2, default=str)
        click.echo(text) if str(json_out) == "-" else json_out.write_text(text + "\n")


def _fmt_tensor(f: object, i: int) -> str:
    if i < 0:
        return "-"
    t = f.tensors[i]  # type: ignore[attr-defined]
    dims = "x".join(str(d) for d in t.dims) or "scalar"
    return f"{t.name}[{dims}]:{t.dtype}"


def _runtime_check(model: Path) -> None:
    """Load the file in the host runtime too (its loader infers every shape from the file's example inputs and
    holds them against the declared ones); exit 1 with its one line when it refuses the file. Files that need an
    operator this build lacks are still shown."""
    try:
        from .. import runtime as rt
    except ImportError:  # pragma: no cover - a build without the extension: the Python checks stand alone
        return
    try:
        rt.InferenceSession(str(model))
    except rt.UnsupportedError:
        return
    except (rt.InvalidModelError, rt.VersionMismatchError, ValueError, OSError) as e:
        click.echo(f"error: {model}: {e}", err=True)
        sys.exit(1)


@main.command()
@click.argument("model", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def inspect(model: Path, as_json: bool) -> None:
    """Print the graph of a .dtm file: nodes, shapes, fused ops, node counts, op list and memory plan."""
    import json

    from .._export.errors import DtmFormatError
    from .._export.reader import read_dtm

    try:
        f = read_dtm(model)
    except DtmFormatError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    _runtime_check(model)
    m = f.metadata
    plan = f.plan
    if as_json:
        click.echo(json.dumps(f.to_json(), indent=2))
        return
    click.echo(f"{model}: {f.producer}, format {f.format_version} (needs runtime >= {f.min_runtime_version}), "
               f"opset {f.opset}")
    click.echo("inputs:  " + ", ".join(_fmt_tensor(f, i) for i in f.inputs))
    click.echo("outputs: " + ", ".join(_fmt_tensor(f, i) for i in f.outputs))
    click.echo(f"nodes: {m.get('nodes_traced', '?')} traced -> {m.get('nodes_after_passes', len(f.nodes))} after passes")
    for k, v in m.items():
        if k.startswith("pass."):
            click.echo(f"  {k[5:]:<24} {v}")
    for k, n in enumerate(f.nodes):
        act = n.attrs.get("activation")
        fused = f" +{act}" if act and act != "none" else ""
        ins = ", ".join(_fmt_tensor(f, i) for i in n.inputs)
        outs = ", ".join(_fmt_tensor(f, i) for i in n.outputs)
        click.echo(f"  [{k:>3}] {n.op}{fused:<12} ({ins}) -> {outs}   @ {n.name or '<top>'}")
    click.echo("ops: " + ", ".join(f.op_list))
    pbytes = int(m.get("parameter_bytes", "0"))
    click.echo(f"parameters: {pbytes} bytes ({pbytes / 1024:.1f} KiB)")
    arena, total = int(plan.get("arena_size", 0)), int(plan.get("sum_of_intermediates", 0))
    ratio = f" ({arena / total:.0%})" if total else ""
    click.echo(f"memory plan ({plan.get('algorithm', '?')}): arena {arena} bytes vs {total} bytes for all "
               f"intermediates{ratio}")
    if "sum_of_intermediates_before_passes" in m:
        click.echo(f"  (before the passes, the intermediates summed to {m['sum_of_intermediates_before_passes']} bytes)")
    if f.test_vector is not None:
        click.echo("bundled test vector: yes")


def _fmt_ram(mb: int) -> str:
    if mb >= 1024 and mb % 1024 == 0:
        return f"{mb // 1024} GiB"
    if mb >= 1024:
        return f"{mb / 1024:.1f} GiB"
    return f"{mb} MiB"


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def boards(as_json: bool) -> None:
    """List the boards: architecture, CPU, RAM, which of their toolchains are installed, and the emulator."""
    import json

    from .boards import BoardError, load_boards
    from .resources import ResourceError
    from .toolchains import ToolchainError, get_toolchain

    try:
        all_boards = load_boards()
    except (BoardError, ResourceError) as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    cache: dict[tuple[str, str], bool | None] = {}

    def found(family: str, arch: str) -> bool | None:  # None: the family is unknown or cannot target arch
        if (family, arch) not in cache:
            try:
                tc = get_toolchain(family)
                cache[family, arch] = tc.find(arch).found if arch in tc.arches else None
            except ToolchainError:
                cache[family, arch] = None
        return cache[family, arch]

    if as_json:
        out = []
        for b in all_boards:
            d = b.to_json()
            d["toolchains_found"] = {f: found(f, b.arch) for f in b.toolchains}
            out.append(d)
        click.echo(json.dumps(out, indent=2))
        return
    state = {True: "found", False: "missing", None: "n/a"}
    rows = [["NAME", "ARCH", "CPU", "RAM", "TOOLCHAINS", "EMULATOR"]]
    for b in all_boards:
        tcs = " ".join(f"{f}:{state[found(f, b.arch)]}" for f in b.toolchains)
        ram = _fmt_ram(b.ram_mb) if b.mcu is None else f"{b.mcu.ram_kb} KiB (flash {b.mcu.flash_kb} KiB)"
        rows.append([b.name, b.arch, b.cpu_summary(), ram, tcs, b.emulator.summary()])
    for line in _table(rows):
        click.echo(line)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.option("--strict", is_flag=True, help="Exit with status 1 when anything is missing.")
def doctor(as_json: bool, strict: bool) -> None:
    """Check every toolchain family for every architecture, QEMU and SCons; print what is missing and the exact
    command that installs it."""
    import json

    from .doctor import run_doctor

    report = run_doctor()
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        click.echo("toolchains:")
        rows = []
        for f in report.toolchains:
            if f.found:
                detail = f.version or ""
                if f.reason:
                    detail += f" ({f.reason})"
                rows.append([f.family, f.arch, "found", detail])
            else:
                rows.append([f.family, f.arch, "MISSING", f"{f.reason}; install: {f.install}"])
        for line in _table(rows) if rows else []:
            click.echo("  " + line)
        click.echo("tools:")
        rows = []
        for t in report.tools:
            if t.found:
                rows.append([t.name, "found", " ".join(x for x in (t.version or "", f"({t.path})" if t.path else "")
                                                       if x)])
            else:
                rows.append([t.name, "MISSING", f"{t.purpose}; install: {t.install}"])
        for line in _table(rows):
            click.echo("  " + line)
        for e in report.errors:
            click.echo(f"error: {e}")
        n = report.missing
        click.echo("everything is installed" if n == 0 else f"{n} missing (the install commands are above)")
    if strict and report.missing:
        sys.exit(1)


# --- dtorch-edge ops: op lists for pruned builds (logic in ops_record.py) ------------------------------------------

@main.command()
@click.option("--board", required=True, help="A board name (dtorch-edge boards).")
@click.option("--model", "models", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="A .dtm model, or an .onnx one (imported to OUT/imported/ first); repeat for several (the runtime "
                   "gets the union of their operators).")
@click.option("--ops", "ops_spec", default=None,
              help="An ops.yaml (dtorch-edge ops record) or 'all' instead of the models' own op lists.")
@click.option("--toolchain", default=None, help="A toolchain family (default: the board's first installed one).")
@click.option("--profile", type=click.Choice(["speed", "size"]), default=None,
              help="Kernels at -O2 (speed) or -Os (size) instead of the board's profile; the core is -Os either way.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("dist"), show_default=True)
@click.option("--jobs", type=click.IntRange(min=1), default=None, help="Parallel compile jobs (default: CPUs).")
@click.option("--data", "data", multiple=True, type=click.Path(path_type=Path),
              help="Sample inputs (.npy, or a folder of them) the host check runs the pruned runtime on.")
@click.option("--no-verify", is_flag=True, help="Skip running the models with the host build of the op list.")
@click.option("--no-full", is_flag=True, help="Skip building the full runtime for the size comparison.")
@click.option("--sign", "sign", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Ed25519 signing key file: bundle.txt gets a signature line, which an agent started with "
                   "--pubkey requires (needs PyNaCl: pip install pynacl).")
@click.option("--no-agent", is_flag=True, help="Leave dtorch-agent out (a bundle for emulation only; flash needs it).")
@click.option("--kernels", type=click.Choice(["fast", "exact"]), default="fast", show_default=True,
              help="fast: the SIMD kernel sets the board's ISA list calls for (beside portable); exact: only kernels "
                   "with the portable bits (a board's smallest binary, bit-identical with the host).")
@click.option("--json", "json_out", is_flag=True, help="Print the result as JSON.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
def build(board: str, models: tuple[Path, ...], ops_spec: str | None, toolchain: str | None, profile: str | None,
          out: Path, jobs: int | None, data: tuple[Path, ...], no_verify: bool, no_full: bool, sign: Path | None,
          no_agent: bool, kernels: str, json_out: bool, quiet: bool) -> None:
    """Build a bundle for a board: a static dtorch-run holding only the model's kernels, the model, a manifest and a
    size report, in OUT/<board>/."""
    import json

    from .build import BuildError, build_bundle

    log = (lambda _m: None) if json_out else click.echo
    try:
        res = build_bundle(board, list(models), ops=ops_spec, toolchain=toolchain, out=out, jobs=jobs,
                           verify=not no_verify, compare_full=not no_full, log=log, progress=not quiet and not json_out,
                           data=list(data), profile=profile, sign=sign, agent=not no_agent, kernels=kernels)
    except BuildError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    if json_out:
        click.echo(json.dumps(res.to_json(), indent=2))
        return
    if res.manifest.get("kind") == "firmware":
        sz = res.manifest["sizes"]
        click.echo(f"firmware: {res.dist}/firmware.elf, flash {sz['flash'] / 1024:.1f} KiB (runtime "
                   f"{sz['runtime_flash'] / 1024:.1f} KiB), RAM {sz['ram'] / 1024:.1f} KiB; manifest.json, size_report.md")
        return
    full = f" (full runtime {res.full_bytes / 1024:.0f} KiB: {res.full_bytes / res.binary_bytes:.1f}x larger)" \
        if res.full_bytes else ""
    click.echo(f"bundle: {res.dist}/ dtorch-run {res.binary_bytes / 1024:.0f} KiB{full}; manifest.json, "
               f"size_report.md")


def _shape_option(items: tuple[str, ...]) -> dict[str, list[int]]:
    shapes: dict[str, list[int]] = {}
    for item in items:
        name, sep, dims = item.rpartition("=")
        try:
            sizes = [int(d) for d in dims.replace("x", ",").split(",") if d.strip()]
        except ValueError:
            sizes = []
        if not sep or not name or not sizes:
            raise click.BadParameter(f"{item!r}: expected NAME=SIZES such as input=1,3,224,224", param_hint="--input-shape")
        shapes[name] = sizes
    return shapes


@main.command("import")
@click.argument("model", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The .dtm to write (default: MODEL with the suffix .dtm).")
@click.option("--dynamic", "dynamic", multiple=True,
              help="Keep only this named dimension dynamic (repeatable); default: every dynamic dimension of the "
                   "model's inputs stays dynamic.")
@click.option("--static", is_flag=True, help="Fix every dimension (to its --input-shape size, or 1).")
@click.option("--input-shape", "input_shape", multiple=True,
              help="NAME=SIZES, e.g. input=1,3,224,224: the example sizes of an input (and the shape of an input "
                   "the model leaves without one). Repeatable.")
@click.option("--no-parity", is_flag=True, help="Skip the comparison with ONNX Runtime.")
@click.option("--json", "as_json", is_flag=True, help="Print the import report as JSON.")
def import_cmd(model: Path, out: Path | None, dynamic: tuple[str, ...], static: bool, input_shape: tuple[str, ...],
               no_parity: bool, as_json: bool) -> None:
    """Import an ONNX model (opsets 11 to 21) as a .dtm: shape subgraphs folded, the same passes and memory plan as
    dt.export, then a parity check against ONNX Runtime when it is installed."""
    import dataclasses
    import json

    from ..onnx import OnnxImportError, import_model

    if static and dynamic:
        raise click.UsageError("--static and --dynamic exclude each other")
    dst = out if out is not None else model.with_suffix(".dtm")
    axes = [] if static else (list(dynamic) if dynamic else None)
    try:
        report = import_model(model, dst, dynamic_axes=axes, input_shapes=_shape_option(input_shape),
                              check_parity=not no_parity)
    except OnnxImportError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    if as_json:
        d = dataclasses.asdict(report)
        d["path"], d["source"] = str(report.path), str(report.source)
        click.echo(json.dumps(d, indent=2))
        return
    click.echo(report.summary())
    click.echo(f"wrote {dst}")


def _sample_batches(model: Path, data: tuple[Path, ...], what: str) -> list[list[object]]:
    """The batches of --calib / --input files for MODEL's inputs (each a .npy batch or a .npz of them)."""
    from .._export.errors import DtmFormatError
    from .._export.reader import read_dtm
    from .ops_record import OpsError, find_data_files, load_batch

    try:
        f = read_dtm(model)
        names = [f.tensors[i].name for i in f.inputs]
        return [[b[n] for n in names] for b in (load_batch(p, names) for p in find_data_files(data))]
    except (OpsError, DtmFormatError) as e:
        click.echo(f"error: {what}: {e}", err=True)
        sys.exit(1)


@main.command("quantize")
@click.argument("model", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--calib", "calib", required=True, multiple=True, type=click.Path(path_type=Path),
              help="Calibration inputs: a .npy file (one batch of the model's single input), a .npz file (one array "
                   "per input, keyed by input name) or a folder of them. Repeatable.")
@click.option("-o", "--out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The int8 .dtm to write (atomically).")
@click.option("--method", type=click.Choice(["minmax", "percentile", "mse"]), default="minmax", show_default=True,
              help="How each activation's int8 range is chosen.")
@click.option("--per-tensor", is_flag=True, help="One weight scale per layer instead of one per output channel.")
@click.option("--num-batches", type=click.IntRange(min=1), default=32, show_default=True,
              help="Calibration batches used (files, in name order).")
@click.option("--fallback-threshold", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Keep in float the layers whose int8 output's relative RMS error exceeds this.")
@click.option("--json", "as_json", is_flag=True, help="Print the layers as JSON.")
def quantize_cmd(model: Path, calib: tuple[Path, ...], out: Path, method: str, per_tensor: bool, num_batches: int,
                 fallback_threshold: float | None, as_json: bool) -> None:
    """Quantize a float .dtm (from dt.export or `dtorch-edge import`) to int8 with calibration inputs: conv2d and
    linear run int8 kernels, the rest stays float32; the layers, their scales and errors are listed."""
    import json

    import dtorch as dt

    from .._export.errors import ExportError
    from ..quant import QuantizationError

    batches = _sample_batches(model, calib, "--calib")
    try:
        qmodel = dt.quant.quantize(model, batches, method=method, per_channel=not per_tensor, num_batches=num_batches,
                                   fallback_threshold=fallback_threshold)
        dt.export(qmodel, tuple(dt.tensor(a) for a in batches[0]), out)
    except (QuantizationError, ExportError) as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    if as_json:
        click.echo(json.dumps({"path": str(out), "method": method, "calibration_batches": qmodel.calibration_batches,
                               "layers": [vars(layer) for layer in qmodel.layers]}, indent=2))
        return
    rows = [["layer", "op", "int8", "x scale / zp", "y scale / zp", "rel err"]]
    for layer in qmodel.layers:
        rows.append([layer.name, layer.op, "yes" if layer.quantized else f"no: {layer.reason}",
                     f"{layer.x_scale:.4g} / {layer.x_zero_point}" if layer.quantized else "-",
                     f"{layer.y_scale:.4g} / {layer.y_zero_point}" if layer.quantized else "-",
                     "-" if layer.error is None else f"{layer.error:.4f}"])
    for line in _table(rows):
        click.echo(line)
    n = sum(1 for layer in qmodel.layers if layer.quantized)
    click.echo(f"wrote {out}: {n} of {len(qmodel.layers)} layers int8 ({method}, {qmodel.calibration_batches} "
               f"calibration batches)")


@main.command("compare")
@click.argument("float_model", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("int8_model", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--input", "inputs", required=True, multiple=True, type=click.Path(path_type=Path),
              help="Inputs: a .npy file, a .npz file or a folder of them. Repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def compare_cmd(float_model: Path, int8_model: Path, inputs: tuple[Path, ...], as_json: bool) -> None:
    """Compare an int8 .dtm with the float .dtm it was quantized from: top-1 agreement, output error and each
    layer's error, worst layer first."""
    import json

    import dtorch as dt

    from .._export.errors import DtmFormatError
    from ..quant import QuantizationError

    batches = _sample_batches(float_model, inputs, "--input")
    try:
        report = dt.quant.compare(float_model, int8_model, batches)
    except (QuantizationError, DtmFormatError) as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
        return
    click.echo(report.table())


@main.group("ops")
def ops_group() -> None:
    """Operators: record what a model executes, list what models need (op lists for pruned builds), check which
    backend takes each node."""


@ops_group.command("record")
@click.option("--model", "model", required=True, type=click.Path(path_type=Path), help="The .dtm model to run.")
@click.option("--data", "data", required=True, multiple=True, type=click.Path(path_type=Path),
              help="Sample inputs: a .npy file (one batch of the model's single input), a .npz file (one array per "
                   "input, keyed by input name) or a folder of them. Repeatable.")
@click.option("--out", type=click.Path(path_type=Path), default=Path("ops.yaml"), show_default=True,
              help="Where to write the op list (written atomically).")
@click.option("--json", "as_json", is_flag=True, help="Print the recorded list as JSON.")
def ops_record(model: Path, data: tuple[Path, ...], out: Path, as_json: bool) -> None:
    """Run MODEL with the portable kernels on sample inputs and write the operators (and dtypes) it executed as
    ops.yaml, the op list of `dtorch-edge build --ops ops.yaml`."""
    import json

    from .ops_record import OpsError, record_to_file

    progress = sys.stderr.isatty() and not as_json

    def on_file(i: int, n: int, f: Path) -> None:
        if progress:
            click.echo(f"\rrunning {i + 1}/{n}: {f}\033[K", nl=False, err=True)

    try:
        res = record_to_file(model, data, out, on_file=on_file)
    except OpsError as e:
        if progress:
            click.echo("", err=True)
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    if progress:
        click.echo("\r\033[K", nl=False, err=True)
    if as_json:
        click.echo(json.dumps(res.to_json(), indent=2))
        return
    entries = res.ops.entries()
    click.echo(f"{model}: {len(res.ops.operators())} operators ({len(entries)} op:dtype entries) executed on "
               f"{len(res.files)} file{'s' if len(res.files) != 1 else ''}:")
    for e in entries:
        click.echo(f"  {e}")
    shown = ", ".join(str(f) for f in res.files[:10])
    click.echo(f"files run: {shown}" + (f" and {len(res.files) - 10} more" if len(res.files) > 10 else ""))
    if not res.matches_model:
        extra = res.ops.missing_from(res.model_ops)
        unused = res.model_ops.missing_from(res.ops)
        click.echo("note: differs from the model's own op list" + (f"; executed but not listed: {', '.join(extra)}"
                                                                    if extra else "")
                   + (f"; listed but not executed: {', '.join(unused)}" if unused else ""))
    click.echo(f"wrote {res.out} (op-set hash {res.ops.sha256()[:16]})")


@ops_group.command("list")
@click.option("--model", "models", multiple=True, type=click.Path(path_type=Path),
              help="A .dtm model whose op list to include. Repeatable.")
@click.option("--ops", "ops_file", default=None, help="An ops.yaml to include, or 'all' (every kernel).")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def ops_list(models: tuple[Path, ...], ops_file: str | None, as_json: bool) -> None:
    """Print the union op list of the models and/or an ops.yaml, and the portable kernel of each entry; exit 1 when
    an entry has none (a build with this list would fail)."""
    import json

    from .ops_record import OpsError, list_ops

    if not models and ops_file is None:
        raise click.UsageError("give --model MODEL.dtm (repeatable) and/or --ops ops.yaml|all")
    try:
        report = list_ops(models, ops_file)
    except OpsError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    missing = report.missing
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        rows = [["OP:DTYPE", "KERNEL", "NEEDED BY"]]
        for r in report.rows:
            rows.append([r.entry, r.kernel or f"MISSING: {r.missing}", ", ".join(r.sources)])
        for line in _table(rows):
            click.echo(line)
        n_ops = len({r.op for r in report.rows})
        summary = f"{n_ops} operators ({len(report.rows)} op:dtype entries) from {', '.join(report.sources)}"
        if not missing:
            click.echo(f"{summary}: every one has a {report.kernel_set} kernel")
    if missing:
        click.echo(f"error: {len(missing)} of {len(report.rows)} entries have no {report.kernel_set} kernel: "
                   f"{', '.join(r.entry for r in missing)}; a build with this op list would fail", err=True)
        sys.exit(1)


@ops_group.command("check")
@click.option("--board", required=True, help="A board name (dtorch-edge boards).")
@click.option("--model", required=True, type=click.Path(dir_okay=False, path_type=Path), help="A .dtm model.")
@click.option("--backend", default=None,
              help="An accelerator backend to offer every node first, e.g. npu-sim (the backends are the entry points "
                   "of the group dtorch.backends); default: the board's CPU build alone.")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def ops_check(board: str, model: Path, backend: str | None, as_json: bool) -> None:
    """Print the support matrix of MODEL on BOARD: each node, the backend that takes it and its kernel, and for each
    node that falls back the exact reason (operator, dtype, kernel size, stride, alignment, ...); then the plan: the
    subgraphs, the transfers between them with their bytes, and estimated times where a backend has a cost model.
    Exit 1 when a node has no kernel on the board's CPU build."""
    import json

    from .._export.errors import DtmFormatError
    from ..backends import BackendError, check_model, discover
    from .boards import BoardError

    registry = discover()
    try:
        plan = check_model(model, board, backend, registry=registry)
    except (BoardError, DtmFormatError, BackendError) as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    for e in registry.errors:
        if e.name != backend:
            click.echo(f"warning: {e.line()}; the other backends work", err=True)
    if as_json:
        d = plan.to_json()
        d["load_errors"] = [e.to_json() for e in registry.errors]
        click.echo(json.dumps(d, indent=2))
    else:
        for line in plan.lines():
            click.echo(line)
    bad = plan.unsupported
    if bad:
        nodes = "; ".join(f"node {a.node.index} {a.node.op}:{a.node.dtype} ({a.refusal.line() if a.refusal else '?'})"
                          for a in bad)
        click.echo(f"error: {len(bad)} node(s) have no kernel in {plan.board}'s CPU build and no backend takes them: "
                   f"{nodes}; a runtime built for {plan.board} refuses this model", err=True)
        sys.exit(1)


class _RunnerChoice(click.Choice):  # type: ignore[type-arg]
    """--runner: auto and the runners dtorch.edge.emulate finds (one module each), read when the option is first
    used, so that `dtorch-edge --help` does not import the emulator code and a new runner needs no edit here."""

    def __init__(self) -> None:
        super().__init__(())

    @property  # type: ignore[override]
    def choices(self) -> tuple[str, ...]:
        from .emulate.runner import runner_names

        return ("auto", *runner_names())

    @choices.setter
    def choices(self, _value: object) -> None:
        pass


_RUNNER_HELP = "local: QEMU user mode here; docker: the same in a FROM scratch container (--network none); auto: " \
               "docker when an engine answers, else local"


@main.command()
@click.option("--board", required=True, help="A board name (dtorch-edge boards).")
@click.option("--model", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="A .dtm model: its bundle is built (or found up to date) first. With --bundle: which of its models.")
@click.option("--bundle", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="A bundle from dtorch-edge build (dist/<board>); it must have been built for --board.")
@click.option("--runner", type=_RunnerChoice(), default="auto", show_default=True,
              help=_RUNNER_HELP)
@click.option("--runs", type=click.IntRange(min=1), default=5, show_default=True,
              help="Fresh processes for the cold-start median.")
@click.option("--bench-runs", type=click.IntRange(min=1), default=20, show_default=True,
              help="In-process runs for the latency percentiles (after a warm-up).")
@click.option("--data", "data", multiple=True, type=click.Path(path_type=Path),
              help="Inputs (.npy, each one run's input, or a folder of them); default: the bundled test vector.")
@click.option("--threads", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=600.0, show_default=True,
              help="Seconds one emulated run may take before it is killed.")
@click.option("--no-instructions", is_flag=True, help="Skip counting guest instructions.")
@click.option("--kernels", type=click.Choice(["fast", "exact"]), default="fast", show_default=True,
              help="Kernel policy of the timed and counted runs: fast (the board's SIMD set where it has one) or exact "
                   "(the portable bits); parity checks both.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("dist"), show_default=True,
              help="Where a bundle built for --model goes.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path), default=None,
              help="Write the figures as JSON to this file ('-': standard output).")
@click.option("--backend", default=None,
              help="An accelerator backend, e.g. npu-sim: its plan of the model is simulated on the same inputs (bits "
                   "checked against the CPU run) and its estimated latency reported beside the emulated figures.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
def emulate(board: str, model: Path | None, bundle: Path | None, runner: str, runs: int, bench_runs: int,
            data: tuple[Path, ...], threads: int, timeout: float, no_instructions: bool, kernels: str, out: Path,
            json_out: Path | None, backend: str | None, quiet: bool) -> None:
    """Run a model on an emulated board and report parity, cold start, latency, guest instructions, peak memory and
    size (all emulated) and an estimate of the real board's latency; with --backend, a simulated accelerator's plan
    and its estimated latency too. Exit 1 when parity fails, the model does not fit the board's RAM, or the
    simulated plan's outputs differ from the CPU run."""
    import json

    from .emulate import EmulateError
    from .emulate import emulate as run_emulation

    to_stdout = json_out is not None and str(json_out) == "-"
    log = (lambda m: click.echo(m, err=True)) if to_stdout else click.echo
    try:
        rep = run_emulation(board, model=model, bundle=bundle, runner=runner, runs=runs, bench_runs=bench_runs,
                            data=list(data), timeout=timeout, threads=threads, count_instructions=not no_instructions,
                            out=out, log=log, progress=not quiet, kernels=kernels, backend=backend)
    except EmulateError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    if json_out is not None:
        text = json.dumps(rep.to_json(), indent=2) + "\n"
        if to_stdout:
            click.echo(text, nl=False)
        else:
            from .._fileio import write_atomic

            write_atomic(json_out, text.encode())
    for line in rep.lines():
        log(line)
    if not rep.accelerator_pass:
        click.echo(f"error: the simulated {backend} plan's outputs differ from the CPU run", err=True)
    if not rep.parity_pass or not rep.fits or not rep.accelerator_pass:
        sys.exit(1)


@main.command()
@click.option("--boards", required=True, help="Comma-separated board names, e.g. rk3588,rv1126,licheepi4a.")
@click.option("--model", required=True, type=click.Path(dir_okay=False, path_type=Path), help="A .dtm model.")
@click.option("--report", "report_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("bench"),
              show_default=True, help="Folder for bench.md, bench.json and bench.png.")
@click.option("--runner", type=_RunnerChoice(), default="local", show_default=True,
              help=_RUNNER_HELP)
@click.option("--runs", type=click.IntRange(min=1), default=3, show_default=True)
@click.option("--bench-runs", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--data", "data", multiple=True, type=click.Path(path_type=Path))
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=600.0, show_default=True)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("dist"), show_default=True)
@click.option("--baseline", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="A JSON file of instructions per inference per board (--save-baseline) to check against: exit 1 when "
                   "a board needs more than --tolerance over it.")
@click.option("--tolerance", type=click.FloatRange(min=0), default=0.05, show_default=True)
@click.option("--save-baseline", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write this run's instructions per inference per board as a baseline file.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
def bench(boards: str, model: Path, report_dir: Path, runner: str, runs: int, bench_runs: int, data: tuple[Path, ...],
          timeout: float, out: Path, baseline: Path | None, tolerance: float, save_baseline: Path | None,
          quiet: bool) -> None:
    """Emulate MODEL on several boards and write a Markdown table, a JSON file and a PNG chart of the figures."""
    import json

    from tqdm import tqdm

    from .emulate import EmulateError
    from .emulate import emulate as run_emulation
    from .emulate.report import write_bench_report

    names = [b.strip() for b in boards.split(",") if b.strip()]
    if not names:
        raise click.UsageError("--boards needs at least one board name")
    reports = []
    bar = tqdm(names, desc="boards", unit="board", disable=quiet)
    for name in bar:
        bar.set_postfix_str(name)
        try:
            reports.append(run_emulation(name, model=model, runner=runner, runs=runs, bench_runs=bench_runs,
                                         data=list(data), timeout=timeout, out=out, log=lambda m: None,
                                         progress=False))
        except EmulateError as e:
            bar.close()
            click.echo(f"error: {name}: {e}", err=True)
            sys.exit(1)
    paths = write_bench_report(reports, report_dir)
    for r in reports:
        for line in r.lines():
            click.echo(line)
    click.echo(f"wrote {paths['markdown']}, {paths['json']}, {paths['chart']}")
    counts = {r.board: r.figures["instructions"]["per_inference"] for r in reports}
    if save_baseline is not None:
        from .._fileio import write_atomic

        write_atomic(save_baseline, (json.dumps({"model": model.name, "instructions_per_inference": counts},
                                                indent=2) + "\n").encode())
        click.echo(f"wrote the instruction baseline {save_baseline}")
    failed = [r.board for r in reports if not r.parity_pass or not r.fits]
    if baseline is not None:
        try:
            base = json.loads(baseline.read_text())["instructions_per_inference"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            click.echo(f"error: cannot read the baseline {baseline}: {e}", err=True)
            sys.exit(1)
        for name, now in counts.items():
            was = base.get(name)
            if was is None or now is None:
                click.echo(f"baseline: {name}: no count to compare ({'not in the baseline' if was is None else 'not counted'})")
                continue
            change = (now - was) / was
            verdict = "REGRESSION" if change > tolerance else "ok"
            click.echo(f"baseline: {name}: {now:,} instructions per inference vs {was:,} ({change:+.2%}, tolerance "
                       f"{tolerance:.0%}): {verdict}")
            if change > tolerance:
                failed.append(name)
    if failed:
        click.echo(f"error: failed on {', '.join(sorted(set(failed)))} (parity, memory or instruction regression)",
                   err=True)
        sys.exit(1)


# --- dtorch-edge flash / device: the agent on a board, over a serial line (logic in device/) -------------------------

def _port_options(f):  # type: ignore[no-untyped-def]
    f = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")(f)
    f = click.option("--baud", type=click.IntRange(min=1), default=115200, show_default=True,
                     help="The line's rate (8N1); the timeouts are sized from it.")(f)
    return click.option("--port", required=True,
                        help="What pyserial opens: /dev/ttyUSB0, socket://127.0.0.1:PORT (dtorch-edge device serve), "
                             "rfc2217://HOST:PORT.")(f)


def _device_fail(e: object) -> NoReturn:
    click.echo(f"error: {e}", err=True)
    sys.exit(1)


def _echo_json(obj: object) -> None:
    import json

    click.echo(json.dumps(obj, indent=2))


@main.command()
@click.argument("bundle_dir", type=click.Path(path_type=Path))
@click.option("--board", required=True, help="The board the bundle is for (checked against the bundle and the device).")
@_port_options
@click.option("--quiet", is_flag=True, help="No progress bar.")
def flash(bundle_dir: Path, board: str, port: str, baud: int, as_json: bool, quiet: bool) -> None:
    """Install a bundle (dist/<board>/ from dtorch-edge build) on the board's dtorch-agent: send the files it lacks
    (an interrupted transfer resumes), verify each, then activate it; the previous bundle stays for rollback."""
    from .device.errors import DeviceError
    from .device.flash import flash_bundle

    log = (lambda _m: None) if as_json or quiet else (lambda m: click.echo(m, err=True))
    try:
        rep = flash_bundle(bundle_dir, port, board=board, baud=baud, progress=not (as_json or quiet), log=log)
    except DeviceError as e:
        _device_fail(e)
    except KeyboardInterrupt:
        _device_fail("interrupted: the device keeps its active model; rerun the same command to resume the transfer")
    if as_json:
        _echo_json(rep.to_json())
        return
    for line in rep.lines():
        click.echo(line)


@main.group("device")
def device_group() -> None:
    """Talk to a board's dtorch-agent: info, run, selftest, rollback, logs; serve starts an emulated board."""


def _client_call(port: str, baud: int, fn):  # type: ignore[no-untyped-def]
    """Open the link, run fn(client), close; every DeviceError becomes one line and exit 1."""
    from .device.client import AgentClient
    from .device.errors import DeviceError
    from .device.link import Link

    try:
        with Link(port, baud) as link:
            return fn(AgentClient(link))
    except DeviceError as e:
        _device_fail(e)


@device_group.command("info")
@_port_options
def device_info(port: str, baud: int, as_json: bool) -> None:
    """The board, agent and runtime versions (with hashes), the store, and the active and previous models."""
    info, status = _client_call(port, baud, lambda c: (c.hello(), c.status()))
    if as_json:
        _echo_json({**info.to_json(), "status": status.to_json()})
        return
    mib = 1024 * 1024
    click.echo(f"board: {info.board} ({info.arch})")
    click.echo(f"agent: {info.agent_version} (protocol {info.protocol}); runtime {info.runtime_version}, hash "
               f"{info.runtime_hash}; op set {info.opset_hash}")
    click.echo(f"store: {info.store_bytes / mib:.1f} MiB used, {info.free_bytes / mib:.1f} MiB free; signing "
               f"{info.signing}")
    click.echo(f"active: {info.active or 'none'}" + (f" (model {info.active_model})" if info.active_model else ""))
    click.echo(f"previous: {info.previous or 'none'}" + (f" (model {info.previous_model})" if info.previous_model
                                                           else ""))
    receiving = f", receiving {status.receiving[:12]} ({status.received:,} bytes so far)" if status.receiving else ""
    click.echo(f"agent state: {status.state}{receiving}; up {status.uptime_s:.0f} s, {status.rx_frames:,} frames "
               f"received, {status.rx_dropped:,} dropped")


@device_group.command("run")
@_port_options
@click.option("--input", "inputs", multiple=True, required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="A .npy input, in the model's input order; repeat for several.")
@click.option("--output", "outputs", multiple=True, required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write an output (.npy); repeat for several.")
@click.option("--bench", type=click.IntRange(min=0), default=0, show_default=True,
              help="Also time this many runs on the device (min / median / max).")
def device_run(port: str, baud: int, as_json: bool, inputs: tuple[Path, ...], outputs: tuple[Path, ...],
               bench: int) -> None:
    """Run the device's active model on .npy inputs and fetch its outputs."""
    from .._fileio import NotRegularFileError, read_regular, write_atomic
    from .device.client import Blob
    from .device.errors import DeviceError

    blobs = []
    for p in inputs:
        try:
            data = read_regular(p, limit=1 << 30)
        except FileNotFoundError:
            _device_fail(f"no such input file {p}")
        except (NotRegularFileError, OSError) as e:
            _device_fail(f"cannot read {p}: {e.strerror or e}")
        if not data.startswith(b"\x93NUMPY"):
            _device_fail(f"{p} is not a .npy file (numpy.save writes one)")
        blobs.append(Blob.from_bytes(p.name, data))

    def go(c):  # type: ignore[no-untyped-def]
        for b in blobs:
            if not c.put_blob(b).have:
                c.verify(b.sha256, b.size, b.name)
        res = c.run([b.sha256 for b in blobs], bench)
        if len(res.outputs) != len(outputs):
            raise DeviceError(f"the model gave {len(res.outputs)} outputs and {len(outputs)} --output were given: "
                              f"give --output once per output")
        return res, [c.get(sha, size) for sha, size in res.outputs]

    res, datas = _client_call(port, baud, go)
    for p, data in zip(outputs, datas):
        try:
            write_atomic(p, data)
        except OSError as e:
            _device_fail(f"cannot write {p}: {e.strerror or e}")
    if as_json:
        d = res.to_json()
        d["files"] = [str(p) for p in outputs]
        _echo_json(d)
        return
    click.echo(f"ran the device's model on {len(blobs)} input(s): wrote {', '.join(str(p) for p in outputs)}")
    if bench:
        click.echo(f"latency on the device ({bench} runs): min {res.ms_min:.3f} ms, median {res.ms_p50:.3f} ms, max "
                   f"{res.ms_max:.3f} ms")


@device_group.command("selftest")
@_port_options
def device_selftest(port: str, baud: int, as_json: bool) -> None:
    """Run the active model on its bundled test vector, on the device; exit 1 when it does not match."""
    r = _client_call(port, baud, lambda c: c.selftest())
    if as_json:
        _echo_json(r.to_json())
    else:
        click.echo(f"selftest {'passed' if r.passed else 'FAILED'}: max abs error {r.max_abs_error:.3g}")
    if not r.passed:
        click.echo(f"error: the device's model does not reproduce its test vector (max abs error "
                   f"{r.max_abs_error:.3g})", err=True)
        sys.exit(1)


@device_group.command("rollback")
@_port_options
def device_rollback(port: str, baud: int, as_json: bool) -> None:
    """Make the previous bundle active again (a second rollback undoes the first)."""
    s = _client_call(port, baud, lambda c: c.rollback())
    if as_json:
        _echo_json(s.to_json())
        return
    click.echo(f"rolled back: active {s.active[:12] or 'none'} (model {s.active_model or '?'}), previous "
               f"{s.previous[:12] or 'none'}")


@device_group.command("logs")
@_port_options
@click.option("--last", type=click.IntRange(min=1), default=50, show_default=True, help="How many events.")
def device_logs(port: str, baud: int, as_json: bool, last: int) -> None:
    """The agent's last events (installs, failures, rollbacks), oldest first."""
    import datetime

    events = _client_call(port, baud, lambda c: c.logs(last))
    if as_json:
        _echo_json([e.to_json() for e in events])
        return
    for e in events:
        when = datetime.datetime.fromtimestamp(e.time, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        click.echo(f"{when} {e.kind} {e.text}")


@device_group.command("serve")
@click.option("--board", required=True, help="A board name (dtorch-edge boards) with a Linux agent.")
@click.option("--bundle", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The bundle whose dtorch-agent to run (default: dist/<board>).")
@click.option("--store", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The agent's store (default: a temporary folder, removed at exit).")
@click.option("--listen", default=None, help="127.0.0.1:PORT for the agent's socket (default 127.0.0.1:0: a free port).")
@click.option("--pty", "use_pty", is_flag=True, help="A pseudo-terminal instead of a socket (--port /dev/pts/N).")
@click.option("--json", "as_json", is_flag=True, help="Print the port and the rest as one JSON line.")
def device_serve(board: str, bundle: Path | None, store: Path | None, listen: str | None, use_pty: bool,
                 as_json: bool) -> None:
    """Start an emulated board: the bundle's real dtorch-agent (under the board's QEMU), on a loopback socket or a
    pty; prints `port: ...` for the other commands and runs until interrupted."""
    import json

    from .device.errors import DeviceError
    from .device.serve import serve

    def ready(info) -> None:  # type: ignore[no-untyped-def]
        click.echo(json.dumps(info.to_json()) if as_json else f"port: {info.port}")
        sys.stdout.flush()

    try:
        serve(board, bundle=bundle, store=store, listen=listen, pty=use_pty, on_ready=ready,
              log=lambda m: click.echo(m, err=True))
    except DeviceError as e:
        _device_fail(e)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
