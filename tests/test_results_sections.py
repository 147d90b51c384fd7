"""benchmarks/results.py: a "###" block written inside a section (bench_int8.py --isa avx2) replaces only itself,
leaves the other sections alone, and survives its section's owner rewriting the section."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    spec = importlib.util.spec_from_file_location("bench_results", ROOT / "benchmarks" / "results.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    monkeypatch.setattr(mod, "RESULTS", tmp_path / "RESULTS.md")
    mod.RESULTS.write_text(mod.HEADER + "\n## A\n\nCommand: `a` (x)\n\nfirst\n\n## B\n\nCommand: `b` (x)\n\nsecond\n")
    return mod


def test_subsection_goes_inside_its_section_and_replaces_only_itself(results):
    results.write_subsection("A", "sub", "one", "cmd")
    text = results.RESULTS.read_text()
    assert text.index("first") < text.index("### sub") < text.index("one") < text.index("## B")
    results.write_subsection("A", "sub", "two", "cmd")
    text = results.RESULTS.read_text()
    assert "one" not in text and text.count("### sub") == 1 and "two" in text
    assert "second" in text and "first" in text


def test_subsection_survives_its_section_being_rewritten(results):
    results.write_subsection("A", "sub", "kept", "cmd")
    results.write_section("A", "new\n\n" + results.subsections("A"), "a")
    text = results.RESULTS.read_text()
    assert "first" not in text and "new" in text and "### sub" in text and "kept" in text
    assert text.index("kept") < text.index("## B") and "second" in text


def test_subsection_of_a_missing_section_creates_it(results):
    results.write_subsection("C", "sub", "body", "cmd")
    text = results.RESULTS.read_text()
    assert text.index("## C") < text.index("### sub") < text.index("body")
    assert results.subsections("missing") == ""
