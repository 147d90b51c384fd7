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
    """Train SimpleNet on the bundled 8x8 digits (as 32x32 RGB images) and save the checkpoint."""
    from .demo import DemoConfig, run_demo

    cfg = DemoConfig(out=out, epochs=epochs, batch_size=batch_size, lr=lr, workers=workers, seed=seed, amp=amp,
                     progress=not quiet)
    click.echo(f"dtorch {__version__}: training SimpleNet on the digits set ({out / 'data'})")
    res = run_demo(cfg, log=click.echo)
    click.echo(f"test accuracy: {res.test_accuracy:.2%} on {res.test_images} held-out images "
               f"({res.train_images} training images, {res.epochs} epochs, {res.seconds:.1f} s)")
    click.echo(f"checkpoint: {res.checkpoint}")
    if json_out is not None:
        if str(json_out) == "-":
            click.echo(res.to_json())
        else:
            json_out.write_text(res.to_json() + "\n")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
