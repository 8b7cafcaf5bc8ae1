"""Steps 2-4 of ``semantic_dedup`` (one clustering pass): spherical k-means on a sample
(``kmeans``), each shard's rows assigned to their nearest centroids (``assign``), and within
each cluster the keep-first removal (or, for a first pass, the marking of rows with a close
neighbour) block by block against the kept set (``clusters``). Memory is one cluster's
vectors; clusters above ``max_cluster_size`` are split by k-means again.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from curator.base.errors import StageError
from curator.core import progress
from curator.core.stage import PhaseContext
from curator.storage.atomic import atomic_open

#: Rows per similarity block inside a cluster (block x kept-set floats at once).
_BLOCK = 1024


@dataclass(frozen=True, kw_only=True)
class Clustering:
    """What a clustering pass (steps 2-4) needs."""

    stage_dir: str
    tag: str  # "full" or "pre": the sub-folder of its files
    threshold: float
    mode: str  # "dedup": keep-first removal; "candidates": mark rows with any close neighbour
    clusters: int
    max_cluster_size: int
    sample: int
    iterations: int
    seed: int
    device: str
    jaccard: float | None = None  # candidates mode: also mark rows with a word-set neighbour
    weight: float = 0.0  # candidates mode: share of the word-set Jaccard in the pair's score
    assign: int = 1  # nearest centroids each row joins (candidates mode: pairs split by k-means)
    alone: float = 2.0  # candidates mode: static cosine that alone marks a pair (above 1: off)

    def path(self, *parts: str) -> str:
        return os.path.join(self.stage_dir, self.tag, *parts)


@dataclass(frozen=True)
class ShardVectors:
    """One shard's stored vectors (``(docs, dim)`` float16, NaN rows not embedded) and the rows
    that take part in a pass (None: all)."""

    index: int
    name: str
    vectors: str
    docs: int
    rows: str | None = None
    words: str | None = None  # base path of the word-set hashes (candidates pass only)


@dataclass(frozen=True, kw_only=True)
class PassResult:
    """What a clustering pass found (sums over its cluster tasks)."""

    files: tuple[str, ...] = ()
    found: int = 0
    clusters: int = 0
    split: int = 0


@dataclass(frozen=True, kw_only=True)
class Centroids:
    """A ``kmeans`` phase result: the centroids file (``(k, dim)`` float32, unit rows)."""

    path: str


@dataclass(frozen=True, kw_only=True)
class Assigned:
    """An ``assign`` phase result: how many of the shard's rows each cluster holds."""

    sizes: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class ClusterPairs:
    """A ``clusters`` phase result: the pair files ``<path>.{removed,kept,cos}.npy`` (sorted by
    removed reference), how many rows they mark, and how many clusters were split."""

    path: str
    found: int
    split: int


def save_npy(path: str, a: np.ndarray) -> None:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    with atomic_open(path, "wb") as f:
        f.write(buf.getvalue())


def load_npy(path: str, what: str, mmap: bool = True) -> np.ndarray:
    try:
        return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise StageError(f"semantic_dedup {what}: file '{path}' is missing or corrupt ({e}); "
                         "delete the stage folder and rerun") from e


def cluster_pass(ctx: PhaseContext, cl: Clustering,
                 shards: list[ShardVectors], counts: list[int]) -> PassResult:
    """Steps 2-4 over the rows of ``shards`` (all rows, or the listed ones: ``counts``)."""
    total = sum(counts)
    if total == 0:
        return PassResult()
    k = cl.clusters or (1 if total <= cl.max_cluster_size
                        else math.ceil(total / max(1, cl.max_cluster_size // 4)))
    k = max(1, min(k, total, cl.sample))
    cl = dataclasses.replace(cl, assign=max(1, min(cl.assign, k)))
    cent = ctx.map(functools.partial(_kmeans_task, cl, counts),
                   [(k, shards)], phase=f"{cl.tag}_kmeans")[0]
    sizes = ctx.map(functools.partial(_assign_task, cl, cent.path),
                    shards, phase=f"{cl.tag}_assign", keys=[s.name for s in shards])
    per_cluster = np.sum(np.asarray([a.sizes for a in sizes], dtype=np.int64), axis=0)
    groups = _balance(per_cluster, max(1, ctx.workers) * 4, cl.max_cluster_size)
    out = ctx.map(functools.partial(_cluster_task, cl, shards),
                  groups, phase=f"{cl.tag}_clusters",  # keyed by range: a resume with
                  keys=[f"{a}-{b}" for a, b in groups])  # other workers regroups safely
    return PassResult(files=tuple(o.path for o in out), found=sum(o.found for o in out),
                      clusters=int((per_cluster > 0).sum()),
                      split=sum(o.split for o in out))


def normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norm, 1e-12)


class _Gather:
    """Reads the vectors of given references (``shard << 32 | row``) from the shards' stored
    files (memory-mapped: only the rows asked for are read)."""

    def __init__(self, shards: list[ShardVectors]) -> None:
        self.shards = shards
        self.maps: dict[int, np.ndarray] = {}

    def rows_of(self, s: int) -> np.ndarray:
        sv = self.shards[s]
        if sv.rows is None:
            return np.arange(sv.docs, dtype=np.int64)
        return np.asarray(load_npy(sv.rows, "rows"), dtype=np.int64)

    def __call__(self, refs: np.ndarray) -> np.ndarray:
        shard = (refs >> np.uint64(32)).astype(np.int64)
        row = (refs & np.uint64(0xFFFFFFFF)).astype(np.int64)
        out: np.ndarray | None = None
        for s in np.unique(shard).tolist():
            m = self.maps.get(s)
            if m is None:
                m = self.maps[s] = load_npy(self.shards[s].vectors, "vectors")
            sel = shard == s
            part = np.asarray(m[row[sel]], dtype=np.float32)
            if out is None:
                out = np.empty((refs.shape[0], part.shape[1]), dtype=np.float32)
            out[sel] = part
        if out is None:
            return np.empty((0, 0), dtype=np.float32)
        if np.isnan(out[:, 0]).any():
            raise StageError("semantic_dedup: a stored vector is missing (cache changed under "
                             "a running stage?); rerun")
        return normalise(out)


def _gather_words(shards: list[ShardVectors], refs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The word-set hashes of ``refs`` (in their order) as one ragged ``(offsets, hashes)``."""
    shard = (refs >> np.uint64(32)).astype(np.int64)
    row = (refs & np.uint64(0xFFFFFFFF)).astype(np.int64)
    maps: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    parts: list[np.ndarray] = []
    for s, r in zip(shard.tolist(), row.tolist()):
        m = maps.get(s)
        if m is None:
            base = shards[s].words
            if base is None:
                raise StageError("semantic_dedup: word sets missing for the lexical first pass")
            m = maps[s] = (load_npy(base + ".offsets.npy", "word sets", mmap=False),
                           load_npy(base + ".hashes.npy", "word sets"))
        parts.append(np.asarray(m[1][m[0][r]:m[0][r + 1]]))
    sizes = np.fromiter((p.size for p in parts), dtype=np.int64, count=len(parts))
    off = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    return off, (np.concatenate(parts) if parts else np.zeros(0, np.int64))


def _kmeans(x: np.ndarray, k: int, cl: Clustering) -> np.ndarray:
    """Spherical k-means centroids (float32, normalised). Single-threaded on CPU so that the
    centroids (and with them every assignment) are the same on every executor."""
    if k <= 1 or x.shape[0] <= k:
        return normalise(x[:1].mean(axis=0, keepdims=True)) if k <= 1 else normalise(x[:k])
    import faiss

    from curator.models.embed import resolve_device

    gpu = resolve_device(cl.device) == "cuda" and getattr(faiss, "get_num_gpus", lambda: 0)() > 0
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        km = faiss.Kmeans(x.shape[1], k, niter=cl.iterations, seed=cl.seed, spherical=True,
                          gpu=gpu, verbose=False, min_points_per_centroid=1,
                          max_points_per_centroid=1 << 30)
        km.train(np.ascontiguousarray(x, dtype=np.float32))
    finally:
        faiss.omp_set_num_threads(threads)
    return normalise(km.centroids)


def _sample_refs(counts: list[int], shards: list[ShardVectors], n: int, g: _Gather
                 ) -> np.ndarray:
    """Every ``ceil(total / n)``-th participating document in input order (deterministic)."""
    total = sum(counts)
    step = max(1, math.ceil(total / n))
    out, base = [], 0
    for s, c in enumerate(counts):
        if c:
            first = (-base) % step
            pick = np.arange(first, c, step, dtype=np.int64)
            if pick.size:
                rows = g.rows_of(s)[pick]
                out.append((np.uint64(shards[s].index) << np.uint64(32))
                           | rows.astype(np.uint64))
        base += c
    return np.concatenate(out) if out else np.empty(0, dtype=np.uint64)


def _kmeans_task(cl: Clustering, counts: list[int],
                 item: tuple[int, list[ShardVectors]]) -> Centroids:
    k, shards = item
    g = _Gather(shards)
    x = g(_sample_refs(counts, shards, cl.sample, g))
    cent = _kmeans(x, k, cl)
    path = cl.path("centroids.npy")
    save_npy(path, cent)
    return Centroids(path=path)


def _assign_rows(x: np.ndarray, cent: np.ndarray) -> np.ndarray:
    """Index of each row's nearest centroid (highest cosine; ties: lowest index)."""
    return _nearest(x, cent, 1)[:, 0]


def _nearest(x: np.ndarray, cent: np.ndarray, m: int) -> np.ndarray:
    """``(rows, m)``: each row's ``m`` nearest centroids, nearest first (ties: lowest index)."""
    out = np.empty((x.shape[0], m), dtype=np.int64)
    for s in range(0, x.shape[0], 8192):
        sim = x[s:s + 8192] @ cent.T
        if m == 1:
            out[s:s + 8192, 0] = np.argmax(sim, axis=1)
        else:
            out[s:s + 8192] = np.argsort(-sim, axis=1, kind="stable")[:, :m]
    return out


def _assign_task(cl: Clustering, cent_path: str, sv: ShardVectors) -> Assigned:
    """Rows of one shard sorted by (cluster, row) and each cluster's bounds (a row joins its
    ``cl.assign`` nearest clusters, so it may be listed more than once); returns the cluster
    sizes."""
    cent = load_npy(cent_path, "centroids", mmap=False)
    g = _Gather([sv])
    rows = g.rows_of(0)
    k = cent.shape[0]
    m = max(1, min(cl.assign, k))
    labels = np.empty(0, dtype=np.int64)
    progress.expect(int(rows.size))  # the assign phase's line counts the documents placed
    if rows.size:
        parts = []
        for s in range(0, rows.size, 65536):
            r = rows[s:s + 65536].astype(np.uint64)
            parts.append(_nearest(g(r), cent, m).ravel())
            progress.step(int(r.size))
        labels = np.concatenate(parts)
    rows = np.repeat(rows, m)
    order = np.lexsort((rows, labels))
    counts = np.bincount(labels, minlength=k)
    base = cl.path("assign", f"{sv.index:06d}-{sv.name}")
    save_npy(base + ".rows.npy", rows[order])
    save_npy(base + ".bounds.npy", np.concatenate(([0], np.cumsum(counts))).astype(np.int64))
    return Assigned(sizes=tuple(counts.tolist()))


def _balance(sizes: np.ndarray, n_groups: int, cap: int) -> list[tuple[int, int]]:
    """Contiguous cluster ranges ``[a, b)`` of about equal work (sum of squared sizes, capped:
    a split cluster costs about its size times the cap)."""
    work = np.minimum(sizes, cap).astype(np.float64) * sizes
    target = max(work.sum() / n_groups, 1.0)
    out, a, acc = [], 0, 0.0
    for c in range(sizes.shape[0]):
        acc += work[c]
        if acc >= target:
            out.append((a, c + 1))
            a, acc = c + 1, 0.0
    if a < sizes.shape[0]:
        out.append((a, int(sizes.shape[0])))
    return out


def _cluster_task(cl: Clustering, shards: list[ShardVectors],
                  item: tuple[int, int]) -> ClusterPairs:
    """Clusters ``[a, b)``: their members gathered from every shard, processed one at a time."""
    a, b = item
    g = _Gather(shards)
    rows_maps, bounds = [], []
    for sv in shards:
        base = cl.path("assign", f"{sv.index:06d}-{sv.name}")
        rows_maps.append(load_npy(base + ".rows.npy", "assignment"))
        bounds.append(load_npy(base + ".bounds.npy", "assignment", mmap=False))
    removed: list[np.ndarray] = []
    kept: list[np.ndarray] = []
    cos: list[np.ndarray] = []
    split = 0
    progress.expect(sum(int(bd[b] - bd[a]) for bd in bounds))
    for c in range(a, b):
        members = []
        for sv, rm, bd in zip(shards, rows_maps, bounds):
            lo, hi = int(bd[c]), int(bd[c + 1])
            if hi > lo:
                members.append((np.uint64(sv.index) << np.uint64(32))
                               | np.asarray(rm[lo:hi], dtype=np.uint64))
        if not members:
            continue
        refs = np.concatenate(members)  # shard order, then row: input order
        progress.step(int(refs.shape[0]))
        for leaf in _split(refs, g, cl, 0):
            if leaf.shape[0] < refs.shape[0]:
                split += 1
            if cl.mode == "candidates" and (cl.jaccard or cl.weight):
                from curator.models.candidates import first_pass_mask

                hit = first_pass_mask(g(leaf), cl.threshold, weight=cl.weight,
                                      jaccard=cl.jaccard or 0.0, alone=cl.alone,
                                      words=_gather_words(shards, leaf))
                r = leaf[hit]
                k_, c_ = np.zeros(r.size, np.uint64), np.zeros(r.size, np.float32)
            else:
                r, k_, c_ = _leaf(leaf, g(leaf), cl)
            removed.append(r)
            kept.append(k_)
            cos.append(c_)
    r_all = np.concatenate(removed) if removed else np.empty(0, np.uint64)
    order = np.argsort(r_all, kind="stable")
    base = cl.path("pairs", f"c{a:07d}-{b:07d}")
    save_npy(base + ".removed.npy", r_all[order])
    save_npy(base + ".kept.npy", (np.concatenate(kept) if kept else
                                   np.empty(0, np.uint64))[order])
    save_npy(base + ".cos.npy", (np.concatenate(cos) if cos else
                                  np.empty(0, np.float32))[order])
    return ClusterPairs(path=base, found=int(r_all.shape[0]), split=split)


def _split(refs: np.ndarray, g: _Gather, cl: Clustering, depth: int) -> Iterator[np.ndarray]:
    """``refs`` (sorted) in pieces of at most ``max_cluster_size``: k-means again on a sample
    of an oversized cluster, members assigned a chunk at a time (only references and labels
    of the whole cluster are held), recursively; after 4 levels, input-order chunks."""
    cap = cl.max_cluster_size
    if refs.shape[0] <= cap:
        yield refs
        return
    if depth >= 4:
        for s in range(0, refs.shape[0], cap):
            yield refs[s:s + cap]
        return
    k = max(2, math.ceil(2 * refs.shape[0] / cap))
    step = max(1, math.ceil(refs.shape[0] / cap))
    cent = _kmeans(g(refs[::step][:cap]), k, cl)
    labels = np.concatenate([_assign_rows(g(refs[s:s + cap]), cent)
                             for s in range(0, refs.shape[0], cap)])
    if np.unique(labels).shape[0] == 1:  # k-means could not separate them: order chunks
        yield from _split(refs, g, cl, 4)
        return
    for lab in np.unique(labels).tolist():
        yield from _split(refs[labels == lab], g, cl, depth + 1)


def _leaf(refs: np.ndarray, x: np.ndarray, cl: Clustering
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One cluster's result: ``dedup``: (removed refs, kept ref each duplicates, cosine);
    ``candidates``: (refs with a neighbour at ``threshold`` or more, -, -)."""
    n = refs.shape[0]
    t = np.float32(cl.threshold)
    if cl.mode == "candidates":
        hit = np.zeros(n, dtype=bool)
        for s in range(0, n, _BLOCK):
            sim = x[s:s + _BLOCK] @ x.T
            idx = np.arange(sim.shape[0])
            sim[idx, s + idx] = -2.0
            hit[s:s + _BLOCK] = (sim >= t).any(axis=1)
        z = np.empty(0, np.float32)
        return refs[hit], np.zeros(int(hit.sum()), np.uint64), np.zeros(int(hit.sum()), z.dtype)
    kept_x = np.empty_like(x)
    kept_ref = np.empty(n, dtype=np.uint64)
    nk = 0
    rem_r, rem_k, rem_c = [], [], []
    for s in range(0, n, _BLOCK):
        blk = x[s:s + _BLOCK]
        m = blk.shape[0]
        if nk:
            sim = blk @ kept_x[:nk].T
            best_j = np.argmax(sim, axis=1)
            best = sim[np.arange(m), best_j]
        else:
            best_j = np.full(m, -1, dtype=np.int64)
            best = np.full(m, -2.0, dtype=np.float32)
        within = blk @ blk.T
        block_kept: list[int] = []
        block_kidx: list[int] = []
        for i in range(m):
            b, j = float(best[i]), int(best_j[i])
            if block_kept:
                w = within[i, block_kept]
                p = int(np.argmax(w))
                if w[p] > b:
                    b, j = float(w[p]), block_kidx[p]
            if b >= t:
                rem_r.append(refs[s + i])
                rem_k.append(kept_ref[j])
                rem_c.append(b)
            else:
                kept_x[nk] = blk[i]
                kept_ref[nk] = refs[s + i]
                block_kept.append(i)
                block_kidx.append(nk)
                nk += 1
    return (np.asarray(rem_r, dtype=np.uint64), np.asarray(rem_k, dtype=np.uint64),
            np.asarray(rem_c, dtype=np.float32))
