"""Operator lists: which (operator, dtype) kernels a pruned runtime registers.

A pruned `dtorch-run` compiles only the kernel files of the operators in its list (one operator = one kernel file,
runtime/kernels/<set>/<op>.cc, each registering its dtypes with DTORCH_REGISTER_KERNEL). Sources of a list: a
model's own op list (stored in the .dtm at export), the union of several models, an ``ops.yaml`` file (written by
`dtorch-edge ops record`, or by hand), or ``all``.

ops.yaml::

    # comments are kept out of the list
    ops:
      conv2d: [float32]
      linear: [float32]

``ops:`` may also be a list of ``op:dtype`` strings (``ops: [conv2d:float32]``), ``{}`` (no operator) or ``all``
(every kernel). The key of an operator is the one the runtime binds its kernel by: the dtype of the node's first
input (``embedding: [int64]``, whose output is float32).

This module is imported by the SCons build too: it must stay light (no NumPy at import; PyYAML and the .dtm
reader are imported when used).
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._fileio import read_regular

__all__ = ["DTYPES", "KernelCatalog", "OpList", "OpListError", "kernel_catalog"]


class OpListError(ValueError):
    """A bad op list: unreadable or malformed ops.yaml, or an operator (dtype) no kernel exists for."""


_DTYPE_NAMES = {"Float32": "float32", "Float16": "float16", "BFloat16": "bfloat16", "Float64": "float64",
                "Int64": "int64", "Int32": "int32", "Int16": "int16", "Int8": "int8", "UInt8": "uint8", "Bool": "bool"}
#: The dtype names an op list may use (the runtime's DType names).
DTYPES: tuple[str, ...] = tuple(sorted(_DTYPE_NAMES.values()))
_REGISTER = re.compile(r'DTORCH_REGISTER_[A-Z0-9_]*KERNEL\(\s*([a-z0-9_]+)\s*,\s*(?:::)?(?:dtorch::)?DType::k(\w+)')
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_EXAMPLE = "e.g. 'ops: {conv2d: [float32], linear: [float32]}'"


@dataclass(frozen=True)
class OpList:
    """A set of ``(op, dtype)`` pairs, or every kernel (``all_ops``)."""

    ops: frozenset[tuple[str, str]] = field(default_factory=frozenset)
    all_ops: bool = False

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, str]]) -> OpList:
        return cls(frozenset(pairs))

    @classmethod
    def everything(cls) -> OpList:
        return cls(frozenset(), all_ops=True)

    @classmethod
    def from_entries(cls, entries: Iterable[str], where: str = "the op list") -> OpList:
        """From ``op:dtype`` strings (the form of `entries()` and of a .dtm's op list); ``["all"]`` is every kernel."""
        entries = list(entries)
        if entries == ["all"]:
            return cls.everything()
        return cls.of(_split_entry(e, where) for e in entries)

    @classmethod
    def from_model(cls, path: str | os.PathLike[str]) -> OpList:
        """The op list stored in a .dtm file (raises DtmFormatError for a missing or corrupt file)."""
        from .._export.reader import read_dtm

        f = read_dtm(path)
        return cls.from_entries(f.op_list, str(path))

    @classmethod
    def from_yaml(cls, path: str | os.PathLike[str]) -> OpList:
        """Read an ops.yaml; raises OpListError (one line naming the file and what is wrong) for a missing,
        unreadable or malformed file."""
        p = Path(path)
        where = repr(str(p))
        try:
            text = read_regular(p, limit=_MAX_YAML_BYTES).decode("utf-8")
        except FileNotFoundError:
            raise OpListError(f"op list not found: {where}; write one with `dtorch-edge ops record` or by hand "
                              f"({_EXAMPLE})") from None
        except UnicodeDecodeError:
            raise OpListError(f"op list {where} is not a UTF-8 text file") from None
        except OSError as e:
            raise OpListError(f"cannot read op list {where}: {e.strerror or e}") from None
        return cls.from_yaml_text(text, where)

    @classmethod
    def from_yaml_text(cls, text: str, where: str = "the op list") -> OpList:
        """Parse the text of an ops.yaml (`where` names it in errors)."""
        doc = _load_yaml(text, where)
        if doc is None:
            raise OpListError(f"{where} is empty; it must hold an 'ops' mapping of operator -> [dtypes], {_EXAMPLE}")
        if not isinstance(doc, dict):
            raise OpListError(f"{where} must be a mapping with an 'ops' key, not a {_yaml_kind(doc)}; {_EXAMPLE}")
        if "ops" not in doc:
            keys = ", ".join(repr(k) for k in doc)
            raise OpListError(f"{where} has no 'ops' key (it has {keys}); {_EXAMPLE}")
        ops = doc["ops"]
        if ops == "all":
            return cls.everything()
        if ops is None:
            raise OpListError(f"{where}: 'ops' is empty; list operators ({_EXAMPLE}), or write 'ops: {{}}' for none "
                              f"or 'ops: all' for every kernel")
        if isinstance(ops, list):
            if not all(isinstance(e, str) for e in ops):
                bad = next(e for e in ops if not isinstance(e, str))
                raise OpListError(f"{where}: 'ops' list entry {bad!r} is not an 'op:dtype' string such as "
                                  f"'conv2d:float32'")
            return cls.from_entries(ops, where)
        if not isinstance(ops, dict):
            raise OpListError(f"{where}: 'ops' must be a mapping of operator -> [dtypes], not a {_yaml_kind(ops)}; "
                              f"{_EXAMPLE}")
        pairs = []
        for op, dtypes in ops.items():
            if not isinstance(op, str) or not _NAME.match(op):
                raise OpListError(f"{where}: {op!r} is not an operator name (lower case letters, digits and '_', "
                                  f"starting with a letter, e.g. conv2d)")
            if isinstance(dtypes, str):
                dtypes = [dtypes]
            if not isinstance(dtypes, list) or not dtypes:
                raise OpListError(f"{where}: operator {op!r} must map to a non-empty list of dtypes, e.g. "
                                  f"'{op}: [float32]', not {dtypes!r}")
            for d in dtypes:
                if not isinstance(d, str) or d not in DTYPES:
                    raise OpListError(f"{where}: operator {op!r} has unknown dtype {d!r}{_did_you_mean(d, DTYPES)}; "
                                      f"the dtypes are {', '.join(DTYPES)}")
            pairs += [(op, d) for d in dtypes]
        return cls.of(pairs)

    def union(self, other: OpList) -> OpList:
        if self.all_ops or other.all_ops:
            return OpList.everything()
        return OpList(self.ops | other.ops)

    def entries(self) -> list[str]:
        """Sorted ``op:dtype`` strings (``["all"]`` for every kernel)."""
        return ["all"] if self.all_ops else sorted(f"{op}:{dt}" for op, dt in self.ops)

    def operators(self) -> list[str]:
        return sorted({op for op, _ in self.ops})

    def sha256(self) -> str:
        """The op-set hash (of the sorted entries)."""
        return hashlib.sha256("\n".join(self.entries()).encode()).hexdigest()

    def missing_from(self, other: OpList) -> list[str]:
        """Entries of this list that `other` lacks (sorted ``op:dtype``)."""
        if other.all_ops:
            return []
        if self.all_ops:
            return ["all"]
        return sorted(f"{op}:{dt}" for op, dt in self.ops - other.ops)

    def to_yaml(self, header: str = "") -> str:
        """The ops.yaml text (`header`: comment lines above the list); `from_yaml_text` reads it back."""
        lines = [f"# {line}" if line else "#" for line in header.splitlines()]
        if self.all_ops:
            lines.append("ops: all")
        elif not self.ops:
            lines.append("ops: {}")
        else:
            lines.append("ops:")
            by_op: dict[str, list[str]] = {}
            for op, dt in sorted(self.ops):
                by_op.setdefault(op, []).append(dt)
            for op, dts in by_op.items():
                lines.append(f"  {op}: [{', '.join(dts)}]")
        return "\n".join(lines) + "\n"


def _split_entry(entry: str, where: str) -> tuple[str, str]:
    op, sep, dtype = str(entry).partition(":")
    if not sep or not _NAME.match(op) or dtype not in DTYPES:
        raise OpListError(f"{where}: malformed op list entry {entry!r} (expected 'op:dtype' such as 'conv2d:float32', "
                          f"with a dtype from {', '.join(DTYPES)})")
    return op, dtype


def _yaml_kind(x: Any) -> str:
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(x),
                                                                                             type(x).__name__)


def _did_you_mean(word: object, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


_MAX_YAML_BYTES = 1 << 20
_MAX_YAML_DEPTH = 32
_MAX_YAML_ALIASES = 16  # with at most 16 aliases a file expands to a few hundred nodes at most


def _load_yaml(text: str, where: str) -> Any:
    """yaml.safe_load, refusing duplicate keys (YAML would keep the last silently) and with one-line errors."""
    import yaml

    class _Loader(yaml.SafeLoader):
        """Bounded: nesting deeper than _MAX_YAML_DEPTH or more than _MAX_YAML_ALIASES aliases (a billion-laughs
        file) is refused with one line instead of a RecursionError or an error message of megabytes."""

        depth = 0
        aliases = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                self.aliases += 1
                if self.aliases > _MAX_YAML_ALIASES:
                    raise OpListError(f"{where} uses more than {_MAX_YAML_ALIASES} YAML aliases; an op list "
                                      f"needs none")
            self.depth += 1
            try:
                if self.depth > _MAX_YAML_DEPTH:
                    raise OpListError(f"{where} nests deeper than {_MAX_YAML_DEPTH} levels; an op list is one "
                                      f"mapping of operator -> dtypes")
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    def mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node)
            try:
                dup = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key: the default constructor reports it
                continue
            if dup:
                raise OpListError(f"{where}: line {key_node.start_mark.line + 1}: {key!r} appears twice; list each "
                                  f"operator once with all its dtypes, e.g. '{key}: [float32, int8]'")
        return loader.construct_mapping(node)

    _Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    try:
        return yaml.load(text, Loader=_Loader)  # a SafeLoader subclass: plain data only
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        raise OpListError(f"{where} is not valid YAML: {at}{e.problem or e.context or 'syntax error'}") from None
    except yaml.YAMLError as e:
        raise OpListError(f"{where} is not valid YAML: {' '.join(str(e).split())}") from None


@dataclass(frozen=True)
class KernelCatalog:
    """The kernel files of one kernel set and the (op, dtype) pairs each registers."""

    kernel_set: str
    files: dict[str, Path]                          # op -> kernel file
    registered: frozenset[tuple[str, str]]          # (op, dtype)

    def select(self, ops: OpList) -> list[Path]:
        """The kernel files a runtime with this op list compiles (every file for ``all``)."""
        if ops.all_ops:
            return [self.files[op] for op in sorted(self.files)]
        return [self.files[op] for op in sorted({op for op, _ in ops.ops}) if op in self.files]

    def has(self, op: str, dtype: str) -> bool:
        return (op, dtype) in self.registered

    def dtypes(self, op: str) -> list[str]:
        """The dtypes this set has a kernel of `op` for (empty for an unknown operator)."""
        return sorted(dt for o, dt in self.registered if o == op)

    def missing_reason(self, op: str, dtype: str) -> str | None:
        """Why ``op:dtype`` has no kernel in this set (None when it has one): an unknown operator (with the
        closest name) or a dtype the operator's kernel does not register."""
        if (op, dtype) in self.registered:
            return None
        have = self.dtypes(op)
        if have:
            return f"{op} has {self.kernel_set} kernels for {', '.join(have)} only"
        return f"no operator {op!r}{_did_you_mean(op, self.files)}"

    def check(self, ops: OpList, source: str) -> None:
        """Raise OpListError naming every (op, dtype) of `ops` this set has no kernel for, and why."""
        if ops.all_ops:
            return
        missing = sorted(ops.ops - self.registered)
        if missing:
            reasons = "; ".join(r for op, dt in missing if (r := self.missing_reason(op, dt)))
            entries = ", ".join(f"{op}:{dt}" for op, dt in missing)
            raise OpListError(f"{source} needs {entries}, which the runtime has no kernel for ({reasons}; "
                              f"{len(self.registered)} {self.kernel_set} kernels exist: see runtime/OPS.md or "
                              f"`dtorch-edge ops list --ops all`)")


def kernel_catalog(runtime_dir: str | os.PathLike[str], kernel_set: str = "portable") -> KernelCatalog:
    """Scan runtime/kernels/<kernel_set>/*.cc for their registrations (one operator per file)."""
    kernels = Path(runtime_dir) / "kernels"
    folder = kernels / kernel_set
    if not folder.is_dir():
        sets = sorted(p.name for p in kernels.iterdir() if any(p.glob("*.cc"))) if kernels.is_dir() else []
        have = (f"the kernel sets are {', '.join(sets)}" if sets else
                "it holds no kernel set" if kernels.is_dir() else "that folder does not exist")
        raise OpListError(f"no kernel set {kernel_set!r} in {kernels} ({have})")
    files: dict[str, Path] = {}
    registered: set[tuple[str, str]] = set()
    for src in sorted(folder.glob("*.cc")):
        try:
            text = src.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise OpListError(f"cannot read kernel file {src}: {e}") from None
        found = _REGISTER.findall(_COMMENTS.sub("", text))
        if not found:
            raise OpListError(f"{src} registers no kernel (every file of runtime/kernels/{kernel_set}/ must end with "
                              f"one DTORCH_REGISTER_*KERNEL line)")
        ops = {op for op, _ in found}
        if len(ops) != 1:
            raise OpListError(f"{src} registers several operators {sorted(ops)}; one operator = one kernel file")
        op = ops.pop()
        if op in files:
            raise OpListError(f"{src} and {files[op]} both register {op!r}; one operator = one kernel file")
        files[op] = src
        registered |= {(op, _DTYPE_NAMES.get(dt, dt.lower())) for _, dt in found}
    if not files:
        raise OpListError(f"no kernel files in {folder}")
    return KernelCatalog(kernel_set, files, frozenset(registered))
