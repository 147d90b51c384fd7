"""Third-party C sources the edge builds compile: libsodium, for the agent's SHA-256 and Ed25519 verification
(runtime/apps/agent/crypto.cc). The project never hand-writes cryptography, and the runtime has no dependency a
board's toolchain would have to link, so the agent compiles libsodium's own files from a pinned source tree.

The tree comes from PyNaCl's source distribution on PyPI (it vendors libsodium under src/libsodium), fetched with
``python -m pip download`` (a package registry is the one network the build may use), checked against a pinned
sha256, and extracted (only the libsodium folder, refusing any member that would land outside it) into a cache:

* ``<checkout>/build/third_party/`` in a source checkout;
* ``$XDG_CACHE_HOME/dtorch/third_party/`` (``~/.cache/...``) for an installed package.

``python -m dtorch.edge.third_party`` fetches it and prints the folder (scripts/setup.sh runs it). SConstruct and
dtorch.edge.build_plan call `libsodium_source(fetch=False)`: a build never downloads; it says how to fetch.

Standard library only (SConstruct imports this module).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from .._fileio import sha256_file

__all__ = ["LIBSODIUM_SOURCES", "LIBSODIUM_VERSION", "ThirdPartyError", "libsodium_include", "libsodium_source",
           "fetch_pinned", "main", "pip_download"]

PYNACL_VERSION = "1.6.2"
PYNACL_SDIST = f"pynacl-{PYNACL_VERSION}.tar.gz"
#: sha256 of PyPI's pynacl-1.6.2.tar.gz (the file pip downloads; checked before anything is extracted).
PYNACL_SDIST_SHA256 = "018494d6d696ae03c7e656e5e74cdfd8ea1326962cc401bcf018f1ed8436811c"
#: The libsodium release PyNaCl 1.6.2 vendors (its configure.ac), and the library version version.h states.
LIBSODIUM_VERSION = "1.0.20"
_LIBRARY_VERSION = (26, 2)

#: The folder of the sdist that is extracted (libsodium's tree).
_MEMBER_ROOT = PurePosixPath(f"pynacl-{PYNACL_VERSION}", "src", "libsodium")
#: The libsodium files the agent compiles, relative to the tree's src/libsodium/: SHA-256 (blob hashes), SHA-512
#: and the Ed25519 reference code (crypto_sign_ed25519_verify_detached), constant-time comparison, and utils.c
#: (sodium_memzero, sodium_is_zero, sodium_memcmp). runtime/apps/agent/sodium_glue.cc stands in for the two
#: symbols utils.c refers to from functions the agent never calls.
LIBSODIUM_SOURCES = (
    "crypto_hash/sha256/hash_sha256.c",
    "crypto_hash/sha256/cp/hash_sha256_cp.c",
    "crypto_hash/sha512/cp/hash_sha512_cp.c",
    "crypto_core/ed25519/ref10/ed25519_ref10.c",
    "crypto_sign/ed25519/ref10/open.c",
    "crypto_sign/ed25519/ref10/sign.c",
    "crypto_verify/verify.c",
    "sodium/utils.c",
)
#: Defines every compile of those files needs: the build is not configured by libsodium's autoconf, so its
#: portable code paths are taken (the 32-bit field arithmetic, the plain memset loop of sodium_memzero).
LIBSODIUM_DEFINES = ("CONFIGURED=1",)

_READY = ".dtorch-extracted"  # written last: a folder without it is an interrupted extraction


class ThirdPartyError(RuntimeError):
    """A third-party source tree that is missing and cannot be fetched; the message says what to do."""


def _cache_dirs() -> list[Path]:
    from .resources import resource_root

    dirs = []
    try:
        root = resource_root()
        if (root / "SConstruct").is_file() and not (root.name == "_share"):
            dirs.append(root / "build" / "third_party")
    except OSError:
        pass
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    dirs.append(Path(base) / "dtorch" / "third_party")
    return dirs


def libsodium_include(tree: Path) -> Path:
    """The include folder of a libsodium tree (it holds sodium/*.h)."""
    return tree / "src" / "libsodium" / "include"


def pip_download(requirement_args: list[str], filename: str, dest: Path, what: str, error: type[Exception],
                 hint: str, timeout: float = 900) -> Path:
    """`python -m pip download` of one pinned file into dest (a package registry is the one network a build may
    use); returns its path. Raises `error` with one line (pip missing, no network, no such file)."""
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(dest), *requirement_args]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise error(f"cannot run pip to download {filename}: {e}") from None
    path = dest / filename
    if r.returncode != 0 or not path.is_file():
        last = (r.stderr or r.stdout).strip().splitlines()
        raise error(f"pip could not download {filename} ({what}): {last[-1] if last else 'exit ' + str(r.returncode)}; "
                    f"check the package index is reachable, or {hint}")
    return path


def _download(dest: Path) -> Path:
    """pip downloads the pinned sdist into dest; returns the tarball's path."""
    return pip_download(["--no-binary", ":all:", "--no-build-isolation", f"pynacl=={PYNACL_VERSION}"], PYNACL_SDIST,
                        dest, "libsodium's sources for dtorch-agent", ThirdPartyError,
                        f"put the file in {dest.parent} and rerun", timeout=600)


def _extract(tarball: Path, into: Path) -> None:
    """Extracts the libsodium folder of the sdist into `into` (regular files and folders only, nothing outside)."""
    with tarfile.open(tarball, "r:gz") as tar:
        for m in tar:
            p = PurePosixPath(m.name)
            if p.is_absolute() or ".." in p.parts:
                raise ThirdPartyError(f"{tarball.name} holds an unsafe path {m.name!r}; refusing to extract it")
            try:
                rel = p.relative_to(_MEMBER_ROOT)
            except ValueError:
                continue
            target = into.joinpath(*rel.parts)
            if m.isdir():
                target.mkdir(parents=True, exist_ok=True)
            elif m.isfile():
                target.parent.mkdir(parents=True, exist_ok=True)
                src = tar.extractfile(m)
                assert src is not None
                with src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out)
            # links, devices and FIFOs are left out: the sources need none
    version_in = libsodium_include(into) / "sodium" / "version.h.in"
    if not version_in.is_file():
        raise ThirdPartyError(f"{tarball.name} has no libsodium tree under {_MEMBER_ROOT}; is it the pinned sdist?")
    text = (version_in.read_text()
            .replace("@VERSION@", LIBSODIUM_VERSION)
            .replace("@SODIUM_LIBRARY_VERSION_MAJOR@", str(_LIBRARY_VERSION[0]))
            .replace("@SODIUM_LIBRARY_VERSION_MINOR@", str(_LIBRARY_VERSION[1]))
            .replace("@SODIUM_LIBRARY_MINIMAL_DEF@", ""))
    (version_in.parent / "version.h").write_text(text)


def _tree_in(cache: Path) -> Path:
    return cache / f"libsodium-{LIBSODIUM_VERSION}-pynacl-{PYNACL_VERSION}"


def libsodium_source(*, fetch: bool = True, cache: str | os.PathLike[str] | None = None) -> Path:
    """The extracted libsodium tree (its top folder: src/libsodium/ holds the sources), from the cache or, with
    `fetch`, downloaded, checked and extracted now. Raises ThirdPartyError with one line saying what to do."""
    caches = [Path(cache)] if cache is not None else _cache_dirs()
    for c in caches:
        tree = _tree_in(c)
        if (tree / _READY).is_file():
            return tree
    if not fetch:
        raise ThirdPartyError(f"libsodium's sources (for dtorch-agent) are not fetched: run "
                              f"`{Path(sys.executable).name} -m dtorch.edge.third_party` (scripts/setup.sh does), "
                              f"which downloads {PYNACL_SDIST} from PyPI into {caches[0]}")
    return fetch_pinned(caches, _tree_in(Path()).name, PYNACL_SDIST, PYNACL_SDIST_SHA256, _download, _extract,
                        ThirdPartyError, "libsodium's sources")


def fetch_pinned(caches: list[Path], tree_name: str, filename: str, sha256: str,
                 download: Callable[[Path], Path], extract: Callable[[Path, Path], str | None],
                 error: type[Exception], what: str) -> Path:
    """Into the first writable cache folder: the pinned file `filename` (a copy already in the folder, else
    `download(work_dir)`), refused unless its sha256 is `sha256`, extracted by `extract(file, staged_tree)` into a
    staged tree that is renamed to `tree_name` with a ready mark written last (`extract`'s returned text, else the
    file and its sha256). Returns the tree. Raises `error` with one line."""
    errors = []
    for c in caches:
        try:
            c.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(prefix=".fetch-", dir=c) as tmp:
                work = Path(tmp)
                src = c / filename  # a copy someone put in the cache folder
                if not src.is_file() or sha256_file(src) != sha256:
                    src = download(work)
                got = sha256_file(src)
                if got != sha256:
                    raise error(f"{src} has sha256 {got}, not the pinned {sha256} of {filename}; refusing it (a "
                                f"changed or corrupted download)")
                staged = work / "tree"
                staged.mkdir()
                mark = extract(src, staged)
                (staged / _READY).write_text(mark or f"{filename} {sha256}\n")
                tree = c / tree_name
                if tree.exists():  # an interrupted extraction (no ready mark), or a concurrent one that finished
                    if (tree / _READY).is_file():
                        return tree
                    shutil.rmtree(tree)
                os.rename(staged, tree)
            return tree
        except OSError as e:
            errors.append(f"{c}: {e.strerror or e}")
    raise error(f"cannot write {what} into any cache folder ({'; '.join(errors)})")


def main(argv: list[str] | None = None) -> int:
    """``python -m dtorch.edge.third_party``: fetch libsodium's sources, print their folder."""
    try:
        print(libsodium_source())
    except ThirdPartyError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
