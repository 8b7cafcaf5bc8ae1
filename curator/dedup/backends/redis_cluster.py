"""LSH buckets in a Redis Cluster, for corpora whose buckets do not fit one machine (a single
plain Redis server works too, when it is the only node given).

Keys are ``<run prefix><8-byte band digest>`` (the digest is already salted by the band), so
they spread over all hash slots; a bucket is one 8-byte value, its owner (the first document
that claimed it). Each entry is one ``SET key ref NX GET``: insert and query in a single
command, batched per node as one pipelined write (no cross-slot multi-key commands). Every key
of a run shares one prefix, which :meth:`cleanup` removes with ``SCAN`` on each primary.
Any connection failure becomes one line naming the node.
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

    def claim(self, digests: np.ndarray, refs: np.ndarray) -> np.ndarray:
        """For each entry, atomically make ``refs[i]`` the owner of bucket ``digests[i]`` unless
        the bucket has one (``SET key ref NX GET``); returns each bucket's owner (``refs[i]``
        itself where it became the owner).

        One round trip per batch and node: keys are routed by hash slot here and the commands
        are written as raw RESP, so the cost per entry is a few microseconds of Python. Which
        entry becomes owner depends on timing, but the *components* of the edges
        ``(owner, ref)`` do not: every member of a bucket is joined to the same owner.
        """
        keys = self._keys(digests)
        vals = refs.astype(">u8").tobytes()
        owners = refs.astype(np.uint64).copy()

        def run() -> None:
            for client, idx in self._by_node(keys):
                for s in range(0, len(idx), self.batch):
                    self._claim_batch(client, keys, vals, idx[s:s + self.batch], owners)

        self._guard(run)
        return owners

    def _by_node(self, keys: list[bytes]) -> list[tuple[Any, list[int]]]:
        rc = self.rc  # connects first: that decides ``plain``
        if self.plain:
            return [(rc, list(range(len(keys))))]
        from redis.crc import key_slot

        groups: dict[str, tuple[Any, list[int]]] = {}
        nm = rc.nodes_manager
        for i, k in enumerate(keys):
            node = nm.get_node_from_slot(key_slot(k))
            g = groups.get(node.name)
            if g is None:
                g = groups[node.name] = (rc.get_redis_connection(node), [])
            g[1].append(i)
        return [groups[n] for n in sorted(groups)]

    def _claim_batch(self, client: Any, keys: list[bytes], vals: bytes, idx: list[int],
                     owners: np.ndarray) -> None:
        from redis.exceptions import ResponseError

        parts = []
        for i in idx:
            k = keys[i]
            parts.append(b"*5\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$8\r\n%s\r\n$2\r\nNX\r\n$3\r\nGET\r\n"
                         % (len(k), k, vals[8 * i:8 * i + 8]))
        pool = client.connection_pool
        conn = pool.get_connection()
        replies: list[Any] = []
        moved = False
        try:
            conn.send_packed_command([b"".join(parts)])
            for _ in idx:
                try:
                    replies.append(conn.read_response())
                except ResponseError:  # MOVED/ASK: the cluster is resharding
                    replies.append(None)
                    moved = True
        except BaseException:
            conn.disconnect()
            raise
        finally:
            pool.release(conn)
        if moved and not self.plain:  # redo through redis-py, which follows redirections
            pipe = self.rc.pipeline(transaction=False)
            for i in idx:
                pipe.execute_command("SET", keys[i], vals[8 * i:8 * i + 8], "NX", "GET")
            replies = pipe.execute()
        for i, rep in zip(idx, replies):
            if rep is not None:
                owners[i] = int.from_bytes(rep, "big")

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
    """Edges ``(bucket owner, ref)`` for this shard's entries. Over all shards they connect
    exactly the documents that :func:`~curator.dedup.backends.embedded.star_edges` connects
    (same components), so both backends remove the same documents."""
    from curator.dedup.backends.embedded import unique_edges

    if digests.shape[0] == 0:
        e = np.empty(0, dtype=np.uint64)
        return e, e
    owners = store.claim(digests, refs)
    m = owners != refs
    return unique_edges(owners[m], refs[m])
