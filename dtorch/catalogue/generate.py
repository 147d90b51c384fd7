"""Write (or check) what is generated from the operator catalogue.

    python -m dtorch.catalogue.generate            # rewrite runtime/core/ops_generated.h and runtime/OPS.md
    python -m dtorch.catalogue.generate --check    # exit 1, naming each stale file, when one differs

Both outputs are pure functions of dtorch.catalogue (`render_header`, `render_ops_md`); tests/test_catalogue.py
compares them with the checked-in files.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import sys
from pathlib import Path

from . import CATALOGUE, FUSED_ACTIVATIONS, OPSET, Attr, OpDef

__all__ = ["HEADER", "OPS_MD", "outputs", "render_header", "render_ops_md"]

ROOT = Path(__file__).resolve().parents[2]
HEADER = "runtime/core/ops_generated.h"
OPS_MD = "runtime/OPS.md"

_KIND = {"int": "kInt", "float": "kFloat", "ints": "kInts", "floats": "kFloats", "string": "kString"}
_DT = {"float32": "kFloat32", "float16": "kFloat16", "bfloat16": "kBFloat16", "float64": "kFloat64", "int64": "kInt64",
       "int32": "kInt32", "int16": "kInt16", "int8": "kInt8", "uint8": "kUInt8", "bool": "kBool"}
_INPLACE = {"none": "kNone", "always": "kAlways", "same_shape": "kSameShape"}


def _num(x: float) -> str:
    r = repr(float(x))
    return r if any(c in r for c in ".en") else r + ".0"


def _cstr(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


class _Pool:
    """Shared constant arrays (one per distinct content), declared before the schemas that point at them."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[tuple[str, tuple[str, ...]], str] = {}

    def array(self, ctype: str, items: tuple[str, ...], hint: str) -> str:
        key = (ctype, items)
        if key not in self.names:
            # Named by content, so a name never changes meaning when entries are added (an object built before
            # the change and one after must not disagree on what `dtypes_...` holds).
            name = f"{hint}_{hashlib.sha256(repr(key).encode()).hexdigest()[:10]}"
            self.names[key] = name
            self.lines.append(f"inline constexpr {ctype} {name}[] = {{{', '.join(items)}}};")
        return self.names[key]


def _attr_spec(a: Attr, pool: _Pool) -> str:
    lo_n, hi_n = a.length_range if a.type in ("ints", "floats") else (0, -1)
    schoices, n_s, ichoices, n_i = "nullptr", 0, "nullptr", 0
    if a.choices is not None and a.type == "string":
        schoices = pool.array("const char* const", tuple(_cstr(str(c)) for c in a.choices), "string_choices")
        n_s = len(a.choices)
    elif a.choices is not None:
        ichoices = pool.array("int64_t", tuple(str(int(c)) for c in a.choices), "int_choices")
        n_i = len(a.choices)
    fields = [_cstr(a.name), f"AttrKind::{_KIND[a.type]}", "true" if a.required else "false",
              "true" if a.lo is not None else "false", "true" if a.hi is not None else "false",
              _num(a.lo if a.lo is not None else 0.0), _num(a.hi if a.hi is not None else 0.0), str(lo_n), str(hi_n),
              schoices, str(n_s), ichoices, str(n_i), *_default(a, pool)]
    return "{" + ", ".join(fields) + "}"


def _default(a: Attr, pool: _Pool) -> list[str]:
    """AttrSpec's has_default, default_num, default_str, default_list, n_default."""
    d = a.default
    if a.required or d is None:
        return ["false", "0.0", "nullptr", "nullptr", "0"]
    if a.type in ("int", "float"):
        return ["true", _num(float(d)), "nullptr", "nullptr", "0"]  # type: ignore[arg-type]
    if a.type == "string":
        return ["true", "0.0", _cstr(str(d)), "nullptr", "0"]
    items = tuple(_num(float(x)) for x in d)  # type: ignore[attr-defined]
    return ["true", "0.0", "nullptr", pool.array("double", items, "defaults") if items else "nullptr", str(len(items))]


def _schema(op: OpDef, pool: _Pool) -> list[str]:
    v = f"op_{op.name}"
    out = [f"// {op.name}: {op.summary}"]
    attrs = "nullptr"
    if op.attrs:
        attrs = f"{v}_attrs"
        out.append(f"inline constexpr AttrSpec {attrs}[] = {{")
        out += [f"    {_attr_spec(a, pool)}," for a in op.attrs]
        out.append("};")
    sigs = []
    for s in op.signatures:
        ins = pool.array("DType", tuple(f"DType::{_DT[d]}" for d in s.inputs), "dtypes")
        outs = pool.array("DType", tuple(f"DType::{_DT[d]}" for d in s.outputs), "dtypes")
        sigs.append(f"{{{ins}, {len(s.inputs)}, {outs}, {len(s.outputs)}}}")
    out.append(f"inline constexpr DTypeSignature {v}_signatures[] = {{{', '.join(sigs)}}};")
    dtype_attr = "nullptr" if op.dtype_attr is None else _cstr(op.dtype_attr)
    out.append(f"inline constexpr OpSchema {v} = {{{_cstr(op.name)}, {op.min_inputs}, {op.max_inputs}, "
               f"0x{op.optional_mask:x}, {len(op.outputs)}, {attrs}, {len(op.attrs)}, {v}_signatures, "
               f"{len(op.signatures)}, InPlace::{_INPLACE[op.inplace]}, {dtype_attr}}};")
    return out


def render_header() -> str:
    pool = _Pool()
    body: list[str] = []
    for op in CATALOGUE.values():
        body += _schema(op, pool) + [""]
    acts = ", ".join(_cstr(a) for a in ("none", *FUSED_ACTIVATIONS))
    lines = [
        "// Generated from dtorch/catalogue by `python -m dtorch.catalogue.generate`; do not edit by hand.",
        "// One OpSchema per operator (core/op_schema.h), named op_<name>; kernel registrations point at them.",
        "#pragma once",
        "",
        "#include <cstdint>",
        "",
        "#include \"core/op_schema.h\"",
        "",
        "namespace dtorch {",
        "namespace ops {",
        "",
        f"constexpr uint32_t kOpset = {OPSET};",
        "",
        "// The values of the fused `activation` attribute, in the order of kernels::ActKind.",
        f"inline constexpr const char* const kFusedActivations[] = {{{acts}}};",
        "",
        *pool.lines,
        "",
        *body,
        "}  // namespace ops",
        "}  // namespace dtorch",
        "",
    ]
    return "\n".join(lines)


def _attr_doc(a: Attr) -> str:
    t = {"int": "i", "float": "f", "ints": "is", "floats": "fs", "string": "s"}[a.type]
    lo_n, hi_n = a.length_range
    if a.type in ("ints", "floats") and a.length is not None:
        t += f"[{lo_n}]" if lo_n == hi_n else f"[{lo_n}..{hi_n if hi_n >= 0 else ''}]"
    parts = [f"`{a.name}` {t}"]
    if a.choices is not None:
        parts.append("in {" + ", ".join(str(c) if not isinstance(c, str) else f'"{c}"' for c in a.choices) + "}")
    elif a.lo is not None or a.hi is not None:
        lo = "" if a.lo is None else f"{a.lo:g}"
        hi = "" if a.hi is None else f"{a.hi:g}"
        parts.append(f"in [{lo}, {hi}]")
    if a.required:
        parts.append("required")
    elif a.default is not None:
        d = a.default
        parts.append(f"default {d!r}" if not isinstance(d, list) else f"default {d}")
    if a.doc:
        parts.append(f"({a.doc})")
    return " ".join(parts)


def render_ops_md() -> str:
    lines = [
        f"# Operators of the .dtm format (opset {OPSET})",
        "",
        "Generated from dtorch/catalogue by `python -m dtorch.catalogue.generate`; do not edit by hand (the",
        "catalogue is the one place an operator is described; tests/test_catalogue.py fails when this file is",
        "stale).",
        "",
        "One name per operator: the `.dtm` `Node.op`, the kernel registry key, the kernel file name",
        "(`runtime/kernels/portable/<op>.cc`) and the catalogue entry. Tensors are row-major and contiguous in",
        "the runtime. Inputs are listed in order; `?` marks an optional input (-1 in the file), `...` a variadic",
        "one. Attribute types: i = int, f = float, is = ints, fs = floats, s = string; a model file whose node",
        "carries an attribute not listed, of another type, or outside its legal values is refused at load, and",
        "so is a node whose input or output dtypes match none of its signatures. Several signatures may share",
        "their first input's dtype (the kernel registry key: one kernel serves them); a node matches one in full.",
        "cast's output dtype is its `to` attribute: output 0 must be declared with it. The eager semantics",
        "(PyTorch's) are the specification; kernels are checked against eager mode.",
        "",
        "Fused activation (`activation`): " + ", ".join(f'"{a}"' for a in ("none", *FUSED_ACTIVATIONS)) +
        "; hardtanh uses `min_val`/`max_val`, leaky_relu `alpha`; relu6 is hardtanh(0, 6), gelu_tanh the tanh",
        "approximation of gelu. Applied elementwise to the op's result.",
        "",
        "| op | inputs -> outputs | attributes | dtypes | shape | in place | eager |",
        "|---|---|---|---|---|---|---|",
    ]
    for op in CATALOGUE.values():
        ins = ", ".join(f"{i.name}{'?' if i.optional else ''}{'...' if i.variadic else ''}"
                        + (f" {i.doc}" if i.doc else "") for i in op.inputs)
        outs = ", ".join(o.name for o in op.outputs)
        attrs = "; ".join(_attr_doc(a) for a in op.attrs) or "-"
        sigs = "; ".join(f"({', '.join(s.inputs)}) -> {', '.join(s.outputs)}" for s in op.signatures)
        inplace = {"none": "-", "always": "yes", "same_shape": "same shape"}[op.inplace]
        cells = [op.name, f"{ins} -> {outs}: {op.summary}", attrs, sigs, op.shape, inplace, ", ".join(op.eager) or "-"]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")  # `|x|` must not split a cell
    lines.append("")
    return "\n".join(lines)


def outputs() -> dict[str, str]:
    return {HEADER: render_header(), OPS_MD: render_ops_md()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dtorch.catalogue.generate", description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only check; exit 1 when a generated file is stale")
    ap.add_argument("--root", type=Path, default=ROOT, help="the source tree (default: this checkout)")
    args = ap.parse_args(argv)
    stale = 0
    for rel, text in outputs().items():
        path = args.root / rel
        old = path.read_text() if path.exists() else ""
        if old == text:
            continue
        if args.check:
            stale += 1
            print(f"{rel} is stale; run python -m dtorch.catalogue.generate", file=sys.stderr)
            sys.stderr.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True), rel, rel, n=1))
        else:
            from .._fileio import write_atomic

            write_atomic(path, text)
            print(f"wrote {rel}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
