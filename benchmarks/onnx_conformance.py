"""ONNX conformance of dtorch.onnx (issue 15): every node test of ONNX's backend test suite, imported by
`dtorch.onnx.import_model` and run by `dtorch.runtime.InferenceSession`, and beside it by ONNX Runtime.

Run: .venv/bin/python benchmarks/onnx_conformance.py --write --write-pass-list [--json FILE] [--filter RE] [--jobs N]

The data: ONNX 1.19.1's ``onnx/backend/test/data/node/*`` (1,615 tests), fetched by
`dtorch.onnx.conformance_data.node_tests()` (pip download of the pinned wheel, checked by sha256). Each test is a
``model.onnx`` with ``test_data_set_*/input_<i>.pb`` (graph input i, in order) and ``output_<i>.pb`` (graph
output i), read as onnx.backend.test.runner reads them (tensors, sequences, optionals).

Rules (what a reader of the numbers needs to know):

* Frozen inputs. The runtime plans static shapes at import, so a graph input whose *value* decides a shape or stands
  for an attribute is passed to `import_model(constant_inputs=...)` with the test's value instead of being fed at
  run time (ONNX Runtime's own backend test feeds everything at run time; here ORT does too). The rule is by the
  consuming node's op type and input position, whatever the dtype (`PARAMETER_INPUTS`): Reshape 1, Expand 1, Tile 1,
  Squeeze/Unsqueeze 1, Split 1, Slice 1-4, Pad 1-3 (pads, constant_value, axes), Resize 1-3 (roi, scales, sizes),
  Upsample 1, Reduce* 1 (axes), ConstantOfShape 0, Range 0-2, Clip 1-2 (min/max), Dropout 1-2 (ratio,
  training_mode), TopK 1, OneHot 1-2 (depth, values), CumSum 1 (axis), Trilu 1 (k), and the like for the other
  shape-making operators (window sizes, Col2Im/CenterCropPad/AffineGrid shapes, MaxUnpool output_shape, DFT/STFT
  lengths, NonMaxSuppression limits, SplitToSequence split). Data-valued indices (Gather, GatherElements, GatherND,
  Scatter*, OneHot's indices) are fed at run time, as a model feeds token ids. Every other input is fed at run time,
  and the import is static at the test's own input shapes (`dynamic_axes=[]`, `input_shapes=` the test's).
* Statuses. pass; fail (an output's numbers, shape or dtype differ: the detail says by how much); unsupported
  (`import_model` raised OnnxImportError: an operator, a dtype, a feature; the detail is its first line); error
  (anything else: another exception at import or run, a crash of the process, or the per-test timeout; the detail
  is the traceback's last line). An error is a dtorch bug.
* Comparison: onnx.backend.test.runner's. Same number of outputs, same shapes, same dtypes; floats by
  np.testing.assert_allclose semantics with rtol 1e-3, atol 1e-7 (|got - want| <= atol + rtol |want|, NaN equals
  NaN, inf equals an inf of its sign; bfloat16 with rtol 2**-6); integers, bools and strings exactly.
* Grouping. A test counts under the operator of its one node type (every non-expanded node test has one); an
  ``*_expanded*`` test (the operator's function body, several node types) counts under the operator of the test
  its name extends (test_layer_normalization_2d_axis0_expanded -> LayerNormalization), in a row of its own
  "LayerNormalization (expanded)". The issue's list (`ISSUE_OPS`) covers both rows of its operators.
* Each (test, engine) runs in a worker process (--jobs of them) with a timeout (--timeout, 60 s): a hang or a
  crash is recorded as that test's error and the worker is replaced.

Outputs: a per-operator table between markers in benchmarks/RESULTS.md (`--write`, section "ONNX conformance
(issue 15)"; the rest of the file is kept), docs/onnx-support.md (`--write`), tests/onnx/conformance_pass.txt
(`--write-pass-list`: the passing tests, sorted; with --filter only the matching names are updated), `--json FILE`.
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing as mp
import re
import shutil
import signal
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS_MD = HERE / "RESULTS.md"
SUPPORT_MD = ROOT / "docs" / "onnx-support.md"
PASS_LIST = ROOT / "tests" / "onnx" / "conformance_pass.txt"
SECTION = "ONNX conformance (issue 15)"
BEGIN = "<!-- onnx_conformance.py begin: generated, rerun the command to refresh -->"
END = "<!-- onnx_conformance.py end -->"

#: The operators issue 15 asks for: every node test of these passes or has a listed reason.
ISSUE_OPS = (
    "Conv", "ConvTranspose", "Gemm", "MatMul", "BatchNormalization", "InstanceNormalization", "LayerNormalization",
    "GroupNormalization", "Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Gelu", "Erf",
    "Softmax", "LogSoftmax", "Add", "Sub", "Mul", "Div", "Pow", "MaxPool", "AveragePool", "GlobalAveragePool",
    "GlobalMaxPool", "Resize", "Pad", "Concat", "Split", "Slice", "Gather", "Transpose", "Reshape", "Flatten",
    "Squeeze", "Unsqueeze", "Expand", "ReduceMean", "ReduceSum", "ReduceMax", "Sqrt", "Exp", "Log", "Neg", "Abs",
    "Where", "Equal", "Cast", "Identity", "Dropout",
)
#: onnx.backend.test.runner's tolerances (onnx/backend/test/loader: rtol 1e-3, atol 1e-7 for every node test).
RTOL, ATOL = 1e-3, 1e-7
TIMEOUT_S = 60.0
STATUSES = ("pass", "fail", "unsupported", "error")
ENGINES = ("dtorch", "ort")

_REDUCE = ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
           "ReduceProd", "ReduceSum", "ReduceSumSquare")
#: op type -> the input positions whose values are frozen at import (see the module docstring).
PARAMETER_INPUTS: dict[str, tuple[int, ...]] = {
    "Reshape": (1,), "Expand": (1,), "Tile": (1,), "Squeeze": (1,), "Unsqueeze": (1,), "Split": (1,),
    "Slice": (1, 2, 3, 4), "Pad": (1, 2, 3), "Resize": (1, 2, 3), "Upsample": (1,), "ConstantOfShape": (0,),
    "Range": (0, 1, 2), "Clip": (1, 2), "Dropout": (1, 2), "TopK": (1,), "OneHot": (1, 2), "CumSum": (1,), "Trilu": (1,),
    **{op: (1,) for op in _REDUCE},
    "CenterCropPad": (1,), "Col2Im": (1, 2), "AffineGrid": (1,), "MaxUnpool": (2,), "DFT": (1, 2), "STFT": (1, 3),
    "BlackmanWindow": (0,), "HannWindow": (0,), "HammingWindow": (0,), "MelWeightMatrix": (0, 1, 2, 3, 4),
    "NonMaxSuppression": (2, 3, 4), "SplitToSequence": (1,),
}


# --- the data -------------------------------------------------------------------------------------------------------
def data_root(*, fetch: bool = True) -> Path:
    """The folder of the node tests (fetched on first use; see dtorch.onnx.conformance_data)."""
    from dtorch.onnx.conformance_data import node_tests

    return node_tests(fetch=fetch)


def list_tests(root: Path, pattern: str | None = None) -> list[str]:
    """The node tests under root (folder names), sorted, those matching `pattern` (re.search) when given."""
    rx = re.compile(pattern) if pattern else None
    return sorted(p.name for p in root.iterdir()
                  if (p / "model.onnx").is_file() and (rx is None or rx.search(p.name)))


def read_value(path: Path, type_proto: Any) -> Any:
    """One input_*.pb / output_*.pb as onnx.backend.test.runner reads it, by the graph's type for it."""
    import onnx
    from onnx import numpy_helper

    raw = path.read_bytes()
    if type_proto.HasField("sequence_type"):
        seq = onnx.SequenceProto()
        seq.ParseFromString(raw)
        return numpy_helper.to_list(seq)
    if type_proto.HasField("optional_type"):
        opt = onnx.OptionalProto()
        opt.ParseFromString(raw)
        return numpy_helper.to_optional(opt)
    t = onnx.TensorProto()
    t.ParseFromString(raw)
    return numpy_helper.to_array(t)


def data_sets(test_dir: Path, model: Any) -> list[tuple[list[Any], list[Any]]]:
    """(inputs, expected outputs) of each test_data_set_* of a test."""
    out = []
    for ds in sorted(test_dir.glob("test_data_set_*")):
        n_in = len(list(ds.glob("input_*.pb")))
        n_out = len(list(ds.glob("output_*.pb")))
        ins = [read_value(ds / f"input_{i}.pb", model.graph.input[i].type) for i in range(n_in)]
        outs = [read_value(ds / f"output_{i}.pb", model.graph.output[i].type) for i in range(n_out)]
        out.append((ins, outs))
    return out


def frozen_input_names(model: Any) -> list[str]:
    """The graph inputs frozen as constants at import (PARAMETER_INPUTS), in the graph's input order."""
    inits = {t.name for t in model.graph.initializer}
    graph_inputs = [vi.name for vi in model.graph.input if vi.name not in inits]
    wanted = set()
    for node in model.graph.node:
        if node.domain not in ("", "ai.onnx"):
            continue
        for k, name in enumerate(node.input):
            if name and k in PARAMETER_INPUTS.get(node.op_type, ()):
                wanted.add(name)
    return [n for n in graph_inputs if n in wanted]


def operator_of(name: str, ops_of: Callable[[str], Sequence[str]], names: Iterable[str]) -> tuple[str, bool]:
    """(operator, expanded) of test `name` (see "Grouping" in the module docstring). `ops_of(test)` gives the op
    types of a test's nodes, in order; `names` are the suite's tests."""
    if "_expanded" in name:
        base = name[:name.index("_expanded")]
        if base in set(names):
            return operator_of(base, ops_of, ())[0], True
        ops = ops_of(name)
        return (ops[0] if ops else "?"), True
    ops = list(dict.fromkeys(ops_of(name)))
    if len(ops) == 1:
        return ops[0], False
    # not so in ONNX 1.19.1: the op type whose snake-free name is the longest prefix of the test's
    key = name.removeprefix("test_").replace("_", "").lower()
    hits = [op for op in ops if key.startswith(op.lower())]
    return (max(hits, key=len) if hits else ops[0] if ops else "?"), False


def model_ops(test_dir: Path) -> list[str]:
    import onnx

    m = onnx.load(str(test_dir / "model.onnx"), load_external_data=False)
    return [n.op_type for n in m.graph.node]


# --- comparison -----------------------------------------------------------------------------------------------------
def _fmt(x: Any) -> str:
    return np.format_float_positional(x, precision=6, trim="-") if isinstance(x, (float, np.floating)) else repr(x)


def compare_value(got: Any, want: Any, rtol: float = RTOL, atol: float = ATOL) -> str | None:
    """None when `got` matches `want` as onnx.backend.test.runner.assert_similar_outputs has it, else why not."""
    if isinstance(want, (list, tuple)):
        if not isinstance(got, (list, tuple)):
            return f"a {type(got).__name__}, expected a sequence of {len(want)}"
        if len(got) != len(want):
            return f"a sequence of {len(got)}, expected {len(want)}"
        return _first_difference(got, want, "[{}] ", rtol, atol)
    if want is None:
        return None if got is None else "a value, expected an empty optional"
    if got is None:
        return "nothing (an empty optional), expected a value"
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, expected {list(want.shape)}"
    if want.dtype == object or want.dtype.kind in "US":
        bad = np.asarray(got != want)
        return None if not bad.any() else f"{int(bad.sum())} of {want.size} strings differ"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    if want.size == 0:
        return None
    if want.dtype.kind not in "fc":  # ints, bools (and the small int types of ml_dtypes): exact
        bad = np.asarray(got != want)
        if not bad.any():
            return None
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        return (f"{int(bad.sum())} of {want.size} values differ (exact {want.dtype}); first at {list(idx)}: "
                f"{_fmt(got[idx].item())}, expected {_fmt(want[idx].item())}")
    if want.dtype.name == "bfloat16":
        rtol = max(rtol, 2.0 ** -6)  # as the runner: two bfloat16 ULPs
    if want.dtype.type not in (np.float16, np.float32, np.float64, np.complex64, np.complex128):
        got, want = got.astype(np.float32), want.astype(np.float32)  # ml_dtypes' floats
    close = np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    if close.all():
        return None
    bad = ~close
    g64, w64 = got.astype(np.complex128 if got.dtype.kind == "c" else np.float64), want.astype(
        np.complex128 if want.dtype.kind == "c" else np.float64)
    nan_bad = int((np.isnan(g64) != np.isnan(w64)).sum())
    finite = bad & np.isfinite(g64) & np.isfinite(w64)
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    parts = [f"{int(bad.sum())} of {want.size} values beyond rtol {rtol:g}, atol {atol:g}"]
    if finite.any():
        diff = np.abs(g64 - w64)[finite]
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = diff / np.abs(w64[finite])  # inf where the expected value is 0, as assert_allclose reports it
        parts.append(f"max abs diff {float(diff.max()):.3g}, max rel diff {float(rel.max()):.3g}")
    if nan_bad:
        parts.append(f"{nan_bad} NaN where the other has a number")
    parts.append(f"first at {list(idx)}: {_fmt(got[idx].item())}, expected {_fmt(want[idx].item())}")
    return "; ".join(parts)


def compare_outputs(got: Sequence[Any], want: Sequence[Any], rtol: float = RTOL, atol: float = ATOL) -> str | None:
    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}"
    return _first_difference(got, want, "output {}: ", rtol, atol)


def _first_difference(got: Sequence[Any], want: Sequence[Any], label: str, rtol: float, atol: float) -> str | None:
    """The first pair of `got` and `want` (equally long) that differ: `label` (formatted with its index) + why."""
    for i, (g, w) in enumerate(zip(got, want)):
        why = compare_value(g, w, rtol, atol)
        if why:
            return label.format(i) + why
    return None


# --- one test -------------------------------------------------------------------------------------------------------
@dataclass
class Outcome:
    status: str
    detail: str = ""
    seconds: float = 0.0


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _last_line() -> str:
    lines = [ln for ln in traceback.format_exc().strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else "unknown error"


def run_dtorch(test_dir: Path, workdir: Path) -> Outcome:
    """Import the test's model into a .dtm (frozen inputs as constants), run it on each data set, compare."""
    import onnx

    from dtorch.onnx import OnnxImportError, import_model
    from dtorch.runtime import InferenceSession

    model = onnx.load(str(test_dir / "model.onnx"), load_external_data=False)
    names = [vi.name for vi in model.graph.input]
    frozen = set(frozen_input_names(model))
    for ins, want in data_sets(test_dir, model):
        feeds = dict(zip(names, ins))
        consts = {n: v for n, v in feeds.items() if n in frozen}
        run_feeds = {n: v for n, v in feeds.items() if n not in frozen}
        shapes = {n: list(v.shape) for n, v in run_feeds.items() if isinstance(v, np.ndarray)}
        dst = workdir / f"{test_dir.name}.dtm"
        try:
            import_model(test_dir / "model.onnx", dst, dynamic_axes=[], input_shapes=shapes,
                         constant_inputs=consts or None, check_parity=False)
        except OnnxImportError as e:
            return Outcome("unsupported", _first_line(e).replace(str(test_dir), "<test>"))
        except Exception:
            return Outcome("error", "import: " + _last_line().replace(str(test_dir), "<test>"))
        try:
            got = InferenceSession(str(dst)).run(None, run_feeds)
        except Exception:
            return Outcome("error", "run: " + _last_line())
        finally:
            dst.unlink(missing_ok=True)
        why = compare_outputs(list(got), want)
        if why:
            return Outcome("fail", why)
    return Outcome("pass")


def run_ort(test_dir: Path) -> Outcome:
    """ONNX Runtime (CPU, one thread) on the same test, every input fed at run time."""
    import onnx
    import onnxruntime as ort

    model = onnx.load(str(test_dir / "model.onnx"), load_external_data=False)
    names = [vi.name for vi in model.graph.input]
    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    try:
        sess = ort.InferenceSession(str(test_dir / "model.onnx"), opts, providers=["CPUExecutionProvider"])
    except Exception as e:
        return Outcome("unsupported", _first_line(e).replace(str(test_dir), "<test>"))
    for ins, want in data_sets(test_dir, model):
        try:
            got = sess.run(None, dict(zip(names, ins)))
        except Exception as e:
            return Outcome("error", _first_line(e))
        why = compare_outputs(list(got), want)
        if why:
            return Outcome("fail", why)
    return Outcome("pass")


def run_test(test_dir: Path, engine: str, workdir: Path) -> Outcome:
    t0 = time.perf_counter()
    try:
        out = run_dtorch(test_dir, workdir) if engine == "dtorch" else run_ort(test_dir)
    except Exception:
        out = Outcome("error", _last_line())
    out.seconds = round(time.perf_counter() - t0, 3)
    return out


# --- workers with a timeout -----------------------------------------------------------------------------------------
def _worker_main(conn: Any, root: str) -> None:
    warnings.simplefilter("ignore")
    import onnx  # noqa: F401  (loaded once, before the first test's clock starts)

    import dtorch.onnx  # noqa: F401

    work = Path(tempfile.mkdtemp(prefix="dtorch-conformance-"))
    try:
        conn.send(("ready",))
        while True:
            try:
                task = conn.recv()
            except EOFError:
                break
            if task is None:
                break
            name, engine = task
            conn.send(("done", name, engine, asdict(run_test(Path(root) / name, engine, work))))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _death(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


class _Worker:
    STARTUP_S = 180.0

    def __init__(self, ctx: Any, root: Path) -> None:
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, str(root)), daemon=True)
        self.proc.start()
        child.close()
        self.ready = False
        self.started = time.monotonic()
        self.task: tuple[str, str] | None = None
        self.deadline = 0.0

    def send(self, task: tuple[str, str], timeout: float) -> None:
        self.task = task
        self.deadline = time.monotonic() + timeout
        self.conn.send(task)

    def stop(self, *, kill: bool = False) -> None:
        if kill:
            self.proc.kill()
        else:
            try:
                self.conn.send(None)
            except OSError:
                pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)
        self.conn.close()


def run_all(root: Path, names: Sequence[str], engines: Sequence[str] = ENGINES, *, jobs: int = 1,
            timeout: float = TIMEOUT_S, progress: Callable[[int, int, str, str, dict[str, Any]], None] | None = None,
            ) -> dict[tuple[str, str], dict[str, Any]]:
    """Run every (test, engine) in `jobs` worker processes; a test past `timeout` seconds, or one whose worker dies,
    is an error and the worker is replaced. Returns {(test, engine): asdict(Outcome)}."""
    ctx = mp.get_context("spawn")
    tasks = deque((n, e) for n in names for e in engines)
    total = len(tasks)
    results: dict[tuple[str, str], dict[str, Any]] = {}
    workers = [_Worker(ctx, root) for _ in range(max(1, min(jobs, total)))]

    def record(task: tuple[str, str], res: dict[str, Any]) -> None:
        results[task] = res
        if progress is not None:
            progress(len(results), total, *task, res)

    try:
        while len(results) < total:
            for w in workers:
                if w.ready and w.task is None and tasks:
                    w.send(tasks.popleft(), timeout)
            now = time.monotonic()
            waits = [w.deadline - now if w.task else w.started + _Worker.STARTUP_S - now
                     for w in workers if w.task or not w.ready]
            ready = wait([w.conn for w in workers], timeout=max(0.0, min(waits, default=1.0)))
            for i, w in enumerate(workers):
                replace = False
                if w.conn in ready:
                    try:
                        msg = w.conn.recv()
                    except (EOFError, OSError):
                        w.proc.join(5)
                        if not w.ready:
                            raise RuntimeError(f"a conformance worker process did not start "
                                               f"({_death(w.proc.exitcode)}); its error is printed above") from None
                        if w.task is not None:
                            record(w.task, asdict(Outcome("error", f"the process died ({_death(w.proc.exitcode)})",
                                                          round(time.monotonic() - w.deadline + timeout, 3))))
                        replace = True
                    else:
                        if msg[0] == "ready":
                            w.ready = True
                        else:
                            _, name, engine, res = msg
                            record((name, engine), res)
                            w.task = None
                elif w.task is not None and time.monotonic() > w.deadline:
                    record(w.task, asdict(Outcome("error", f"timed out after {timeout:g} s", timeout)))
                    replace = True
                elif not w.ready and time.monotonic() > w.started + _Worker.STARTUP_S:
                    raise RuntimeError(f"a conformance worker process did not start in {_Worker.STARTUP_S:g} s")
                if replace:
                    w.stop(kill=True)
                    workers[i] = _Worker(ctx, root)
    finally:
        for w in workers:
            w.stop(kill=w.task is not None)
    return results


# --- records, tables, files -----------------------------------------------------------------------------------------
def operators(root: Path, names: Sequence[str], all_names: Sequence[str]) -> dict[str, tuple[str, bool]]:
    """{test: (operator, expanded)} by the grouping rule (the models are read for their node types)."""
    ops_cache: dict[str, list[str]] = {}

    def ops_of(n: str) -> list[str]:
        if n not in ops_cache:
            ops_cache[n] = model_ops(root / n)
        return ops_cache[n]

    return {n: operator_of(n, ops_of, all_names) for n in names}


def build_records(root: Path, names: Sequence[str], results: Mapping[tuple[str, str], Mapping[str, Any]],
                  all_names: Sequence[str]) -> list[dict[str, Any]]:
    import onnx

    records = []
    for n, (op, expanded) in operators(root, names, all_names).items():
        model = onnx.load(str(root / n / "model.onnx"), load_external_data=False)
        rec: dict[str, Any] = {"name": n, "operator": op, "expanded": expanded, "issue": op in ISSUE_OPS,
                               "frozen_inputs": frozen_input_names(model)}
        for e in ENGINES:
            if (n, e) in results:
                rec[e] = dict(results[(n, e)])
        records.append(rec)
    return records


def _row_label(rec: Mapping[str, Any]) -> str:
    return rec["operator"] + (" (expanded)" if rec["expanded"] else "")


def _counts(recs: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    c = Counter(r["dtorch"]["status"] for r in recs if "dtorch" in r)
    out = {"tests": len(recs), **{s: c.get(s, 0) for s in STATUSES}}
    out["ort_pass"] = sum(1 for r in recs if r.get("ort", {}).get("status") == "pass")
    return out


def totals(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    return {"issue_list": _counts([r for r in records if r["issue"]]),
            "other": _counts([r for r in records if not r["issue"]]),
            "all": _counts(records)}


def _pct(a: int, b: int) -> str:
    return f"{100.0 * a / b:.1f}%" if b else "-"


def _table(rows: Sequence[tuple[str, dict[str, int]]], with_ort: bool) -> list[str]:
    head = "| operator | tests | passed | failed | unsupported | error |" + (" ORT passed |" if with_ort else "")
    lines = [head, "|---|---:|---:|---:|---:|---:|" + ("---:|" if with_ort else "")]
    for label, c in rows:
        cells = [label, c["tests"], c["pass"], c["fail"], c["unsupported"], c["error"]]
        if with_ort:
            cells.append(c["ort_pass"])
        lines.append("| " + " | ".join(str(x) for x in cells) + " |")
    return lines


def tables(records: Sequence[Mapping[str, Any]], complete: bool = True) -> str:
    """The per-operator tables (issue list, then the other operators) and the totals, as Markdown; `complete`: the
    records are the whole suite's (then the issue's operators without a test are named)."""
    with_ort = any("ort" in r for r in records)
    by_row: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        by_row[_row_label(r)].append(r)
    t = totals(records)
    lines = []
    for key, what in (("issue_list", "on the issue's list"), ("other", "other operators"), ("all", "all")):
        c = t[key]
        ort = f"; ONNX Runtime {c['ort_pass']} ({_pct(c['ort_pass'], c['tests'])})" if with_ort else ""
        lines.append(f"- {what}: dtorch passes **{c['pass']} of {c['tests']}** tests ({_pct(c['pass'], c['tests'])}); "
                     f"{c['fail']} fail, {c['unsupported']} unsupported, {c['error']} error{ort}")
    missing = [op for op in ISSUE_OPS if not any(r["operator"] == op for r in records)]
    if missing and complete:
        lines.append(f"- operators on the issue's list without a node test here: {', '.join(missing)}")
    for issue, title in ((True, "Operators on the issue's list"), (False, "Other operators")):
        rows = sorted((lab, _counts(rs)) for lab, rs in by_row.items() if rs[0]["issue"] == issue)
        if not rows:
            continue
        c = t["issue_list" if issue else "other"]
        rows.append((f"**total ({len({lab.split(' ')[0] for lab, _ in rows})} operators)**", c))
        lines += ["", f"### {title}", "", *_table(rows, with_ort)]
    return "\n".join(lines)


_CAUSE_SUBS = (
    (re.compile(r"^ONNX node '[^']*' \([^,]+, opset \d+\) cannot be imported: "), ""),
    (re.compile(r"^ONNX operator '([^']+)' \(node '[^']*', opset \d+\) is not supported by dtorch\.onnx\..*"),
     r"operator \1 is not supported by dtorch.onnx"),
    # the test's own names (inputs, outputs, nodes, tensors); kernel and operator names are kept
    (re.compile(r"\b(input|output|node|tensor|initializer|gives|names)((?: \d+)? \(?)'[^']*'"), r"\1\2'…'"),
    (re.compile(r"\b(u?int(4|8|16|32|64)|float(16|64)|bfloat16|float8\w*|object|string|complex\d+)\b"), "<dtype>"),
    (re.compile(r"\[[-0-9, ]*\]"), "[…]"),
    (re.compile(r"(?<![\w.])-?\d+(\.\d+)?(e[-+]?\d+)?(?![\w.])"), "N"),
)


def cause(detail: str) -> str:
    """A test's detail without its names and numbers: the key that groups tests failing for one reason."""
    s = detail
    for rx, sub in _CAUSE_SUBS:
        s = rx.sub(sub, s)
    return s


def reasons(records: Sequence[Mapping[str, Any]]) -> str:
    """The non-passing tests of the issue's operators, grouped by operator, then by cause (one example detail)."""
    lines: list[str] = []
    by_op: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        if r["issue"] and r.get("dtorch", {}).get("status") not in (None, "pass"):
            by_op[r["operator"]].append(r)
    for op in ISSUE_OPS:
        recs = by_op.get(op)
        if not recs:
            continue
        lines += ["", f"### {op}", ""]
        groups: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
        for r in recs:
            groups[(r["dtorch"]["status"], cause(r["dtorch"]["detail"]))].append(r)
        for (status, _), rs in sorted(groups.items(), key=lambda kv: (STATUSES.index(kv[0][0]), -len(kv[1]))):
            names = ", ".join(f"`{r['name']}`" for r in rs)
            lines.append(f"- **{status}** ({len(rs)}): {rs[0]['dtorch']['detail']}  \n  tests: {names}")
    return "\n".join(lines).lstrip("\n")


def _write(path: Path, text: str) -> None:
    from dtorch._fileio import write_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text)


def write_results_section(body: str, command: str, path: Path = RESULTS_MD) -> None:
    """Replace what stands between this script's markers in RESULTS.md (the first time, add the section with its
    markers at the end); everything else in the file is kept as it is. Written atomically."""
    stamp = datetime.date.today().isoformat()
    inner = f"{BEGIN}\n\nCommand: `{command}` ({stamp})\n\n{body.rstrip()}\n\n{END}"
    text = path.read_text() if path.exists() else "# Benchmark results\n"
    b, e = text.find(BEGIN), text.find(END)
    if b >= 0 and e > b:
        new = text[:b] + inner + text[e + len(END):]
    else:
        new = text.rstrip() + f"\n\n## {SECTION}\n\n{inner}\n"
    _write(path, new)


def read_pass_list(path: Path = PASS_LIST) -> list[str]:
    if not path.exists():
        return []
    return [ln.strip() for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]


def write_pass_list(passed: Iterable[str], covered: Iterable[str], path: Path = PASS_LIST) -> None:
    """The pass list with the names in `covered` (the tests this run ran) replaced by those of them that passed."""
    cov = set(covered)
    keep = {n for n in read_pass_list(path) if n not in cov}
    _write(path, "".join(f"{n}\n" for n in sorted(keep | set(passed))))


def support_doc(records: Sequence[Mapping[str, Any]], command: str, versions: Mapping[str, str]) -> str:
    from dtorch.onnx import supported_ops

    ops = supported_ops()
    return "\n".join([
        "# ONNX support",
        "",
        f"Generated by `{command}` ({datetime.date.today().isoformat()}); do not edit by hand. The rules (frozen "
        f"inputs, tolerances, statuses, grouping) are in the docstring of benchmarks/onnx_conformance.py.",
        "",
        f"Measured on the {len(records):,} node tests of ONNX {versions.get('onnx_data', '?')}'s backend test suite: "
        f"each model imported by `dtorch.onnx.import_model` (dtorch {versions.get('dtorch', '?')}, "
        f"{versions.get('source', '?')}) and run by "
        f"`dtorch.runtime.InferenceSession`, compared with the test's expected outputs (rtol 1e-3, atol 1e-7); "
        f"ONNX Runtime {versions.get('onnxruntime', '?')} on the same tests for reference.",
        "",
        "## Results",
        "",
        tables(records),
        "",
        f"## Operators the importer translates ({len(ops)})",
        "",
        "`dtorch.onnx.supported_ops()`; besides these, any node whose inputs are all known at import (shape "
        "arithmetic, Constant, ...) is folded to a constant.",
        "",
        ", ".join(ops),
        "",
        "## Why the other tests of the issue's operators do not pass",
        "",
        "Grouped by operator, then by cause; one example message per cause.",
        "",
        reasons(records) or "All of them pass.",
        "",
    ])


# --- the command ----------------------------------------------------------------------------------------------------
def _source_state() -> str:
    """Which dtorch was measured: its checkout's commit, and whether the tree held uncommitted changes."""
    import subprocess

    import dtorch

    tree = Path(dtorch.__file__).resolve().parent.parent
    try:
        sha = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             timeout=30, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(tree), "status", "--porcelain", "--", "dtorch", "runtime"],
                               capture_output=True, text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return f"{tree} (not a git checkout)"
    n = len(dirty.splitlines())
    return f"commit {sha}" + (f" with {n} uncommitted file(s) in dtorch/ and runtime/" if n else "")


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    from dtorch.onnx.conformance_data import ONNX_VERSION

    out = {"onnx_data": ONNX_VERSION, "source": _source_state()}
    for pkg in ("dtorch", "onnx", "onnxruntime"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="ONNX backend node tests through dtorch.onnx and ONNX Runtime "
                                             "(issue 15). " + __doc__.split("\n\n")[0])
    ap.add_argument("--filter", metavar="REGEX", help="only the tests whose name matches (re.search)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("--timeout", type=float, default=TIMEOUT_S, help=f"seconds per test and engine ({TIMEOUT_S:g})")
    ap.add_argument("--no-ort", action="store_true", help="do not run ONNX Runtime")
    ap.add_argument("--write", action="store_true", help="write the section of benchmarks/RESULTS.md and "
                                                         "docs/onnx-support.md (a full run only)")
    ap.add_argument("--write-pass-list", action="store_true", help=f"write {PASS_LIST.relative_to(ROOT)}")
    ap.add_argument("--json", metavar="FILE", help="write every test's results as JSON")
    ap.add_argument("--no-fetch", action="store_true", help="fail instead of downloading the test data")
    ap.add_argument("-v", "--verbose", action="store_true", help="a line per test")
    args = ap.parse_args(argv)
    if args.write and args.filter:
        ap.error("--write describes the whole suite; drop --filter (or use --json / --write-pass-list)")
    if args.jobs < 1:
        ap.error("--jobs must be >= 1")
    from dtorch.onnx.conformance_data import ConformanceDataError

    try:
        root = data_root(fetch=not args.no_fetch)
    except ConformanceDataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    all_names = list_tests(root)
    names = list_tests(root, args.filter)
    if not names:
        print(f"error: no node test matches --filter {args.filter!r}", file=sys.stderr)
        return 1
    engines = ("dtorch",) if args.no_ort else ENGINES
    t0 = time.monotonic()

    def progress(done: int, total: int, name: str, engine: str, res: dict[str, Any]) -> None:
        if args.verbose or res["status"] == "error" and engine == "dtorch":
            detail = f": {res['detail']}" if res["detail"] else ""
            print(f"[{done}/{total}] {name} {engine} {res['status']}{detail}", file=sys.stderr, flush=True)
        elif done % 100 == 0 or done == total:
            print(f"[{done}/{total}] {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)

    results = run_all(root, names, engines, jobs=args.jobs, timeout=args.timeout, progress=progress)
    wall = time.monotonic() - t0
    records = build_records(root, names, results, all_names)
    versions = _versions()
    command = ("python benchmarks/onnx_conformance.py " + " ".join(argv if argv is not None else sys.argv[1:])
               ).replace(f"{ROOT}/", "")
    summary = tables(records, complete=not args.filter)
    print(summary)
    print(f"\n{len(names)} tests x {len(engines)} engine(s) in {wall:.0f} s with {args.jobs} job(s)")
    if args.json:
        doc = {"command": command, "date": datetime.date.today().isoformat(), "versions": versions,
               "rtol": RTOL, "atol": ATOL, "timeout_s": args.timeout, "wall_s": round(wall, 1),
               "totals": totals(records), "tests": records}
        _write(Path(args.json), json.dumps(doc, indent=1) + "\n")
    if args.write_pass_list:
        write_pass_list([r["name"] for r in records if r["dtorch"]["status"] == "pass"], names)
    if args.write:
        body = (f"ONNX {versions['onnx_data']}'s backend node tests ({len(records):,}), each imported by "
                f"`dtorch.onnx.import_model` (static, at the test's shapes; shape-like inputs frozen as constants) "
                f"and run by `InferenceSession`, against the test's expected outputs with onnx.backend.test.runner's "
                f"tolerances (rtol 1e-3, atol 1e-7); ONNX Runtime {versions['onnxruntime']} (CPU) on the same tests, "
                f"every input fed at run time (its Python API takes no bfloat16, float8 or int4 arrays: those tests count "
                f"as not passed for it). dtorch {versions['dtorch']} ({versions['source']}), onnx {versions['onnx']}; "
                f"{args.jobs} "
                f"job(s), {wall:.0f} s. Rules: benchmarks/onnx_conformance.py; reasons per test: docs/onnx-support.md."
                f"\n\n{summary}")
        write_results_section(body, command)
        _write(SUPPORT_MD, support_doc(records, command, versions))
    return 0


if __name__ == "__main__":
    sys.exit(main())
