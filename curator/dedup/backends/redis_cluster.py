"""LSH buckets in a Redis Cluster, for corpora whose buckets do not fit one machine (a single
plain Redis server works too, when it is the only node given).

Keys are ``<run prefix><8-byte band digest>`` (the digest is already salted by the band), so
they spread over all hash slots; a bucket is a Redis set of 8-byte document references.
Writes and reads go through non-transactional cluster pipelines (redis-py groups them per
node) in batches. Every key of a run shares one prefix, which :meth:`cleanup` removes with
``SCAN`` on each primary. Any connection failure becomes one line naming the node.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from curator.core.errors import CuratorError, StageError

T = TypeVar("T")
_ADDR = re.compile(r"(\d{1,3}(?:\.\d{1,3}){3}|[A-Za-z0-9.-]+):(\d{2,5})")


def _retry(attempts: int) -> Any:
    """A short retry for transient errors; redis-py's default spends ~4 s on a dead node."""
    from redis.backoff import ExponentialBackoff
    from redis.retry import Retry

    return Retry(ExponentialBackoff(cap=0.5, base=0.05), attempts)


def _probe(host: str, port: int) -> Any:
    """A connection for diagnosis: one try, short timeouts."""
    import redis

    return redis.Redis(host, port, socket_timeout=2, socket_connect_timeout=2, retry=_retry(0))


def parse_nodes(nodes: list[str]) -> list[tuple[str, int]]:
    out = []
    for n in nodes:
        host, _, port = n.rpartition(":")
        if not host or not port.isdigit():
            raise CuratorError(f"redis node '{n}' is not 'host:port'")
        out.append((host, int(port)))
    if not out:
        raise CuratorError("backend 'redis' needs at least one node in 'redis_nodes'")
    return out


class RedisBucketStore:
    """Cluster-aware bucket store; create one per task (it holds connections)."""

    def __init__(self, nodes: list[str], prefix: str, batch: int = 10_000,
                 timeout_s: float = 10.0) -> None:
        self.nodes = parse_nodes(nodes)
        self.prefix = prefix.encode()
        self.batch = batch
        self.timeout_s = timeout_s
        self._rc: Any = None
        #: True when the single node given is a plain Redis server, not a cluster.
        self.plain = False

    # -- connection and errors -------------------------------------------------------------
    @property
    def rc(self) -> Any:
        if self._rc is None:
            try:
                import redis.cluster  # noqa: F401
            except ImportError as e:  # pragma: no cover - depends on install
                raise CuratorError("backend 'redis' needs the redis extra: "
                                   "pip install 'curator-pipeline[redis]'") from e
            self._rc = self._guard(self._connect)
        return self._rc

    def _connect(self) -> Any:
        import redis
        from redis.cluster import ClusterNode, RedisCluster

        if len(self.nodes) == 1:  # one node may also be a plain (non-cluster) server
            h, p = self.nodes[0]
            plain = redis.Redis(h, p, socket_timeout=self.timeout_s,
                                socket_connect_timeout=self.timeout_s, retry=_retry(2))
            if not plain.info("cluster").get("cluster_enabled"):
                self.plain = True
                return plain
        return RedisCluster(
            startup_nodes=[ClusterNode(h, p) for h, p in self.nodes],
            socket_timeout=self.timeout_s, socket_connect_timeout=self.timeout_s,
            retry=_retry(2), require_full_coverage=True)

    def _guard(self, fn: Callable[[], T]) -> T:
        from redis.exceptions import RedisClusterException, RedisError

        try:
            return fn()
        except (RedisError, RedisClusterException) as e:
            raise StageError(self._diagnose(e)) from None

    def _diagnose(self, err: Exception) -> str:
        """One line naming the node that is down: from the error, else by pinging each node
        the cluster knows about."""
        m = _ADDR.search(str(err))
        bad = f"{m.group(1)}:{m.group(2)}" if m else None
        if bad is None:
            bad = self._find_dead_node()
        where = f"redis node {bad}" if bad else "redis cluster " + ",".join(
            f"{h}:{p}" for h, p in self.nodes)
        msg = " ".join(str(err).split())[:300]
        return (f"{where} is down or unreachable ({type(err).__name__}: {msg}); "
                "nothing was marked done: rerun when it is back")

    def _find_dead_node(self) -> str | None:
        import redis

        known = set(self.nodes)
        for h, p in self.nodes:
            try:
                info = _probe(h, p).execute_command("CLUSTER NODES")
            except redis.RedisError:
                return f"{h}:{p}"
            for host, port in _ADDR.findall(str(info)):  # raw text or redis-py's parsed dict
                known.add((host, int(port)))
        for h, p in sorted(known):
            try:
                _probe(h, p).ping()
            except redis.RedisError:
                return f"{h}:{p}"
        return None

    def check(self) -> None:
        """Fail early, naming the node, unless every primary answers and the cluster is ok."""
        rc = self.rc

        def probe() -> None:
            if self.plain:
                rc.ping()
                return
            for node in rc.get_primaries():
                info = rc.cluster_info(target_nodes=node)
                state = info.get("cluster_state") if isinstance(info, dict) else None
                if state not in (None, "ok"):
                    dead = self._find_dead_node()
                    who = (f"redis node {dead} is down or unreachable" if dead else
                           f"redis node {node.host}:{node.port} reports cluster_state "
                           f"'{state}'")
                    raise StageError(f"{who} (cluster_state '{state}'); nothing was marked "
                                     "done: rerun when the cluster is healthy")

        self._guard(probe)

    # -- bucket verbs ----------------------------------------------------------------------
    def _keys(self, digests: np.ndarray) -> list[bytes]:
        raw = digests.astype(">u8").tobytes()
        p = self.prefix
        return [p + raw[i:i + 8] for i in range(0, len(raw), 8)]

    def insert(self, digests: np.ndarray, refs: np.ndarray) -> int:
        """Add each ``refs[i]`` to the bucket ``digests[i]`` (pipelined SADD batches)."""
        keys = self._keys(digests)
        vals = refs.astype(">u8").tobytes()
        rc = self.rc

        def run() -> int:
            for s in range(0, len(keys), self.batch):
                pipe = rc.pipeline(transaction=False)
                for i in range(s, min(s + self.batch, len(keys))):
                    pipe.sadd(keys[i], vals[8 * i:8 * i + 8])
                pipe.execute()
            return len(keys)

        return self._guard(run)

    def members(self, digests: np.ndarray) -> list[np.ndarray]:
        """The references in each bucket (pipelined SMEMBERS batches)."""
        keys = self._keys(digests)
        rc = self.rc
        out: list[np.ndarray] = []

        def run() -> None:
            for s in range(0, len(keys), self.batch):
                pipe = rc.pipeline(transaction=False)
                for k in keys[s:s + self.batch]:
                    pipe.smembers(k)
                for members in pipe.execute():
                    out.append(np.frombuffer(b"".join(members), dtype=">u8").astype(np.uint64))

        self._guard(run)
        return out

    def cleanup(self) -> int:
        """Delete every key of this run on every primary; returns how many."""
        rc = self.rc

        def run() -> int:
            n = 0
            for node in [None] if self.plain else rc.get_primaries():
                r = rc if node is None else rc.get_redis_connection(node)
                batch: list[bytes] = []
                for k in r.scan_iter(match=self.prefix + b"*", count=1000):
                    batch.append(k)
                    if len(batch) >= 1000:
                        n += self._unlink(r, batch)
                        batch = []
                if batch:
                    n += self._unlink(r, batch)
            return n

        return self._guard(run)

    @staticmethod
    def _unlink(r: Any, keys: list[bytes]) -> int:
        # keys of one node may sit in different slots: unlink them one by one, pipelined
        pipe = r.pipeline(transaction=False)
        for k in keys:
            pipe.unlink(k)
        return int(sum(pipe.execute()))

    def close(self) -> None:
        if self._rc is not None:
            try:
                self._rc.close()
            except Exception:
                pass
            self._rc = None


def redis_edges(store: RedisBucketStore, digests: np.ndarray,
                refs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Edges ``(min ref of bucket, ref)`` for this shard's own ``refs``: the union over all
    shards equals :func:`~curator.dedup.backends.embedded.star_edges` over all entries."""
    from curator.dedup.backends.embedded import unique_edges

    if digests.shape[0] == 0:
        e = np.empty(0, dtype=np.uint64)
        return e, e
    uniq, inv = np.unique(digests, return_inverse=True)
    buckets = store.members(uniq)
    sizes = np.fromiter((b.shape[0] for b in buckets), dtype=np.int64, count=len(buckets))
    mins = np.fromiter((b.min() if b.shape[0] else 0 for b in buckets), dtype=np.uint64,
                       count=len(buckets))
    mine_min = mins[inv]
    keep = (sizes[inv] > 1) & (refs != mine_min)
    return unique_edges(mine_min[keep], refs[keep])
