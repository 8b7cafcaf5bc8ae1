"""Fixtures shared across test packages: the trained demo checkpoint and the Triton venv are
used by tests/train and tests/deploy (session-scoped, built once, only when a test asks); a
real HTTP mirror on 127.0.0.1 serves the acquire and extract tests. At the end of a session,
network namespaces left by a test process that was killed are removed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.acquire.helpers_acquire import Mirror

pytest_plugins = ["tests.fixtures_train"]


@pytest.fixture(scope="session", autouse=True)
def _netns_swept() -> Iterator[None]:
    """Namespaces of tests/helpers_netns.py whose owner died (its slot lock is free); those of
    live processes, another session's included, are left alone."""
    yield
    from tests import helpers_netns

    try:
        helpers_netns.check_available()
    except helpers_netns.NetnsUnavailable:
        return
    helpers_netns.sweep()


@pytest.fixture
def mirror(tmp_path: Any) -> Iterator[Mirror]:
    root = tmp_path / "mirror"
    root.mkdir()
    m = Mirror(str(root))
    yield m
    m.close()
