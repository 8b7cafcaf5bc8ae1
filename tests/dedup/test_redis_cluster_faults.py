"""The redis backend when the server answers with an error or loses keys mid-run, on real
servers: out of memory (``maxmemory`` with ``noeviction``) and eviction are one line naming
the node, never "down or unreachable" and never a smaller result; keys lost mid-run (FLUSHALL,
failover to a replica without the data, a replica that lagged) stop the stage with one line.

The run is frozen at a deterministic point by failure injection: a wrapper around
``RedisBucketStore.claim`` stops the process (SIGSTOP) right after the first shard's claim
returned; the test waits for that state (``/proc``), does the damage, and continues it."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import redis

from curator.base.errors import StageError
from curator.dedup.backends import redis_watch
from curator.dedup.backends.redis_cluster import RedisBucketStore
from tests.dedup.helpers_dedup import (
    REPO,
    RedisCluster,
    free_ports,
    make_corpus,
    plain_redis_server,
    rejected,
    start_frozen_run,
    wait_until,
    write_pipeline,
)
from tests.helpers import run_cli

FUZZY = "{shingle: word, ngram: 5, threshold: 0.7"



def _stage(nodes: list[str], extra: str = "") -> str:
    quoted = ", ".join(f"'{n}'" for n in nodes)
    return f"  - fuzzy_dedup: {FUZZY}, backend: redis, redis_nodes: [{quoted}]{extra}}}\n"


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO))


def _run(y: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "curator", "run", str(y)], cwd=REPO,
                          env=_env(), capture_output=True, text=True, timeout=300)


def _one_error_line(stderr: str) -> str:
    """The run's single ``curator: error:`` line (printable ASCII, no traceback)."""
    errs = [x for x in stderr.splitlines() if x.startswith("curator: error:")]
    assert len(errs) == 1, stderr
    assert "Traceback" not in stderr and "\\x" not in stderr, stderr
    assert all(" " <= c <= "~" for c in errs[0]), errs[0]  # no raw key bytes
    return errs[0]


def _nothing_done(work: Path) -> None:
    sdir = work / "stages" / "fuzzy_dedup"
    assert not (sdir / "_SUCCESS.json").exists()
    assert not (sdir / "data").exists()


def _embedded(tmp_path: Path, inputs: str) -> dict[str, dict]:
    ye = write_pipeline(tmp_path / "e.yaml", tmp_path / "we", inputs,
                        f"  - fuzzy_dedup: {FUZZY}}}\n")
    run_cli("run", str(ye))
    return rejected(tmp_path / "we", "fuzzy_dedup")


def _limit_memory(r: redis.Redis, policy: str, headroom: int) -> None:
    """``maxmemory`` just above what the empty server uses."""
    used = int(r.info("memory")["used_memory"])
    r.config_set("maxmemory-policy", policy)
    r.config_set("maxmemory", used + headroom)


# -- (a) reply errors: out of memory and eviction ----------------------------------------------


def test_out_of_memory_on_a_plain_server_stops_the_run(tmp_path):
    """Used to be swallowed as a "redirect": exit 0 with fewer duplicates removed."""
    make_corpus(tmp_path / "c", n_base=200, seed=21)
    with plain_redis_server(tmp_path) as port:
        r = redis.Redis(port=port)
        _limit_memory(r, "noeviction", 50_000)
        y = write_pipeline(tmp_path / "r.yaml", tmp_path / "w", f"{tmp_path}/c/part*.jsonl",
                           _stage([f"127.0.0.1:{port}"]))
        p = _run(y)
        assert p.returncode != 0, p.stderr
        line = _one_error_line(p.stderr)
        assert line == (f"curator: error: redis 127.0.0.1:{port}: out of memory (maxmemory "
                        "reached); raise maxmemory or add nodes (docs/scale.md: Redis sizing); "
                        "nothing was marked done"), line
        _nothing_done(tmp_path / "w")
        r.config_set("maxmemory", 0)  # the rerun, with room, completes and agrees
        assert _run(y).returncode == 0
        got = rejected(tmp_path / "w", "fuzzy_dedup")
        assert len(got) > 50 and got == _embedded(tmp_path, f"{tmp_path}/c/part*.jsonl")


def test_out_of_memory_on_a_cluster_names_the_node(tmp_path, redis_cluster):
    """Used to read "redis cluster ... is down or unreachable" (or "redis node <key bytes>")."""
    make_corpus(tmp_path / "c", n_base=200, seed=22)
    conns = {p: redis.Redis(port=p) for p in redis_cluster.ports}
    try:
        for r in conns.values():
            _limit_memory(r, "noeviction", 50_000)
        y = write_pipeline(tmp_path / "r.yaml", tmp_path / "w", f"{tmp_path}/c/part*.jsonl",
                           _stage(redis_cluster.nodes))
        p = _run(y)
        assert p.returncode != 0, p.stderr
        line = _one_error_line(p.stderr)
        m = re.fullmatch(r"curator: error: redis 127\.0\.0\.1:(\d+): out of memory \(maxmemory "
                         r"reached\); raise maxmemory or add nodes .*", line)
        assert m and int(m.group(1)) in redis_cluster.ports, line
        assert "down or unreachable" not in p.stderr
        _nothing_done(tmp_path / "w")
    finally:
        for r in conns.values():
            r.config_set("maxmemory", 0)
    run_cli("run", str(y))
    assert rejected(tmp_path / "w", "fuzzy_dedup") == _embedded(
        tmp_path, f"{tmp_path}/c/part*.jsonl")
    assert redis_cluster.keys("curator:*") == 0


def test_eviction_during_the_run_stops_it(tmp_path):
    """``allkeys-lru``: writes succeed while older buckets are silently evicted; the run used
    to finish with fewer duplicates. Now the eviction count read before and after the claims
    stops it (or, when eviction cannot free enough, the OOM reply does): either way one line
    saying the node ran out of memory."""
    make_corpus(tmp_path / "c", n_base=200, seed=23)
    with plain_redis_server(tmp_path) as port:
        r = redis.Redis(port=port)
        _limit_memory(r, "allkeys-lru", 250_000)  # the run peaks at ~440 KB
        y = write_pipeline(tmp_path / "r.yaml", tmp_path / "w", f"{tmp_path}/c/part*.jsonl",
                           _stage([f"127.0.0.1:{port}"], ", redis_batch: 50"))
        p = _run(y)
        assert int(r.info("stats")["evicted_keys"]) > 0  # the damage did happen
        assert p.returncode != 0, p.stderr
        line = _one_error_line(p.stderr)
        assert line.startswith(f"curator: error: redis 127.0.0.1:{port}: out of memory"), line
        assert "raise maxmemory or add nodes" in line
        _nothing_done(tmp_path / "w")


# -- (b) keys lost mid-run ---------------------------------------------------------------------


def _frozen_run(tmp_path: Path, nodes: list[str]) -> tuple[subprocess.Popen, Path]:
    """Start the run and return once it is stopped right after its first shard's claim."""
    make_corpus(tmp_path / "c", n_base=120, seed=24, shards=6)
    y = write_pipeline(tmp_path / "r.yaml", tmp_path / "w", f"{tmp_path}/c/part*.jsonl",
                       _stage(nodes))
    run = start_frozen_run(tmp_path, ["run", str(y)], _env())
    return run, y


def _finish(run: subprocess.Popen) -> str:
    os.kill(run.pid, signal.SIGCONT)
    _out, err = run.communicate(timeout=120)
    assert run.returncode != 0, err
    return err


def _kill(run: subprocess.Popen) -> None:
    if run.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(run.pid, signal.SIGKILL)
        run.wait()


def test_flushall_mid_run_is_detected(tmp_path, tmp_path_factory):
    """FLUSHALL on every master after the first shard's claim: the later shards found empty
    buckets and the run used to end with exit 0 and fewer removals."""
    cluster = RedisCluster(tmp_path_factory.mktemp("redis-flush"))
    run = None
    try:
        run, y = _frozen_run(tmp_path, cluster.nodes)
        flushed = cluster.ports[0]
        cluster.client(flushed).flushall()
        err = _finish(run)
        line = _one_error_line(err)
        assert line.startswith(f"curator: error: redis 127.0.0.1:{flushed}: keys of this run "
                               "vanished while it ran"), line
        _nothing_done(tmp_path / "w")
        run_cli("run", str(y))  # the rerun redoes the claims and agrees with embedded
        got = rejected(tmp_path / "w", "fuzzy_dedup")
        assert len(got) > 20 and got == _embedded(tmp_path, f"{tmp_path}/c/part*.jsonl")
        assert cluster.keys("curator:*") == 0
    finally:
        if run is not None:
            _kill(run)
        cluster.close()


def _node_id(r: redis.Redis) -> str:
    i = r.execute_command("CLUSTER", "MYID")
    return i.decode() if isinstance(i, bytes) else i


def _serves(r: redis.Redis, port: int) -> bool:
    """Does ``port`` serve any slot according to ``r``?"""
    return any(int(e[2][1]) == port for e in r.execute_command("CLUSTER", "SLOTS"))


def test_failover_to_an_empty_replica_is_detected(tmp_path, tmp_path_factory):
    """Mid-run a master is replaced by a replica that never received its data (its initial
    sync had not started: ``repl-diskless-sync-delay``); ``CLUSTER FAILOVER TAKEOVER``. The
    run used to continue on the empty node and end with exit 0 and fewer removals."""
    cluster = RedisCluster(tmp_path_factory.mktemp("redis-failover"))
    run = None
    try:
        master = cluster.ports[1]
        m = cluster.client(master)
        m.config_set("repl-diskless-sync", "yes")
        m.config_set("repl-diskless-sync-delay", 600)  # the replica's sync never starts
        run, y = _frozen_run(tmp_path, cluster.nodes)
        (rep,) = free_ports(1)
        cluster.start_node(rep)
        r = cluster.client(rep)
        for p in cluster.ports:
            r.execute_command("CLUSTER", "MEET", "127.0.0.1", p)
        wait_until(lambda: all(_node_id(r) in str(cluster.client(p).execute_command(
            "CLUSTER", "NODES")) for p in cluster.ports), what="the cluster to know the node")
        wait_until(lambda: _node_id(m) in str(r.execute_command("CLUSTER", "NODES")),
                   what="the new node to learn the master")
        r.execute_command("CLUSTER", "REPLICATE", _node_id(m))
        wait_until(lambda: r.info("replication")["role"] == "slave", what="replica role")
        assert r.dbsize() == 0  # it has none of the run's keys
        r.execute_command("CLUSTER", "FAILOVER", "TAKEOVER")
        wait_until(lambda: all(_serves(cluster.client(p), rep) and not _serves(
            cluster.client(p), master) for p in cluster.ports), what="the takeover")
        cluster.ports.append(rep)
        cluster.wait_ok()
        err = _finish(run)
        line = _one_error_line(err)
        assert line.startswith(f"curator: error: redis 127.0.0.1:{rep}: keys of this run "
                               "vanished while it ran"), line
        _nothing_done(tmp_path / "w")
        run_cli("run", str(y))
        got = rejected(tmp_path / "w", "fuzzy_dedup")
        assert len(got) > 20 and got == _embedded(tmp_path, f"{tmp_path}/c/part*.jsonl")
    finally:
        if run is not None:
            _kill(run)
        cluster.close()


def test_lost_writes_behind_a_surviving_sentinel_are_detected(redis_cluster):
    """A replica that lagged keeps the sentinel (written first) but not the last writes: the
    witness counters, incremented after each batch's writes, fall short."""
    store = RedisBucketStore(redis_cluster.nodes, "curator:test-lag:", buckets=50)
    try:
        begun = redis_watch.begin(store)
        d = np.random.default_rng(3).integers(0, 2**64 - 1, size=2000, dtype=np.uint64)
        store.claim(d, np.arange(2000, dtype=np.uint64))
        witness = {k.hex(): n for k, n in store.witness.items()}
        redis_watch.verify(store, begun, witness)  # nothing lost: passes
        # the node of one counter loses its last batch: the data and the increment after it
        from redis.crc import key_slot

        key = next(iter(store.witness))
        port = store.rc.nodes_manager.get_node_from_slot(key_slot(key)).port
        node = redis.Redis(port=port)
        for k in node.keys("curator:test-lag:b*"):
            node.delete(k)
        node.decrby(key, 1)
        with pytest.raises(StageError, match=rf"^redis 127\.0\.0\.1:{port}: 1 of \d+ bucket "
                                             "writes of this run are missing"):
            redis_watch.verify(store, begun, witness)
    finally:
        store.cleanup()
        store.close()
