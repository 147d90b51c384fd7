"""Int8 quantization: `quantize` a float model (a module, or a `.dtm` from `dt.export` or an ONNX import) with
calibration data, `dt.export` the result, and `compare` it with the float model layer by layer.

    qmodel = dt.quant.quantize(model, calib_loader, method="minmax", per_channel=True, num_batches=32)
    dt.export(qmodel, example_input, "model_int8.dtm")
    report = dt.quant.compare(model, qmodel, val_loader)   # top-1 agreement, accuracy delta, per-layer error
    print(report.table())

The integer scheme (per-channel symmetric int8 weights, per-tensor asymmetric int8 activations, int32 biases,
integer-only requantization) is in `_fixed_point` (the reference the C++ kernels follow bit for bit)."""

from __future__ import annotations

from ._compare import CompareReport, LayerError, compare
from ._quantizer import QUANTIZABLE_OPS, LayerQuant, QuantizationError, QuantizedModel, quantize
from .observers import METHODS

__all__ = ["METHODS", "QUANTIZABLE_OPS", "CompareReport", "LayerError", "LayerQuant", "QuantizationError",
           "QuantizedModel", "compare", "quantize"]
