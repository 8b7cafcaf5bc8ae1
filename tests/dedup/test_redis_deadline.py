"""How long the Redis backend waits for a node (without namespaces; the link-down cases across
hosts are tests/dedup/test_redis_link_down.py): a node that accepts connections and then says
nothing is tried again until the deadline and named in one line; a refused connection (no
server: its keys are gone) is final at once, whatever the deadline."""

from __future__ import annotations

import socket
import time

import pytest

from curator.base.errors import StageError
from curator.dedup.backends.redis_cluster import RedisBucketStore


def test_a_silent_node_is_retried_until_the_deadline_then_named():
    with socket.create_server(("127.0.0.1", 0), backlog=64) as srv:  # accepts, never answers
        port = srv.getsockname()[1]
        store = RedisBucketStore([f"127.0.0.1:{port}"], "curator:t:", deadline_s=3)
        t0 = time.monotonic()
        with pytest.raises(StageError) as e:
            store.check()
        took = time.monotonic() - t0
    line = str(e.value)
    assert line.startswith(f"redis node 127.0.0.1:{port} is down or unreachable: timed out"), line
    assert "deadline executor.peer_timeout_s = 3)" in line, line
    # never before the deadline; tries of 1 s (a quarter of the deadline, at least 1 s)
    assert 3 <= took < 8, took


def test_a_refused_connection_is_not_waited_for():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    store = RedisBucketStore([f"127.0.0.1:{port}"], "curator:t:", deadline_s=60)
    t0 = time.monotonic()
    with pytest.raises(StageError) as e:
        store.check()
    assert time.monotonic() - t0 < 5
    assert "connection refused" in str(e.value) and "no answer for" not in str(e.value)
