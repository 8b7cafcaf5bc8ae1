from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.dedup.helpers_dedup import RedisCluster


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisCluster]:
    """A real 3-master Redis Cluster for the whole session."""
    c = RedisCluster(tmp_path_factory.mktemp("redis-cluster"))
    yield c
    c.close()
