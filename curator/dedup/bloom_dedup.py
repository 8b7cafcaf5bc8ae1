"""``bloom_dedup``: remove repeated documents or paragraphs (lines) with a Bloom filter of a
fixed size, in one pass over the corpus whatever its size; the first copy in input order stays.

The global order is input shard order, then document order in the shard, then line order in
the document. Phases (each a resumable ``ctx.map``; nothing depends on the executor or the
number of workers):

1. ``hash`` (per input shard): each item's normalised text -> 64-bit hash (XXH3 for documents,
   XXH64 vectorised over the batch for lines), with its row (and line index); the entries are
   grouped by filter partition (the hash's top bits), in input order within each.
2. ``filter`` (per partition): one filter of ``memory_mb / partitions``, fed that partition's
   entries shard after shard, in input order; an entry whose bits were all set is a repeat.
   The flags (one byte per entry) go to one file per partition. A partition's removals depend
   only on its own entries and their order, so they are the same on any executor.
3. ``removals`` (per input shard): that shard's flagged rows (and lines).
4. final pass: repeated documents are rejected (``bloom_duplicate``); repeated lines are cut
   and a document left without text is rejected (``all_paragraphs_duplicate``).

Temporary disk: 12 bytes per document or 16 per line (hashes, rows, lines) and one byte of flag.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np

from curator.base.document import Document
from curator.base.errors import StageError
from curator.core.context import GlobalContext, ShardContext
from curator.core.params import NonNegInt, PositiveFloat, PositiveInt, StageParams
from curator.core.stage import GlobalStage, Shard
from curator.dedup import bloom
from curator.dedup.common import Normalize, Removed
from curator.dedup.normalize import normalize_batch, resolve
from curator.dedup.subdoc import hash_texts, load_npy, save_npy
from curator.dedup.xxh64 import xxh64_ranges
from curator.storage.atomic import atomic_open
from curator.storage.shards import read_shard

#: Text (characters) normalised and hashed together in the hash phase.
_BATCH_CHARS = 4 << 20
#: Entries of one partition run through the filter at once in the filter phase.
_CHUNK = 1 << 20


@dataclass(frozen=True)
class BloomCfg:
    """What the mapped tasks need (small and picklable)."""

    stage_dir: str
    level: str
    normalize: str
    min_chars: int
    partitions: int
    words: int  # 64-bit words of one partition's filter
    k: int = 1


@dataclass(frozen=True, kw_only=True)
class HashedItems:
    """A ``hash`` phase result: one shard's item hashes and rows (``<prefix>.{h,r}.npy``, and
    ``.u.npy`` line numbers), grouped by partition, its documents and its entries per
    partition."""

    prefix: str
    docs: int
    counts: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class Filtered:
    """A ``filter`` phase result: one partition's flag file (one byte per entry, 1 = seen
    before), its entries, how many were flagged, and the filter's set bits."""

    path: str
    items: int
    flagged: int
    bits_set: int


class BloomDedup(GlobalStage):
    """Remove repeated documents or lines with a fixed-size Bloom filter (keeps the first)."""

    name = "bloom_dedup"

    class Params(StageParams):
        level: Literal["document", "paragraph"] = "document"
        """`document`: a document whose normalised text was seen before is removed;
        `paragraph`: a line (paragraph, as in dolma) seen before is cut from its document."""
        memory_mb: PositiveFloat = 64
        """Size of the filter in MB (all partitions together): the memory bound. The
        false-positive rate follows from it and the number of items (docs/dedup.md)."""
        partitions: PositiveInt = 1
        """Filters the memory is split into by hash, each fed by its own task (in parallel on
        a cluster; each holds `memory_mb / partitions`). Changing it changes only which
        false positives happen."""
        normalize: Normalize = "basic"
        """Normalisation preset before hashing: `none`, `basic` (= `true`), `fineweb`."""
        min_chars: NonNegInt = 1
        """`paragraph`: lines shorter than this after normalisation are never counted (blank
        lines never are)."""

    def setup(self) -> None:
        self.normalize = resolve(self.normalize, "bloom_dedup.normalize")

    def run(self, shards: list[Shard], ctx: GlobalContext) -> list[Shard]:
        memory = int(self.memory_mb * (1 << 20))
        words = bloom.filter_words(memory, self.partitions)
        cfg = BloomCfg(
            ctx.stage_dir, self.level, self.normalize, self.min_chars, self.partitions, words
        )
        hashed = ctx.map(
            functools.partial(_hash_task, cfg),
            [(i, s.name, s.path) for i, s in enumerate(shards)],
            phase="hash",
            keys=[s.name for s in shards],
        )
        counts = np.array([h.counts for h in hashed], dtype=np.int64).reshape(
            len(hashed), self.partitions
        )
        n = int(counts.sum())
        m_bits = words * 64 * self.partitions
        k = bloom.optimal_k(m_bits, n)
        predicted = bloom.fp_rate(m_bits, n, k)
        if predicted > 0.01:
            ctx.log(
                f"[{ctx.stage_id}] warning: {n} items in {self.memory_mb:g} MB give a "
                f"false-positive rate of {predicted:.2%}; raise memory_mb"
            )
        cfg = dataclasses.replace(cfg, k=k)
        prefixes = [h.prefix for h in hashed]
        starts = np.cumsum(counts, axis=1) - counts  # partition p's piece in each hash file
        filtered = ctx.map(
            functools.partial(_filter_task, cfg, prefixes),
            [(p, counts[:, p].tolist(), starts[:, p].tolist()) for p in range(self.partitions)],
            phase="filter",
            keys=[f"p{p}" for p in range(self.partitions)],
        )
        offsets = np.cumsum(counts, axis=0) - counts  # where shard s starts in each flag file
        flag_paths = [f.path for f in filtered]
        removed = ctx.map(
            functools.partial(_removals_task, cfg, flag_paths),
            [
                (i, s.name, prefixes[i], counts[i].tolist(), offsets[i].tolist())
                for i, s in enumerate(shards)
            ],
            phase="removals",
            keys=[s.name for s in shards],
        )
        dups = sum(r.count for r in removed)
        set_bits = sum(f.bits_set for f in filtered)
        fill = set_bits / m_bits
        unit = "documents" if self.level == "document" else "paragraphs"
        summary = {
            "level": self.level,
            "memory_mb": self.memory_mb,
            "partitions": self.partitions,
            "bits": m_bits,
            "hashes": k,
            "items": n,
            "repeats_removed": dups,
            "predicted_fp_rate": predicted,
            "fill": fill,
            "final_fp_rate": fill**k,
            "expected_false_removals": bloom.expected_false_positives(m_bits, n - dups, k),
        }
        ctx.count("documents", sum(h.docs for h in hashed))
        ctx.count(f"{unit}_hashed", n)
        ctx.count(f"{unit}_repeated", dups)
        ctx.artifacts["bloom"] = summary
        ctx.artifacts["report_tables"] = [
            {
                "title": "bloom dedup",
                "columns": ["key", "value"],
                "rows": [
                    [key, f"{v:.3g}" if isinstance(v, float) else v] for key, v in summary.items()
                ],
            }
        ]
        return ctx.write_shards(BloomRemover(cfg), shards)


# -- mapped tasks -----------------------------------------------------------------------------


def _line_hashes(lines: list[str]) -> np.ndarray:
    """XXH64 of each line's UTF-8 bytes, in one vector pass (lines hold no newline)."""
    buf = np.frombuffer("\n".join(lines).encode("utf-8", "surrogatepass"), dtype=np.uint8)
    ends = np.append(np.flatnonzero(buf == 10), buf.shape[0])
    starts = np.r_[0, ends[:-1] + 1]
    return xxh64_ranges(buf, starts, ends - starts)


def _hash_task(cfg: BloomCfg, item: tuple[int, str, str]) -> HashedItems:
    shard_idx, name, path = item
    hs: list[np.ndarray] = []
    rows: list[np.ndarray] = []
    units: list[np.ndarray] = []
    batch: list[str] = []
    batch_rows: list[int] = []
    chars = ndocs = 0

    def flush() -> None:
        if cfg.level == "document":
            hs.append(hash_texts(normalize_batch(batch, cfg.normalize)))
            rows.append(np.asarray(batch_rows, dtype=np.uint32))
        else:
            per_doc = [t.split("\n") for t in batch]
            counts = np.fromiter(map(len, per_doc), dtype=np.int64, count=len(per_doc))
            norm = normalize_batch([x for ls in per_doc for x in ls], cfg.normalize)
            keep = np.fromiter(map(len, norm), dtype=np.int64, count=len(norm)) >= max(
                cfg.min_chars, 1
            )
            if norm:
                hs.append(_line_hashes(norm)[keep])
                rows.append(np.repeat(np.asarray(batch_rows, dtype=np.uint32), counts)[keep])
                first = np.repeat(np.cumsum(counts) - counts, counts)
                units.append((np.arange(len(norm)) - first)[keep])
        batch.clear()
        batch_rows.clear()

    for row, doc in enumerate(read_shard(path)):
        ndocs += 1
        batch.append(doc.text)
        batch_rows.append(row)
        chars += len(doc.text)
        if chars >= _BATCH_CHARS:
            flush()
            chars = 0
    flush()
    h = np.concatenate(hs) if hs else np.empty(0, np.uint64)
    r = np.concatenate(rows) if rows else np.empty(0, np.uint32)
    part = bloom.partition_of(h, cfg.partitions)
    order = np.argsort(part, kind="stable")  # by partition, input order within each
    prefix = os.path.join(cfg.stage_dir, "hash", f"{shard_idx:06d}-{name}")
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    save_npy(f"{prefix}.h.npy", h[order])
    save_npy(f"{prefix}.r.npy", r[order])
    if cfg.level == "paragraph":
        u = np.concatenate(units) if units else np.empty(0, np.int64)
        if u.shape[0] and int(u.max()) >= 1 << 32:
            raise StageError(f"bloom_dedup: a document of shard '{name}' has 2^32 lines")
        save_npy(f"{prefix}.u.npy", u[order].astype(np.uint32))
    return HashedItems(
        prefix=prefix,
        docs=ndocs,
        counts=tuple(np.bincount(part, minlength=cfg.partitions).tolist()),
    )


def _flag_path(cfg: BloomCfg, p: int) -> str:
    return os.path.join(cfg.stage_dir, "flags", f"p{p:05d}.u8")


def _filter_task(
    cfg: BloomCfg, prefixes: list[str], item: tuple[int, list[int], list[int]]
) -> Filtered:
    """Feed partition ``p``'s entries through its filter, shard after shard; the flags are
    written as they come (memory: the filter and one chunk)."""
    p, counts, starts = item
    words = np.zeros(cfg.words, dtype=np.uint64)
    path = _flag_path(cfg, p)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    flagged = 0
    with atomic_open(path, "wb") as out:
        for prefix, count, start in zip(prefixes, counts, starts, strict=True):
            if not count:
                continue
            h = load_npy(f"{prefix}.h.npy", "bloom_dedup filter")
            if start + count > h.shape[0]:
                raise StageError(
                    f"bloom_dedup filter: '{prefix}.h.npy' is shorter than its "
                    "count; delete the stage folder and rerun"
                )
            for a in range(start, start + count, _CHUNK):
                b = min(a + _CHUNK, start + count)
                seen = bloom.insert_test(words, cfg.k, np.asarray(h[a:b]))
                flagged += int(seen.sum())
                out.write(seen.view(np.uint8).tobytes())
    return Filtered(
        path=path,
        items=sum(counts),
        flagged=flagged,
        bits_set=bloom.bits_set(words),
    )


def _removals_task(
    cfg: BloomCfg, flag_paths: list[str], item: tuple[int, str, str, list[int], list[int]]
) -> Removed:
    """One shard's flagged rows (and lines), gathered from every partition's flag file."""
    _, name, prefix, counts, offsets = item
    rows = load_npy(f"{prefix}.r.npy", "bloom_dedup removals")
    units = (
        load_npy(f"{prefix}.u.npy", "bloom_dedup removals") if cfg.level == "paragraph" else None
    )
    start = 0
    sel: list[np.ndarray] = []
    for path, count, off in zip(flag_paths, counts, offsets, strict=True):
        if count:
            flags = np.fromfile(path, dtype=np.uint8, count=count, offset=off)
            if flags.shape[0] != count:
                raise StageError(
                    f"bloom_dedup removals: '{path}' is shorter than expected; "
                    "delete the stage folder and rerun"
                )
            sel.append(start + np.flatnonzero(flags))
        start += count
    idx = np.concatenate(sel) if sel else np.empty(0, np.int64)
    r = np.asarray(rows[idx], dtype=np.uint32)
    u = np.asarray(units[idx], dtype=np.uint32) if units is not None else np.zeros_like(r)
    o = np.lexsort((u, r))
    base = os.path.join(cfg.stage_dir, "removals", name)
    os.makedirs(os.path.dirname(base), exist_ok=True)
    save_npy(f"{base}.rows.npy", r[o])
    save_npy(f"{base}.units.npy", u[o])
    return Removed(count=int(idx.shape[0]))


class BloomRemover:
    """Final pass over one shard: rejects repeated documents, or cuts repeated lines.
    Picklable (a small config)."""

    def __init__(self, cfg: BloomCfg) -> None:
        self.cfg = cfg

    def __call__(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        base = os.path.join(self.cfg.stage_dir, "removals", ctx.shard)
        rows = np.asarray(load_npy(f"{base}.rows.npy", "bloom_dedup final pass"))
        units = np.asarray(load_npy(f"{base}.units.npy", "bloom_dedup final pass"))
        starts = (
            np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
            if rows.shape[0]
            else np.empty(0, np.int64)
        )
        ends = np.append(starts[1:], rows.shape[0])
        k, nk = 0, starts.shape[0]
        for row, doc in enumerate(docs):
            if k >= nk or int(rows[starts[k]]) != row:
                yield doc
                continue
            if self.cfg.level == "document":
                k += 1
                ctx.reject(doc, "bloom_duplicate")
                continue
            drop = set(units[starts[k] : ends[k]].tolist())
            k += 1
            lines = doc.text.split("\n")
            text = "\n".join(x for i, x in enumerate(lines) if i not in drop)
            ctx.count("paragraphs_removed", len(drop))
            ctx.count("chars_removed", len(doc.text) - len(text))
            if not text.strip():
                ctx.count("documents_emptied")
                ctx.reject(doc, "all_paragraphs_duplicate")
                continue
            ctx.count("documents_changed")
            doc.text = text
            yield doc
