"""One-off export of scikit-learn's digits data set into ``dtorch/vision/datasets/digits.npz``.

Run once by a maintainer (scikit-learn is not a dtorch dependency):

    .venv/bin/python scripts/export_digits.py

The file holds three arrays and loads with ``np.load(path, allow_pickle=False)``:

- ``images``: uint8, shape (1797, 8, 8), values 0..16 (``load_digits().images``).
- ``labels``: uint8, shape (1797,), values 0..9.
- ``train_mask``: bool, shape (1797,). The fixed train/test split: the first 1,437 indices
  (80 %, rounded down) of ``np.random.RandomState(0).permutation(1797)`` are train, the other
  360 are test. It is stored, not recomputed, so it can never drift with a NumPy release.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits

NUM_SAMPLES = 1797
TRAIN_FRACTION = 0.8
SPLIT_SEED = 0
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "dtorch" / "vision" / "datasets" / "digits.npz"


def split_mask(n: int = NUM_SAMPLES, seed: int = SPLIT_SEED) -> np.ndarray:
    """Return the boolean train mask of the fixed digits split."""
    order = np.random.RandomState(seed).permutation(n)
    mask = np.zeros(n, dtype=bool)
    mask[order[: int(n * TRAIN_FRACTION)]] = True
    return mask


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output .npz path")
    args = parser.parse_args()

    digits = load_digits()
    images = digits.images
    labels = digits.target
    if images.shape != (NUM_SAMPLES, 8, 8) or labels.shape != (NUM_SAMPLES,):
        raise SystemExit(f"unexpected digits shapes {images.shape} and {labels.shape}")
    if not np.array_equal(images, np.rint(images)) or images.min() < 0 or images.max() > 16:
        raise SystemExit("digits images are not integers in 0..16")

    out: Path = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=".digits-", suffix=".npz")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez_compressed(
                f,
                images=images.astype(np.uint8),
                labels=labels.astype(np.uint8),
                train_mask=split_mask(),
            )
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    print(f"wrote {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
