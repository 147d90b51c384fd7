"""Finding backends: every entry point of the group ``dtorch.backends`` is one, named by the entry point's name.

A package adds a backend with one table in its pyproject.toml and nothing else (no edit to DTorch):

    [project.entry-points."dtorch.backends"]
    my-npu = "my_package.backend:MyNpuBackend"      # a dtorch.backends.Backend subclass

DTorch registers its own (``cpu``, ``npu-sim``) the same way. Each entry point is loaded when backends are first
asked for; one that fails (its module does not import, or it names something that is not a Backend subclass, or a
second package declares the same name) is kept as a `LoadError` that names it, its package and the error, and
every other backend still works.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._interface import Backend, BackendError

if TYPE_CHECKING:
    from ..edge.boards import Board

__all__ = ["GROUP", "LoadError", "Registry", "discover", "load_backend"]

#: The entry point group backends are registered in.
GROUP = "dtorch.backends"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


@dataclass(frozen=True)
class LoadError:
    """A backend entry point that could not be used."""

    name: str
    package: str  # the distribution that declares it ("name version")
    target: str   # the entry point's value, module:attribute
    error: str    # one line

    def line(self) -> str:
        return f"backend {self.name!r} (from {self.package}, {self.target}) failed to load: {self.error}"

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "package": self.package, "target": self.target, "error": self.error}


@dataclass(frozen=True)
class Registry:
    """The backends found: the classes that loaded, by name, and the entry points that did not."""

    backends: dict[str, type[Backend]]
    errors: tuple[LoadError, ...] = ()

    def names(self) -> list[str]:
        return sorted(self.backends)

    def get(self, name: str, board: Board) -> Backend:
        """An instance of the backend `name` for `board`; BackendError (one line) when there is none: an unknown
        name (with the closest one and the list), one that failed to load (with its error), or one that cannot
        serve the board."""
        failed = next((e for e in self.errors if e.name == name), None)
        if name not in self.backends:
            if failed is not None:
                raise BackendError(failed.line())
            close = difflib.get_close_matches(name, self.names(), n=1, cutoff=0.5)
            hint = f" (did you mean {close[0]}?)" if close else ""
            broken = (f"; {len(self.errors)} failed to load: {', '.join(sorted({e.name for e in self.errors}))}"
                      if self.errors else "")
            raise BackendError(f"unknown backend {name!r}{hint}; the backends are "
                               f"{', '.join(self.names()) or '(none)'}{broken}")
        cls = self.backends[name]
        try:
            backend = cls(board)
        except BackendError:
            raise
        except Exception as e:  # a third-party constructor's bug: one line, the rest still works
            raise BackendError(f"backend {name!r} cannot start for board {board.name!r}: "
                               f"{type(e).__name__}: {_one_line(e)}") from None
        backend.name = name
        return backend


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return text[:300] + ("..." if len(text) > 300 else "")


def _package(ep: Any) -> str:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "an unknown package"
    try:
        return f"{dist.metadata['Name']} {dist.version}"
    except Exception:  # pragma: no cover - a distribution with broken metadata
        return "an unknown package"


def _installed() -> list[Any]:
    """The group's entry points of every installed distribution. Unlike importlib.metadata.entry_points(), which
    keeps only the first distribution of a name on sys.path, this reads them all (an identical entry point once):
    a stale dtorch.egg-info left in a source checkout on sys.path must not hide the installed metadata."""
    seen: set[tuple[str, str]] = set()
    out = []
    for dist in importlib.metadata.distributions():
        for ep in dist.entry_points:
            if ep.group == GROUP and (ep.name, ep.value) not in seen:
                seen.add((ep.name, ep.value))
                out.append(ep)
    return out


def discover(entry_points: Iterable[Any] | None = None) -> Registry:
    """Load every backend entry point (`entry_points`: the group's entry points, for tests; default: the
    installed ones). Never raises for a bad entry point: it becomes a LoadError."""
    eps = _installed() if entry_points is None else list(entry_points)
    found: dict[str, type[Backend]] = {}
    where: dict[str, str] = {}
    errors: list[LoadError] = []
    for ep in eps:
        name, target, package = ep.name, ep.value, _package(ep)
        if not _NAME.match(name):
            errors.append(LoadError(name, package, target, "the name must be lower-case letters, digits and . _ -"))
            continue
        if name in found:
            errors.append(LoadError(name, package, target, f"{where[name]} declares a backend of this name too; "
                                                           f"that one is used"))
            continue
        try:
            obj = ep.load()
        except (Exception, SystemExit) as e:  # ImportError, SyntaxError, whatever its module raises at import
            errors.append(LoadError(name, package, target, f"{type(e).__name__}: {_one_line(e)}"))
            continue
        if not (isinstance(obj, type) and issubclass(obj, Backend)):
            what = type(obj).__name__ if not isinstance(obj, type) else f"class {obj.__name__}"
            errors.append(LoadError(name, package, target, f"it names a {what}, not a subclass of "
                                                           f"dtorch.backends.Backend"))
            continue
        found[name] = obj
        where[name] = f"{package} ({target})"
    return Registry(dict(sorted(found.items())), tuple(errors))


def load_backend(name: str, board: Board, entry_points: Iterable[Any] | None = None) -> Backend:
    """The backend `name` for `board` (see Registry.get)."""
    return discover(entry_points).get(name, board)
