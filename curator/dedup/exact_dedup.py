"""``exact_dedup``: remove documents whose key (normalised text, normalised URL or a meta field)
is identical to an earlier one's.

Phases (resumable ``ctx.map``; the result does not depend on the number of workers):

1. ``hash`` (per input shard): 128-bit xxh3 of each key, split by hash into partitions, with
   the document's priority under ``keep`` (none for ``first``). A document without a key
   (no URL, no such meta field) takes no part.
2. ``groups`` (per partition): sort by (hash, -priority, ref); per hash the first entry (the
   highest priority, ties to the smallest reference: shard order, then row) is kept, the
   others point at it.
3. ``removals`` (per input shard): collect that shard's removed rows (a contiguous slice of
   each partition's sorted result) and the user id of the kept copy.
4. final pass: rejects removed documents with reason ``exact_duplicate`` and ``duplicate_of``.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass
from typing import Annotated

import numpy as np
import orjson
import xxhash
from pydantic import Field

from curator.base.document import Document, meta_value
from curator.core.context import GlobalContext
from curator.core.stage import GlobalStage, Shard
from curator.dedup.common import (
    Groups,
    Normalize,
    PartitionParams,
    Removed,
    Remover,
    gather_partition,
    load_npz,
    lookup_ids,
    ref_row,
    ref_shard,
    save_json,
    save_npz,
    write_removals,
)
from curator.dedup.normalize import normalize_batch, resolve
from curator.dedup.url_key import url_key
from curator.storage.shards import read_shard

#: Memory of one entry while its partition is grouped: 32 bytes stored plus sort temporaries.
_ENTRY_BYTES = 104
#: ``key:`` and ``keep:`` values (``meta.<field>``: a dotted path into the document's meta).
KeySpec = Annotated[str, Field(pattern=r"^(text|url|meta\..+)$")]
KeepSpec = Annotated[str, Field(pattern=r"^(first|longest|meta\..+)$")]


@dataclass(frozen=True, kw_only=True)
class HashedShard:
    """A ``hash`` phase result: one shard's key hashes split by partition (``path``,
    ``parts`` entries per partition), its ids, documents read and documents with a key."""

    path: str
    ids: str
    docs: int
    keyed: int
    parts: tuple[int, ...]


class ExactDedup(GlobalStage):
    """Remove exact duplicates (of the normalised text, the normalised URL or a meta field)."""

    name = "exact_dedup"

    class Params(PartitionParams):
        key: KeySpec = "text"
        """What must be equal: `text` (normalised by `normalize`), `url` (the URL in
        `meta[url_field]`, normalised: scheme, host case, default port, fragment and tracking
        parameters; docs/dedup.md) or `meta.<field>` (that value, compared as JSON). A
        document without the URL or field is never a duplicate."""
        keep: KeepSpec = "first"
        """Copy kept of each group: `first` (input order), `longest` (most characters of text)
        or `meta.<field>` (the highest number there; missing or not a number = lowest); ties
        go to the first in input order."""
        url_field: str = "url"
        """Meta field holding the URL for `key: url` (a dotted path reaches nested keys)."""
        normalize: Normalize = "basic"
        """Normalisation preset of `key: text`: `none`, `basic` (= `true`), `fineweb`
        (datatrove's `simplify_text`)."""

    def setup(self) -> None:
        self.normalize = resolve(self.normalize, "exact_dedup.normalize")

    def run(self, shards: list[Shard], ctx: GlobalContext) -> list[Shard]:
        total = sum(s.docs for s in shards)
        parts = self.partitions or max(
            1, math.ceil(total * _ENTRY_BYTES / (self.partition_mb << 20)))
        sdir = ctx.stage_dir
        rule = _Rule(self.key, self.keep, self.url_field, self.normalize)
        hashed = ctx.map(functools.partial(_hash_task, sdir, parts, rule),
                         [(i, s.name, s.path) for i, s in enumerate(shards)],
                         phase="hash", keys=[s.name for s in shards])
        expected = np.sum([h.parts for h in hashed], axis=0) if hashed else []
        groups = ctx.map(functools.partial(_group_task, sdir),
                         [(p, [h.path for h in hashed], int(expected[p]))
                          for p in range(parts)],
                         phase="groups", keys=[str(p) for p in range(parts)])
        ids_paths = [h.ids for h in hashed]
        group_paths = [g.path for g in groups]
        removed = ctx.map(functools.partial(_removals_task, sdir, group_paths, ids_paths),
                          [(i, s.name) for i, s in enumerate(shards)],
                          phase="removals", keys=[s.name for s in shards])
        ctx.count("documents", sum(h.docs for h in hashed))
        if self.key != "text":
            ctx.count("documents_without_key", sum(h.docs - h.keyed for h in hashed))
        ctx.count("duplicates", sum(r.count for r in removed))
        ctx.count("duplicate_groups", sum(g.groups for g in groups))
        return ctx.write_shards(Remover(sdir, "exact_duplicate"), shards)


class _Rule:
    """What a hash task needs of the parameters (small and picklable)."""

    def __init__(self, key: str, keep: str, url_field: str, normalize: str) -> None:
        self.key, self.keep, self.url_field, self.normalize = key, keep, url_field, normalize

    def key_of(self, doc: Document) -> str | None:
        """The key of a document under ``key: url | meta.<field>`` (None: no key)."""
        if self.key == "url":
            url = meta_value(doc.meta, self.url_field)
            return url_key(url) if isinstance(url, str) and url.strip() else None
        value = meta_value(doc.meta, self.key[5:])
        if value is None:
            return None
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()

    def priority(self, doc: Document) -> float:
        """Higher is kept first (``keep: longest | meta.<field>``)."""
        if self.keep == "longest":
            return float(len(doc.text))
        v = meta_value(doc.meta, self.keep[5:])
        if isinstance(v, (int, float)) and math.isfinite(v):
            return float(v)
        return float("-inf")


def _hash_task(sdir: str, parts: int, rule: _Rule, item: tuple[int, str, str]
               ) -> HashedShard:
    shard_idx, name, path = item
    ids: list[str] = []
    his: list[int] = []
    los: list[int] = []
    rows: list[int] = []
    prio: list[float] = []
    h128 = xxhash.xxh3_128_intdigest
    texts: list[str] = []

    def add(key: str) -> None:
        h = h128(key.encode("utf-8", "surrogatepass"))
        his.append(h >> 64)
        los.append(h & 0xFFFFFFFFFFFFFFFF)

    def flush() -> None:
        for text in normalize_batch(texts, rule.normalize):
            add(text)
        texts.clear()

    for row, doc in enumerate(read_shard(path)):
        ids.append(doc.id)
        if rule.key == "text":
            texts.append(doc.text)
            if len(texts) >= 1024:
                flush()
        else:
            key = rule.key_of(doc)
            if key is None:
                continue
            add(key)
        rows.append(row)
        if rule.keep != "first":
            prio.append(rule.priority(doc))
    flush()
    hi = np.asarray(his, dtype=np.uint64)
    lo = np.asarray(los, dtype=np.uint64)
    refs = (np.uint64(shard_idx) << np.uint64(32)) | np.asarray(rows, dtype=np.uint64)
    pri = np.asarray(prio, dtype=np.float64)
    part = (lo % np.uint64(parts)).astype(np.int64)
    arrays: dict[str, np.ndarray] = {}
    for p in range(parts):
        m = part == p
        arrays[f"h{p}"], arrays[f"l{p}"], arrays[f"r{p}"] = hi[m], lo[m], refs[m]
        if rule.keep != "first":
            arrays[f"p{p}"] = pri[m]
    out = os.path.join(sdir, "hash", f"{shard_idx:06d}-{name}.npz")
    save_npz(out, **arrays)
    ids_path = os.path.join(sdir, "hash", f"{shard_idx:06d}-{name}.ids.json")
    save_json(ids_path, ids)
    return HashedShard(path=out, ids=ids_path, docs=len(ids), keyed=len(rows),
                       parts=tuple(np.bincount(part, minlength=parts).tolist()))


def _group_task(sdir: str, item: tuple[int, list[str], int]) -> Groups:
    p, paths, expected = item
    hs, ls, rs, ps = [], [], [], []
    for path in paths:
        z = load_npz(path, "exact_dedup groups")
        hs.append(z[f"h{p}"])
        ls.append(z[f"l{p}"])
        rs.append(z[f"r{p}"])
        if f"p{p}" in z:
            ps.append(z[f"p{p}"])
    hi, lo, r = gather_partition("exact_dedup", p, expected,
                                 {"uint64:h": hs, "uint64:l": ls, "uint64:r": rs})
    # keep: longest | meta.<field>: the highest priority first, then input order
    order = np.lexsort((r, -np.concatenate(ps), lo, hi) if ps else (r, lo, hi))
    hi, lo, r = hi[order], lo[order], r[order]
    first = np.r_[True, (hi[1:] != hi[:-1]) | (lo[1:] != lo[:-1])] if r.shape[0] else \
        np.empty(0, dtype=bool)
    kept = r[first][np.cumsum(first) - 1] if r.shape[0] else r
    dup = ~first
    removed, kept = r[dup], kept[dup]
    o = np.argsort(removed, kind="stable")
    out = os.path.join(sdir, "groups", f"p{p:05d}.npz")
    save_npz(out, removed=removed[o], kept=kept[o])
    groups = int(np.unique(kept).shape[0]) if kept.shape[0] else 0
    return Groups(path=out, removed=int(removed.shape[0]), groups=groups)


def _removals_task(sdir: str, group_paths: list[str], ids_paths: list[str],
                   item: tuple[int, str]) -> Removed:
    shard_idx, name = item
    lo_ref = np.uint64(shard_idx) << np.uint64(32)
    hi_ref = np.uint64(shard_idx + 1) << np.uint64(32)
    rem, kept = [], []
    for path in group_paths:
        z = load_npz(path, "exact_dedup removals")
        a, b = np.searchsorted(z["removed"], [lo_ref, hi_ref])
        rem.append(z["removed"][a:b])
        kept.append(z["kept"][a:b])
    removed = np.concatenate(rem) if rem else np.empty(0, np.uint64)
    keep = np.concatenate(kept) if kept else np.empty(0, np.uint64)
    order = np.argsort(removed, kind="stable")
    removed, keep = removed[order], keep[order]
    dup_of = lookup_ids(ref_shard(keep).tolist(), ref_row(keep).tolist(), ids_paths.__getitem__)
    write_removals(sdir, name, ref_row(removed).tolist(), dup_of)
    return Removed(count=int(removed.shape[0]))
