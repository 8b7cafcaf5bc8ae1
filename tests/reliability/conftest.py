from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.canary import assert_untouched, canary_tree, snapshot


@pytest.fixture(autouse=True)
def canary(tmp_path: Path) -> Iterator[Path]:
    """A canary tree beside every reliability test's folder (``<tmp_path>-canary``: a sibling,
    so tests that list or digest their own folder see nothing new), checksummed before and
    after the test: nothing outside the work_dir and declared outputs is ever touched."""
    root = canary_tree(tmp_path.parent / f"{tmp_path.name}-canary")
    before = snapshot(root)
    yield root
    assert_untouched(root, before)
