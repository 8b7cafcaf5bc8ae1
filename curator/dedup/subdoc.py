"""Plumbing of the sub-document dedup stages (``line_dedup``, ``sentence_span_dedup``): units
of text (lines, or spans of consecutive sentences) hashed across the corpus, counted, and the
repeated ones cut out of their documents.

Phases (each a resumable ``ctx.map``; nothing depends on the number of workers):

1. ``hash`` (per input shard): each unit's normalised text -> 64-bit XXH3; entries
   ``(hash, document reference, unit index)`` sorted by hash and written as ``.npy`` files
   (read back memory-mapped), with the number of entries in each of 4096 hash ranges.
2. ``groups`` (per partition = a run of consecutive hash ranges, sized from those counts so that
   one partition fits ``partition_mb``): the partition's entries of every shard, sorted by
   (hash, reference, unit); a hash seen more than ``max_occurrences`` times marks all its
   entries removed, or all but the first in input order with ``keep_first``.
3. ``removals`` (per input shard): that shard's removed ``(row, unit)`` pairs.
4. final pass: the units are cut out; a document left without text is rejected.
"""

from __future__ import annotations

import functools
import io
import itertools
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import xxhash

from curator.core.context import GlobalContext, ShardContext
from curator.core.document import Document
from curator.core.errors import StageError
from curator.core.stage import Shard
from curator.dedup.common import gather_partition, pack_refs, ref_row
from curator.dedup.normalize import normalize_batch
from curator.storage.atomic import atomic_open
from curator.storage.shards import read_shard
from curator.text import split_sentences

#: Hash ranges of phase 1 (top 12 bits); partitions are runs of them.
RANGE_BITS = 12
#: Memory of one entry while its partition is grouped: 20 bytes stored plus sort temporaries.
ENTRY_BYTES = 96
#: Documents normalised together.
_BATCH = 512


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
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    with atomic_open(path, "wb") as f:
        f.write(buf.getvalue())


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
    per_range = np.sum([h["ranges"] for h in hashed], axis=0) if hashed else \
        np.zeros(1 << RANGE_BITS, dtype=np.int64)
    total = int(per_range.sum())
    parts = partitions or max(1, math.ceil(total * ENTRY_BYTES / (partition_mb << 20)))
    plan = plan_partitions(per_range, parts)
    groups = ctx.map(functools.partial(_group_task, cfg, [h["prefix"] for h in hashed]),
                     [(p, lo, hi, int(per_range[lo:hi].sum())) for p, (lo, hi) in
                      enumerate(plan)],
                     phase="groups", keys=[f"{p}-{lo}-{hi}" for p, (lo, hi) in enumerate(plan)])
    removed = ctx.map(functools.partial(_removals_task, cfg, [g["prefix"] for g in groups]),
                      [(i, s.name) for i, s in enumerate(shards)],
                      phase="removals", keys=[s.name for s in shards])
    unit = "lines" if cfg.stage == "line_dedup" else "spans"
    ctx.count("documents", sum(h["docs"] for h in hashed))
    ctx.count(f"{unit}_hashed", total)
    ctx.count(f"{unit}_duplicate", sum(removed))
    ctx.count(f"{unit}_repeated_groups", sum(g["groups"] for g in groups))
    out = ctx.write_shards(SubdocRemover(cfg, reason), shards)
    ctx.artifacts["report_tables"] = [{
        "title": cfg.stage, "columns": ["key", "value"],
        "rows": [["normalize", cfg.normalize], ["max_occurrences", cfg.max_occurrences],
                 ["keep_first", cfg.keep_first], ["partitions", len(plan)],
                 [f"{unit} hashed", total], [f"{unit} removed", sum(removed)],
                 ["repeated groups", sum(g["groups"] for g in groups)]]}]
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


def _hash_task(cfg: SubdocCfg, item: tuple[int, str, str]) -> dict[str, Any]:
    shard_idx, name, path = item
    hs, rows, idxs = [], [], []
    batch: list[tuple[int, list[str]]] = []
    ndocs = 0

    def flush() -> None:
        units = normalized_units(cfg, [ps for _, ps in batch])
        norm = [u for us in units for u in us]
        if norm:
            keep = np.fromiter((len(t) >= max(cfg.min_chars, 1) for t in norm), dtype=bool,
                               count=len(norm))
            h = hash_texts([t for t, k in zip(norm, keep) if k])
            r = np.concatenate([np.full(len(us), row, dtype=np.int64)
                                for (row, _), us in zip(batch, units)])
            i = np.concatenate([np.arange(len(us), dtype=np.int64) for us in units])
            hs.append(h)
            rows.append(r[keep])
            idxs.append(i[keep])
        batch.clear()

    for row, doc in enumerate(read_shard(path)):
        ndocs += 1
        batch.append((row, pieces(cfg, doc.text)))
        if len(batch) >= _BATCH:
            flush()
    flush()
    h = np.concatenate(hs) if hs else np.empty(0, np.uint64)
    row = np.concatenate(rows) if rows else np.empty(0, np.int64)
    idx = np.concatenate(idxs) if idxs else np.empty(0, np.int64)
    if idx.shape[0] and int(idx.max()) >= 1 << 32:
        raise StageError(f"{cfg.stage}: a document of shard '{name}' has more than 2^32 units")
    ref = pack_refs(shard_idx, ndocs)[row] if ndocs else np.empty(0, np.uint64)
    order = np.lexsort((idx, ref, h))
    h, ref, idx = h[order], ref[order], idx[order].astype(np.uint32)
    prefix = os.path.join(cfg.stage_dir, "hash", f"{shard_idx:06d}-{name}")
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    for suffix, arr in (("h", h), ("r", ref), ("u", idx)):
        save_npy(f"{prefix}.{suffix}.npy", arr)
    ranges = np.bincount((h >> np.uint64(64 - RANGE_BITS)).astype(np.int64),
                         minlength=1 << RANGE_BITS)
    return {"prefix": prefix, "docs": ndocs, "ranges": ranges.tolist()}


def _range_slice(h: np.ndarray, lo: int, hi: int) -> tuple[int, int]:
    shift = 64 - RANGE_BITS
    lo_v = np.uint64(lo << shift)
    a = int(np.searchsorted(h, lo_v, side="left"))
    b = h.shape[0] if hi >= 1 << RANGE_BITS else int(
        np.searchsorted(h, np.uint64(hi << shift), side="left"))
    return a, b


def _group_task(cfg: SubdocCfg, prefixes: list[str], item: tuple[int, int, int, int]
                ) -> dict[str, Any]:
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
    return {"prefix": prefix, "removed": int(r.shape[0]), "groups": groups}


def _removals_task(cfg: SubdocCfg, prefixes: list[str], item: tuple[int, str]) -> int:
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
    return int(r.shape[0])


class SubdocRemover:
    """Final pass: cuts the removed units out of one shard's documents. Picklable."""

    def __init__(self, cfg: SubdocCfg, reason: str) -> None:
        self.cfg, self.reason = cfg, reason

    def __call__(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        base = os.path.join(self.cfg.stage_dir, "removals", ctx.shard)
        rows = np.asarray(load_npy(f"{base}.rows.npy", f"{self.cfg.stage} final pass"))
        unit_idx = np.asarray(load_npy(f"{base}.units.npy", f"{self.cfg.stage} final pass"))
        bounds = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]]) if rows.shape[0] else \
            np.empty(0, np.int64)
        todo: dict[int, list[int]] = {
            int(rows[a]): unit_idx[a:b].tolist()
            for a, b in zip(bounds.tolist(), np.append(bounds[1:], rows.shape[0]).tolist())}
        what = "lines" if self.cfg.stage == "line_dedup" else "sentences"
        for row, doc in enumerate(docs):
            removed = todo.get(row)
            if removed is None:
                yield doc
                continue
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
