"""ONNX in and out.

- `import_model(model.onnx, model.dtm, dynamic_axes=None, input_shapes=None)`: an ONNX model (opsets 11 to 24)
  as a `.dtm`, through the same passes and memory plan as `dt.export`; returns an `ImportReport`.
- `export(model, example, "model.onnx", opset_version=17)`: a DTorch module out as standard ONNX.
- `supported_ops()`: the ONNX operators the importer translates.

Int8: a quantized ONNX model (onnxruntime.quantization's QDQ or QOperator format, uint8 or int8 activations, per-tensor
or per-channel weights) imports into the int8 operators (dtorch/onnx/_qdq.py), and an int8 model (`dt.quant.quantize`,
or an int8 `.dtm` path) exports as QDQ, which ONNX Runtime runs and `import_model` reads back bit for bit.

Both need the optional `onnx` package (`pip install 'dtorch[onnx]'`); the parity check of an import uses
ONNX Runtime when it is installed.
"""

from __future__ import annotations

from typing import Any

from .errors import OnnxImportError, OnnxMissingError

__all__ = ["ImportReport", "OnnxImportError", "OnnxMissingError", "export", "import_model", "supported_ops"]


def __getattr__(name: str) -> Any:
    if name in ("import_model", "ImportReport"):
        from . import importer

        return getattr(importer, name)
    if name == "supported_ops":
        from ._registry import supported_ops

        return supported_ops
    if name == "export":
        from .exporter import export

        return export
    raise AttributeError(f"module 'dtorch.onnx' has no attribute {name!r}")
