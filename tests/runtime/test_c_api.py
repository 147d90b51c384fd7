"""The C API (runtime/include/dtorch/dtorch.h) and the heapless core behind it (runtime/core/).

build/host/c-api-test (``scons c-api-test``, runtime/tests/c_api_test.c) is plain C calling the API as firmware would:
it sizes the arena from nothing (a NULL arena answers a lower bound, which answers the exact size), loads the model
into one arena, runs the bundled test vector and walks the error paths. Here its outputs must be the bits of the
hosted Session (the same kernels and per-node steps), for float32 and int8 models; and the core's objects must not
reach for a heap, exceptions, threads or stdio (the bare-metal builds link them alone).
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from host_build import BUILD, ROOT, scons_host

import dtorch as dt
from dtorch.runtime import InferenceSession

_spec = importlib.util.spec_from_file_location("export_zoo", ROOT / "tests" / "export" / "zoo.py")
zoo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(zoo)  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def c_api_test() -> Path:
    return scons_host("c-api-test") / "c-api-test"


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("c_api_models")
    out = {}
    for name in ("simplenet", "mobilenetv2"):
        make_model, make_input = zoo.ZOO[name]
        dt.manual_seed(0)
        model = make_model().eval()
        out[name] = root / f"{name}.dtm"
        dt.export(model, make_input(1), str(out[name]), bundle_example=True)
        dt.manual_seed(1)
        q = dt.quant.quantize(model, [make_input(4).numpy() for _ in range(2)])
        out[f"{name}_int8"] = root / f"{name}_int8.dtm"
        dt.export(q, make_input(1), str(out[f"{name}_int8"]), bundle_example=True)
    # a model exported with a dynamic batch runs at its example shape
    make_model, make_input = zoo.ZOO["simplenet"]
    dt.manual_seed(0)
    out["simplenet_dynamic"] = root / "simplenet_dynamic.dtm"
    dt.export(make_model().eval(), make_input(2), str(out["simplenet_dynamic"]), bundle_example=True,
              dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    return out


@pytest.mark.parametrize("name", ["simplenet", "simplenet_int8", "mobilenetv2", "mobilenetv2_int8",
                                  "simplenet_dynamic"])
def test_c_api_gives_the_session_bits(c_api_test, models, name, tmp_path):
    path = models[name]
    r = subprocess.run([str(c_api_test), str(path), str(tmp_path / "out")], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    figures = json.loads(r.stdout)
    sess = InferenceSession(str(path), threads=1)
    tv = sess.test_vector()
    assert tv is not None
    inputs, expected = tv
    want = sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), inputs)})
    assert figures["inputs"] == len(inputs) and figures["outputs"] == len(want)
    for k, w in enumerate(want):
        got = np.frombuffer((tmp_path / f"out{k}.bin").read_bytes(), dtype=w.dtype).reshape(w.shape)
        assert got.tobytes() == w.tobytes(), f"output {k} differs from the Session's"
        np.testing.assert_allclose(got, expected[k], rtol=1e-4, atol=1e-4 * float(np.abs(expected[k]).max() + 1))
    # the arena holds everything: at least the file's plan and the outputs
    assert figures["arena_bytes"] >= sess.info["arena_size"] + sum(w.nbytes for w in want)
    assert 0 < figures["lower_bound"] < figures["arena_bytes"]


def test_a_broken_file_is_refused_with_its_reason(c_api_test, models, tmp_path):
    data = bytearray(models["simplenet"].read_bytes())
    bad = tmp_path / "truncated.dtm"
    bad.write_bytes(bytes(data[: len(data) // 2]))
    r = subprocess.run([str(c_api_test), str(bad), str(tmp_path / "out")], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1
    assert "invalid model" in r.stderr and "truncated?" in r.stderr, r.stderr


# Symbols a heapless, exception-free, thread-free, I/O-free object must not need.
_FORBIDDEN = re.compile(r"^(malloc|calloc|realloc|free|posix_memalign|aligned_alloc|_Zn[wa]|_Zd[la]|__cxa_|_Unwind_|"
                        r"__gxx_personality|pthread_|f?open|fclose|fread|fwrite|fputs|fprintf|printf|puts|stderr|"
                        r"stdout|_ZSt|_ZNSt|_ZNKSt|__dynamic_cast|_ZTI|abort)")


def test_the_core_and_the_portable_kernels_need_no_heap_exceptions_threads_or_io():
    scons_host("dtorch-run")
    nm = shutil.which("nm")
    assert nm is not None, "nm (binutils) is missing: run scripts/setup.sh"
    objs = sorted((BUILD / "obj" / "runtime" / "core").glob("*.o"))
    objs += sorted((BUILD / "obj" / "runtime" / "kernels" / "portable").glob("*.o"))
    assert len(objs) > 50
    bad = {}
    for o in objs:
        syms = subprocess.run([nm, "-u", str(o)], capture_output=True, text=True, check=True).stdout.split()
        hits = [s for s in syms if s != "U" and _FORBIDDEN.match(s)]
        if hits:
            bad[o.relative_to(BUILD).as_posix()] = hits
    assert not bad, f"the heapless core reaches for the C++ or C runtime: {bad}"


def test_the_core_sources_include_no_container_or_string_header():
    banned = re.compile(r"#include <(string|vector|map|unordered_map|memory|functional|thread|mutex|iostream|"
                        r"sstream|fstream|cstdio|pthread\.h)>")
    hits = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in sorted((ROOT / "runtime" / "core").glob("*"))
            for m in banned.finditer(p.read_text())]
    hits += [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in sorted((ROOT / "runtime" / "kernels" / "portable").glob("*"))
             for m in banned.finditer(p.read_text())]
    assert not hits, hits
