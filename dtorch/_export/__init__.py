"""Export to `.dtm`: `dt.export` traces a model into a graph of runtime/OPS.md operators, optimizes it (constant
folding, identity removal, BatchNorm folding, activation fusion, dead-code elimination), plans its memory and
writes one FlatBuffer file with 64-byte aligned weight segments. `read_dtm` parses a file back (for
`dtorch-edge inspect` and the tests)."""

from __future__ import annotations

from .errors import DtmFormatError, ExportError
from .exporter import ExportResult, export
from .lower import EXPORTABLE_OPS

__all__ = ["EXPORTABLE_OPS", "DtmFormatError", "ExportError", "ExportResult", "export", "read_dtm"]


def __getattr__(name: str):  # type: ignore[no-untyped-def]
    if name == "read_dtm":
        from .reader import read_dtm

        return read_dtm
    raise AttributeError(f"module 'dtorch._export' has no attribute {name!r}")
