"""Int8 quantization (issue 17): the integer arithmetic of the int8 operators (`_fixed_point`, the reference the C++
kernels follow bit for bit)."""

from __future__ import annotations

__all__: list[str] = []
