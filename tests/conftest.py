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
