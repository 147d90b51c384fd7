"""The node tests of ONNX's backend test suite (``onnx/backend/test/data/node/*``: a one-operator ``model.onnx``
with ``test_data_set_*/input_*.pb`` and ``output_*.pb``), the data that benchmarks/onnx_conformance.py and
tests/onnx/test_conformance.py measure the importer against.

The files come from the ``onnx`` 1.19.1 wheel on PyPI, which ships 1,615 node tests (releases after 1.22 no longer
ship them). As dtorch.edge.third_party fetches libsodium: ``python -m pip download`` (a package registry is the one
network CI has) of the pinned wheel for one fixed platform, checked against a pinned sha256 before anything is read,
then only ``onnx/backend/test/data/node/`` is extracted (regular files only; a member that would land outside the
target folder is refused) into a staging folder that is renamed into place when complete. The cache:

* ``<checkout>/build/third_party/`` in a source checkout;
* ``$XDG_CACHE_HOME/dtorch/third_party/`` (``~/.cache/...``) for an installed package.

scripts/setup.sh does not fetch it (48 MB unpacked that only the conformance runs need): the test tier and the
runner call `node_tests()`, which fetches on first use; ``python -m dtorch.onnx.conformance_data`` fetches it and
prints the folder; `node_tests(fetch=False)` never downloads and says how to.

Standard library only (it never imports onnx: the data is read by the runner).
"""

from __future__ import annotations

import argparse
import os
import shutil
import stat
import sys
import zipfile
from pathlib import Path, PurePosixPath

from ..edge.third_party import _cache_dirs

__all__ = ["ONNX_VERSION", "WHEEL", "WHEEL_SHA256", "ConformanceDataError", "main", "node_tests"]

ONNX_VERSION = "1.19.1"
#: The file `pip download onnx==1.19.1 --no-deps --only-binary=:all: --platform manylinux2014_x86_64
#: --python-version 3.11 --implementation cp` gives (any one platform's wheel holds the same test data).
WHEEL = f"onnx-{ONNX_VERSION}-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.whl"
#: sha256 of that file on PyPI, checked before the wheel is opened.
WHEEL_SHA256 = "1839af08ab4a909e4af936b8149c27f8c64b96138981024e251906e0539d8bf9"
#: The wheel's folder that is extracted.
_MEMBER_ROOT = PurePosixPath("onnx", "backend", "test", "data", "node")
#: How many node tests the pinned wheel holds (a check that the extraction is the one expected).
NODE_TESTS = 1615

_READY = ".dtorch-extracted"  # written last: a folder without it is an interrupted extraction


class ConformanceDataError(RuntimeError):
    """The test data is missing and cannot be fetched, or a wheel is not the pinned one; the message says what
    to do."""


def _tree_in(cache: Path) -> Path:
    return cache / f"onnx-{ONNX_VERSION}-node-tests"


def _download(dest: Path) -> Path:
    """pip downloads the pinned wheel into dest; returns its path."""
    from ..edge.third_party import pip_download

    return pip_download([f"onnx=={ONNX_VERSION}", "--only-binary=:all:", "--platform", "manylinux2014_x86_64",
                         "--python-version", "3.11", "--implementation", "cp"], WHEEL, dest,
                        "ONNX's backend test data", ConformanceDataError,
                        "download the file elsewhere and pass it with --wheel FILE")


def _local_wheel(wheel: Path) -> Path:
    """--wheel FILE in place of the download (fetch_pinned checks its sha256)."""
    if not wheel.is_file():
        raise ConformanceDataError(f"cannot read {wheel}: no such file")
    return wheel


def _extract(wheel: Path, into: Path) -> int:
    """Extracts the node-test folder of the wheel into `into` (regular files only, nothing outside it); returns the
    number of test folders."""
    try:
        zf = zipfile.ZipFile(wheel)
    except (OSError, zipfile.BadZipFile) as e:
        raise ConformanceDataError(f"{wheel.name} is not a readable wheel ({e})") from None
    root = into.resolve()
    tests: set[str] = set()
    with zf:
        for info in zf.infolist():
            p = PurePosixPath(info.filename)
            if p.is_absolute() or ".." in p.parts or "\\" in info.filename or ":" in info.filename:
                raise ConformanceDataError(f"{wheel.name} holds an unsafe path {info.filename!r}; refusing to "
                                           f"extract it")
            try:
                rel = p.relative_to(_MEMBER_ROOT)
            except ValueError:
                continue
            if info.is_dir() or not rel.parts:
                continue
            kind = stat.S_IFMT(info.external_attr >> 16)
            if kind and kind != stat.S_IFREG:
                continue  # links and special files: the test data has none
            target = into.joinpath(*rel.parts)
            if not target.resolve().is_relative_to(root):
                raise ConformanceDataError(f"{wheel.name}: member {info.filename!r} would land outside {into}; "
                                           f"refusing to extract it")
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
            tests.add(rel.parts[0])
    if not tests:
        raise ConformanceDataError(f"{wheel.name} has no node tests under {_MEMBER_ROOT}; is it the pinned wheel?")
    return len(tests)


def node_tests(*, fetch: bool = True, cache: str | os.PathLike[str] | None = None,
               wheel: str | os.PathLike[str] | None = None) -> Path:
    """The folder that holds the node tests (``test_*/model.onnx`` ...), from the cache or, with `fetch`, downloaded
    (or taken from the local file `wheel`), checked against the pinned sha256 and extracted now. Raises
    ConformanceDataError with one line saying what to do."""
    caches = [Path(cache)] if cache is not None else _cache_dirs()
    for c in caches:
        tree = _tree_in(c)
        if (tree / _READY).is_file():
            return tree / "node"
    if not fetch and wheel is None:
        raise ConformanceDataError(f"ONNX's backend test data is not fetched: run `{Path(sys.executable).name} -m "
                                   f"dtorch.onnx.conformance_data`, which downloads {WHEEL} from PyPI and extracts "
                                   f"its node tests into {_tree_in(caches[0])}")
    from ..edge.third_party import fetch_pinned

    def extract(whl: Path, staged: Path) -> str:
        return f"{WHEEL} {WHEEL_SHA256} {_extract(whl, staged / 'node')} tests\n"

    download = (lambda _work: _local_wheel(Path(wheel))) if wheel is not None else _download
    return fetch_pinned(caches, _tree_in(Path()).name, WHEEL, WHEEL_SHA256, download, extract, ConformanceDataError,
                        "ONNX's backend test data") / "node"


def main(argv: list[str] | None = None) -> int:
    """``python -m dtorch.onnx.conformance_data``: fetch the node tests, print their folder."""
    ap = argparse.ArgumentParser(prog="python -m dtorch.onnx.conformance_data", description=__doc__.split("\n\n")[0])
    ap.add_argument("--wheel", help=f"use this local copy of {WHEEL} instead of downloading it (checked by sha256)")
    ap.add_argument("--cache", help="the cache folder (default: build/third_party/ in a checkout, else "
                                    "$XDG_CACHE_HOME/dtorch/third_party/)")
    ap.add_argument("--no-fetch", action="store_true", help="only say where the data is; never download")
    args = ap.parse_args(argv)
    try:
        print(node_tests(fetch=not args.no_fetch, cache=args.cache, wheel=args.wheel))
    except ConformanceDataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
