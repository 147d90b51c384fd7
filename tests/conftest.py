"""Shared pytest configuration for the DTorch test suites (fixtures go here)."""

from __future__ import annotations

import sys
from pathlib import Path

_TESTS = Path(__file__).resolve().parent
# The source tree first, so `import dtorch` is this checkout's regular package (a stale editable
# install can otherwise resolve it as a namespace package); then the shared test helpers
# (`tensor_oracle`: the PyTorch comparison helpers) that live beside this file.
for _p in (str(_TESTS), str(_TESTS.parent)):
    if _p in sys.path:
        sys.path.remove(_p)
    sys.path.insert(0, _p)


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # type: ignore[no-untyped-def]
    """Every skip says why: one line per distinct reason, with how many tests it skipped (also under -q)."""
    from collections import Counter

    reasons: Counter[str] = Counter()
    for rep in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(rep, "longrepr", None)
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        reasons[reason.removeprefix("Skipped: ")] += 1
    if reasons:
        terminalreporter.write_line("skipped tests, by reason:")
        for reason, n in reasons.most_common():
            terminalreporter.write_line(f"  {n:5d}  {reason}")
