"""runtime/sources.json is the one list of the runtime's sources: every .cc file is in exactly one group, and
setup.py, SConstruct and the board build plan take their files from it (none keeps a list of its own)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dtorch.edge.build_plan import make_plan
from dtorch.edge.kernel_sets import host_arch
from dtorch.edge.oplist import OpList
from dtorch.edge.sources import RUNTIME, SourcesError, load_sources
from dtorch.edge.toolchains import ToolchainError

ROOT = Path(__file__).resolve().parents[2]
SOURCES = load_sources(ROOT / "runtime")


def test_every_runtime_source_is_in_exactly_one_group():
    assert SOURCES.unclaimed() == [], "add these files to a group of runtime/sources.json"
    assert SOURCES.claimed_twice() == {}
    headers = {p.relative_to(ROOT / "runtime").as_posix() for p in SOURCES.paths("headers")}
    assert "include/dtorch/runtime.h" in headers and all(h.endswith(".h") for h in headers)


def test_no_consumer_keeps_its_own_list():
    # a quoted .cc path or glob in a build file is a second list; the description is the one place
    quoted_cc = re.compile(r"""["'][^"'\s]+\.cc["']""")
    for rel in ("SConstruct", "setup.py", "dtorch/edge/build_plan.py"):
        text = "\n".join(line.split("#", 1)[0] for line in (ROOT / rel).read_text().splitlines())  # code, not comments
        assert not quoted_cc.findall(text), f"{rel} names runtime sources itself: {quoted_cc.findall(text)}"
        assert "sources" in text


def test_setup_py_compiles_the_runtime_python_and_isa_groups(monkeypatch):
    import pybind11.setup_helpers as helpers
    import setuptools

    captured: dict = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kw: captured.update(kw))
    monkeypatch.setattr(helpers, "ParallelCompile", lambda *a, **k: type("P", (), {"install": lambda self: None})())
    scope = {"__file__": str(ROOT / "setup.py"), "__name__": "setup_under_test"}
    exec(compile((ROOT / "setup.py").read_text(), "setup.py", "exec"), scope)
    want = ["runtime/" + f for f in SOURCES.files(*RUNTIME, "python", "isa", arch=host_arch())]
    assert captured["ext_modules"][0].sources == want
    assert want[-1].startswith("runtime/kernels/") and "portable" not in want[-1]  # the ISA sets are linked last


def test_sconstruct_targets_link_the_description_groups(tmp_path):
    wrap = tmp_path / "wrap.py"
    wrap.write_text(
        "import json, os\nSConscript('#SConstruct')\nroot = Dir('#').abspath\nout = {}\n"
        "for name in ('dtorch-run', 'alloc-test', 'format-test'):\n"
        "    for prog in Alias(name)[0].children():\n"
        "        out[name] = [os.path.relpath((o.sources[0] if o.sources else o).srcnode().abspath, root)\n"
        "                     for o in prog.sources]\n"
        "print('TARGETS ' + json.dumps(out))\nExit(0)\n")
    scons = Path(sys.executable).with_name("scons")
    if not scons.exists():
        pytest.skip("scons is not installed in this environment")
    r = subprocess.run([str(scons), "-h", "-Q", "-f", str(wrap)], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("TARGETS ")), None)
    assert line is not None, r.stdout + r.stderr
    got = json.loads(line[len("TARGETS "):])

    def rel(*groups: str) -> list[str]:
        return ["runtime/" + f for f in SOURCES.files(*groups, arch=host_arch())]

    # the objects live in build/host/obj/runtime/...; srcnode() maps them back to their sources
    assert got["dtorch-run"] == rel(*RUNTIME, "app", "app_common", "isa")
    assert got["alloc-test"] == rel(*RUNTIME, "alloc_test", "isa")
    assert got["format-test"] == rel(*RUNTIME, "format_test")


@pytest.mark.parametrize("board", ["host", "rk3588"])
def test_board_plan_takes_the_groups(board):
    try:
        every = make_plan(board, ops=OpList.everything(), root=ROOT)
        pruned = make_plan(board, ops=OpList.from_entries(["conv2d:float32", "relu:float32"]), root=ROOT)
    except ToolchainError as e:
        pytest.skip(f"no toolchain for {board}: {e}")
    libcxx = ["libcxx"] if every.found.kind == "zig" else []
    groups = [*RUNTIME, "app", "app_common", "board_app", *libcxx]
    rels = [s.rel for s in every.sources]
    # dtorch-agent: the same runtime sources, its own in place of dtorch-run's, the same ISA sets last
    agent = [s.rel for s in every.agent_sources]
    n_runtime = len(SOURCES.files(*RUNTIME))
    assert agent[:n_runtime] == rels[:n_runtime]
    assert agent[n_runtime:len(agent) - len(rels) + len(SOURCES.files(*groups))] == SOURCES.files(
        "agent_main", "agent", "app_common", "board_app", *libcxx)
    assert every.has_agent and every.c_flags[:2] == ("-x", "c")
    assert rels[:len(SOURCES.files(*groups))] == SOURCES.files(*groups)
    isa = rels[len(SOURCES.files(*groups)):]  # the ISA sets (host: its CPU's; rk3588: neon64, neon64dot), last
    assert all(r.startswith("kernels/") and not r.startswith("kernels/portable/") for r in isa)
    if board == "host":
        assert bool(isa) == (every.found.kind in ("gcc", "clang"))
    else:
        assert isa and all(r.startswith(("kernels/neon64/", "kernels/neon64dot/")) for r in isa)
    kernels = [s.rel for s in pruned.sources if s.rel.startswith("kernels/portable/")]
    assert kernels == ["kernels/portable/conv2d.cc", "kernels/portable/relu.cc"]
    assert [s.rel for s in pruned.sources if not s.rel.startswith("kernels/")] == [
        r for r in SOURCES.files(*groups) if not r.startswith("kernels/")]


def _runtime(tmp_path: Path, groups: object) -> Path:
    rt = tmp_path / "runtime"
    (rt / "core").mkdir(parents=True)
    (rt / "core" / "a.cc").write_text("")
    (rt / "sources.json").write_text(json.dumps({"groups": groups}))
    return rt


def test_a_file_in_no_group_or_two_is_named(tmp_path):
    rt = _runtime(tmp_path, {"core": {"glob": ["core/*.cc"]}, "again": {"files": ["core/a.cc"]}})
    (rt / "apps").mkdir()
    (rt / "apps" / "new.cc").write_text("")
    s = load_sources(rt)
    assert s.unclaimed() == ["apps/new.cc"]
    assert s.claimed_twice() == {"core/a.cc": ["core", "again"]}


@pytest.mark.parametrize("groups, match", [
    ({"core": {"files": ["core/gone.cc"]}}, r"group 'core' names core/gone.cc, which does not exist"),
    ({"core": {"glob": "core/*.cc"}}, r"group 'core' must have a 'files' or 'glob' list"),
    ({}, r"must hold a 'groups' mapping"),
])
def test_bad_descriptions_are_named(tmp_path, groups, match):
    rt = _runtime(tmp_path, groups)
    with pytest.raises(SourcesError, match=match):
        load_sources(rt).paths(*groups)


def test_unknown_group_lists_the_groups():
    with pytest.raises(SourcesError, match=r"no source group 'kernel'; the groups are core, hosted, baremetal, common, portable"):
        SOURCES.files("kernel")
