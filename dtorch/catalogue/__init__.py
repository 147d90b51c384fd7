"""The operator catalogue: one entry (`OpDef`) per `.dtm` operator, the single source of what an operator is.

Entries live in this package's family modules (activations.py, conv.py, ...), each a list `OPS`; every module
here is read, so a new family file needs no edit elsewhere. Generated from the catalogue
(`python -m dtorch.catalogue.generate`, checked by tests/test_catalogue.py):

- runtime/core/ops_generated.h: the C++ schema of every operator (arity, typed attributes with defaults and
  legal values, dtype signatures, the in-place rule), which each kernel's registration references and the
  loader holds every model file against;
- runtime/OPS.md: the operator reference.

Read from it at import time: the exporter's exportable-op list and lowering check, the planner's in-place
sets, the activation-fusion tables, and the Python reader's attribute and dtype checks (`check_node`).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ._schema import (
    ACTIVATION_ATTRS,
    ATTR_TYPES,
    DTYPES,
    FUSED_ACTIVATIONS,
    REQUIRED,
    Attr,
    OpDef,
    Operand,
    Signature,
)

__all__ = ["ACTIVATION_ATTRS", "ATTR_TYPES", "CATALOGUE", "DTYPES", "FUSED_ACTIVATIONS", "OPSET", "REQUIRED", "Attr",
           "OpDef", "Operand", "Signature", "attr_errors", "check_node", "signature_for"]

#: The opset the catalogue describes (the .dtm `Model.opset` dtorch writes).
OPSET = 13


def _collect() -> dict[str, OpDef]:
    found: dict[str, OpDef] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_") or info.name == "generate":
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        for op in getattr(mod, "OPS", ()):
            if op.name in found:
                raise RuntimeError(f"operator '{op.name}' is defined twice in dtorch.catalogue")
            if not op.name.isidentifier() or not op.name.isascii() or op.name != op.name.lower():
                raise RuntimeError(f"operator name {op.name!r} must be a lower-case ASCII identifier")
            found[op.name] = op
    return dict(sorted(found.items()))


#: Every operator, by name, sorted.
CATALOGUE: Mapping[str, OpDef] = _collect()


def attr_errors(op: OpDef, attrs: Mapping[str, Any], types: Mapping[str, str]) -> list[str]:
    """What is wrong with a node's attributes against the catalogue (empty when nothing is). `types` gives each
    attribute's stored .dtm type (ATTR_TYPES)."""
    errs: list[str] = []
    for name, v in attrs.items():
        spec = op.attr(name)
        allowed = ", ".join(a.name for a in op.attrs) or "none"
        if spec is None:
            errs.append(f"attribute '{name}' is not an attribute of {op.name} (allowed: {allowed})")
            continue
        got = types[name]
        if got != spec.type and not (spec.type == "floats" and got == "ints" and len(list(v)) == 0):
            errs.append(f"attribute '{name}' is {got}, but {op.name} takes {spec.type}")
            continue
        errs += [f"attribute '{name}' {e}" for e in _value_errors(spec, v)]
    for spec in op.attrs:
        if spec.required and spec.name not in attrs:
            errs.append(f"missing required attribute '{spec.name}' ({spec.type})")
    return errs


def _value_errors(spec: Attr, v: Any) -> Iterable[str]:
    values = list(v) if spec.type in ("ints", "floats") else [v]
    if spec.type in ("ints", "floats"):
        lo_n, hi_n = spec.length_range
        if len(values) < lo_n or (hi_n >= 0 and len(values) > hi_n):
            want = str(lo_n) if lo_n == hi_n else f"{lo_n} to {hi_n if hi_n >= 0 else 'any'}"
            yield f"has {len(values)} values, expected {want}"
            return
    for x in values:
        if spec.choices is not None and x not in spec.choices:
            yield f"is {x!r}, expected one of {', '.join(map(repr, spec.choices))}"
            return
        if spec.type != "string" and ((spec.lo is not None and x < spec.lo) or (spec.hi is not None and x > spec.hi)):
            yield f"is {x!r}, outside [{spec.lo if spec.lo is not None else '-inf'}, " \
                  f"{spec.hi if spec.hi is not None else 'inf'}]"
            return


def check_node(op_name: str, attrs: Mapping[str, Any], types: Mapping[str, str], input_dtypes: list[str | None],
               output_dtypes: list[str]) -> list[str]:
    """Everything the catalogue says about one node: the operator exists, the arity, the attributes and the
    dtypes (None = an absent optional input). Returns the problems, each one line."""
    op = CATALOGUE.get(op_name)
    if op is None:
        return [f"unknown operator {op_name!r} (not in the opset {OPSET} catalogue)"]
    errs: list[str] = []
    n = len(input_dtypes)
    if n < op.min_inputs or (op.max_inputs >= 0 and n > op.max_inputs):
        errs.append(f"{op.name} takes {op.min_inputs}..{'any' if op.max_inputs < 0 else op.max_inputs} inputs, "
                    f"got {n}")
    for i, d in enumerate(input_dtypes):
        if d is None and not op.input_slot(i).optional:
            errs.append(f"input {i} ({op.input_slot(i).name}) is required")
    if len(output_dtypes) != len(op.outputs):
        errs.append(f"{op.name} has {len(op.outputs)} output(s), got {len(output_dtypes)}")
    errs += attr_errors(op, attrs, types)
    if errs:
        return errs
    key = next((d for d in input_dtypes if d is not None), None)
    cands = [s for s in op.signatures if s.key == key]
    if not cands:
        return [f"{op.name} has no kernel for {key} inputs (it takes "
                f"{', '.join(dict.fromkeys(s.key for s in op.signatures))})"]
    if op.dtype_attr is not None and output_dtypes and output_dtypes[0] != attrs[op.dtype_attr]:
        want = attrs[op.dtype_attr]
        return [f"output 0 is declared {output_dtypes[0]}, but {op.name} with {op.dtype_attr}=\"{want}\" writes {want}"]
    if any(s.accepts(input_dtypes) and tuple(output_dtypes) == s.outputs for s in cands):
        return []
    others = f" ({op.name}'s {key} signatures: {'; '.join(map(str, cands))})" if len(cands) > 1 else ""
    fits = [s for s in cands if s.accepts(input_dtypes)]
    if not fits:  # the candidate that matches the most inputs, and its first mismatch
        sig = max(cands, key=lambda s: sum(d == s.input_dtype(i) for i, d in enumerate(input_dtypes)))
        i, d = next((i, d) for i, d in enumerate(input_dtypes) if d is not None and d != sig.input_dtype(i))
        return [f"input {i} ({op.input_slot(i).name}) is {d}, but {op.name} takes {sig.input_dtype(i)}{others}"]
    if op.dtype_attr is not None:  # declared as `to` says, but no such signature (a cast to the input's own dtype)
        return [f"({', '.join(d for d in input_dtypes if d is not None)}) -> {', '.join(output_dtypes)} is not a "
                f"signature of {op.name}{others}"]
    sig = fits[0]
    k, d = next((k, d) for k, d in enumerate(output_dtypes) if d != sig.outputs[k])
    return [f"output {k} is declared {d}, but {op.name}'s kernel writes {sig.outputs[k]}"]


def signature_for(op: OpDef | str, input_dtypes: Sequence[str | None],
                  attrs: Mapping[str, Any] | None = None) -> Signature | None:
    """The signature a node of `op` with these input dtypes (None: an absent optional input) runs: the first whose
    inputs match, and for an operator whose output dtype is an attribute (`OpDef.dtype_attr`: cast's `to`), whose
    output 0 is that attribute's value in `attrs`. Its `outputs` are the dtypes the node's outputs must be declared
    with. None when no signature fits."""
    entry = CATALOGUE[op] if isinstance(op, str) else op
    want = None if entry.dtype_attr is None else (attrs or {}).get(entry.dtype_attr)
    return next((s for s in entry.signatures
                 if s.accepts(input_dtypes) and (entry.dtype_attr is None or s.outputs[0] == want)), None)
