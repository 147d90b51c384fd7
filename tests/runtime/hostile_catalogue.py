"""Structurally valid .dtm files that lie, one class per way a file can disagree with the operator catalogue.

For every operator of dtorch.catalogue: each attribute stored with each wrong type (and with a type tag the
format does not define), an unknown attribute, an attribute name with an embedded NUL, each output declared with
each wrong dtype, each non-key input with each wrong dtype, and operator names with an embedded NUL or a suffix;
and memory plans that lie (plan_cases: overlapping live tensors, offsets outside the arena or unaligned).
`cases()` yields (label, file bytes, what the error must mention). The files pass the FlatBuffers verifier; the
loader must refuse each with one clear line (tests/runtime/test_catalogue_hostile.py, and under ASan + UBSan in
tests/runtime/test_fuzz.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from dtm_builder import DtmBuilder, RawAttr

from dtorch.catalogue import ATTR_TYPES, CATALOGUE, DTYPES, Attr, OpDef

_SHAPE = [1, 2, 4, 4]
_UNKNOWN_TYPE_TAG = 9


@dataclass(frozen=True)
class Case:
    label: str
    data: bytes
    expect: str  # a fragment the refusal must contain


def _valid(a: Attr) -> object:
    """A value of the attribute's type inside its legal values."""
    lo_n, _ = a.length_range
    n = max(lo_n, 1) if a.type in ("ints", "floats") else 0
    if a.choices is not None:
        v = a.choices[0]
        return [v] * n if a.type in ("ints", "floats") else v
    base = a.lo if a.lo is not None and a.lo > 0 else (1 if a.type in ("int", "ints") else 1.0)
    if a.type == "int":
        return int(base)
    if a.type == "float":
        return float(base)
    if a.type == "ints":
        return [int(base)] * n
    if a.type == "floats":
        return [float(base)] * n
    return "x"


def _wrong(type_code: int) -> RawAttr:
    """An attribute of type `type_code` with a payload of that type (or of none: the unknown tag)."""
    name = ATTR_TYPES[type_code] if type_code < len(ATTR_TYPES) else "?"
    if name == "int":
        return RawAttr(type_code, i=1)
    if name == "float":
        return RawAttr(type_code, f=1.5)
    if name == "ints":
        return RawAttr(type_code, ints=(1, 1))
    if name == "floats":
        return RawAttr(type_code, floats=(1.5, 1.5))
    if name == "string":
        return RawAttr(type_code, s="relu")
    return RawAttr(type_code, i=1, f=1.0)


def model(op: OpDef, *, attrs: dict[str, object] | None = None, out_dtype: str | None = None,
          in_dtypes: dict[int, str] | None = None, op_name: str | None = None) -> bytes:
    """One node of `op` fed by model inputs of its first signature's dtypes, required attributes valid."""
    sig = op.signatures[0]
    g = DtmBuilder()
    ins = []
    n_in = len(op.inputs) + (1 if op.max_inputs < 0 else 0)
    for i in range(n_in):
        if op.input_slot(i).optional:
            ins.append(-1)
            continue
        dt = (in_dtypes or {}).get(i, sig.input_dtype(i))
        ins.append(g.input(f"in{i}", _SHAPE if dt.startswith("float") else [2], dt))
    while ins and ins[-1] == -1:
        ins.pop()
    outs = [g.output(f"out{k}", _SHAPE, out_dtype if (out_dtype and k == 0) else d)
            for k, d in enumerate(sig.outputs)]
    a = {x.name: _valid(x) for x in op.attrs if x.required}
    a.update(attrs or {})
    g.node(op_name or op.name, ins, outs, a)
    return g.build()


def cases() -> Iterator[Case]:
    for op in CATALOGUE.values():
        sig = op.signatures[0]
        for a in op.attrs:
            want = ATTR_TYPES.index(a.type)
            for code in [*range(len(ATTR_TYPES)), _UNKNOWN_TYPE_TAG]:
                if code == want or (a.type == "floats" and code == ATTR_TYPES.index("ints")):
                    continue  # an empty ints list is a legal empty floats list; the payload here is not empty
                yield Case(f"{op.name}.{a.name}:{ATTR_TYPES[code] if code < 5 else 'tag9'}",
                           model(op, attrs={a.name: _wrong(code)}), f"'{a.name}'")
            if a.type == "floats":
                yield Case(f"{op.name}.{a.name}:ints", model(op, attrs={a.name: _wrong(2)}), f"'{a.name}'")
        yield Case(f"{op.name}.unknown-attr", model(op, attrs={"bogus": 1}), "'bogus' is not an attribute")
        if op.attrs:
            yield Case(f"{op.name}.nul-attr-name", model(op, attrs={op.attrs[0].name + "\0x": _valid(op.attrs[0])}),
                       "NUL")
        for d in DTYPES:
            if d != sig.outputs[0]:
                yield Case(f"{op.name}.out:{d}", model(op, out_dtype=d), f"declared {d}")
        for i in range(1, len(op.inputs)):
            if op.inputs[i].optional:
                continue
            for d in DTYPES:
                ins: list[str | None] = [sig.input_dtype(j) for j in range(len(op.inputs))]
                ins[i] = d
                # a dtype another signature takes with the same outputs is no lie (gather_elements' int32 index)
                if not any(s.accepts(ins) and s.outputs == sig.outputs for s in op.signatures):
                    yield Case(f"{op.name}.in{i}:{d}", model(op, in_dtypes={i: d}), f"is {d}")
        yield Case(f"{op.name}.nul-op-name", model(op, op_name=op.name + "\0evil"), "NUL")
    relu = CATALOGUE["relu"]
    yield Case("relu.suffix-op-name", model(relu, op_name="reluX"), "'reluX'")
    yield from plan_cases()


def plan_model(offsets: list[int], arena: int, *, middle: str = "sigmoid", example_shapes: bool = True) -> bytes:
    """x -> relu -> a -> `middle` -> b -> relu -> y, with the given memory plan (tensors x, y, a, b; 64 bytes each).

    a dies where `middle` produces b, so a and b may share a buffer only when `middle` runs in place."""
    g = DtmBuilder()
    x, y = g.input("x", [1, 16]), g.output("y", [1, 16])
    a, b = g.tensor("a", [1, 16]), g.tensor("b", [1, 16])
    g.node("relu", [x], [a])
    g.node(middle, [a], [b], {"dim": -1} if middle == "softmax" else {})
    g.node("relu", [b], [y])
    g.plan = (arena, offsets)
    g.example_shapes = example_shapes
    return g.build()


def plan_cases() -> Iterator[Case]:
    """Memory plans that lie: the file claims a layout in which live tensors overlap or leave the arena."""
    yield Case("plan.unaligned", plan_model([-1, -1, 0, 32], 128), "multiple of 64")
    yield Case("plan.outside-arena", plan_model([-1, -1, 0, 64], 64), "outside the arena")
    yield Case("plan.huge-offset", plan_model([-1, -1, 0, 2**62], 128), "outside the arena")
    yield Case("plan.negative-offset", plan_model([-1, -1, -64, 64], 128), "outside the arena")
    yield Case("plan.offset-for-an-input", plan_model([0, -1, 0, 64], 128), "not an intermediate")
    yield Case("plan.offset-count", plan_model([-1, -1, 0], 128), "3 offsets for 4 tensors")
    yield Case("plan.shared-without-inplace", plan_model([-1, -1, 0, 0], 64, middle="softmax"), "overlap")
    yield Case("plan.arena-larger-than-needed", plan_model([-1, -1, 0, 64], 192), "arena size 192")
    yield Case("plan.arena-size-max", plan_model([-1, -1, 0, 64], 2**64 - 1), "arena size")
    yield Case("plan.no-example-shapes", plan_model([-1, -1, 0, 64], 128, example_shapes=False), "example")


def unused_int8_intermediate() -> bytes:
    """x -> relu -> y, and a second relu whose output nobody reads, declared int8 (it once overwrote the arena)."""
    g = DtmBuilder()
    x = g.input("x", [2, 8])
    y = g.output("y", [2, 8])
    t = g.tensor("unused", [2, 8], "int8")
    g.node("relu", [x], [t])
    g.node("relu", [x], [y])
    return g.build()


if __name__ == "__main__":  # pragma: no cover - a look at the generator's output
    print(sum(1 for _ in cases()), "cases")
