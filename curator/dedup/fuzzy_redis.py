"""The ``redis`` bucket step of ``fuzzy_dedup``: each shard's entries claim their buckets in a
Redis Cluster (first writer wins), and each bucket's owner gives the edges ``(owner, ref)``.

One mapped function per step: :func:`begin_task` (remove the stage's old keys, write the
sentinels), :func:`claim_task` (one shard), :func:`verify_task` (no key lost since ``begin``)
and :func:`cleanup_task`. None of them is phase-cached: a restarted node may have lost its
keys, so a rerun starts clean.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from curator.dedup.backends import redis_watch
from curator.dedup.backends.redis_auth import RedisAuth
from curator.dedup.backends.redis_watch import Begun
from curator.dedup.common import load_npz, save_npz
from curator.dedup.components import EdgeFile
from curator.dedup.lsh import bucket_entries

if TYPE_CHECKING:  # pragma: no cover
    from curator.core.stage import PhaseContext


@dataclass(frozen=True, kw_only=True)
class RedisTarget:
    """Where the ``redis`` backend keeps bucket keys: ``prefix`` holds this run's keys,
    ``stage_prefix`` every key of the stage whatever the run (what cleanup removes)."""

    nodes: tuple[str, ...] = ()
    prefix: str = ""
    stage_prefix: str = ""
    batch: int = 10_000
    ttl_s: int = 0
    auth: RedisAuth | None = None  # no secret inside: the password is read from the env
    buckets: int = 1  # bucket hashes (``buckets_for`` the run's entries)
    deadline_s: float = 120.0  # a silent node is waited for this long (executor.peer_timeout_s)

    def store(self) -> Any:
        from curator.dedup.backends.redis_cluster import RedisBucketStore

        return RedisBucketStore(
            list(self.nodes),
            self.prefix,
            self.batch,
            stage_prefix=self.stage_prefix,
            ttl_s=self.ttl_s,
            auth=self.auth,
            buckets=self.buckets,
            deadline_s=self.deadline_s,
        )


@dataclass(frozen=True, kw_only=True)
class ClaimJob:
    """One shard's claim: its shard index, band digests and the corpus's document offsets."""

    shard_idx: int
    sig_path: str
    offsets_path: str


@dataclass(frozen=True, kw_only=True)
class Claimed:
    """What a claim gave: the shard's edges, and the writes each witness counter (hex key)
    must hold (checked by :func:`verify_task`)."""

    edges: EdgeFile
    witness: tuple[tuple[str, int], ...]


@dataclass(frozen=True, kw_only=True)
class VerifyJob:
    begun: Begun
    witness: tuple[tuple[str, int], ...]


def claim_edges(
    ctx: PhaseContext,
    target: RedisTarget,
    stage_dir: str,
    sig_paths: Sequence[str],
    docs: Sequence[int],
) -> list[EdgeFile]:
    """Claim every shard's buckets in the cluster (edges to each bucket's owner); shards in
    shard index order, ``docs`` documents each."""
    offsets = os.path.join(stage_dir, "redis", "offsets.npz")
    save_npz(offsets, offsets=np.concatenate(([0], np.cumsum(docs)))[:-1].astype(np.int64))
    jobs = [
        ClaimJob(shard_idx=i, sig_path=p, offsets_path=offsets) for i, p in enumerate(sig_paths)
    ]
    begun = ctx.map(functools.partial(begin_task, target), [None])[0]
    claimed = ctx.map(functools.partial(claim_task, target, stage_dir), jobs)
    witness: dict[str, int] = {}
    for c in claimed:
        for k, n in c.witness:
            witness[k] = witness.get(k, 0) + n
    ctx.map(
        functools.partial(verify_task, target),
        [VerifyJob(begun=begun, witness=tuple(sorted(witness.items())))],
    )
    ctx.map(functools.partial(cleanup_task, target), [None])
    return [c.edges for c in claimed]


def begin_task(target: RedisTarget, _: None) -> Begun:
    """Remove every key the stage left (any run), then write this run's sentinels."""
    store = target.store()
    try:
        store.check()
        store.cleanup()
        return redis_watch.begin(store)
    finally:
        store.close()


def claim_task(target: RedisTarget, stage_dir: str, job: ClaimJob) -> Claimed:
    from curator.dedup.backends.redis_cluster import redis_edges

    store = target.store()
    try:
        store.check()
        z = load_npz(job.sig_path, "fuzzy_dedup redis")
        flat, refs = bucket_entries(job.shard_idx, z["digests"], z.get("valid"))
        off = load_npz(job.offsets_path, "fuzzy_dedup redis")["offsets"]
        u, v = redis_edges(store, flat, refs, off)
        path = os.path.join(stage_dir, "edges", f"redis-{job.shard_idx:06d}.npz")
        save_npz(path, u=u, v=v)
        return Claimed(
            edges=EdgeFile(path=path, edges=int(u.shape[0])),
            witness=tuple((k.hex(), n) for k, n in store.witness.items()),
        )
    finally:
        store.close()


def verify_task(target: RedisTarget, job: VerifyJob) -> None:
    """Fail with one line if keys of this run were lost since :func:`begin_task`."""
    store = target.store()
    try:
        store.check()
        redis_watch.verify(store, job.begun, dict(job.witness))
    finally:
        store.close()


def cleanup_task(target: RedisTarget, _: None) -> None:
    store = target.store()
    try:
        store.check()
        store.cleanup()
    finally:
        store.close()
