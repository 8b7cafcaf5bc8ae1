"""LSH buckets in a Redis Cluster, for corpora whose buckets do not fit one machine (a single
plain Redis server works too, when it is the only node given).

Keys are ``<stage prefix><fingerprint tag>:<8-byte band digest>`` (the digest is already
salted by the band), so they spread over all hash slots; a bucket is one 8-byte value, its owner
(the first document that claimed it). Each entry is one ``SET key ref NX GET EX ttl``: insert
and query in a single command, batched per node as one pipelined write (no cross-slot multi-key
commands). Every key carries a TTL, so keys of a run that was killed and never rerun expire on
their own; :meth:`cleanup` removes every key of the *stage* prefix with ``SCAN`` on each
primary, so a rerun with other parameters (another fingerprint tag) also removes the keys an
earlier, killed run left.

Credentials and TLS come from :class:`RedisAuth`; the password is read from an environment
variable when a connection is made, so it is never part of the pipeline file, the fingerprint,
the pickled task or any message. A connection failure becomes one line: wrong credentials,
a TLS failure and a node that is down each have their own.
"""

from __future__ import annotations

import contextlib
import os
import re
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from curator.core.errors import ConfigError, CuratorError, StageError

T = TypeVar("T")
_ADDR = re.compile(r"(\d{1,3}(?:\.\d{1,3}){3}|[A-Za-z0-9.-]+):(\d{2,5})")


def _retry(attempts: int) -> Any:
    """A short retry for transient errors; redis-py's default spends ~4 s on a dead node."""
    from redis.backoff import ExponentialBackoff
    from redis.retry import Retry

    return Retry(ExponentialBackoff(cap=0.5, base=0.05), attempts)


#: Default lifetime of a bucket key: longer than any one claim phase, short enough that keys
#: of an abandoned run do not stay for good.
DEFAULT_TTL_S = 7 * 24 * 3600
_GLOB = re.compile(rb"([*?\[\]\\])")


@dataclass(frozen=True)
class RedisAuth:
    """How to authenticate and encrypt: picklable, and without the secret itself (only the
    name of the environment variable that holds it, read where the connection is made)."""

    username: str | None = None
    password_env: str | None = None
    tls: bool = False
    tls_ca_file: str | None = None
    tls_cert_file: str | None = None
    tls_key_file: str | None = None

    def password(self) -> str | None:
        if not self.password_env:
            return None
        value = os.environ.get(self.password_env)
        if value is None:
            raise ConfigError(f"fuzzy_dedup.redis_password_env: environment variable "
                              f"'{self.password_env}' is not set (it must be set wherever the "
                              "stage's tasks run)")
        return value

    def connection_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for redis-py's ``Redis`` / ``RedisCluster``."""
        kw: dict[str, Any] = {}
        password = self.password()
        if password is not None:
            kw["password"] = password
        if self.username:
            kw["username"] = self.username
        if self.tls:
            kw.update(ssl=True, ssl_cert_reqs="required", ssl_ca_certs=self.tls_ca_file,
                      ssl_certfile=self.tls_cert_file, ssl_keyfile=self.tls_key_file)
        return kw


def _chain(err: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    e: BaseException | None = err
    while e is not None and e not in out and len(out) < 8:
        out.append(e)
        e = e.__cause__ or e.__context__
    return out


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())[:300]


def auth_problem(err: BaseException, auth: RedisAuth) -> str | None:
    """The user-facing reason when ``err`` is about credentials or TLS, else None."""
    from redis.exceptions import (
        AuthenticationError,
        AuthenticationWrongNumberOfArgsError,
        AuthorizationError,
        NoPermissionError,
    )

    secret = f"the password in ${auth.password_env}" if auth.password_env else "no password"
    user = f"user '{auth.username}'" if auth.username else "the default user"
    for e in _chain(err):
        text = str(e)
        needs = ("NOAUTH" in text or "Authentication required" in text
                 or "must be called with the client already authenticated" in text)
        if needs and not auth.password_env:
            return (f"the cluster requires a password ({_one_line(e)}); name the environment "
                    "variable that holds it in fuzzy_dedup's redis_password_env")
        if isinstance(e, (AuthenticationError, AuthenticationWrongNumberOfArgsError)) or needs \
                or "WRONGPASS" in text:
            return (f"authentication failed for {user} with {secret} ({_one_line(e)}); check "
                    "redis_username and the password")
        if isinstance(e, (AuthorizationError, NoPermissionError)):
            return (f"{user} is not allowed to run the commands fuzzy_dedup needs (SET, SCAN, "
                    f"UNLINK, CLUSTER INFO): {_one_line(e)}")
        if isinstance(e, ssl.SSLError) or "SSL" in text or "TLS" in text:
            return (f"TLS connection failed ({_one_line(e)}); check redis_tls and "
                    "redis_tls_ca_file / redis_tls_cert_file / redis_tls_key_file")
    return None


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
                 timeout_s: float = 10.0, *, stage_prefix: str | None = None,
                 ttl_s: int = DEFAULT_TTL_S, auth: RedisAuth | None = None) -> None:
        """``prefix``: this run's keys; ``stage_prefix`` (a prefix of ``prefix``, default
        ``prefix``): what :meth:`cleanup` removes, i.e. the keys of every run of the stage."""
        self.nodes = parse_nodes(nodes)
        self.prefix = prefix.encode()
        self.stage_prefix = (stage_prefix if stage_prefix is not None else prefix).encode()
        if not self.prefix.startswith(self.stage_prefix):
            raise ValueError("stage_prefix must be a prefix of prefix")
        self.batch = batch
        self.timeout_s = timeout_s
        if ttl_s < 0:
            raise ConfigError("fuzzy_dedup.redis_key_ttl_s must be >= 0 (0: keys never expire)")
        self.ttl = b"" if not ttl_s else b"$2\r\nEX\r\n$%d\r\n%d\r\n" % (len(str(ttl_s)), ttl_s)
        self.ttl_s = ttl_s
        self.auth = auth or RedisAuth()
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

        kw = self.auth.connection_kwargs()
        if len(self.nodes) == 1:  # one node may also be a plain (non-cluster) server
            h, p = self.nodes[0]
            plain = redis.Redis(h, p, socket_timeout=self.timeout_s,
                                socket_connect_timeout=self.timeout_s, retry=_retry(2), **kw)
            if not plain.info("cluster").get("cluster_enabled"):
                self.plain = True
                return plain
        return RedisCluster(
            startup_nodes=[ClusterNode(h, p) for h, p in self.nodes],
            socket_timeout=self.timeout_s, socket_connect_timeout=self.timeout_s,
            retry=_retry(2), require_full_coverage=True, **kw)

    def _probe(self, host: str, port: int) -> Any:
        """A connection for diagnosis: one try, short timeouts."""
        import redis

        return redis.Redis(host, port, socket_timeout=2, socket_connect_timeout=2,
                           retry=_retry(0), **self.auth.connection_kwargs())

    def _guard(self, fn: Callable[[], T]) -> T:
        from redis.exceptions import RedisClusterException, RedisError

        try:
            return fn()
        except (RedisError, RedisClusterException) as e:
            raise StageError(self._diagnose(e)) from None

    def _diagnose(self, err: Exception) -> str:
        """One line: wrong credentials or TLS trouble, else the node that is down (from the
        error, else by pinging each node the cluster knows about)."""
        cluster = "redis cluster " + ",".join(f"{h}:{p}" for h, p in self.nodes)
        why = auth_problem(err, self.auth)
        if why is not None:
            return f"{cluster}: {why}; nothing was marked done"
        m = _ADDR.search(str(err))
        bad = f"{m.group(1)}:{m.group(2)}" if m else None
        if bad is None:
            bad = self._find_dead_node()
        where = f"redis node {bad}" if bad else cluster
        msg = " ".join(str(err).split())[:300]
        # a TLS client talking to a plain port (or the reverse) sees a timeout or a reset
        if self.auth.tls:
            hint = " (or it does not speak TLS: redis_tls is on)"
        elif "reset by peer" in msg or "closed by server" in msg:
            hint = " (or it accepts TLS only: set redis_tls)"
        else:
            hint = ""
        return (f"{where} is down or unreachable{hint} ({type(err).__name__}: {msg}); "
                "nothing was marked done: rerun when it is back")

    def _find_dead_node(self) -> str | None:
        import redis

        known = set(self.nodes)
        for h, p in self.nodes:
            try:
                info = self._probe(h, p).execute_command("CLUSTER NODES")
            except redis.RedisError:
                return f"{h}:{p}"
            for host, port in _ADDR.findall(str(info)):  # raw text or redis-py's parsed dict
                known.add((host, int(port)))
        for h, p in sorted(known):
            try:
                self._probe(h, p).ping()
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

    def keys_with_ttl(self, sample: int = 100) -> tuple[int, int]:
        """(keys seen, keys without a TTL) over up to ``sample`` keys of this run (a check)."""
        rc = self.rc

        def run() -> tuple[int, int]:
            seen = no_ttl = 0
            for node in [None] if self.plain else rc.get_primaries():
                r = rc if node is None else rc.get_redis_connection(node)
                for k in r.scan_iter(match=_glob_escape(self.prefix) + b"*", count=1000):
                    seen += 1
                    no_ttl += r.ttl(k) < 0
                    if seen >= sample:
                        return seen, no_ttl
            return seen, no_ttl

        return self._guard(run)

    def claim(self, digests: np.ndarray, refs: np.ndarray) -> np.ndarray:
        """For each entry, atomically make ``refs[i]`` the owner of bucket ``digests[i]`` unless
        the bucket has one (``SET key ref NX GET EX ttl``); returns each bucket's owner (``refs[i]``
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
        ttl = self.ttl
        nargs = 7 if ttl else 5
        for i in idx:
            k = keys[i]
            parts.append(b"*%d\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$8\r\n%s\r\n$2\r\nNX\r\n$3\r\nGET\r\n%s"
                         % (nargs, len(k), k, vals[8 * i:8 * i + 8], ttl))
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
                args = ("EX", self.ttl_s) if self.ttl_s else ()
                pipe.execute_command("SET", keys[i], vals[8 * i:8 * i + 8], "NX", "GET", *args)
            replies = pipe.execute()
        for i, rep in zip(idx, replies):
            if rep is not None:
                owners[i] = int.from_bytes(rep, "big")

    def cleanup(self) -> int:
        """Delete every key under the stage prefix on every primary (this run's and those of
        earlier runs of the stage with other parameters); returns how many."""
        rc = self.rc
        pattern = _glob_escape(self.stage_prefix) + b"*"

        def run() -> int:
            n = 0
            for node in [None] if self.plain else rc.get_primaries():
                r = rc if node is None else rc.get_redis_connection(node)
                batch: list[bytes] = []
                for k in r.scan_iter(match=pattern, count=1000):
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
            with contextlib.suppress(Exception):  # closing a broken connection may fail too
                self._rc.close()
            self._rc = None


def _glob_escape(prefix: bytes) -> bytes:
    """``prefix`` as a literal in a ``SCAN MATCH`` pattern."""
    return _GLOB.sub(rb"\\\1", prefix)


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
