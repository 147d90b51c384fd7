"""The runtime's sources by group, read from runtime/sources.json: the one description that SConstruct (dtorch-run,
the tests, the fuzz and sanitizer builds), setup.py (dtorch.runtime._C) and dtorch.edge.build_plan (board builds)
pick their files from.

A group is a list of files (kept in its order, each must exist) or of globs (each sorted), or the ISA kernel sets
(``"kernel_sets": true``: every runtime/kernels/<set>/ with a kernel_set.json, see kernel_sets.py). Every .cc file
under runtime/ belongs to exactly one group (`unclaimed` and `claimed_twice` say where it does not).

Standard library and kernel_sets.py only: setup.py loads this module by path, before dtorch is installed.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from .kernel_sets import KernelSet, kernel_sets

__all__ = ["BARE_METAL", "RUNTIME", "SourceGroups", "SourcesError", "load_sources"]

#: The groups every hosted runtime build (Linux host and boards) links, in link order (the ISA sets, where a build
#: has them, come after).
RUNTIME = ("core", "hosted", "common", "portable")
#: ... and every bare-metal firmware (dtorch/edge/firmware.py): the heapless core and its bare-metal platform layer.
BARE_METAL = ("core", "baremetal", "common", "portable")

DESCRIPTION = "sources.json"


class SourcesError(ValueError):
    """runtime/sources.json is unreadable or malformed, or names a group or a file that does not exist."""


@dataclass(frozen=True)
class SourceGroups:
    runtime: Path                                # the runtime folder the paths are relative to
    groups: dict[str, dict]                      # name -> its entry in sources.json

    def kernel_sets(self, arch: str | None = None) -> list[KernelSet]:
        """The ISA kernel sets (the "isa" group), only those built for `arch` when it is given."""
        return kernel_sets(self.runtime, arch)

    def paths(self, *names: str, arch: str | None = None) -> list[Path]:
        """The absolute paths of the groups `names`, group after group; the ISA group holds the sets built for
        `arch` (all of them when it is None)."""
        out: list[Path] = []
        for name in names:
            entry = self.groups.get(name)
            if entry is None:
                raise SourcesError(f"{self.runtime / DESCRIPTION} has no source group {name!r}; the groups are "
                                   f"{', '.join(self.groups)}")
            if entry.get("kernel_sets"):
                out += [p for ks in self.kernel_sets(arch) for p in ks.sources()]
            for rel in entry.get("files", ()):
                p = self.runtime / rel
                if not p.is_file():
                    raise SourcesError(f"{self.runtime / DESCRIPTION}: group {name!r} names {rel}, which does not "
                                       f"exist; remove it or restore the file")
                out.append(p)
            globbed: list[Path] = []
            for pattern in entry.get("glob", ()):
                globbed += [p for p in sorted(self.runtime.glob(pattern)) if p not in globbed]
            out += globbed
        return out

    def files(self, *names: str, arch: str | None = None) -> list[str]:
        """The same as paths relative to the runtime folder, with / separators ("hosted/executor.cc")."""
        return [p.relative_to(self.runtime).as_posix() for p in self.paths(*names, arch=arch)]

    def owners(self) -> dict[str, list[str]]:
        """Every .cc file under the runtime folder (relative path) -> the groups that hold it."""
        found: dict[str, list[str]] = {p.relative_to(self.runtime).as_posix(): [] for p in self.runtime.rglob("*.cc")}
        for name in self.groups:
            for rel in self.files(name):
                found.setdefault(rel, []).append(name)
        return found

    def unclaimed(self) -> list[str]:
        """The .cc files no group holds (a build would never compile them)."""
        return sorted(f for f, g in self.owners().items() if not g)

    def claimed_twice(self) -> dict[str, list[str]]:
        """The files more than one group holds (a build that picks both would link them twice)."""
        return {f: g for f, g in sorted(self.owners().items()) if len(g) > 1}


def load_sources(runtime_dir: str | os.PathLike[str]) -> SourceGroups:
    """Read runtime_dir/sources.json; raises SourcesError naming the file and what is wrong."""
    runtime = Path(runtime_dir)
    path = runtime / DESCRIPTION
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SourcesError(f"cannot read the runtime's source description {path}: {e}") from None
    groups = data.get("groups") if isinstance(data, dict) else None
    if not isinstance(groups, dict) or not groups:
        raise SourcesError(f"{path} must hold a 'groups' mapping of group name -> {{files | glob | kernel_sets}}")
    for name, entry in groups.items():
        lists = [k for k in ("files", "glob") if k in entry] if isinstance(entry, dict) else []
        ok = isinstance(entry, dict) and (lists or entry.get("kernel_sets") is True) and all(
            isinstance(entry[k], list) and all(isinstance(s, str) for s in entry[k]) for k in lists)
        if not ok:
            raise SourcesError(f"{path}: group {name!r} must have a 'files' or 'glob' list of paths relative to "
                               f"{runtime}, or 'kernel_sets': true")
    return SourceGroups(runtime, groups)
