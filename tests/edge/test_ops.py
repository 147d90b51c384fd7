"""Op lists: ops.yaml round trips and refusals, the kernel catalog (one portable kernel per catalogue operator, a missing operator
named), `dtorch-edge ops record` (the recorded list is the model's own; every user error is one line, exit 1, and
leaves no ops.yaml) and `dtorch-edge ops list`."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import dtorch as dt
import dtorch.runtime as rt
from dtorch import nn
from dtorch._export.errors import DtmFormatError
from dtorch._version import __version__
from dtorch.edge.cli import main
from dtorch.edge.kernel_sets import kernel_sets
from dtorch.edge.oplist import KernelCatalog, OpList, OpListError, kernel_catalog
from dtorch.edge.ops_record import OpsError, list_ops, record_ops, write_text_atomic
from dtorch.edge.resources import resource_root

RUNTIME = resource_root() / "runtime"
SIMPLENET_OPS = ["adaptive_avg_pool2d:float32", "conv2d:float32", "linear:float32", "reshape:float32"]


def _zoo():
    spec = importlib.util.spec_from_file_location("export_zoo", Path(__file__).resolve().parents[1] / "export" / "zoo.py")
    zoo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(zoo)  # type: ignore[union-attr]
    return zoo


class TwoInputs(nn.Module):
    def forward(self, a: dt.Tensor, b: dt.Tensor) -> dt.Tensor:
        return dt.relu(a * b + a)


class Embed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.fc = nn.Linear(4, 2)

    def forward(self, ids: dt.Tensor) -> dt.Tensor:
        return self.fc(self.emb(ids))


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("ops_models")
    zoo = _zoo()
    out = {}
    dt.manual_seed(0)
    for name in ("simplenet", "transformer"):
        make_model, make_input = zoo.ZOO[name]
        out[name] = root / f"{name}.dtm"
        dt.export(make_model(), make_input(1), out[name], input_names=["input"], output_names=["output"],
                  dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    out["two"] = root / "two.dtm"
    dt.export(TwoInputs(), (dt.randn(2, 4), dt.randn(2, 4)), out["two"], input_names=["a", "b"], output_names=["y"],
              dynamic_axes={"a": {0: "n"}, "b": {0: "n"}, "y": {0: "n"}})
    out["embed"] = root / "embed.dtm"
    dt.export(Embed(), dt.tensor(np.array([[1, 2, 3]], dtype=np.int64)), out["embed"], input_names=["ids"])
    data = out["simplenet"].read_bytes()
    out["truncated"] = root / "truncated.dtm"
    out["truncated"].write_bytes(data[: len(data) // 3])
    out["garbage"] = root / "garbage.dtm"
    out["garbage"].write_bytes(b"this is not a model" * 10)
    return out


def _batch(n: int = 1) -> np.ndarray:
    return np.random.default_rng(n).standard_normal((n, 3, 32, 32)).astype(np.float32)


# --- OpList ----------------------------------------------------------------------------------------------------------

def test_yaml_round_trip(tmp_path):
    ol = OpList.of([("conv2d", "float32"), ("embedding", "int64"), ("linear", "float32"), ("linear", "int8")])
    text = ol.to_yaml("made by a test\n\nmodel: x.dtm")
    assert text.startswith("# made by a test\n#\n# model: x.dtm\nops:\n")
    assert "  linear: [float32, int8]\n" in text
    p = tmp_path / "ops.yaml"
    p.write_text(text)
    back = OpList.from_yaml(p)
    assert back == ol and back.entries() == ol.entries() and back.sha256() == ol.sha256()
    assert ol.entries() == ["conv2d:float32", "embedding:int64", "linear:float32", "linear:int8"]
    assert ol.operators() == ["conv2d", "embedding", "linear"]
    # every kernel and no kernel round-trip too
    for special in (OpList.everything(), OpList()):
        p.write_text(special.to_yaml("h"))
        assert OpList.from_yaml(p) == special
    # the op:dtype list form, and a bare dtype string
    assert OpList.from_yaml_text("ops: [linear:float32, conv2d:float32]") == OpList.of(
        [("linear", "float32"), ("conv2d", "float32")])
    assert OpList.from_yaml_text("ops: {relu: float32}") == OpList.of([("relu", "float32")])
    assert OpList.from_entries(ol.entries()) == ol and OpList.from_entries(["all"]).all_ops


def test_union_missing_and_hash():
    a = OpList.of([("conv2d", "float32"), ("relu", "float32")])
    b = OpList.of([("relu", "float32"), ("linear", "float32")])
    u = a.union(b)
    assert u.entries() == ["conv2d:float32", "linear:float32", "relu:float32"]
    assert u == b.union(a) and a.union(a) == a
    assert a.union(OpList.everything()).all_ops and OpList.everything().union(a).all_ops
    assert u.missing_from(a) == ["linear:float32"] and a.missing_from(u) == []
    assert a.missing_from(OpList.everything()) == []
    assert a.sha256() == hashlib.sha256(b"conv2d:float32\nrelu:float32").hexdigest() != b.sha256()
    assert OpList.of(reversed(sorted(a.ops))).sha256() == a.sha256()


@pytest.mark.parametrize("text,needles", [
    ("", ["is empty"]),
    ("# only a comment\n", ["is empty"]),
    ("- conv2d\n- linear\n", ["must be a mapping", "not a list"]),
    ("conv2d\n", ["must be a mapping", "not a string"]),
    ("opz: {conv2d: [float32]}\n", ["no 'ops' key", "'opz'"]),
    ("ops:\n", ["'ops' is empty"]),
    ("ops: 3\n", ["not a number"]),
    ("ops: {conv2d: [float33]}\n", ["unknown dtype 'float33'", "did you mean float32", "int64"]),
    ("ops: {conv2d: [fp32]}\n", ["unknown dtype 'fp32'"]),
    ("ops: {Conv2D: [float32]}\n", ["'Conv2D' is not an operator name"]),
    ("ops: {conv-2d: [float32]}\n", ["'conv-2d' is not an operator name"]),
    ("ops: {1x1: [float32]}\n", ["'1x1' is not an operator name"]),
    ("ops: {conv2d: []}\n", ["non-empty list of dtypes"]),
    ("ops: {conv2d: {a: 1}}\n", ["non-empty list of dtypes"]),
    ("ops: [conv2d]\n", ["malformed op list entry 'conv2d'"]),
    ("ops: [3]\n", ["not an 'op:dtype' string"]),
    ("ops:\n  conv2d: [float32]\n  conv2d: [int8]\n", ["line 3", "'conv2d' appears twice"]),
    ("ops: {conv2d: [float32]\n", ["not valid YAML", "line 2"]),
    ("ops:\n\tconv2d: [float32]\n", ["not valid YAML"]),
])
def test_malformed_yaml(tmp_path, text, needles):
    p = tmp_path / "ops.yaml"
    p.write_text(text)
    with pytest.raises(OpListError) as ei:
        OpList.from_yaml(p)
    msg = str(ei.value)
    assert "\n" not in msg and str(p) in msg
    for n in needles:
        assert n in msg, msg


def test_unreadable_yaml(tmp_path):
    with pytest.raises(OpListError, match="op list not found: .*nope.yaml"):
        OpList.from_yaml(tmp_path / "nope.yaml")
    with pytest.raises(OpListError, match="cannot read op list"):
        OpList.from_yaml(tmp_path)
    (tmp_path / "bin.yaml").write_bytes(b"\xff\xfe\x00ops")
    with pytest.raises(OpListError, match="not a UTF-8 text file"):
        OpList.from_yaml(tmp_path / "bin.yaml")


def test_from_model(models):
    assert OpList.from_model(models["simplenet"]).entries() == SIMPLENET_OPS
    assert OpList.from_model(models["two"]).entries() == ["add:float32", "mul:float32"]
    # the op list carries the key the runtime binds by: embedding's int64 indices, not its float32 output
    assert OpList.from_model(models["embed"]).entries() == ["embedding:int64", "linear:float32"]
    for bad in ("truncated", "garbage"):
        with pytest.raises(DtmFormatError):
            OpList.from_model(models[bad])
    with pytest.raises(DtmFormatError, match="not found"):
        OpList.from_model(models["simplenet"].parent / "nope.dtm")


# --- the kernel catalog ----------------------------------------------------------------------------------------------

def test_portable_catalog_has_a_kernel_per_catalogue_operator():
    from dtorch.catalogue import CATALOGUE

    cat = kernel_catalog(RUNTIME, "portable")
    assert len(cat.files) == len(CATALOGUE) == len(list((RUNTIME / "kernels" / "portable").glob("*.cc")))
    assert all(p.stem == op for op, p in cat.files.items())  # one operator per file, named after it
    # the scan agrees with what the compiled host runtime registers
    assert cat.registered == frozenset(rt.registered_kernels())
    assert ("embedding", "int64") in cat.registered and cat.dtypes("conv2d") == ["float32"]
    assert cat.select(OpList.everything()) == sorted(cat.files.values())
    assert cat.select(OpList.of([("linear", "float32"), ("conv2d", "float32")])) == [cat.files["conv2d"],
                                                                                     cat.files["linear"]]
    cat.check(OpList.everything(), "all")
    isa_sets = [ks.name for ks in kernel_sets(RUNTIME)]
    assert {"x86", "avx2", "avx512"} <= set(isa_sets)
    for name in isa_sets:  # every ISA set's operators have a portable kernel (the fallback and the reference)
        assert set(kernel_catalog(RUNTIME, name).files) <= set(cat.files)


def test_catalog_accepts_every_zoo_model(models):
    cat = kernel_catalog(RUNTIME)
    for name in ("simplenet", "transformer", "two", "embed"):
        cat.check(OpList.from_model(models[name]), name)


@pytest.mark.parametrize("yaml_text,needles", [
    ("ops: {softmax2: [float32], conv2d: [float32]}", ["needs softmax2:float32", "no operator 'softmax2'",
                                                       "did you mean softmax?"]),
    ("ops: {softmax: [int64]}", ["needs softmax:int64", "softmax has portable kernels for float32 only"]),
])
def test_check_names_the_missing_operator(tmp_path, yaml_text, needles):
    p = tmp_path / "ops.yaml"
    p.write_text(yaml_text)
    with pytest.raises(OpListError) as ei:
        kernel_catalog(RUNTIME).check(OpList.from_yaml(p), str(p))
    msg = str(ei.value)
    assert msg.startswith(str(p)) and "conv2d" not in msg.split("(")[0]
    for n in needles:
        assert n in msg, msg


def test_catalog_errors(tmp_path):
    ks = tmp_path / "kernels" / "mine"
    ks.mkdir(parents=True)
    with pytest.raises(OpListError, match="no kernel files"):
        kernel_catalog(tmp_path, "mine")
    with pytest.raises(OpListError, match=r"no kernel set 'neon'.*holds no kernel set"):
        kernel_catalog(tmp_path, "neon")
    with pytest.raises(OpListError, match=r"no kernel set 'neon'.*does not exist"):
        kernel_catalog(tmp_path / "nowhere", "neon")
    (ks / "relu.cc").write_text('// DTORCH_REGISTER_KERNEL(tanh, DType::kFloat32, ...);\n'
                                '/* DTORCH_REGISTER_KERNEL(sigmoid, DType::kFloat32, ...); */\n'
                                'DTORCH_REGISTER_KERNEL(relu, DType::kFloat32, infer, run);\n'
                                'DTORCH_REGISTER_KERNEL(relu, DType::kInt8, infer, run);\n')
    cat = kernel_catalog(tmp_path, "mine")
    assert isinstance(cat, KernelCatalog) and cat.registered == {("relu", "float32"), ("relu", "int8")}
    with pytest.raises(OpListError, match=r"no kernel set 'neon'.*the kernel sets are mine"):
        kernel_catalog(tmp_path, "neon")
    (ks / "two.cc").write_text('DTORCH_REGISTER_KERNEL(a, DType::kFloat32, i, r);\n'
                               'DTORCH_REGISTER_KERNEL(b, DType::kFloat32, i, r);\n')
    with pytest.raises(OpListError, match="registers several operators"):
        kernel_catalog(tmp_path, "mine")
    (ks / "two.cc").write_text("// nothing registered here\n")
    with pytest.raises(OpListError, match="registers no kernel"):
        kernel_catalog(tmp_path, "mine")


# --- dtorch-edge ops record ------------------------------------------------------------------------------------------

def _invoke(args: list[str]):
    return CliRunner().invoke(main, args, catch_exceptions=False)


def test_record_writes_the_models_op_list(models, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    np.save(data / "b0.npy", _batch(1))
    np.save(data / "b1.npy", _batch(3))
    np.savez(data / "b2.npz", input=_batch(2))
    (data / "readme.txt").write_text("not an input")
    (data / "photo.png").write_bytes(b"\x89PNG not read")
    extra = tmp_path / "extra.npy"
    np.save(extra, _batch(2))
    out = tmp_path / "ops.yaml"
    r = _invoke(["ops", "record", "--model", str(models["simplenet"]), "--data", str(data), "--data", str(extra),
                 "--out", str(out)])
    assert r.exit_code == 0, r.output
    recorded = OpList.from_yaml(out)
    assert recorded == OpList.from_model(models["simplenet"]) and recorded.entries() == SIMPLENET_OPS
    text = out.read_text()
    sha = hashlib.sha256(models["simplenet"].read_bytes()).hexdigest()
    for needle in (str(models["simplenet"]), sha, f"dtorch {__version__}", "b0.npy", "b1.npy", "b2.npz", "extra.npy"):
        assert needle in text
    assert "readme" not in text and "photo" not in text
    assert "4 operators" in r.stdout and "conv2d:float32" in r.stdout and "extra.npy" in r.stdout
    assert "differs" not in r.stdout
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp file left


def test_record_default_out_json_and_other_models(models, tmp_path, monkeypatch):
    np.save(tmp_path / "x.npy", np.random.default_rng(0).standard_normal((2, 6, 32)).astype(np.float32))
    np.savez(tmp_path / "ab.npz", b=np.ones((3, 4), np.float32), a=np.ones((3, 4), np.float32))
    np.save(tmp_path / "ids.npy", np.array([[1, 2, 9]], dtype=np.int64))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    r = _invoke(["ops", "record", "--model", str(models["transformer"]), "--data", str(tmp_path / "x.npy"), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    want = OpList.from_model(models["transformer"])
    assert doc["ops"] == want.entries() and doc["matches_model_op_list"] and doc["opset_hash"] == want.sha256()
    assert doc["files"] == [str(tmp_path / "x.npy")] and doc["input_shapes"] == [{"input": [2, 6, 32]}]
    assert doc["out"] == "ops.yaml" and OpList.from_yaml(cwd / "ops.yaml") == want  # default --out: ./ops.yaml
    for model, data in (("two", "ab.npz"), ("embed", "ids.npy")):
        res = record_ops(models[model], [tmp_path / data])
        assert res.ops == OpList.from_model(models[model]) and res.matches_model
        assert all(ks == "portable" for _, _, ks in res.node_kernels)


def _bad_files(tmp_path: Path) -> dict[str, Path]:
    d = tmp_path / "bad"
    d.mkdir()
    f = {"empty_dir": d / "empty", "txt_dir": d / "txt_only", "f64": d / "f64.npy", "shape": d / "shape.npy",
         "pickled": d / "pickled.npy", "corrupt": d / "corrupt.npy", "npz_keys": d / "keys.npz",
         "txt": d / "notes.txt", "npz_corrupt": d / "corrupt.npz", "good": d / "good.npy", "ab": d / "ab.npy"}
    f["empty_dir"].mkdir()
    f["txt_dir"].mkdir()
    (f["txt_dir"] / "a.txt").write_text("x")
    np.save(f["f64"], _batch(1).astype(np.float64))
    np.save(f["shape"], np.zeros((1, 1, 32, 32), np.float32))
    np.save(f["pickled"], np.array([{"a": 1}], dtype=object), allow_pickle=True)
    f["corrupt"].write_bytes(b"\x93NUMPY garbage")
    np.savez(f["npz_keys"], x=np.ones((1, 4), np.float32), y=np.ones((1, 4), np.float32))
    f["txt"].write_text("x")
    f["npz_corrupt"].write_bytes(b"PK\x03\x04 broken")
    np.save(f["good"], _batch(1))
    np.save(f["ab"], np.ones((1, 4), np.float32))
    return f


@pytest.mark.parametrize("model,data,needles", [
    ("missing", ["good"], ["model file not found", "missing.dtm"]),
    ("truncated", ["good"], ["truncated.dtm", "truncated or corrupt"]),
    ("garbage", ["good"], ["garbage.dtm", "not a .dtm model"]),
    ("simplenet", ["empty_dir"], ["holds no .npy or .npz files", "empty"]),
    ("simplenet", ["txt_dir"], ["holds no .npy or .npz files", "txt_only"]),
    ("simplenet", ["nowhere"], ["data path not found", "nowhere"]),
    ("simplenet", ["txt"], ["notes.txt", "is not a .npy or .npz file"]),
    ("simplenet", ["good", "f64"], ["f64.npy", "refuses", "float64", "float32"]),
    ("simplenet", ["shape"], ["shape.npy", "refuses", "dimension 1"]),
    ("simplenet", ["pickled"], ["pickled.npy", "cannot read it as a .npy array"]),
    ("simplenet", ["corrupt"], ["corrupt.npy", "cannot read it as a .npy array"]),
    ("simplenet", ["npz_corrupt"], ["corrupt.npz", "cannot read it as a .npz archive"]),
    ("two", ["ab"], ["ab.npy", "model has 2 inputs", "numpy.savez(file, a=..., b=...)"]),
    ("two", ["npz_keys"], ["keys.npz", "['x', 'y']", "['a', 'b']"]),
])
def test_record_errors(models, tmp_path, model, data, needles):
    files = _bad_files(tmp_path)
    out = tmp_path / "out" / "ops.yaml"
    out.parent.mkdir()
    model_path = models[model] if model in models else tmp_path / f"{model}.dtm"
    args = ["ops", "record", "--model", str(model_path), "--out", str(out)]
    for d in data:
        args += ["--data", str(files.get(d, tmp_path / d))]
    r = _invoke(args)
    assert r.exit_code == 1, r.output
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    assert list(out.parent.iterdir()) == []  # no ops.yaml, no temp file


def test_record_error_keeps_an_existing_ops_yaml(models, tmp_path):
    files = _bad_files(tmp_path)
    out = tmp_path / "ops.yaml"
    out.write_text("ops: {relu: [float32]}\n")
    r = _invoke(["ops", "record", "--model", str(models["simplenet"]), "--data", str(files["good"]), "--data",
                 str(files["shape"]), "--out", str(out)])
    assert r.exit_code == 1 and "shape.npy" in r.stderr
    assert out.read_text() == "ops: {relu: [float32]}\n"


def test_record_bad_out_and_usage(models, tmp_path):
    np.save(tmp_path / "g.npy", _batch(1))
    for out, needle in ((tmp_path / "no" / "ops.yaml", "does not exist"), (tmp_path, "it is a folder")):
        r = _invoke(["ops", "record", "--model", str(models["simplenet"]), "--data", str(tmp_path / "g.npy"),
                     "--out", str(out)])
        assert r.exit_code == 1 and needle in r.stderr and "\n" not in r.stderr.strip()
    r = CliRunner().invoke(main, ["ops", "record", "--model", str(models["simplenet"])])
    assert r.exit_code == 2 and "--data" in r.output
    with pytest.raises(OpsError, match="no sample inputs"):
        record_ops(models["simplenet"], [])


def test_atomic_write_failure_leaves_nothing(tmp_path, monkeypatch):
    out = tmp_path / "ops.yaml"
    out.write_text("old\n")

    def fail(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OpsError, match="No space left"):
        write_text_atomic(out, "new\n")
    assert out.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["ops.yaml"]


# --- dtorch-edge ops list --------------------------------------------------------------------------------------------

def test_list_union_of_models(models):
    r = _invoke(["ops", "list", "--model", str(models["simplenet"]), "--model", str(models["embed"])])
    assert r.exit_code == 0, r.output
    assert "runtime/kernels/portable/embedding.cc" in r.stdout and "embedding:int64" in r.stdout
    assert "5 operators" in r.stdout and "every one has a portable kernel" in r.stdout
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("linear:float32"))
    assert str(models["simplenet"]) in line and str(models["embed"]) in line
    report = list_ops([models["simplenet"], models["embed"]])
    assert report.ops == OpList.from_model(models["simplenet"]).union(OpList.from_model(models["embed"]))
    assert report.missing == []


def test_list_marks_missing_kernels(models, tmp_path):
    p = tmp_path / "ops.yaml"
    p.write_text("ops:\n  softmax2: [float32]\n  softmax: [int64]\n  conv2d: [float32]\n")
    r = _invoke(["ops", "list", "--model", str(models["simplenet"]), "--ops", str(p)])
    assert r.exit_code == 1
    assert "MISSING: no operator 'softmax2' (did you mean softmax?)" in r.stdout
    assert "MISSING: softmax has portable kernels for float32 only" in r.stdout
    assert r.stderr.startswith("error: 2 of 6 entries have no portable kernel: softmax:int64, softmax2:float32")
    r = _invoke(["ops", "list", "--ops", str(p), "--json"])
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert doc["missing"] == ["softmax:int64", "softmax2:float32"] and doc["sources"] == [str(p)]
    # beside 'all', a model's missing entry still shows
    r = _invoke(["ops", "list", "--ops", "all", "--json"])
    from dtorch.catalogue import CATALOGUE

    keys = sum(len({sig.key for sig in op.signatures}) for op in CATALOGUE.values())  # one entry per (op, dtype)
    assert r.exit_code == 0 and len(json.loads(r.stdout)["entries"]) == keys


def test_list_errors(models, tmp_path):
    r = CliRunner().invoke(main, ["ops", "list"])
    assert r.exit_code == 2 and "--model" in r.output
    for args, needle in ((["--model", str(tmp_path / "nope.dtm")], "model file not found"),
                         (["--model", str(models["garbage"])], "not a .dtm model"),
                         (["--ops", str(tmp_path / "nope.yaml")], "op list not found")):
        r = _invoke(["ops", "list", *args])
        assert r.exit_code == 1 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.output
