from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # helpers_filters: importable by tests (and Dask workers)


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    return tmp_path
