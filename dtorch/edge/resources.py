"""Where the edge SDK's non-Python folders live: boards/, toolchains/, runtime/, emulation/ and SConstruct.

In a source checkout they sit beside the `dtorch` package (``dtorch/../boards``); an installed wheel carries
copies of them inside the package, under ``dtorch/_share/``. `resource_root()` returns whichever applies.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["RESOURCE_DIRS", "ResourceError", "resource_path", "resource_root"]

#: The folders (and the one file) a resource root holds.
RESOURCE_DIRS = ("boards", "toolchains", "runtime", "emulation")

_PACKAGE = Path(__file__).resolve().parent.parent  # .../dtorch


class ResourceError(FileNotFoundError):
    """The SDK's data folders (boards/, toolchains/, runtime/, ...) cannot be found."""


def _checkout_root(package: Path = _PACKAGE) -> Path | None:
    root = package.parent
    return root if (root / "boards").is_dir() else None


def _installed_root(package: Path = _PACKAGE) -> Path | None:
    share = package / "_share"
    return share if (share / "boards").is_dir() else None


def resource_root(package: Path | None = None) -> Path:
    """The folder that holds boards/, toolchains/, runtime/, emulation/ and SConstruct.

    The source checkout when dtorch is imported from one (``dtorch/../boards`` exists), else ``dtorch/_share/``
    inside the installed package. `package` (the ``dtorch`` package folder) is for tests.
    """
    pkg = Path(package).resolve() if package is not None else _PACKAGE
    for candidate in (_checkout_root(pkg), _installed_root(pkg)):
        if candidate is not None:
            return candidate
    raise ResourceError(
        f"cannot find the DTorch edge SDK data (boards/, toolchains/, runtime/): looked for {pkg.parent / 'boards'} "
        f"(a source checkout) and {pkg / '_share' / 'boards'} (an installed wheel); reinstall dtorch "
        f"(pip install --force-reinstall dtorch) or run from a source checkout")


def resource_path(*parts: str, package: Path | None = None) -> Path:
    """A path under `resource_root()`, e.g. ``resource_path("boards", "rk3588.toml")`` (not checked for existence)."""
    return resource_root(package).joinpath(*parts)
