"""dtorch::format (runtime/core/format.cc), the runtime's own printf, against Python's % formatting (which follows C's
printf and rounds floats exactly, as glibc does): integers, strings and doubles over flags, widths, precisions and
every exponent range, including denormals, ties and carries.

The cases run through build/host/format-test (``scons format-test``), one per line.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from host_build import scons_host


@pytest.fixture(scope="module")
def format_test() -> Path:
    return scons_host("format-test") / "format-test"


def _python(fmt: str, kind: str, value: object) -> str:
    return re.sub(r"(hh|h|ll|l|z|j|t)(?=[diouxXc])", "", fmt) % value


def _check(binary: Path, cases: list[tuple[str, str, object]]) -> None:
    lines = []
    for fmt, kind, value in cases:
        text = value.hex() if kind == "f" else str(value)  # type: ignore[union-attr]
        lines.append(f"{fmt}\t{kind}\t{text}")
    r = subprocess.run([str(binary)], input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    got = r.stdout.split("\n")[:-1]
    assert len(got) == len(cases)
    bad = []
    for (fmt, kind, value), out in zip(cases, got):
        want = "[" + _python(fmt, kind, value) + "]"
        if out != want:
            bad.append(f"{fmt!r} % {value!r}: dtorch {out}, C {want}")
    assert not bad, f"{len(bad)} of {len(cases)} differ, e.g.:\n" + "\n".join(bad[:20])


FLOAT_FORMATS = ["%g", "%.3g", "%.6g", "%.1g", "%.0g", "%.17g", "%.25g", "%e", "%.3e", "%.0e", "%E", "%#.0e", "%f",
                 "%.3f", "%.0f", "%#.0f", "%9.3f", "%5.1f", "%-12.4f|", "%+.2f", "% .2e", "%012.3f", "%G", "%.10f",
                 "%.20f", "%20.10e", "%.40e", "%.300f", "%-+10.2g|", "%08.3g"]
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, 0.1, 0.125, 0.375, 1e-5, 1e-4, 9.9999e-5, 123456.0, 999999.5, 9.9999995,
           0.0009999, 1e21, 1e22, 1e23, 1.7976931348623157e308, 5e-324, 2.2250738585072014e-308, 3.14159265358979,
           float("nan"), float("inf"), float("-inf"), 1e100, 0.05, 0.005, 0.015, 0.95, 9.5, 99.95, 0.45, 1e-300]


@pytest.mark.parametrize("fmt", FLOAT_FORMATS)
def test_doubles_match_c(format_test: Path, fmt: str) -> None:
    rng = np.random.default_rng(len(fmt) + sum(map(ord, fmt)))
    random = rng.random(3000) * 10.0 ** rng.integers(-40, 40, 3000) * rng.choice([-1, 1], 3000)
    bits = rng.integers(0, 2**63 - 1, 500, dtype=np.int64).view(np.float64)  # every exponent, denormals too
    values = SPECIAL + [float(v) for v in random] + [float(v) for v in bits if np.isfinite(v)]
    if "0" in fmt.split(".")[0]:  # Python pads inf/nan with zeros under the 0 flag; C (glibc, musl) with spaces
        values = [v for v in values if np.isfinite(v)]
    _check(format_test, [(fmt, "f", v) for v in values])


def test_integers_and_strings_match_c(format_test: Path) -> None:
    cases: list[tuple[str, str, object]] = []
    # (Python's % differs from C for a zero with precision 0 ("%.0d") and for "%#x" of zero, so those are left out.)
    for fmt in ["%lld", "%5lld", "%-5lld|", "%05lld", "%+lld", "% lld", "%.3lld", "%8.3lld", "%20lld", "%-+8lld|"]:
        for v in [0, 1, -1, 42, -42, 2**31 - 1, -(2**31), 255, 10**6, 2**63 - 1, -(2**63)]:
            cases.append((fmt, "d", v))
    for fmt in ["%llu", "%llx", "%#llx", "%llX", "%llo", "%010llx", "%zu", "%-12zu|"]:
        for v in [0, 1, 255, 4096, 2**32, 2**64 - 1]:
            if not (v == 0 and "#" in fmt):
                cases.append((fmt, "z" if "z" in fmt else "u", v))
    for fmt in ["%s", "%10s", "%-10s|", "%.2s", "%-22s|", "%.0s", "100%% %s"]:
        for v in ["", "abc", "hello world", "conv2d"]:
            cases.append((fmt, "s", v))
    _check(format_test, cases)


def test_truncates_like_snprintf(format_test: Path) -> None:
    """A result longer than the buffer is cut, NUL-terminated (format-test's buffer holds 2047 characters)."""
    r = subprocess.run([str(format_test)], input="%-3000s\ts\tx\n", capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout == "[x" + " " * 2046 + "]\n"
