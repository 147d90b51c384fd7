"""Atomic file writes (DESIGN.md "Conventions": temp file in the same folder, fsync, rename): a reader sees the
old file or the whole new one, and a failed write leaves no partial or temporary file behind."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["write_atomic"]


def write_atomic(path: str | os.PathLike[str], data: bytes | str, mode: int | None = None) -> None:
    """Write `data` (str as UTF-8) to `path` atomically; `mode` sets the file's permissions (default: mkstemp's
    0600 widened by the umask like a normal open). Raises OSError (the caller words it for its user)."""
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=parent)
    try:
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
