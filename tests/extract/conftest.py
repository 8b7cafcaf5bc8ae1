"""The extract tests feed pages through sources served by a real HTTP mirror on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from helpers_acquire import Mirror


@pytest.fixture
def mirror(tmp_path: Any) -> Iterator[Mirror]:
    root = tmp_path / "mirror"
    root.mkdir()
    m = Mirror(str(root))
    yield m
    m.close()
