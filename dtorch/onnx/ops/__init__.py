"""ONNX operator translators, one module per family; each registers its functions with `@translates`
(dtorch/onnx/_registry.py). Every module here is read, so a new family needs no edit elsewhere."""
