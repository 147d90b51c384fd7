"""The errors of `dtorch.onnx`."""

from __future__ import annotations

from .._export.errors import ExportError

__all__ = ["OnnxImportError", "OnnxMissingError"]


class OnnxImportError(ExportError):
    """An ONNX model that cannot be imported: the message names the node, its operator and opset, and why."""


class OnnxMissingError(OnnxImportError, ImportError):
    """The optional `onnx` package is not installed."""


def require_onnx(what: str) -> None:
    try:
        import onnx  # noqa: F401
    except ImportError as e:
        raise OnnxMissingError(f"{what} needs the 'onnx' package, which is not installed: pip install 'dtorch[onnx]' "
                               f"(or pip install onnx)") from e
