"""The redis backend on a real 3-master Redis Cluster: same removals as the embedded backend,
keys spread over the nodes and cleaned up, and a node that is down stops the stage with a
line naming it (nothing marked done) until it is back."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import redis

from curator.base.errors import StageError
from curator.dedup.backends.embedded import star_edges
from curator.dedup.backends.redis_cluster import RedisBucketStore, redis_edges
from tests.dedup.helpers_dedup import (
    RedisCluster,
    make_corpus,
    rejected,
    wait_until,
    write_pipeline,
)
from tests.helpers import run_cli

FUZZY = "{shingle: word, ngram: 5, threshold: 0.7"


def _fields(cluster, pattern: str) -> list[int]:
    """Per master: the bucket entries (hash fields) under ``pattern``."""
    out = []
    for p in cluster.ports:
        r = redis.Redis(port=p)
        out.append(sum(r.hlen(k) for k in r.keys(pattern) if r.type(k) == b"hash"))
    return out


def test_bucket_store_spreads_keys_and_cleans_up(redis_cluster):
    store = RedisBucketStore(redis_cluster.nodes, "curator:test-store:", batch=500,
                             buckets=40)
    rng = np.random.default_rng(1)
    digests = rng.integers(0, 2**64 - 1, size=3000, dtype=np.uint64)
    digests[1000:1500] = digests[:500]  # buckets with two members
    digests[2000:2100] = digests[:100]  # ... and some with three
    refs = np.arange(3000, dtype=np.uint64) + (np.uint64(3) << np.uint64(32))
    try:
        owners = store.claim(digests, refs)
        per_node = _fields(redis_cluster, "curator:test-store:b*")
        assert sum(per_node) == 2400 and min(per_node) > 500  # spread over all masters
        # 40 hashes of ~60 entries: Redis keeps them in the compact listpack encoding
        hashes = [(p, k) for p in redis_cluster.ports
                  for k in redis.Redis(port=p).keys("curator:test-store:b*")]
        assert len(hashes) == 40
        assert {redis.Redis(port=p).object("encoding", k) for p, k in hashes} == {b"listpack"}
        want = refs.copy()
        want[1000:1500] = refs[:500]
        want[2000:2100] = refs[:100]
        assert np.array_equal(owners, want)
        # a second claim (another shard) sees the owners of the first
        again = store.claim(digests[:10], refs[:10] + np.uint64(1 << 40))
        assert np.array_equal(again, refs[:10])
        # entries of a later shard are joined to the existing owners
        later = refs + np.uint64(1 << 41)
        u, v = redis_edges(store, digests, later)
        assert set(zip(u.tolist(), v.tolist())) == set(zip(want.tolist(), later.tolist()))
        # the first shard's own edges join the same documents as the embedded star edges
        eu, ev = star_edges(digests, refs)
        mask = want != refs
        assert set(zip(eu.tolist(), ev.tolist())) == set(zip(want[mask].tolist(),
                                                              refs[mask].tolist()))
        # the witness counters hold what the nodes acknowledged: 3 claims, one per node each
        assert sum(store.witness.values()) == 3000 + 10 + 3000 and len(store.witness) == 3
        assert store.cleanup() == 40 + 3
        assert redis_cluster.keys("curator:test-store:*") == 0
    finally:
        store.close()


def test_digests_that_share_a_hash_stay_apart(redis_cluster):
    """Digests with the same bucket number and different remainders (and the reverse) are
    different buckets: the field keeps every bit the key does not."""
    store = RedisBucketStore(redis_cluster.nodes, "curator:test-split:", buckets=7)
    top = np.uint64(2**64 - 7)  # bucket 2**64-7 % 7, the largest remainder
    d = np.array([3, 3 + 7, 3 + 7 * 2**40, top, top - np.uint64(7), 3, top], dtype=np.uint64)
    try:
        owners = store.claim(d, np.arange(7, dtype=np.uint64) + np.uint64(2**40))
        assert (owners - np.uint64(2**40)).tolist() == [0, 1, 2, 3, 4, 0, 3]
        store.cleanup()
    finally:
        store.close()


def test_redis_and_embedded_remove_the_same_documents(tmp_path, redis_cluster):
    make_corpus(tmp_path / "c", n_base=200, seed=3)
    nodes = ", ".join(f"'{n}'" for n in redis_cluster.nodes)
    ye = write_pipeline(tmp_path / "e.yaml", tmp_path / "we", f"{tmp_path}/c/part*.jsonl",
                        f"  - fuzzy_dedup: {FUZZY}}}\n")
    yr = write_pipeline(tmp_path / "r.yaml", tmp_path / "wr", f"{tmp_path}/c/part*.jsonl",
                        f"  - fuzzy_dedup: {FUZZY}, backend: redis, redis_nodes: [{nodes}], "
                        "redis_batch: 700}\n")
    for y in (ye, yr):
        run_cli("run", str(y))
    emb = rejected(tmp_path / "we", "fuzzy_dedup")
    red = rejected(tmp_path / "wr", "fuzzy_dedup")
    assert len(emb) > 50 and red == emb
    assert redis_cluster.keys("curator:*") == 0  # the run's keys are gone


def test_node_down_names_it_and_rerun_completes(tmp_path, tmp_path_factory):
    cluster = RedisCluster(tmp_path_factory.mktemp("redis-down"))
    try:
        make_corpus(tmp_path / "c", n_base=60, seed=4)
        nodes = ", ".join(f"'{n}'" for n in cluster.nodes)
        y = write_pipeline(tmp_path / "r.yaml", tmp_path / "w", f"{tmp_path}/c/part*.jsonl",
                           f"  - fuzzy_dedup: {FUZZY}, backend: redis, redis_nodes: [{nodes}]}}\n")
        down = cluster.ports[1]
        cluster.stop_node(down)
        # let the survivors notice (cluster_state:fail), so the error path is always the same
        alive = cluster.ports[0]
        wait_until(lambda: redis.Redis(port=alive).cluster("info")["cluster_state"] == "fail",
                   what="cluster to notice the node is down")
        r = run_cli("run", str(y), check=False)
        assert r.returncode != 0
        last = r.stderr.strip().splitlines()[-1]
        assert last.startswith("curator: error:") and f"127.0.0.1:{down}" in last, r.stderr
        assert "Traceback" not in r.stderr
        sdir = Path(tmp_path / "w" / "stages" / "fuzzy_dedup")
        assert not (sdir / "_SUCCESS.json").exists()
        assert not (sdir / "data").exists()  # no output shard was written

        cluster.start_node(down)
        cluster.wait_ok()
        run_cli("run", str(y))
        assert (sdir / "_SUCCESS.json").exists()
        ye = write_pipeline(tmp_path / "e.yaml", tmp_path / "we", f"{tmp_path}/c/part*.jsonl",
                            f"  - fuzzy_dedup: {FUZZY}}}\n")
        run_cli("run", str(ye))
        got = rejected(tmp_path / "w", "fuzzy_dedup")
        assert got and got == rejected(tmp_path / "we", "fuzzy_dedup")
        assert cluster.keys("curator:*") == 0
    finally:
        cluster.close()


def test_unreachable_node_list_is_one_clear_error():
    store = RedisBucketStore(["127.0.0.1:1"], "curator:x:", batch=10)
    with pytest.raises(StageError, match=r"127\.0\.0\.1:1 is down or unreachable"):
        store.check()


def test_redis_example_pipeline_on_dask(tmp_path, redis_cluster):
    nodes = "[" + ",".join(redis_cluster.nodes) + "]"
    run_cli("run", "pipelines/dedup-redis-cluster.yaml", "--work-dir", str(tmp_path / "r"),
            "--set", f"stages.fuzzy_dedup.redis.nodes={nodes}")
    run_cli("run", "pipelines/dedup-redis-cluster.yaml", "--work-dir", str(tmp_path / "e"),
            "--executor", "local", "--set", "stages.fuzzy_dedup.backend=embedded")
    got = rejected(tmp_path / "r", "fuzzy_dedup")
    assert got and got == rejected(tmp_path / "e", "fuzzy_dedup")
    assert redis_cluster.keys("curator:*") == 0


def test_claim_follows_a_slot_that_moved(redis_cluster):
    """A slot moved after the client cached the layout: the script meets a non-local key,
    the store refreshes the layout and sends the batch again (claims are idempotent)."""
    from redis.crc import key_slot

    store = RedisBucketStore(redis_cluster.nodes, "curator:test-moved:", batch=100)
    try:
        store.check()  # caches the slot layout
        digest = np.array([12345], dtype=np.uint64)
        key = store.bucket_key(12345 % store.buckets)
        slot = key_slot(key)
        conns = {p: redis.Redis(port=p) for p in redis_cluster.ports}
        ids = {p: c.execute_command("CLUSTER", "MYID") for p, c in conns.items()}
        ids = {p: (i.decode() if isinstance(i, bytes) else i) for p, i in ids.items()}
        src = next(p for p, c in conns.items()
                   if c.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 0
                   and any(a <= slot <= b for a, b, *_ in _slots_of(c, ids[p])))
        dst = next(p for p in redis_cluster.ports if p != src)
        conns[dst].execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", ids[src])
        conns[src].execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", ids[dst])
        for c in conns.values():
            c.execute_command("CLUSTER", "SETSLOT", slot, "NODE", ids[dst])
        calls = []
        init = store.rc.nodes_manager.initialize
        store.rc.nodes_manager.initialize = lambda *a, **k: (calls.append(1), init(*a, **k))[1]
        refs = np.array([7], dtype=np.uint64)
        assert store.claim(digest, refs).tolist() == [7]
        assert calls  # the layout was refreshed and the batch sent again
        assert store.claim(digest, np.array([9], dtype=np.uint64)).tolist() == [7]
        assert conns[dst].exists(key) == 1
        store.cleanup()
    finally:
        store.close()


def _slots_of(conn, node_id):
    """Slot ranges served by ``node_id`` according to CLUSTER SLOTS."""
    out = []
    for entry in conn.execute_command("CLUSTER", "SLOTS"):
        a, b, master = entry[0], entry[1], entry[2]
        nid = master[2].decode() if isinstance(master[2], bytes) else master[2]
        if nid == node_id:
            out.append((a, b))
    return out


def test_single_plain_redis_server(tmp_path):
    """One non-cluster node is used as a plain server (same claims, same cleanup)."""
    from tests.dedup.helpers_dedup import plain_redis_server

    with plain_redis_server(tmp_path) as port:
        store = RedisBucketStore([f"127.0.0.1:{port}"], "curator:plain:")
        digests = np.array([1, 2, 1, 3, 2], dtype=np.uint64)
        refs = np.arange(5, dtype=np.uint64)
        assert store.claim(digests, refs).tolist() == [0, 1, 0, 3, 1]
        assert store.plain
        assert store.cleanup() == 3 + 1  # three bucket hashes, one witness counter
        store.close()
