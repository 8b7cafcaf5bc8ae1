"""Loss detection of a Redis bucket step: :func:`begin` before the first claim, :func:`verify`
after the last. A flush, a restart or failover to a replica without the data, an eviction or
an expiry while the claims ran stops the stage with one line naming the node, instead of
giving fewer duplicates."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from curator.base.errors import StageError

if TYPE_CHECKING:  # pragma: no cover
    from curator.dedup.backends.redis_cluster import RedisBucketStore


@dataclass(frozen=True, kw_only=True)
class NodeMark:
    """What :func:`begin` saw of one primary: its run id and how many keys it had evicted."""

    run_id: str
    evicted: int


@dataclass(frozen=True, kw_only=True)
class Begun:
    """Sentinel keys (hex) written by :func:`begin`, and each primary's mark then."""

    sentinels: tuple[str, ...]
    nodes: tuple[tuple[str, NodeMark], ...]


def begin(store: RedisBucketStore) -> Begun:
    """Before the first claim: a sentinel key on every primary and each node's eviction
    count, for :func:`verify`."""
    sentinels: list[str] = []
    nodes: list[tuple[str, NodeMark]] = []
    serving = set(store.slot_owners().values()) if not store.plain else None
    for name, r in store.guard(store.primaries):
        if serving is not None and name not in serving:
            continue  # a primary without slots (just added) holds no bucket
        key = store.meta_key(name, b"s")

        def mark(r: Any = r, key: bytes = key) -> tuple[str, int]:
            r.set(key, b"1", ex=store.ttl_s or None)
            info = r.info()
            return str(info.get("run_id", "")), int(info.get("evicted_keys", 0))

        run_id, evicted = store.guard(mark, where=name)
        sentinels.append(key.hex())
        nodes.append((name, NodeMark(run_id=run_id, evicted=evicted)))
    return Begun(sentinels=tuple(sentinels), nodes=tuple(nodes))


def verify(store: RedisBucketStore, begun: Begun, witness: Mapping[str, int]) -> None:
    """After the last claim: fail with one line, naming the node, if keys of this run were
    lost while it ran (the buckets would be incomplete: fewer duplicates found)."""
    from redis.crc import key_slot

    rc = store.rc
    gone = (
        f"the buckets are incomplete, so nothing was marked done: rerun "
        f"(redis_key_ttl_s is {store.ttl_s})"
    )

    def owner_of(key: bytes) -> str:
        if store.plain:
            h, p = store.nodes[0]
            return f"{h}:{p}"
        store.guard(rc.nodes_manager.initialize)
        return store.slot_owners().get(key_slot(key), "?")

    for name, r in store.guard(store.primaries):
        before = dict(begun.nodes).get(name)
        info = store.guard(r.info, where=name)
        if (
            before
            and before.run_id == str(info.get("run_id", ""))
            and int(info.get("evicted_keys", 0)) > before.evicted
        ):
            policy = store.guard(lambda r=r: r.config_get("maxmemory-policy"), where=name).get(
                "maxmemory-policy", "?"
            )
            raise StageError(
                f"redis {name}: out of memory: it evicted "
                f"{int(info['evicted_keys']) - before.evicted} keys during the run "
                f"(maxmemory-policy {policy}); raise maxmemory or add nodes, and use "
                f"maxmemory-policy noeviction; {gone}"
            )
    for hx in begun.sentinels:
        key = bytes.fromhex(hx)
        if not store.guard(lambda key=key: rc.exists(key)):
            raise StageError(
                f"redis {owner_of(key)}: keys of this run vanished while it ran (the node "
                "was flushed, restarted empty or replaced by a replica without the data, "
                f"or the keys expired); {gone}"
            )
    for hx, sent in sorted(witness.items()):
        key = bytes.fromhex(hx)
        got = int(store.guard(lambda key=key: rc.get(key)) or 0)
        if got < sent:
            raise StageError(
                f"redis {owner_of(key)}: {sent - got} of {sent} bucket writes of this run "
                "are missing (the node lost writes: flushed, restarted, or failed over to "
                f"a replica that had not received them); {gone}"
            )
