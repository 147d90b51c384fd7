"""The loader survives hostile input: the mutation fuzz driver (runtime/fuzz/, `scons asan=1 fuzz-smoke`) feeds
thousands of mutated .dtm files to the runtime under AddressSanitizer + UndefinedBehaviorSanitizer; every one must
load and run or be refused with an error Status. Marked `fuzz`: .ci/run runs it as its own step (`pytest -m fuzz`).

The mutations (runtime/fuzz/mutator.h names each kind):
- byte level: truncations, bit flips, byte overwrites, huge integers, chunk swaps, copies and inserts, appends;
- framing: vtables, vtable offsets, vector and string lengths, tensor and segment indices, segments, dimensions;
- semantic, files that stay valid FlatBuffers but lie to the catalogue and plan checks: tensor dtypes (every other
  DType and out-of-range values), attribute type tags, int and float values (0, -1, huge, NaN, inf), int and float
  lists (elements, lengths), string values, attribute names (another catalogue name, a corrupt byte, an embedded
  NUL), attributes given twice, operator names (another catalogue name, a corrupt byte, "relu\\0evil"), memory
  plan offsets (+-1, +-64, another tensor's, past the arena) and arena_size (shrunk, zero, huge), and node inputs
  and outputs pointed at a tensor of another dtype or role.
The seeds cover every attribute type (ints, int lists, floats, float lists, strings), float32 and int64 tensors
(embedding and index_select indices) and memory plans (the exported convnet's and the hand-built mixed model's). The
driver prints refused/ran per kind; each semantic kind must have been applied MIN_PER_KIND times and refused at
least once.

A failure names the iteration and the mutation and saves the input; replay it with
`build/asan/fuzz-smoke --replay FILE` (`--only I --seed S --verbose` shows one iteration, `--keep` also saves an
input that is handled wrongly without crashing), and keep it in runtime/fuzz/crashes/ (replayed below).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from dtm_builder import DtmBuilder, chain_model, relu_model

pytestmark = pytest.mark.fuzz

ROOT = Path(__file__).resolve().parents[2]
DRIVER = ROOT / "build" / "asan" / "fuzz-smoke"
ITERATIONS = 50000
MAX_SECONDS = 90
SUMMARY = re.compile(r"fuzz-smoke: (\d+) mutations .*: ran=(\d+) rejected=(\d+) too_large=(\d+)")
BY_KIND = re.compile(r"fuzz-smoke: by kind \(refused/ran\): (.*)")
SEMANTIC_KINDS = ("dtype", "attr-type", "attr-int", "attr-float", "attr-ints", "attr-floats", "attr-string",
                  "attr-name", "attr-dup", "op-name", "plan-offset", "plan-arena", "node-index")
MIN_PER_KIND = 100


@pytest.fixture(scope="module")
def driver() -> Path:
    if shutil.which("scons") is None:
        pytest.skip("scons is not installed (apt-get install scons)")
    # scons rebuilds only what changed, so a second run reuses the build.
    r = subprocess.run(["scons", "-Q", "-j4", "asan=1", "fuzz-smoke"], cwd=ROOT, capture_output=True, text=True,
                       timeout=1200)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return DRIVER


def _conv_model() -> DtmBuilder:
    """x (batch, 2, 6, 6) -> conv2d 3x3 (bias, relu) -> max_pool2d -> y: int attributes and constants."""
    g = DtmBuilder()
    rng = np.random.default_rng(1)
    x = g.input("x", ["batch", 2, 6, 6])
    w = g.const("w", rng.standard_normal((3, 2, 3, 3)).astype(np.float32))
    b = g.const("b", rng.standard_normal(3).astype(np.float32))
    t = g.tensor("t", ["batch", 3, 6, 6])
    y = g.output("y", ["batch", 3, 3, 3])
    g.node("conv2d", [x, w, b], [t], {"stride": [1, 1], "padding": [1, 1, 1, 1], "dilation": [1, 1], "groups": 1,
                                      "activation": "relu"})
    g.node("max_pool2d", [t], [y], {"kernel": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1],
                                    "ceil_mode": 0})
    return g


def _mixed_model() -> DtmBuilder:
    """ids (1, 2, 3) int64 -> embedding -> upsample_bilinear2d (scales) -> pad -> leaky_relu -> index_select (int64
    constant indices) -> add (fused relu) -> y, with a memory plan: every attribute type (int, float, ints, floats,
    string), float32 and int64 tensors of every role, for the semantic mutations (dtypes, attributes, the plan)."""
    g = DtmBuilder()
    rng = np.random.default_rng(2)
    ids = g.input("ids", [1, 2, 3], dtype="int64")
    w = g.const("w", rng.standard_normal((5, 4)).astype(np.float32))
    gidx = g.const("gidx", np.array([0, 3, 9], np.int64))
    c = g.const("c", rng.standard_normal(3).astype(np.float32))
    e = g.tensor("e", [1, 2, 3, 4])
    u = g.tensor("u", [1, 2, 6, 8])
    p = g.tensor("p", [1, 2, 6, 10])
    lr = g.tensor("lr", [1, 2, 6, 10])
    ga = g.tensor("ga", [1, 2, 6, 3])
    y = g.output("y", [1, 2, 6, 3])
    g.node("embedding", [ids, w], [e], {"padding_idx": 1})
    g.node("upsample_bilinear2d", [e], [u], {"scales": [2.0, 2.0], "align_corners": 0})
    g.node("pad", [u], [p], {"pads": [1, 1, 0, 0], "mode": "constant", "value": 0.5})
    g.node("leaky_relu", [p], [lr], {"alpha": 0.125})
    g.node("index_select", [lr, gidx], [ga], {"axis": 3})
    g.node("add", [ga, c], [y], {"activation": "relu"})
    g.plan_without_reuse()
    return g


def _exported_convnet(path: Path) -> bool:
    """A small conv net with BatchNorm and a linear head, dynamic batch, exported by dt.export (if available)."""
    try:
        import dtorch as dt
        from dtorch import nn
    except ImportError:
        return False
    if not hasattr(dt, "export"):
        return False

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.relu = nn.ReLU()
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(4, 3)

        def forward(self, x):  # type: ignore[no-untyped-def]
            x = self.pool(self.relu(self.bn(self.conv(x))))
            return self.fc(x.reshape(x.shape[0], -1))

    model = Net()
    model.eval()
    dt.export(model, dt.randn(1, 3, 8, 8), str(path), dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
              bundle_example=True)
    return True


def write_seeds(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    chain = chain_model()
    chain.set_test_vector([np.zeros((2, 8), np.float32)], [np.zeros((2, 8), np.float32)])
    seeds = {"relu.dtm": relu_model(), "chain.dtm": chain, "conv.dtm": _conv_model(),
             "mixed.dtm": _mixed_model()}
    paths = []
    for name, g in seeds.items():
        paths.append(folder / name)
        paths[-1].write_bytes(g.build())
    if _exported_convnet(folder / "convnet.dtm"):
        paths.append(folder / "convnet.dtm")
    return paths


def test_mutated_models_are_refused_or_run(driver: Path, tmp_path: Path) -> None:
    seeds = write_seeds(tmp_path / "seeds")
    crashes = tmp_path / "crashes"
    crashes.mkdir()
    r = subprocess.run([str(driver), "--iterations", str(ITERATIONS), "--seed", "1", "--max-seconds", str(MAX_SECONDS),
                        "--crash-dir", str(crashes), *map(str, seeds)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (f"fuzz-smoke exit code {r.returncode}; saved inputs: {sorted(crashes.iterdir())}\n"
                               + r.stdout[-2000:] + r.stderr[-6000:])
    m = SUMMARY.search(r.stdout)
    assert m, r.stdout
    total, ran, rejected, _too_large = map(int, m.groups())
    print(r.stdout.strip())
    assert total >= 500, f"only {total} mutations ran within {MAX_SECONDS} s"
    assert ran > 0 and rejected > 0, r.stdout
    k = BY_KIND.search(r.stdout)
    assert k, r.stdout
    by_kind = {name: (int(refused), int(ran_)) for name, refused, ran_ in re.findall(r"(\S+)=(\d+)/(\d+)", k.group(1))}
    for name in SEMANTIC_KINDS:
        refused, ran_ = by_kind.get(name, (0, 0))
        assert refused + ran_ >= MIN_PER_KIND, f"mutation kind {name} was applied only {refused + ran_} times"
        assert refused > 0, f"no {name} mutation was ever refused: {k.group(0)}"
    # An attribute given twice is always an error (op_schema.cc check_attrs).
    assert by_kind["attr-dup"][1] == 0, k.group(0)


def test_saved_reproducers_are_handled(driver: Path) -> None:
    files = sorted((ROOT / "runtime" / "fuzz" / "crashes").glob("*.dtm"))
    if not files:
        pytest.skip("no saved reproducers in runtime/fuzz/crashes/")
    r = subprocess.run([str(driver), "--replay", *map(str, files)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-6000:]
    internal = [line for line in r.stdout.splitlines() if "(internal error)" in line]
    assert not internal, internal


def test_catalogue_hostile_files_are_refused_under_asan(driver: Path, tmp_path: Path) -> None:
    """Every lying file of hostile_catalogue.py (each attribute with each wrong type, each output with each wrong
    dtype, NUL in names, ...) is refused at load under ASan + UBSan, with no sanitizer report."""
    from hostile_catalogue import cases, unused_int8_intermediate

    files = []
    for k, case in enumerate(cases()):
        p = tmp_path / f"{k:04d}.dtm"
        p.write_bytes(case.data)
        files.append(p)
    p = tmp_path / "unused-int8.dtm"
    p.write_bytes(unused_int8_intermediate())
    files.append(p)
    r = subprocess.run([str(driver), "--replay", *map(str, files)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-6000:]
    assert "AddressSanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr[-6000:]
    outcomes = [line for line in r.stdout.splitlines() if line.startswith(str(tmp_path))]
    assert len(outcomes) == len(files)
    loaded = [line for line in outcomes if "rejected at load" not in line]
    assert not loaded, loaded[:5]
