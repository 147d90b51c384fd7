"""Keep benchmarks/RESULTS.md as named sections, each rewritten by the benchmark that owns it."""

from __future__ import annotations

import datetime
import os
import re
import tempfile
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
HEADER = "# Benchmark results\n\nEach section is written by the command named in it; rerun that command to refresh it.\n"


def write_section(title: str, body: str, command: str) -> None:
    text = RESULTS.read_text() if RESULTS.exists() else HEADER
    stamp = datetime.date.today().isoformat()
    section = f"## {title}\n\nCommand: `{command}` ({stamp})\n\n{body.rstrip()}\n"
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _m: section + "\n", text).rstrip() + "\n"
    else:
        text = text.rstrip() + "\n\n" + section
    fd, tmp = tempfile.mkstemp(dir=RESULTS.parent, prefix=".RESULTS.")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, RESULTS)


def _section_span(text: str, title: str) -> tuple[int, int] | None:
    m = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M).search(text)
    return None if m is None else (m.start(), m.end())


def subsections(title: str) -> str:
    """The "### " blocks of section `title` as they stand (for its owner to carry over when it rewrites it)."""
    text = RESULTS.read_text() if RESULTS.exists() else ""
    span = _section_span(text, title)
    if span is None:
        return ""
    m = re.compile(r"^### .*", re.S | re.M).search(text, span[0], span[1])
    return "" if m is None else text[m.start():span[1]].rstrip() + "\n"


def write_subsection(title: str, sub: str, body: str, command: str) -> None:
    """Writes "### sub" inside section `title` (created when missing), replacing that block or appending it at the
    section's end; the rest of the file stays as it is."""
    text = RESULTS.read_text() if RESULTS.exists() else HEADER
    stamp = datetime.date.today().isoformat()
    block = f"### {sub}\n\nCommand: `{command}` ({stamp})\n\n{body.rstrip()}\n"
    span = _section_span(text, title)
    if span is None:
        text = text.rstrip() + f"\n\n## {title}\n\n" + block
    else:
        section = text[span[0]:span[1]]
        pat = re.compile(rf"^### {re.escape(sub)}\n.*?(?=^### |\Z)", re.S | re.M)
        if pat.search(section):
            section = pat.sub(lambda _m: block + "\n", section)
        else:
            section = section.rstrip() + "\n\n" + block
        text = text[:span[0]] + section.rstrip() + "\n\n" + text[span[1]:].lstrip()
    fd, tmp = tempfile.mkstemp(dir=RESULTS.parent, prefix=".RESULTS.")
    with os.fdopen(fd, "w") as fh:
        fh.write(text.rstrip() + "\n")
    os.replace(tmp, RESULTS)
