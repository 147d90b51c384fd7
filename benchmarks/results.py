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
