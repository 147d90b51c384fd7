"""File I/O with the project's guarantees.

- `write_atomic` (DESIGN.md "Conventions": temp file in the same folder, fsync, rename): a reader sees the old file
  or the whole new one; a failed write leaves no partial or temporary file behind, and the temporary files of
  writers that were killed (their pid is in the name) are removed by the next write to the same target.
- `read_regular`: the bytes of a regular file; a FIFO, device, socket or directory is refused at once, with one
  line, instead of blocking or reading without end.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
import tempfile
from pathlib import Path

__all__ = ["NotRegularFileError", "read_regular", "write_atomic"]

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class NotRegularFileError(OSError):
    """The path names something that is not a regular file; `strerror` is the one-line reason."""


def read_regular(path: str | os.PathLike[str], *, limit: int | None = None) -> bytes:
    """The bytes of `path`, which must be a regular file (symbolic links are followed) of at most `limit` bytes.
    Raises NotRegularFileError (an OSError) for anything else, and OSError as open/read do."""
    # O_NONBLOCK: opening a FIFO without a writer would block; on a regular file it changes nothing.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((what for test, what in _KINDS if test(st.st_mode)), "not a regular file")
            raise NotRegularFileError(errno.EINVAL, f"{os.fspath(path)} is {kind}, not a regular file")
        if limit is not None and st.st_size > limit:
            raise NotRegularFileError(errno.EFBIG, f"{os.fspath(path)} has {st.st_size} bytes, more than the "
                                                   f"{limit} this reads")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as f:
            fd = -1  # the file object owns it now
            return f.read()
    finally:
        if fd >= 0:
            os.close(fd)


def write_atomic(path: str | os.PathLike[str], data: bytes | str, mode: int | None = None) -> None:
    """Write `data` (str as UTF-8) to `path` atomically; `mode` sets the file's permissions (default: mkstemp's
    0600 widened by the umask like a normal open). Raises OSError (the caller words it for its user)."""
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    raw = data.encode("utf-8") if isinstance(data, str) else data
    _remove_stale_temps(parent, p.name)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.{os.getpid()}.", suffix=".tmp", dir=parent)
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


def _remove_stale_temps(folder: Path, name: str) -> None:
    """Delete `.NAME.PID.XXXX.tmp` files of writers to `name` whose process no longer exists (killed mid-write)."""
    pattern = re.compile(r"\." + re.escape(name) + r"\.(\d+)\.[A-Za-z0-9_]+\.tmp")
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for e in entries:
        m = pattern.fullmatch(e.name)
        if m is None or int(m.group(1)) == os.getpid() or pid_alive(int(m.group(1))):
            continue
        try:
            os.unlink(e.path)
        except OSError:
            pass


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists (one we may not signal counts as alive: its files are left alone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # someone else's process (or not a pid we can ask about): leave its file alone
    return True


def sha256_file(path: str | os.PathLike[str]) -> str:
    """The sha256 (hex) of a file's bytes, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
