"""Fixtures of the backend tests: the small int8 models of models.py, exported once per session."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("backend_test_models", Path(__file__).with_name("models.py"))
models = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(models)  # type: ignore[union-attr]


@pytest.fixture(scope="session")
def mixed_int8(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return models.int8_model(models.Mixed(), tmp_path_factory.mktemp("backends") / "mixed_int8.dtm")


@pytest.fixture(scope="session")
def stride8_int8(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return models.int8_model(models.WideStride(), tmp_path_factory.mktemp("backends") / "stride8_int8.dtm", size=32)


@pytest.fixture(scope="session")
def rk3588():  # type: ignore[no-untyped-def]
    from dtorch.edge.boards import load_board

    return load_board("rk3588")
