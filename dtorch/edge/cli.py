"""`dtorch-edge`: the command line of the edge SDK."""

from __future__ import annotations

import sys
from pathlib import Path

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
def demo(out: Path, epochs: int, batch_size: int, lr: float, workers: int, seed: int, amp: str | None,
         json_out: Path | None, quiet: bool) -> None:
    """Train SimpleNet on the bundled 8x8 digits (as 32x32 RGB images), save it, export it to .dtm and check the
    C++ runtime against eager mode."""
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
    if json_out is not None:
        if str(json_out) == "-":
            click.echo(res.to_json())
        else:
            json_out.write_text(res.to_json() + "\n")


def _fmt_tensor(f: object, i: int) -> str:
    if i < 0:
        return "-"
    t = f.tensors[i]  # type: ignore[attr-defined]
    dims = "x".join(str(d) for d in t.dims) or "scalar"
    return f"{t.name}[{dims}]:{t.dtype}"


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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
