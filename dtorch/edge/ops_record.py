"""`dtorch-edge ops record` and `dtorch-edge ops list`: the op lists of pruned builds.

``record`` runs a model with the host runtime's portable kernels on sample inputs and writes the (operator, dtype)
pairs its nodes executed as an ops.yaml (see `dtorch.edge.oplist`), atomically. Sample inputs: each ``.npy`` file is
one batch for a model with one input; a ``.npz`` file holds one batch of every input, keyed by the input names (a
one-input model also takes a ``.npz`` with a single array); a folder stands for every ``.npy``/``.npz`` file in it
(not recursive, sorted by name; other files are ignored).

``list`` prints the union op list of models and/or an ops.yaml and whether each entry has a kernel in the
portable kernel set, which is what a board build compiles.

Every error a user can cause raises `OpsError` with one line that names the file and says what to do.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._fileio import sha256_file, write_atomic
from .._version import __version__
from .oplist import KernelCatalog, OpList, OpListError, kernel_catalog

__all__ = ["DATA_SUFFIXES", "OpsError", "OpsListReport", "OpsListRow", "RecordResult", "find_data_files",
           "list_ops", "load_batch", "ops_yaml", "record_ops", "write_text_atomic"]

#: The sample-input files `ops record` reads (a folder stands for every such file in it).
DATA_SUFFIXES = (".npy", ".npz")
#: The kernel set a board build compiles and `ops record` runs.
KERNEL_SET = "portable"
_HEADER_FILES = 100  # data files named in the ops.yaml header (then "... and N more")


class OpsError(ValueError):
    """A user error of `ops record` / `ops list`: missing or corrupt model, bad sample inputs, bad op list."""


def _one_line(e: BaseException | str) -> str:
    return " ".join(str(e).split())


def _model_file(model: str | os.PathLike[str]) -> Path:
    p = Path(model)
    if not p.exists():
        raise OpsError(f"model file not found: {str(p)!r}; export one with dt.export(model, example, {str(p)!r})")
    if not p.is_file():
        raise OpsError(f"model path {str(p)!r} is not a file; give the .dtm file itself")
    return p



def find_data_files(data: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The sample-input files of the ``--data`` arguments, in order (a folder: its .npy/.npz files, sorted by name);
    each file once."""
    if not data:
        raise OpsError("no sample inputs: give --data with a .npy/.npz file or a folder of them")
    files: list[Path] = []
    for d in data:
        p = Path(d)
        if p.is_dir():
            try:
                found = sorted((c for c in p.iterdir() if c.is_file() and c.suffix.lower() in DATA_SUFFIXES),
                               key=lambda c: c.name)
            except OSError as e:
                raise OpsError(f"cannot list the data folder {str(p)!r}: {e.strerror or e}") from None
            if not found:
                raise OpsError(f"the data folder {str(p)!r} holds no .npy or .npz files; save sample inputs there with "
                               f"numpy.save('{p / 'batch0.npy'}', batch)")
            files += found
        elif p.is_file():
            if p.suffix.lower() not in DATA_SUFFIXES:
                raise OpsError(f"data file {str(p)!r} is not a .npy or .npz file; save sample inputs with numpy.save "
                               f"(one batch per file) or numpy.savez (one array per model input)")
            files.append(p)
        elif p.exists():
            raise OpsError(f"data path {str(p)!r} is neither a file nor a folder")
        else:
            raise OpsError(f"data path not found: {str(p)!r}")
    unique: list[Path] = []
    seen: set[Path] = set()
    for f in files:
        key = f.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique


def load_batch(path: Path, input_names: Sequence[str]) -> dict[str, Any]:
    """One batch: input name -> array, read from a .npy (one-input models) or .npz file without unpickling."""
    import numpy as np

    names = list(input_names)
    if path.suffix.lower() == ".npy":
        if len(names) != 1:
            raise OpsError(f"{path}: a .npy file feeds one input, but the model has {len(names)} inputs "
                           f"({', '.join(names)}); save each batch with numpy.savez(file, "
                           f"{', '.join(f'{n}=...' for n in names)})")
        try:
            arr = np.load(path, allow_pickle=False)
        except Exception as e:  # corrupt, truncated, pickled or not a .npy at all
            raise OpsError(f"{path}: cannot read it as a .npy array ({type(e).__name__}: {_one_line(e)})") from None
        if not isinstance(arr, np.ndarray):
            raise OpsError(f"{path}: holds no .npy array; save sample inputs with numpy.save")
        return {names[0]: arr}
    try:
        z = np.load(path, allow_pickle=False)
    except Exception as e:  # corrupt zip, truncated, not an archive at all
        raise OpsError(f"{path}: cannot read it as a .npz archive ({type(e).__name__}: {_one_line(e)})") from None
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise OpsError(f"{path}: holds a single .npy array, not a .npz archive; rename it to .npy")
    with z:
        keys = list(z.files)
        if set(keys) == set(names):
            wanted = [(n, n) for n in names]
        elif len(names) == 1 and len(keys) == 1:
            wanted = [(names[0], keys[0])]
        else:
            raise OpsError(f"{path}: its arrays are named {keys} but the model's inputs are {names}; save each "
                           f"batch with numpy.savez(file, {', '.join(f'{n}=...' for n in names)})")
        feed = {}
        for name, key in wanted:
            try:
                feed[name] = z[key]
            except Exception as e:  # a truncated member, a pickled object array
                raise OpsError(f"{path}: cannot read its array {key!r} ({type(e).__name__}: {_one_line(e)})") from None
    return feed


@dataclass
class RecordResult:
    """What `record_ops` ran and found."""

    model: Path
    model_sha256: str
    ops: OpList                                   # (op, dtype) executed
    model_ops: OpList                             # the op list stored in the model at export
    files: list[Path]
    node_kernels: list[tuple[str, str, str]]      # (op, dtype, kernel set) per node, in execution order
    input_shapes: list[dict[str, list[int]]] = field(default_factory=list)  # per file
    runtime_version: str = ""
    out: Path | None = None

    @property
    def matches_model(self) -> bool:
        return self.ops == self.model_ops

    def to_json(self) -> dict[str, Any]:
        return {
            "model": str(self.model), "model_sha256": self.model_sha256, "out": None if self.out is None else str(self.out),
            "ops": self.ops.entries(), "operators": self.ops.operators(), "opset_hash": self.ops.sha256(),
            "model_op_list": self.model_ops.entries(), "matches_model_op_list": self.matches_model,
            "files": [str(f) for f in self.files], "input_shapes": self.input_shapes, "nodes": len(self.node_kernels),
            "kernel_set": KERNEL_SET, "dtorch_version": __version__, "runtime_version": self.runtime_version,
        }


def record_ops(model: str | os.PathLike[str], data: Sequence[str | os.PathLike[str]], *,
               on_file: Callable[[int, int, Path], None] | None = None) -> RecordResult:
    """Run `model` with the portable kernels on every batch of `data` (files or folders, see `find_data_files`) and
    return the (operator, dtype) pairs its nodes executed. `on_file(i, n, path)` is called before each batch.
    Raises OpsError (one line) for a missing or corrupt model and for a batch the model refuses (naming the file)."""
    from .._export.errors import DtmFormatError

    path = _model_file(model)
    files = find_data_files(data)
    try:
        model_ops = OpList.from_model(path)
    except (DtmFormatError, OpListError) as e:
        raise OpsError(_one_line(e)) from None
    try:
        import dtorch.runtime as rt
    except ImportError as e:  # pragma: no cover - only without the compiled extension
        raise OpsError(_one_line(e)) from None
    try:
        session = rt.InferenceSession(path, kernels=KERNEL_SET)
    except (ValueError, OSError, RuntimeError) as e:  # InvalidModelError, VersionMismatchError, UnsupportedError
        raise OpsError(f"cannot load model {str(path)!r}: {_one_line(e)}") from None
    names = [i.name for i in session.get_inputs()]
    shapes: list[dict[str, list[int]]] = []
    for k, f in enumerate(files):
        if on_file is not None:
            on_file(k, len(files), f)
        feed = load_batch(f, names)
        try:
            session.run(None, feed)
        except (ValueError, TypeError) as e:
            raise OpsError(f"{f}: the model refuses this input: {_one_line(e)}") from None
        except RuntimeError as e:
            raise OpsError(f"{f}: running the model on it failed: {_one_line(e)}") from None
        shapes.append({n: [int(d) for d in feed[n].shape] for n in names})
    kernels = session.node_kernels()
    return RecordResult(path, sha256_file(path), OpList.of((op, dt) for op, dt, _ in kernels), model_ops, files,
                        kernels, shapes, str(rt.RUNTIME_VERSION))


def ops_yaml(result: RecordResult) -> str:
    """The ops.yaml text of a recording: the list, under a header naming the model, its sha256, the data files and
    the dtorch version."""
    files = [str(f) for f in result.files]
    shown = files[:_HEADER_FILES]
    more = [f"  ... and {len(files) - len(shown)} more"] if len(files) > len(shown) else []
    lines = [
        f"operators (and dtypes) executed by {result.model.name} on sample inputs: `dtorch-edge ops record`",
        f"dtorch {__version__}, runtime {result.runtime_version}, {KERNEL_SET} kernels",
        f"model: {result.model}",
        f"model sha256: {result.model_sha256}",
        f"data ({len(files)} file{'s' if len(files) != 1 else ''}):",
        *(f"  {f}" for f in shown), *more,
        f"op-set hash: {result.ops.sha256()}",
    ]
    return result.ops.to_yaml("\n".join(lines))


def _check_out(out: Path) -> None:
    parent = out.parent if str(out.parent) else Path(".")
    if out.is_dir():
        raise OpsError(f"cannot write the op list to {str(out)!r}: it is a folder; give a file such as "
                       f"{str(out / 'ops.yaml')!r}")
    if not parent.is_dir():
        raise OpsError(f"cannot write the op list to {str(out)!r}: the folder {str(parent)!r} does not exist")


def write_text_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` via a temp file in the same folder, fsync and rename: never a partial file."""
    _check_out(path)
    try:
        write_atomic(path, text)
    except OSError as e:
        raise OpsError(f"cannot write {str(path)!r}: {e.strerror or e}") from None


def record_to_file(model: str | os.PathLike[str], data: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str],
                   *, on_file: Callable[[int, int, Path], None] | None = None) -> RecordResult:
    """`record_ops`, then write the ops.yaml to `out` atomically (checked before the model runs)."""
    out_path = Path(out)
    _check_out(out_path)
    result = record_ops(model, data, on_file=on_file)
    write_text_atomic(out_path, ops_yaml(result))
    result.out = out_path
    return result


# --- ops list ------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class OpsListRow:
    op: str
    dtype: str
    kernel: str | None          # the kernel file, relative to the resource root; None when missing
    missing: str | None         # why there is no kernel
    sources: tuple[str, ...]    # the models / ops.yaml that need it ("all" for the whole catalog)

    @property
    def entry(self) -> str:
        return f"{self.op}:{self.dtype}"


@dataclass
class OpsListReport:
    kernel_set: str
    sources: list[str]
    ops: OpList
    rows: list[OpsListRow]

    @property
    def missing(self) -> list[OpsListRow]:
        return [r for r in self.rows if r.missing is not None]

    def to_json(self) -> dict[str, Any]:
        return {"kernel_set": self.kernel_set, "sources": self.sources, "ops": self.ops.entries(),
                "opset_hash": self.ops.sha256(), "missing": [r.entry for r in self.missing],
                "entries": [{"op": r.op, "dtype": r.dtype, "kernel": r.kernel, "missing": r.missing,
                             "sources": list(r.sources)} for r in self.rows]}


def list_ops(models: Sequence[str | os.PathLike[str]] = (), ops: str | os.PathLike[str] | None = None,
             root: str | os.PathLike[str] | None = None) -> OpsListReport:
    """The union op list of `models` and the ops.yaml `ops` (or ``"all"``: every kernel), each entry with its
    portable kernel file or why it has none. `root`: the folder holding runtime/ (default `resource_root()`)."""
    from .._export.errors import DtmFormatError
    from .resources import ResourceError, resource_root

    if not models and ops is None:
        raise OpsError("nothing to list: give --model MODEL.dtm (one or more) and/or --ops ops.yaml|all")
    try:
        base = Path(root) if root is not None else resource_root()
        catalog = kernel_catalog(base / "runtime", KERNEL_SET)
    except (ResourceError, OpListError) as e:
        raise OpsError(_one_line(e)) from None
    lists: list[tuple[str, OpList]] = []
    for m in models:
        p = _model_file(m)
        try:
            lists.append((str(p), OpList.from_model(p)))
        except (DtmFormatError, OpListError) as e:
            raise OpsError(_one_line(e)) from None
    if ops is not None:
        if str(ops) == "all":
            lists.append(("all", OpList.everything()))
        else:
            try:
                lists.append((str(ops), OpList.from_yaml(ops)))
            except OpListError as e:
                raise OpsError(_one_line(e)) from None
    union = OpList()
    for _, ol in lists:
        union = union.union(ol)
    return OpsListReport(KERNEL_SET, [name for name, _ in lists], union, _rows(catalog, lists, base))


def _rows(catalog: KernelCatalog, lists: list[tuple[str, OpList]], base: Path) -> list[OpsListRow]:
    # Every finite entry is listed even beside "all", so a model that needs a missing kernel still shows it.
    need: dict[tuple[str, str], list[str]] = {}
    for name, ol in lists:
        for pair in (catalog.registered if ol.all_ops else ol.ops):
            need.setdefault(pair, []).append(name)
    rows = []
    for op, dt in sorted(need):
        reason = catalog.missing_reason(op, dt)
        kernel = None
        if reason is None:
            f = catalog.files[op]
            kernel = f.relative_to(base).as_posix() if f.is_relative_to(base) else str(f)
        rows.append(OpsListRow(op, dt, kernel, reason, tuple(need[op, dt])))
    return rows
