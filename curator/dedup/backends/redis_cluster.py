"""LSH buckets in a Redis Cluster, for corpora whose buckets do not fit one machine (a single
plain Redis server works too, when it is the only node given).

Layout (measured ~150-170 bytes per document with 9 bands, see docs/scale.md): a band digest
``d`` is split into a bucket number ``d % buckets`` and a remainder ``d // buckets``; the
bucket is a small Redis *hash* ``<run prefix>b<bucket number>`` whose fields are remainders
(binary, 5-8 bytes) and whose values are document numbers (decimal, so Redis stores them as
integers). ``buckets`` is chosen so that a hash holds ~64 fields on average: it stays in
Redis' compact listpack encoding (``hash-max-listpack-entries``, 128 by default), about
13-15 bytes per entry instead of ~180 for a key of its own.

One Lua script call per batch and node claims a batch of entries: ``HSETNX`` (first writer
wins), ``HGET`` for the owner otherwise; it returns only the entries that found an owner,
and adds the batch size to a per-node *witness counter* as its last write. Keys carry a TTL.

Loss detection (:mod:`curator.dedup.backends.redis_watch`): ``begin`` writes a sentinel key on
each primary before the first claim; ``verify`` checks after the last claim that every sentinel
is still there, that every witness counter holds what the claims were told, and that no node
evicted keys. A flush, a restart or failover to a replica without the data, an eviction or an
expiry during the run therefore stops the stage with one line instead of giving fewer
duplicates. Every reply error other than a redirection (MOVED/ASK/TRYAGAIN) is fatal, with one
line naming the node and the cause (e.g. out of memory), and no key bytes in any message.

Credentials and TLS come from :class:`~curator.dedup.backends.redis_auth.RedisAuth`; the
password is read from an environment variable when a connection is made, so it is never part of
the pipeline file, the fingerprint, the pickled task or any message. A connection failure
becomes one line: wrong credentials, a TLS failure and a node that is down each have their own.
"""

from __future__ import annotations

import binascii
import contextlib
import math
import os
import re
import time
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from curator.base.errors import ConfigError, CuratorError, StageError
from curator.dedup.backends.redis_auth import RedisAuth, parse_nodes, retry
from curator.dedup.backends.redis_errors import (
    ADDR,
    NETWORK_ERRORS,
    address_in,
    auth_problem,
    error_code,
    is_cluster_down,
    is_silence,
    reply_line,
    unreachable_line,
)

T = TypeVar("T")


#: Average fields per bucket hash: half of Redis' default ``hash-max-listpack-entries`` (128),
#: so that (Poisson) almost no hash outgrows the compact encoding.
BUCKET_FILL = 64

#: Default lifetime of a bucket key: longer than any one claim phase, short enough that keys
#: of an abandoned run do not stay for good.
DEFAULT_TTL_S = 7 * 24 * 3600
_GLOB = re.compile(rb"([*?\[\]\\])")


#: The claim script. ARGV: ttl (0: none), witness counter key, then (key, field, value) per
#: entry. Keys are passed as arguments, not declared: declared keys must share one hash slot,
#: while ``allow-cross-slot-keys`` lets the script touch any key *of this node*. Returns
#: ``{entry number, owner, ...}`` for the entries whose bucket already had an owner. The
#: counter is the last write, so a node that loses the tail of its writes (a replica that lagged,
#: a flush) loses the increments that followed them, which ``redis_watch.verify`` sees.
#: No ``allow-oom`` flag: a node over ``maxmemory`` refuses the whole call with ``OOM``.
CLAIM_SCRIPT = b"""#!lua flags=allow-cross-slot-keys
local ttl = tonumber(ARGV[1])
local out = {}
local n = 0
for i = 3, #ARGV, 3 do
  local k, f = ARGV[i], ARGV[i + 1]
  if redis.call('HSETNX', k, f, ARGV[i + 2]) == 1 then
    if ttl > 0 and redis.call('HLEN', k) == 1 then redis.call('EXPIRE', k, ttl) end
  else
    out[#out + 1] = n
    out[#out + 1] = redis.call('HGET', k, f)
  end
  n = n + 1
end
redis.call('INCRBY', ARGV[2], n)
if ttl > 0 then redis.call('EXPIRE', ARGV[2], ttl) end
return out
"""

#: Reply errors that only mean "ask another node" (the slot moved or is moving); anything else
#: is fatal. Inside a script a moved slot reads "Script attempted to access a non local key".
_REDIRECT = re.compile(r"^(MOVED|ASK|TRYAGAIN)\b|non local key")
_CRC_TABLE = np.array([binascii.crc_hqx(bytes([i]), 0) for i in range(256)], dtype=np.uint32)


class _Redirect(Exception):
    """A batch met a slot that moved: refresh the layout and send it again (idempotent)."""


class RedisBucketStore:
    """Cluster-aware bucket store; create one per task (it holds connections)."""

    def __init__(self, nodes: list[str], prefix: str, batch: int = 10_000,
                 timeout_s: float = 10.0, *, stage_prefix: str | None = None,
                 ttl_s: int = DEFAULT_TTL_S, auth: RedisAuth | None = None,
                 buckets: int = 1 << 16, deadline_s: float | None = None) -> None:
        """``prefix``: this run's keys; ``stage_prefix`` (a prefix of ``prefix``, default
        ``prefix``): what :meth:`cleanup` removes, i.e. the keys of every run of the stage.
        ``buckets``: how many hashes the digests are spread over (:func:`buckets_for`); every
        store of one run must use the same number. ``deadline_s``: how long a node may stay
        silent (timeouts, host unreachable, the cluster down meanwhile) before a call gives
        up; calls are repeated with a fresh connection until then, each try bounded by a
        quarter of it (``None``: the first failure is final)."""
        self.nodes = parse_nodes(nodes)
        self.prefix = prefix.encode()
        self.stage_prefix = (stage_prefix if stage_prefix is not None else prefix).encode()
        if not self.prefix.startswith(self.stage_prefix):
            raise ValueError("stage_prefix must be a prefix of prefix")
        if batch < 1:
            raise ConfigError("fuzzy_dedup.redis.batch must be >= 1")
        if buckets < 1:
            raise ValueError("buckets must be >= 1")
        self.batch = batch
        self.deadline_s = deadline_s
        self.timeout_s = min(timeout_s, max(1.0, deadline_s / 4)) if deadline_s else timeout_s
        self._guarding = False
        if ttl_s < 0:
            raise ConfigError("fuzzy_dedup.redis.key_ttl_s must be >= 0 (0: keys never expire)")
        self.ttl_s = ttl_s
        self.auth = auth or RedisAuth()
        self.buckets = int(buckets)
        # widths of the bucket number in the key and of the remainder in the field
        self.key_width = max(1, math.ceil(self.buckets.bit_length() / 8))
        self.field_width = max(1, math.ceil(((2**64 - 1) // self.buckets).bit_length() / 8))
        self.nonce = os.urandom(6).hex().encode()  # this store's witness counters
        #: witness counter key -> entries that its node acknowledged (see :mod:`.redis_watch`)
        self.witness: dict[bytes, int] = {}
        self._tags: dict[str, bytes] = {}
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
            self._rc = self.guard(self._connect)
        return self._rc

    def _connect(self) -> Any:
        import redis
        from redis.cluster import ClusterNode, RedisCluster

        kw = self.auth.connection_kwargs()
        if len(self.nodes) == 1:  # one node may also be a plain (non-cluster) server
            h, p = self.nodes[0]
            plain = redis.Redis(h, p, socket_timeout=self.timeout_s,
                                socket_connect_timeout=self.timeout_s, retry=self._retry(), **kw)
            if not plain.info("cluster").get("cluster_enabled"):
                self.plain = True
                return plain
        return RedisCluster(
            startup_nodes=[ClusterNode(h, p) for h, p in self.nodes],
            socket_timeout=self.timeout_s, socket_connect_timeout=self.timeout_s,
            retry=self._retry(), require_full_coverage=True, **kw)

    def _retry(self) -> Any:
        # with a deadline, :meth:`guard` repeats calls itself, and knows when to stop
        return retry(0 if self.deadline_s else 2)

    def _probe(self, host: str, port: int) -> Any:
        """A connection for diagnosis: one try, short timeouts."""
        import redis

        wait = min(2.0, self.timeout_s)
        return redis.Redis(host, port, socket_timeout=wait, socket_connect_timeout=wait,
                           retry=retry(0), **self.auth.connection_kwargs())

    def guard(self, fn: Callable[[], T], where: str | None = None) -> T:
        """Run ``fn``; any redis error becomes one :class:`StageError` line (``where``: the
        ``host:port`` the call went to, when known). A node gone silent is waited for: ``fn``
        (every call made through here is idempotent) is tried again, on a fresh connection and
        after a backoff doubling to 2 s, until ``deadline_s`` has passed since the first try
        that failed (the last try starts then: the call fails at the deadline plus that try)."""
        from redis.exceptions import RedisClusterException, RedisError

        if self._guarding:  # a call inside a call (connecting): the outer one waits
            return fn()
        self._guarding = True
        first: float | None = None
        delay = 0.1
        try:
            while True:
                began = time.monotonic()
                try:
                    return fn()
                except StageError:
                    raise
                except (RedisError, RedisClusterException, *NETWORK_ERRORS) as e:
                    first = began if first is None else first
                    late = time.monotonic() - first >= (self.deadline_s or 0)
                    if late or not self._worth_waiting(e):
                        line = self._diagnose(e, where)
                        if late and self.deadline_s:
                            line += (f" (no answer for {time.monotonic() - first:.0f} s: "
                                     f"deadline executor.peer_timeout_s = {self.deadline_s:g})")
                        raise StageError(line) from None
                left = first + (self.deadline_s or 0) - time.monotonic()
                time.sleep(max(0.0, min(delay, left)))  # the last try starts at the deadline
                delay = min(2 * delay, 2.0)
        finally:
            self._guarding = False

    def _worth_waiting(self, err: BaseException) -> bool:
        """A silent node (not a dead one: :func:`is_silence`); for "the cluster is down", the
        node that the others miss is asked (and if every node answers, the cluster is about to
        be up again)."""
        if is_cluster_down(err):
            dead = self._find_dead_node()
            return dead is None or is_silence(dead[1], self.auth)
        return is_silence(err, self.auth)

    @property
    def _cluster_name(self) -> str:
        return "redis cluster " + ",".join(f"{h}:{p}" for h, p in self.nodes)

    def _reply_error(self, err: BaseException, where: str | None) -> str | None:
        """The line for an error *reply* (the server answered, with an error), else None."""
        who = f"redis {where}" if where else self._cluster_name
        return reply_line(err, who, self.stage_prefix.decode(errors="replace"),
                          self._find_dead_node, self.timeout_s)

    def _diagnose(self, err: Exception, where: str | None = None) -> str:
        """One line: wrong credentials, a TLS failure, an error reply from a node (naming it
        and the cause), else the node that could not be reached and why (refused, reset, timed
        out...), from the error, else by probing each node the cluster knows about."""
        cluster = self._cluster_name
        why = auth_problem(err, self.auth)
        if why is not None:
            return f"{cluster}: {why}; nothing was marked done"
        line = self._reply_error(err, where)
        if line is not None:
            return line
        bad = where or address_in(err)
        cause: BaseException = err
        if bad is None:
            found = self._find_dead_node()
            if found is not None:
                bad, cause = found
        return unreachable_line(f"redis node {bad}" if bad else cluster, bad, cause,
                                self.auth.tls, self.timeout_s)

    def _find_dead_node(self) -> tuple[str, BaseException] | None:
        """The first node (given, or known to a given one) that does not answer, with the
        error that says why."""
        import redis

        known = set(self.nodes)
        for h, p in self.nodes:
            try:
                info = self._probe(h, p).execute_command("CLUSTER NODES")
            except (redis.RedisError, OSError) as e:
                return f"{h}:{p}", e
            for host, port in ADDR.findall(str(info)):  # raw text or redis-py's parsed dict
                known.add((host, int(port)))
        for h, p in sorted(known):
            try:
                self._probe(h, p).ping()
            except (redis.RedisError, OSError) as e:
                return f"{h}:{p}", e
        return None

    def check(self) -> None:
        """Fail early, naming the node, unless every primary answers and the cluster is ok."""
        from redis.exceptions import ClusterDownError

        rc = self.rc

        def probe() -> None:
            if self.plain:
                rc.ping()
                return
            for node in rc.get_primaries():
                info = rc.cluster_info(target_nodes=node)
                state = info.get("cluster_state") if isinstance(info, dict) else None
                if state not in (None, "ok"):  # waited for, then named (_reply_error)
                    raise ClusterDownError(f"redis node {node.host}:{node.port} reports "
                                           f"cluster_state '{state}'")

        self.guard(probe)

    # -- keys --------------------------------------------------------------------------------
    def _split(self, digests: np.ndarray) -> tuple[np.ndarray, bytes, bytes]:
        """(bucket numbers, key bytes, field bytes): entry ``i``'s key suffix and field are the
        ``i``-th fixed-width slices."""
        d = digests.astype(np.uint64, copy=False)
        b = d % np.uint64(self.buckets)
        rest = d // np.uint64(self.buckets)
        kb = b.astype(">u8").view(np.uint8).reshape(-1, 8)[:, 8 - self.key_width:]
        fb = rest.astype(">u8").view(np.uint8).reshape(-1, 8)[:, 8 - self.field_width:]
        return b, np.ascontiguousarray(kb).tobytes(), np.ascontiguousarray(fb).tobytes()

    def bucket_key(self, bucket: int) -> bytes:
        """The hash that holds bucket number ``bucket``."""
        return self.prefix + b"b" + int(bucket).to_bytes(self.key_width, "big")

    def _slots(self, kb: bytes) -> np.ndarray:
        """Hash slot of each bucket key (CRC16 of the key, vectorised, as Redis computes it;
        keys with a ``{`` fall back to redis-py's ``key_slot`` for the hash-tag rule)."""
        from redis.crc import key_slot

        w = self.key_width
        n = len(kb) // w
        head = self.prefix + b"b"
        if b"{" in head:
            return np.fromiter((key_slot(head + kb[i * w:(i + 1) * w]) for i in range(n)),
                               dtype=np.int64, count=n)
        crc = np.full(n, binascii.crc_hqx(head, 0), dtype=np.uint32)
        cols = np.frombuffer(kb, dtype=np.uint8).reshape(n, w)
        for j in range(w):
            crc = ((crc << 8) & 0xFFFF) ^ _CRC_TABLE[((crc >> 8) ^ cols[:, j]) & 0xFF]
        slots = (crc & 0x3FFF).astype(np.int64)
        for i in np.flatnonzero((cols == ord("{")).any(axis=1)).tolist():
            slots[i] = key_slot(head + kb[i * w:(i + 1) * w])
        return slots

    def meta_key(self, node: str, kind: bytes) -> bytes:
        """A key of ``kind`` (sentinel ``s``, counter ``c<nonce>``) that lives on ``node``:
        its hash tag is searched for a slot that the node serves."""
        tag = self._tags.get(node)
        if tag is None:
            tag = b"0"
            if not self.plain:
                from redis.crc import key_slot

                owner = self.slot_owners()
                for i in range(1 << 20):
                    t = str(i).encode()
                    if owner.get(key_slot(self.prefix + b"m{" + t + b"}")) == node:
                        tag = t
                        break
            self._tags[node] = tag
        return self.prefix + b"m{" + tag + b"}" + kind

    def slot_owners(self) -> dict[int, str]:
        return {s: ns[0].name for s, ns in self.rc.nodes_manager.slots_cache.items() if ns}

    # -- bucket verbs ----------------------------------------------------------------------
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

        return self.guard(run)

    def claim(self, digests: np.ndarray, refs: np.ndarray) -> np.ndarray:
        """For each entry, atomically make ``refs[i]`` (a document number) the owner of bucket
        ``digests[i]`` unless the bucket has one; returns each bucket's owner (``refs[i]``
        itself where it became the owner).

        One script call per batch and node: entries are routed by hash slot here and written
        as raw RESP, and the reply lists only the entries that met an owner, so the cost per
        entry is about a microsecond of Python. Which entry becomes owner depends on timing,
        but the *components* of the edges ``(owner, ref)`` do not: every member of a bucket is
        joined to the same owner.
        """
        n = int(digests.shape[0])
        owners = refs.astype(np.uint64).copy()
        if n == 0:
            return owners
        _, kb, fb = self._split(digests)
        vals = [b"%d" % v for v in owners.tolist()]
        pending = np.arange(n)
        for attempt in range(4):
            redo: list[np.ndarray] = []
            for node, idx in self._by_node(kb, pending):
                for s in range(0, len(idx), self.batch):
                    part = idx[s:s + self.batch]
                    try:
                        self.guard(lambda node=node, part=part: self._claim_batch(
                            node, kb, fb, vals, part, owners), where=node)
                    except _Redirect:
                        redo.append(part)
            if not redo:
                return owners
            pending = np.concatenate(redo)
            self.guard(self.rc.nodes_manager.initialize)  # the slots moved: new layout
            self._tags.clear()
            time.sleep(0.05 * 2 ** attempt)  # TRYAGAIN: a migration is under way
        self.guard(lambda: self._claim_slowly(kb, fb, vals, pending, owners))
        return owners

    def _by_node(self, kb: bytes, idx: np.ndarray) -> list[tuple[str, np.ndarray]]:
        rc = self.rc  # connects first: that decides ``plain``
        if self.plain:
            h, p = self.nodes[0]
            return [(f"{h}:{p}", idx)]
        w = self.key_width
        slots = self._slots(b"".join(kb[i * w:(i + 1) * w] for i in idx.tolist()))
        owner = self.slot_owners()
        names = sorted(set(owner.values()))
        number = {name: j for j, name in enumerate(names)}
        table = np.full(16384, -1, dtype=np.int64)
        for s, name in owner.items():
            table[s] = number[name]
        where = table[slots]
        if (where < 0).any():  # a slot nobody serves: the layout is stale or the cluster down
            self.guard(rc.nodes_manager.initialize)
            self.check()
            raise StageError(f"{self._cluster_name}: some hash slots have no node; nothing was "
                             "marked done: rerun when the cluster is healthy")
        return [(name, idx[where == j]) for j, name in enumerate(names)
                if (where == j).any()]

    def _client(self, node: str) -> Any:
        if self.plain:
            return self.rc
        n = self.rc.nodes_manager.get_node(node_name=node)
        if n is None:
            raise _Redirect()
        return self.rc.get_redis_connection(n)

    def _claim_batch(self, node: str, kb: bytes, fb: bytes, vals: list[bytes],
                     idx: np.ndarray, owners: np.ndarray) -> None:
        from redis.exceptions import ResponseError

        kw, fw = self.key_width, self.field_width
        head = self.prefix + b"b"
        klen = b"$%d\r\n" % (len(head) + kw)
        flen = b"$%d\r\n" % fw
        counter = self.meta_key(node, b"c" + self.nonce)
        ttl = b"%d" % self.ttl_s
        parts = [b"*%d\r\n$4\r\nEVAL\r\n$%d\r\n%s\r\n$1\r\n0\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n"
                 % (5 + 3 * len(idx), len(CLAIM_SCRIPT), CLAIM_SCRIPT, len(ttl), ttl,
                    len(counter), counter)]
        for i in idx.tolist():
            v = vals[i]
            parts.append(b"%s%s%s\r\n%s%s\r\n$%d\r\n%s\r\n" % (
                klen, head, kb[i * kw:(i + 1) * kw], flen, fb[i * fw:(i + 1) * fw],
                len(v), v))
        pool = self._client(node).connection_pool
        conn = pool.get_connection()
        try:
            conn.send_packed_command([b"".join(parts)])
            try:
                reply = conn.read_response()
            except ResponseError as e:
                if _REDIRECT.search(error_code(e)):
                    raise _Redirect() from None
                raise
        except (_Redirect, ResponseError):
            raise
        except BaseException:
            conn.disconnect()
            raise
        finally:
            pool.release(conn)
        self.witness[counter] = self.witness.get(counter, 0) + len(idx)
        if reply:
            pos = np.asarray(reply[0::2], dtype=np.int64)
            got = np.fromiter((int(x) for x in reply[1::2]), dtype=np.uint64, count=len(pos))
            owners[idx[pos]] = got

    def _claim_slowly(self, kb: bytes, fb: bytes, vals: list[bytes], idx: np.ndarray,
                      owners: np.ndarray) -> None:
        """Entries whose slot is still migrating: one command at a time through redis-py,
        which follows ASK redirections (rare; not witnessed by a counter)."""
        kw, fw = self.key_width, self.field_width
        head = self.prefix + b"b"
        rc = self.rc
        for i in idx.tolist():
            k, f = head + kb[i * kw:(i + 1) * kw], fb[i * fw:(i + 1) * fw]
            if rc.hsetnx(k, f, vals[i]):
                if self.ttl_s:
                    rc.expire(k, self.ttl_s, nx=True)
            else:
                got = rc.hget(k, f)
                if got is None:
                    raise StageError(f"{self._cluster_name}: a bucket written a moment ago is "
                                     "gone (keys are being lost); nothing was marked done")
                owners[i] = int(got)

    # -- loss detection ----------------------------------------------------------------------
    def primaries(self) -> list[tuple[str, Any]]:
        """(host:port, client) of every primary."""
        rc = self.rc
        if self.plain:
            h, p = self.nodes[0]
            return [(f"{h}:{p}", rc)]
        return [(n.name, rc.get_redis_connection(n)) for n in rc.get_primaries()]

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

        return self.guard(run)

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


def buckets_for(entries: int) -> int:
    """How many bucket hashes for ``entries`` claims: ~:data:`BUCKET_FILL` fields each."""
    return max(1, math.ceil(entries / BUCKET_FILL))


def _glob_escape(prefix: bytes) -> bytes:
    """``prefix`` as a literal in a ``SCAN MATCH`` pattern."""
    return _GLOB.sub(rb"\\\1", prefix)


def redis_edges(store: RedisBucketStore, digests: np.ndarray, refs: np.ndarray,
                offsets: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Edges ``(bucket owner, ref)`` for this shard's entries. Over all shards they connect
    exactly the documents that :func:`~curator.dedup.backends.embedded.star_edges` connects
    (same components), so both backends remove the same documents.

    ``offsets`` (first document number of each shard): the buckets then hold dense document
    numbers (smaller in Redis than ``shard << 32 | row`` references) and the owners are mapped
    back to references here."""
    from curator.dedup.backends.embedded import unique_edges
    from curator.dedup.common import ROW_BITS, ref_row, ref_shard

    if digests.shape[0] == 0:
        e = np.empty(0, dtype=np.uint64)
        return e, e
    if offsets is None:
        owners = store.claim(digests, refs)
    else:
        off = np.asarray(offsets, dtype=np.int64)
        dense = (off[ref_shard(refs)] + ref_row(refs)).astype(np.uint64)
        got = store.claim(digests, dense).astype(np.int64)
        shard = np.searchsorted(off, got, side="right") - 1
        owners = (shard.astype(np.uint64) << np.uint64(ROW_BITS)) | \
            (got - off[shard]).astype(np.uint64)
    m = owners != refs
    return unique_edges(owners[m], refs[m])
