"""One seeded permutation of a group's documents across all its parts (``megatron_shards`` with
``shuffle: true``), in memory bounded by a budget, not by the corpus.

Each document gets a 64-bit key, a keyed BLAKE2b of its id under the seed (the ``keys`` phase,
one ``.keys`` file per part). The documents' order is the order of their keys, ties (a repeated
id) broken by their place in the input (part in shard order, then position), so it depends
only on the seed and the documents, never on the executor, the number of workers or which
task ran where. The key space is cut into ``B`` equal ranges, with ``B`` chosen from the
group's document count so that one range's keys and offsets fit the budget; the ``sort``
phase makes one part per range: it scans every part's keys for those in its range, sorts
them, and copies those documents' tokens (``pread`` of their byte range, not a mapping of
the whole file) and ids into a new part. The ranges, in key order, are the group's shuffled
parts, which the usual merge then concatenates and cuts into prefixes.
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from curator.storage.atomic import atomic_open
from curator.tokenize import megatron

#: Memory one document costs in a range's sort: its key, part and position, the sort's
#: permutation, its id (a Python bytes object) and its index entries (measured with
#: bench/bench_shuffle.py, with room to spare).
BYTES_PER_DOC = 256
#: Documents copied per writer call.
_BATCH = 4096


def doc_key(seed: int, doc_id: bytes) -> int:
    """A document's shuffle key: 64 bits of BLAKE2b keyed with the seed."""
    h = hashlib.blake2b(doc_id, digest_size=8, key=seed.to_bytes(16, "little", signed=True))
    return int.from_bytes(h.digest(), "little")


def buckets_for(documents: int, memory_mb: float) -> int:
    """How many key ranges keep one range's sort within ``memory_mb``."""
    per = max(1, int(memory_mb * (1 << 20)) // BYTES_PER_DOC)
    return max(1, math.ceil(documents / per))


def bucket_of(keys: np.ndarray, buckets: int) -> np.ndarray:
    """The key range of each key: ``floor(key * buckets / 2**64)``, exact in uint64."""
    return ((keys >> np.uint64(32)) * np.uint64(buckets)) >> np.uint64(32)


@dataclass(frozen=True, kw_only=True)
class KeyedPart:
    """A ``shuffle-keys`` phase result: how many keys one part's ``.keys`` file holds."""

    documents: int


@dataclass(frozen=True, kw_only=True)
class SortJob:
    """One ``shuffle-sort`` task: key range ``bucket`` of ``buckets`` over a group's
    ``parts``, written as the part ``prefix`` with tokens of ``dtype``."""

    group: str
    bucket: int
    buckets: int
    parts: tuple[str, ...]
    dtype: str
    prefix: str


@dataclass(frozen=True, kw_only=True)
class SortedPart:
    """A ``shuffle-sort`` phase result: the new part and its documents."""

    prefix: str
    documents: int


def shuffle_groups(
    ctx: Any,
    parts: dict[str, list[str]],
    documents: dict[str, int],
    *,
    names: dict[str, str],
    seed: int,
    memory_mb: float,
    dtype: str,
) -> dict[str, list[str]]:
    """Each group's parts (in shard order) -> its shuffled parts (in key order); ``names``:
    a folder name for each group's shuffled parts."""

    every = sorted({p for ps in parts.values() for p in ps})
    ctx.map(
        KeyPart(seed),
        every,
        phase="shuffle-keys",
        keys=[hashlib.sha1(p.encode(), usedforsecurity=False).hexdigest()[:20] for p in every],
    )
    jobs = []
    for g in sorted(parts):
        n_b = buckets_for(documents[g], memory_mb)
        for b in range(n_b):
            jobs.append(
                SortJob(
                    group=g,
                    bucket=b,
                    buckets=n_b,
                    parts=tuple(parts[g]),
                    dtype=dtype,
                    prefix=os.path.join(ctx.stage_dir, "shuffled", names[g], f"b{b:05d}"),
                )
            )
    done = ctx.map(
        SortRange(),
        jobs,
        phase="shuffle-sort",
        keys=[f"{names[j.group]}-b{j.bucket:05d}" for j in jobs],
    )
    out: dict[str, list[str]] = {g: [] for g in parts}
    for j, r in zip(jobs, done, strict=True):
        if r.documents:
            out[j.group].append(r.prefix)
    return out


class KeyPart:
    """``keys`` phase task: one part's ``.keys`` file (uint64 per document, in order)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def __call__(self, part: str) -> KeyedPart:
        with open(part + ".ids", "rb") as f:
            keys = np.fromiter(
                (doc_key(self.seed, line.rstrip(b"\n")) for line in f), dtype=np.uint64
            )
        with atomic_open(part + ".keys", "wb") as out:
            out.write(keys.tobytes())
        return KeyedPart(documents=len(keys))


class SortRange:
    """``sort`` phase task: the documents of every part whose key falls in range ``b``, in
    key order, as one new part."""

    def __call__(self, job: SortJob) -> SortedPart:
        b, n_b, out = job.bucket, job.buckets, job.prefix
        keys, where, pos, ids = [], [], [], []
        for i, part in enumerate(job.parts):
            k = np.fromfile(part + ".keys", dtype=np.uint64)
            sel = np.flatnonzero(bucket_of(k, n_b) == b)
            keys.append(k[sel])
            where.append(np.full(len(sel), i, dtype=np.int32))
            pos.append(sel)
            ids += _lines_at(part + ".ids", sel)
            del k
        key = np.concatenate(keys) if keys else np.zeros(0, np.uint64)
        part_of = np.concatenate(where) if where else np.zeros(0, np.int32)
        doc_of = np.concatenate(pos) if pos else np.zeros(0, np.int64)
        order = np.argsort(key, kind="stable")  # ties: input order (part, then position)
        del key, keys, where, pos
        os.makedirs(os.path.dirname(out), exist_ok=True)
        indices = [megatron.read_index(p + ".idx") for p in job.parts]
        writer = megatron.IndexedWriter(out, np.dtype(job.dtype).type)
        fds = [os.open(p + ".bin", os.O_RDONLY) for p in job.parts]
        try:
            with atomic_open(out + ".ids", "wb") as id_out:
                for lo in range(0, len(order), _BATCH):
                    chunk = order[lo : lo + _BATCH]
                    _copy_docs(writer, indices, fds, part_of[chunk], doc_of[chunk])
                    id_out.write(b"".join(ids[j] for j in chunk.tolist()))
            writer.close()
        except BaseException:
            writer.abort()
            raise
        finally:
            for fd in fds:
                os.close(fd)
        megatron.verify(out)
        return SortedPart(prefix=out, documents=len(order))


def _lines_at(path: str, positions: np.ndarray) -> list[bytes]:
    """The lines (with their newline) of ``path`` at ascending ``positions``."""
    want = iter(positions.tolist())
    nxt = next(want, None)
    out = []
    with open(path, "rb") as f:
        for n, line in enumerate(f):
            if n == nxt:
                out.append(line)
                nxt = next(want, None)
                if nxt is None:
                    break
    return out


def _copy_docs(
    writer: megatron.IndexedWriter,
    indices: list[megatron.Index],
    fds: list[int],
    part_of: np.ndarray,
    doc_of: np.ndarray,
) -> None:
    """Append documents (their sequences and tokens, read by byte range) to ``writer``."""
    toks, lens, per_doc = [], [], []
    for p, d in zip(part_of.tolist(), doc_of.tolist(), strict=True):
        idx = indices[p]
        s0, s1 = int(idx.doc_indices[d]), int(idx.doc_indices[d + 1])
        per_doc.append(s1 - s0)
        if s1 == s0:
            continue
        seq = np.asarray(idx.lengths[s0:s1], dtype=np.int32)
        start = int(idx.pointers[s0])
        size = int(seq.sum(dtype=np.int64)) * idx.itemsize
        toks.append(np.frombuffer(os.pread(fds[p], size, start), dtype=idx.dtype))
        lens.append(seq)
    writer.add_batch(
        np.concatenate(toks) if toks else np.zeros(0, writer.dtype),
        np.concatenate(lens) if lens else np.zeros(0, np.int32),
        np.asarray(per_doc, dtype=np.int64),
    )
