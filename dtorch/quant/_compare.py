"""What int8 costs: the float model and its int8 form side by side on the same data.

Both graphs run in the C++ runtime with every product's output as an extra output; each int8 layer's output is
dequantized and compared with the float layer's (relative RMS error, max abs error, SQNR), worst first; the model
outputs give top-1 agreement and, with labels, both accuracies.

Layers are matched by module path and operator (conv2d -> qconv2d, linear -> qlinear), in order, so a float
`.dtm` and an int8 `.dtm` written from it compare as files too (`dtorch-edge compare`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._export.graph import Graph, Node
from ._quantizer import (
    QUANTIZABLE_OPS,
    QuantizationError,
    QuantizedModel,
    _arrays,
    batch_inputs,
    float_graph_of,
    int8_io,
    rel_error,
    run_with,
)

__all__ = ["CompareReport", "LayerError", "compare"]


@dataclass
class LayerError:
    name: str
    op: str
    rel_error: float  # RMS(int8 - float) / RMS(float)
    max_abs_error: float
    sqnr_db: float  # 20 log10(1 / rel_error)
    y_scale: float


@dataclass
class CompareReport:
    samples: int
    top1_agreement: float | None  # fraction of samples whose argmax (last axis) agrees
    float_accuracy: float | None  # with labels
    int8_accuracy: float | None
    output_rel_error: float
    layers: list[LayerError]  # worst first
    float_layers: list[str] = field(default_factory=list)  # products the int8 model keeps in float

    @property
    def accuracy_delta(self) -> float | None:
        if self.float_accuracy is None or self.int8_accuracy is None:
            return None
        return self.int8_accuracy - self.float_accuracy

    def to_json(self) -> dict[str, Any]:
        return {"samples": self.samples, "top1_agreement": self.top1_agreement,
                "float_accuracy": self.float_accuracy, "int8_accuracy": self.int8_accuracy,
                "accuracy_delta": self.accuracy_delta, "output_rel_error": self.output_rel_error,
                "layers": [vars(layer) for layer in self.layers], "float_layers": self.float_layers}

    def table(self) -> str:
        lines = []
        head = f"{self.samples} samples"
        if self.top1_agreement is not None:
            head += f", top-1 agreement {100 * self.top1_agreement:.2f}%"
        if self.float_accuracy is not None and self.int8_accuracy is not None:
            head += (f", accuracy float {100 * self.float_accuracy:.2f}% / int8 {100 * self.int8_accuracy:.2f}% "
                     f"({100 * (self.int8_accuracy - self.float_accuracy):+.2f} points)")
        head += f", output relative RMS error {self.output_rel_error:.4f}"
        lines.append(head)
        lines.append(f"{'layer':<40} {'op':<11} {'rel err':>9} {'max abs':>10} {'SQNR dB':>8}")
        for e in self.layers:
            lines.append(f"{e.name[:40]:<40} {e.op:<11} {e.rel_error:>9.4f} {e.max_abs_error:>10.4g} "
                         f"{e.sqnr_db:>8.1f}")
        if self.float_layers:
            lines.append(f"kept in float: {', '.join(self.float_layers)}")
        return "\n".join(lines)


def _products(g: Graph, ops: set[str]) -> list[Node]:
    return [n for n in g.nodes if n.op in ops]


def _match(fg: Graph, qg: Graph) -> tuple[list[tuple[Node, Node]], list[str]]:
    """(float node, int8 node) pairs by module path and operator, in order; and the float products left float."""
    qnodes = _products(qg, set(QUANTIZABLE_OPS.values()))
    used = [False] * len(qnodes)
    pairs, left = [], []
    for fn in _products(fg, set(QUANTIZABLE_OPS)):
        want = QUANTIZABLE_OPS[fn.op]
        k = next((i for i, q in enumerate(qnodes) if not used[i] and q.op == want and q.name == fn.name), None)
        if k is None:
            left.append(fn.name or fn.op)
            continue
        used[k] = True
        pairs.append((fn, qnodes[k]))
    return pairs, left


def _int8_graph(qmodel: Any) -> tuple[QuantizedModel, Graph, list[str], list[str]]:
    if isinstance(qmodel, (str, os.PathLike)):
        qmodel = QuantizedModel.from_file(qmodel)
    if not isinstance(qmodel, QuantizedModel):
        raise QuantizationError(f"qmodel must be what dt.quant.quantize returned or an int8 .dtm path, got "
                                f"{type(qmodel).__name__}")
    return qmodel, qmodel.graph, qmodel.input_names, qmodel.output_names


def compare(model: Any, qmodel: Any, val_loader: Any, num_batches: int | None = None) -> CompareReport:
    """Run the float `model` (a module, a float .dtm path, or None for the graph qmodel was made from) and the int8
    `qmodel` (a QuantizedModel or an int8 .dtm path) on `val_loader`'s batches (inputs, or (inputs..., label))."""
    qm, qg, in_names, out_names = _int8_graph(qmodel)
    n_in = len(in_names)
    items = []
    for item in val_loader:
        items.append(item)
        if num_batches is not None and len(items) >= num_batches:
            break
    if not items:
        raise QuantizationError("the validation loader yielded no batches")
    batches = [_arrays(batch_inputs(it, n_in), n_in, "a validation batch") for it in items]
    labels = [np.asarray(getattr(it[n_in], "_data", it[n_in])) for it in items
              if isinstance(it, (tuple, list)) and len(it) > n_in]
    if model is None or (qm.float_graph is not None and not isinstance(model, (str, os.PathLike))):
        if qm.float_graph is None:
            raise QuantizationError("this int8 model was read from a file: pass the float model (or its .dtm)")
        fg, f_in, f_out = qm.float_graph, qm.input_names, qm.output_names
    else:
        fg, f_in, f_out = float_graph_of(model, batches[0])
    if len(f_in) != n_in or len(f_out) != len(out_names):
        raise QuantizationError(f"the float model has {len(f_in)} input(s) and {len(f_out)} output(s), the int8 one "
                                f"{n_in} and {len(out_names)}: they are not the same model")
    pairs, left = _match(fg, qg)
    if not pairs:
        raise QuantizationError("no int8 layer of qmodel matches a conv2d / linear of the float model (module paths "
                                "differ): they are not the same model")
    f_watch = [fn.outputs[0] for fn, _ in pairs]
    q_watch = [qn.outputs[0] for _, qn in pairs]
    f_vals: list[dict[int, np.ndarray]] = list(run_with(fg, f_in, f_out, f_watch, batches))
    q_vals: list[dict[int, np.ndarray]] = list(run_with(qg, in_names, out_names, q_watch, batches))
    errors = []
    for fn, qn in pairs:
        _, (s, zp) = int8_io(qn)
        ref = np.concatenate([v[fn.outputs[0].uid].ravel() for v in f_vals])
        got = np.concatenate([(v[qn.outputs[0].uid].astype(np.float32) - zp).ravel() * np.float32(s) for v in q_vals])
        rel = rel_error(ref, got)
        errors.append(LayerError(fn.name or fn.op, fn.op, rel, float(np.max(np.abs(got - ref))) if ref.size else 0.0,
                                 20 * math.log10(1 / rel) if rel > 0 else math.inf, s))
    errors.sort(key=lambda e: -e.rel_error)
    f_out0 = [v[fg.outputs[0].uid] for v in f_vals]
    q_out0 = [v[qg.outputs[0].uid] for v in q_vals]
    out_rel = rel_error(np.concatenate([a.ravel() for a in f_out0]), np.concatenate([a.ravel() for a in q_out0]))
    samples = sum(int(a.shape[0]) if a.ndim else 1 for a in f_out0)
    agree = f_acc = q_acc = None
    if all(a.ndim >= 2 for a in f_out0):
        fa = np.concatenate([a.reshape(a.shape[0], -1).argmax(axis=1) for a in f_out0])
        qa = np.concatenate([a.reshape(a.shape[0], -1).argmax(axis=1) for a in q_out0])
        agree = float(np.mean(fa == qa))
        if len(labels) == len(items):
            y = np.concatenate([lab.reshape(-1) for lab in labels]).astype(np.int64)
            if y.shape == fa.shape:
                f_acc, q_acc = float(np.mean(fa == y)), float(np.mean(qa == y))
    return CompareReport(samples, agree, f_acc, q_acc, out_rel, errors, left)
