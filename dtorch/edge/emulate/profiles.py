"""Emulator profiles: emulation/profiles/<kind>.toml, one per way of running a board's binaries here (QEMU user
mode, native). A board's file names its profile's kind in [emulator]; a new emulator is one profile file (and a
runner that knows how to start it)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from .errors import EmulateError

__all__ = ["EmulatorProfile", "load_profiles", "profile_for"]


@dataclass(frozen=True)
class EmulatorProfile:
    kind: str
    description: str
    runners: tuple[str, ...]
    plugins: bool = False
    apt_package: str = ""
    static_apt_package: str = ""
    static_suffix: str = ""
    path: Path | None = None


def load_profiles(root: str | os.PathLike[str] | None = None) -> dict[str, EmulatorProfile]:
    from ..resources import resource_root

    folder = Path(root if root is not None else resource_root()) / "emulation" / "profiles"
    out: dict[str, EmulatorProfile] = {}
    for p in sorted(folder.glob("*.toml")):
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            raise EmulateError(f"cannot read emulator profile {p}: {e}") from None
        kind = data.get("kind")
        runners = data.get("runners")
        if kind != p.stem or not isinstance(runners, list) or not all(isinstance(r, str) for r in runners):
            raise EmulateError(f"emulator profile {p}: 'kind' must be {p.stem!r} and 'runners' a list of runner names")
        out[kind] = EmulatorProfile(kind=kind, description=str(data.get("description", "")), runners=tuple(runners),
                                    plugins=bool(data.get("plugins", False)),
                                    apt_package=str(data.get("apt_package", "")),
                                    static_apt_package=str(data.get("static_apt_package", "")),
                                    static_suffix=str(data.get("static_suffix", "")), path=p)
    return out


def profile_for(board, root: str | os.PathLike[str] | None = None) -> EmulatorProfile:  # type: ignore[no-untyped-def]
    """The profile a board runs under, or EmulateError saying why there is none."""
    profiles = load_profiles(root)
    kind = board.emulator.kind
    if kind not in profiles:
        have = ", ".join(sorted(profiles)) or "none"
        why = ("its board file has no [emulator] table" if kind == "none"
               else f"its [emulator] kind {kind!r} matches no emulator profile")
        raise EmulateError(f"board {board.name!r} cannot be emulated here: {why} (emulation/profiles/ has: {have}); "
                           f"run it on the board itself (dtorch-edge flash) or add an [emulator] table to "
                           f"{board.path or 'its board file'}")
    return profiles[kind]
