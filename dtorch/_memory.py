"""Allocator policy for the eager host framework.

Eager mode allocates and frees the same large activation and gradient arrays every training step.
With glibc's defaults those arrays are mapped fresh from the OS (and unmapped again) each time, and
every first touch of a page is a page fault — in a VM that costs more than the arithmetic. At import,
dtorch raises glibc's mmap and trim thresholds so freed arrays go back to the heap and are reused
without faults, the way PyTorch's and other frameworks' caching allocators keep memory. The process
then keeps its peak heap instead of returning it to the OS. Set DTORCH_MALLOC_TUNING=0 to keep
glibc's defaults.
"""

from __future__ import annotations

import ctypes
import os
import sys

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's maximum on 64-bit systems
TRIM_THRESHOLD = 1 << 30

applied = False


def tune_malloc() -> bool:
    """Apply the policy once; returns whether it is in effect (False off glibc or when disabled)."""
    global applied
    if applied:
        return True
    if os.environ.get("DTORCH_MALLOC_TUNING", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        # the process's own symbol table already holds the C library (ctypes.util.find_library would
        # spawn a subprocess, costing ~20 ms of import time)
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    applied = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return applied
