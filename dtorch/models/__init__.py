"""Reference models used by the demo, the benchmarks and the tests."""

from .simplenet import SimpleNet

__all__ = ["SimpleNet"]
