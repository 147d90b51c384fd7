"""Errors of `dt.export` and of reading `.dtm` files: each says what was wrong and what to do."""

from __future__ import annotations

__all__ = ["DtmFormatError", "ExportError"]


class ExportError(RuntimeError):
    """The model (or the arguments of `dt.export`) cannot be exported; the message says why and what to do."""


class DtmFormatError(ValueError):
    """A `.dtm` file is missing, corrupt, or from an incompatible format version."""
