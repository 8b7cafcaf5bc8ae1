"""Plumbing of the sub-document dedup stages (``line_dedup``, ``sentence_span_dedup``): units
of text (lines, or spans of consecutive sentences) hashed across the corpus, counted, and the
repeated ones cut out of their documents.

Phases (each a resumable ``ctx.map``; nothing depends on the number of workers):

1. ``hash`` (per input shard): each unit's normalised text -> 64-bit XXH3; entries
   ``(hash, document reference, unit index)`` sorted by hash and written as ``.npy`` files
   (read back memory-mapped), with the number of entries in each of 4096 hash ranges.
   Documents are normalised in batches of about ``batch_mb`` of text (a count of documents
   let a 187 MB shard of long pages take 3.35 GB); what stays per shard is 16 bytes per unit.
2. ``groups`` (per partition = a run of consecutive hash ranges, sized from those counts so that
   one partition fits ``partition_mb``): the partition's entries of every shard, sorted by
   (hash, reference, unit); a hash seen more than ``max_occurrences`` times marks all its
   entries removed, or all but the first in input order with ``keep_first``.
3. ``removals`` (per input shard): that shard's removed ``(row, unit)`` pairs.
4. final pass: the units are cut out; a document left without text is rejected.
"""

from __future__ import annotations

import functools
import itertools
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import xxhash

from curator.base.document import Document
from curator.base.errors import StageError
from curator.core.context import GlobalContext, ShardContext
from curator.core.stage import Shard
from curator.dedup.common import ROW_BITS, Groups, Removed, gather_partition, ref_row
from curator.dedup.normalize import normalize_batch
from curator.storage.atomic import atomic_open
from curator.storage.shards import read_shard
from curator.text import split_sentences

#: Hash ranges of phase 1 (top 12 bits); partitions are runs of them.
RANGE_BITS = 12
#: Memory of one entry while its partition is grouped: 20 bytes stored plus sort temporaries.
ENTRY_BYTES = 96
#: Default text (MB) normalised together in the hash phase (``batch_mb``).
BATCH_MB = 4.0


@dataclass(frozen=True)
class SubdocCfg:
    """What the mapped tasks need (small and picklable)."""

    stage: str  # "line_dedup" | "sentence_span_dedup"
    stage_dir: str
    normalize: str
    max_occurrences: int
    keep_first: bool
    min_chars: int
    span: int = 3
    language: str = "en"
    batch_mb: float = BATCH_MB


@dataclass(frozen=True, kw_only=True)
class HashedUnits:
    """A ``hash`` phase result: one shard's unit hashes, references and unit numbers
    (``<prefix>.{h,r,u}.npy``, sorted by hash), its documents, and its entries per hash range
    (the top :data:`RANGE_BITS` bits)."""

    prefix: str
    docs: int
    ranges: tuple[int, ...]


# -- units ------------------------------------------------------------------------------------


def sentence_starts(text: str, lang: str) -> list[int]:
    """Start offsets of the sentences of ``text`` (:func:`curator.text.split_sentences`)."""
    starts, pos = [], 0
    for s in split_sentences(text, lang):
        i = text.find(s, pos)
        if i < 0:  # cannot happen (sentences are stripped substrings, in order)
            raise StageError("sentence_span_dedup: sentence not found in its document")
        starts.append(i)
        pos = i + len(s)
    return starts


def pieces(cfg: SubdocCfg, text: str) -> list[str]:
    """What a document is cut into: its lines, or its sentences (with trailing whitespace)."""
    if cfg.stage == "line_dedup":
        return text.split("\n")
    st = sentence_starts(text, cfg.language)
    bounds = st + [len(text)]
    return [text[bounds[i]:bounds[i + 1]] for i in range(len(st))]


def normalized_units(cfg: SubdocCfg, docs: list[list[str]]) -> list[list[str]]:
    """Each document's units, normalised, in unit index order: its lines, or its windows of
    ``span`` sentences. Sentences are normalised once and joined by one space (a sentence ends
    with a terminator and whitespace, so nothing the presets change crosses a boundary)."""
    flat = normalize_batch([p for ps in docs for p in ps], cfg.normalize)
    out, i = [], 0
    for ps in docs:
        norm, i = flat[i:i + len(ps)], i + len(ps)
        if cfg.stage == "line_dedup":
            out.append(norm)
        elif len(norm) < cfg.span:
            out.append([])
        else:
            out.append([" ".join(x for x in norm[j:j + cfg.span] if x)
                        for j in range(len(norm) - cfg.span + 1)])
    return out


def cut(cfg: SubdocCfg, text: str, removed: list[int]) -> tuple[str, int]:
    """``text`` without the removed units; also the number of lines/sentences cut."""
    if cfg.stage == "line_dedup":
        lines = text.split("\n")
        drop = set(removed)
        return "\n".join(x for i, x in enumerate(lines) if i not in drop), len(drop)
    st = sentence_starts(text, cfg.language)
    drop_s = {j + k for j in removed for k in range(cfg.span)}
    bounds = st + [len(text)]
    pieces = [text[:st[0]]] + [text[bounds[i]:bounds[i + 1]] for i in range(len(st))
                               if i not in drop_s]
    return "".join(pieces).rstrip(), len(drop_s)


def hash_texts(texts: list[str]) -> np.ndarray:
    """64-bit XXH3 of each text's UTF-8 bytes."""
    h = xxhash.xxh3_64_intdigest
    return np.fromiter((h(t.encode("utf-8", "surrogatepass")) for t in texts),
                       dtype=np.uint64, count=len(texts))


# -- files ------------------------------------------------------------------------------------


def save_npy(path: str, a: np.ndarray) -> None:
    with atomic_open(path, "wb") as f:  # straight to the file: no in-memory copy
        np.save(f, a, allow_pickle=False)


def load_npy(path: str, what: str) -> np.ndarray:
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise StageError(f"{what}: intermediate file '{path}' is missing or corrupt ({e}); "
                         "delete the stage folder and rerun") from e


# -- driver -----------------------------------------------------------------------------------


def run_subdoc(cfg: SubdocCfg, shards: list[Shard], ctx: GlobalContext, partitions: int,
               partition_mb: int, reason: str) -> list[Shard]:
    """All phases of a sub-document dedup stage; returns the output shards."""
    hashed = ctx.map(functools.partial(_hash_task, cfg),
                     [(i, s.name, s.path) for i, s in enumerate(shards)],
                     phase="hash", keys=[s.name for s in shards])
    per_range = np.sum([h.ranges for h in hashed], axis=0) if hashed else \
        np.zeros(1 << RANGE_BITS, dtype=np.int64)
    total = int(per_range.sum())
    parts = partitions or max(1, math.ceil(total * ENTRY_BYTES / (partition_mb << 20)))
    plan = plan_partitions(per_range, parts)
    groups = ctx.map(functools.partial(_group_task, cfg, [h.prefix for h in hashed]),
                     [(p, lo, hi, int(per_range[lo:hi].sum())) for p, (lo, hi) in
                      enumerate(plan)],
                     phase="groups", keys=[f"{p}-{lo}-{hi}" for p, (lo, hi) in enumerate(plan)])
    removed = ctx.map(functools.partial(_removals_task, cfg, [g.path for g in groups]),
                      [(i, s.name) for i, s in enumerate(shards)],
                      phase="removals", keys=[s.name for s in shards])
    unit = "lines" if cfg.stage == "line_dedup" else "spans"
    n_removed = sum(r.count for r in removed)
    n_groups = sum(g.groups for g in groups)
    ctx.count("documents", sum(h.docs for h in hashed))
    ctx.count(f"{unit}_hashed", total)
    ctx.count(f"{unit}_duplicate", n_removed)
    ctx.count(f"{unit}_repeated_groups", n_groups)
    out = ctx.write_shards(SubdocRemover(cfg, reason), shards)
    ctx.artifacts["report_tables"] = [{
        "title": cfg.stage, "columns": ["key", "value"],
        "rows": [["normalize", cfg.normalize], ["max_occurrences", cfg.max_occurrences],
                 ["keep_first", cfg.keep_first], ["partitions", len(plan)],
                 [f"{unit} hashed", total], [f"{unit} removed", n_removed],
                 ["repeated groups", n_groups]]}]
    return out


def plan_partitions(per_range: np.ndarray, parts: int) -> list[tuple[int, int]]:
    """Split the hash ranges into at most ``parts`` runs of about equal entry counts."""
    n = per_range.shape[0]
    parts = max(1, min(parts, n))
    cum = np.cumsum(per_range)
    total = int(cum[-1]) if n else 0
    if total == 0 or parts == 1:
        return [(0, n)]
    cuts = np.searchsorted(cum, [total * k / parts for k in range(1, parts)], side="left") + 1
    bounds = sorted({0, n, *np.clip(cuts, 1, n - 1).tolist()})
    return list(itertools.pairwise(bounds))


# -- mapped tasks -----------------------------------------------------------------------------


def _hash_task(cfg: SubdocCfg, item: tuple[int, str, str]) -> HashedUnits:
    shard_idx, name, path = item
    hs: list[np.ndarray] = []
    rows: list[np.ndarray] = []
    idxs: list[np.ndarray] = []
    batch: list[tuple[int, list[str]]] = []
    batch_chars, limit = 0, max(1, int(cfg.batch_mb * (1 << 20)))
    ndocs = 0

    def flush() -> None:
        units = normalized_units(cfg, [ps for _, ps in batch])
        counts = np.fromiter((len(us) for us in units), dtype=np.int64, count=len(units))
        n = int(counts.sum())
        if n:
            keep = np.fromiter((len(t) >= max(cfg.min_chars, 1) for us in units for t in us),
                               dtype=bool, count=n)
            hs.append(hash_texts([t for us in units for t in us])[keep])
            batch_rows = np.fromiter((row for row, _ in batch), dtype=np.uint32,
                                     count=len(batch))
            rows.append(np.repeat(batch_rows, counts)[keep])
            starts = np.repeat(np.cumsum(counts) - counts, counts)
            idxs.append((np.arange(n, dtype=np.int64) - starts)[keep])
        batch.clear()

    for row, doc in enumerate(read_shard(path)):
        ndocs += 1
        batch.append((row, pieces(cfg, doc.text)))
        batch_chars += len(doc.text)
        if batch_chars >= limit:
            flush()
            batch_chars = 0
    flush()
    h = np.concatenate(hs) if hs else np.empty(0, np.uint64)
    hs.clear()
    idx = np.concatenate(idxs) if idxs else np.empty(0, np.int64)
    idxs.clear()
    if idx.shape[0] and int(idx.max()) >= 1 << 32:
        raise StageError(f"{cfg.stage}: a document of shard '{name}' has more than 2^32 units")
    idx = idx.astype(np.uint32)
    row = np.concatenate(rows) if rows else np.empty(0, np.uint32)
    rows.clear()
    # entries come in (row, unit) order and a reference grows with its row, so a stable sort
    # by hash gives the (hash, reference, unit) order without lexsort's three-key copies
    order = np.argsort(h, kind="stable")
    h = h[order]
    idx = idx[order]
    ref = (np.uint64(shard_idx) << ROW_BITS) | row[order].astype(np.uint64)
    del order, row
    prefix = os.path.join(cfg.stage_dir, "hash", f"{shard_idx:06d}-{name}")
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    for suffix, arr in (("h", h), ("r", ref), ("u", idx)):
        save_npy(f"{prefix}.{suffix}.npy", arr)
    ranges = np.bincount((h >> np.uint64(64 - RANGE_BITS)).astype(np.int64),
                         minlength=1 << RANGE_BITS)
    return HashedUnits(prefix=prefix, docs=ndocs, ranges=tuple(ranges.tolist()))


def _range_slice(h: np.ndarray, lo: int, hi: int) -> tuple[int, int]:
    shift = 64 - RANGE_BITS
    lo_v = np.uint64(lo << shift)
    a = int(np.searchsorted(h, lo_v, side="left"))
    b = h.shape[0] if hi >= 1 << RANGE_BITS else int(
        np.searchsorted(h, np.uint64(hi << shift), side="left"))
    return a, b


def _group_task(cfg: SubdocCfg, prefixes: list[str], item: tuple[int, int, int, int]
                ) -> Groups:
    p, lo, hi, expected = item
    hs, rs, us = [], [], []
    for prefix in prefixes:
        h = load_npy(f"{prefix}.h.npy", f"{cfg.stage} groups")
        a, b = _range_slice(h, lo, hi)
        hs.append(np.asarray(h[a:b]))
        rs.append(np.asarray(load_npy(f"{prefix}.r.npy", f"{cfg.stage} groups")[a:b]))
        us.append(np.asarray(load_npy(f"{prefix}.u.npy", f"{cfg.stage} groups")[a:b]))
    h, r, u = gather_partition(cfg.stage, p, expected,
                               {"uint64:h": hs, "uint64:r": rs, "uint32:u": us})
    order = np.lexsort((u, r, h))
    h, r, u = h[order], r[order], u[order]
    n = h.shape[0]
    groups = 0
    if n:
        first = np.r_[True, h[1:] != h[:-1]]
        starts = np.flatnonzero(first)
        sizes = np.diff(np.append(starts, n))
        gid = np.cumsum(first) - 1
        rank = np.arange(n) - starts[gid]
        repeated = sizes[gid] > cfg.max_occurrences
        drop = repeated & (rank > 0) if cfg.keep_first else repeated
        groups = int((sizes > cfg.max_occurrences).sum())
        r, u = r[drop], u[drop]
    o = np.lexsort((u, r))
    prefix = os.path.join(cfg.stage_dir, "groups", f"p{p:05d}")
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    save_npy(f"{prefix}.r.npy", r[o])
    save_npy(f"{prefix}.u.npy", u[o])
    return Groups(path=prefix, removed=int(r.shape[0]), groups=groups)


def _removals_task(cfg: SubdocCfg, prefixes: list[str], item: tuple[int, str]) -> Removed:
    shard_idx, name = item
    lo_ref = np.uint64(shard_idx) << np.uint64(32)
    hi_ref = np.uint64(shard_idx + 1) << np.uint64(32)
    rs, us = [], []
    for prefix in prefixes:
        r = load_npy(f"{prefix}.r.npy", f"{cfg.stage} removals")
        a, b = np.searchsorted(r, [lo_ref, hi_ref])
        rs.append(np.asarray(r[a:b]))
        us.append(np.asarray(load_npy(f"{prefix}.u.npy", f"{cfg.stage} removals")[a:b]))
    r = np.concatenate(rs) if rs else np.empty(0, np.uint64)
    u = np.concatenate(us) if us else np.empty(0, np.uint32)
    o = np.lexsort((u, r))
    rows = ref_row(r[o]).astype(np.uint32)
    base = os.path.join(cfg.stage_dir, "removals", name)
    os.makedirs(os.path.dirname(base), exist_ok=True)
    save_npy(f"{base}.rows.npy", rows)
    save_npy(f"{base}.units.npy", u[o])
    return Removed(count=int(r.shape[0]))


class SubdocRemover:
    """Final pass: cuts the removed units out of one shard's documents. Picklable."""

    def __init__(self, cfg: SubdocCfg, reason: str) -> None:
        self.cfg, self.reason = cfg, reason

    def __call__(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        base = os.path.join(self.cfg.stage_dir, "removals", ctx.shard)
        rows = np.asarray(load_npy(f"{base}.rows.npy", f"{self.cfg.stage} final pass"))
        unit_idx = np.asarray(load_npy(f"{base}.units.npy", f"{self.cfg.stage} final pass"))
        # rows are sorted: walk them alongside the documents (no per-unit Python objects for
        # the whole shard, only for the document at hand)
        starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]]) if rows.shape[0] else \
            np.empty(0, np.int64)
        ends = np.append(starts[1:], rows.shape[0])
        what = "lines" if self.cfg.stage == "line_dedup" else "sentences"
        k, nk = 0, starts.shape[0]
        for row, doc in enumerate(docs):
            if k >= nk or int(rows[starts[k]]) != row:
                yield doc
                continue
            removed = unit_idx[starts[k]:ends[k]].tolist()
            k += 1
            text, n = cut(self.cfg, doc.text, removed)
            ctx.count(f"{what}_removed", n)
            ctx.count("chars_removed", len(doc.text) - len(text))
            if not text.strip():
                ctx.count("documents_emptied")
                ctx.reject(doc, self.reason)
                continue
            ctx.count("documents_changed")
            doc.text = text
            yield doc
