"""Fixtures shared across test packages: the trained demo checkpoint and the Triton venv are
used by tests/train and tests/deploy (session-scoped, built once, only when a test asks); a
real HTTP mirror on 127.0.0.1 serves the acquire and extract tests. At the end of a session,
network namespaces left by a test process that was killed are removed."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.acquire.helpers_acquire import Mirror

pytest_plugins = ["tests.fixtures_train"]


#: memory a worker may need at its peak (a Dask cluster, a model, a training run at once)
_WORKER_GIB = 3.5


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: half again as many workers as cores (at least one more), as memory allows.
    Much of the suite waits on real clusters, outages and deadlines rather than computing: on
    2 cores, 2 workers kept them 165% busy, 3 workers 178-186%.
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still decides when set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    cores = len(os.sched_getaffinity(0))
    try:
        gib = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30
    except (ValueError, OSError):
        gib = _WORKER_GIB * cores
    return max(1, min(cores + max(1, cores // 2), int(gib // _WORKER_GIB)))


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
