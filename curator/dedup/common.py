"""Plumbing shared by the dedup stages: document references, atomic array files, the removal
lists written per input shard, and the final pass that rejects removed documents.

A document is referenced by ``(shard index << 32) | row`` (uint64): the shard index is the
position of its shard in the stage's input list, the row its position in that shard, so a
reference never depends on how many workers ran the stage.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import orjson

from curator.base.document import Document
from curator.base.errors import StageError
from curator.core.context import ShardContext
from curator.core.params import NonNegInt, PositiveInt, StageParams
from curator.storage.atomic import atomic_open

#: Text normalisation before hashing (curator.dedup.normalize): true is ``basic``.
Normalize = bool | Literal["none", "basic", "fineweb"]


class PartitionParams(StageParams):
    """How a global dedup stage splits its hash table so that memory stays bounded."""

    partitions: NonNegInt = 0
    """Hash partitions; 0: enough to keep each under ``partition_mb``."""
    partition_mb: PositiveInt = 256
    """Memory budget of one partition, in MB."""

@dataclass(frozen=True, kw_only=True)
class Groups:
    """A ``groups`` phase result: one partition's removal file (or file prefix) ``path``, the
    entries it removes and the groups that had a repeat."""

    path: str
    removed: int
    groups: int


@dataclass(frozen=True, kw_only=True)
class Removed:
    """A ``removals`` phase result: how many documents (or lines, spans) one shard loses."""

    count: int


ROW_BITS = np.uint64(32)
ROW_MASK = np.uint64(0xFFFFFFFF)


def pack_refs(shard_idx: int, n: int) -> np.ndarray:
    """References of rows ``0..n-1`` of shard ``shard_idx``."""
    return (np.uint64(shard_idx) << ROW_BITS) | np.arange(n, dtype=np.uint64)


def ref_shard(refs: np.ndarray) -> np.ndarray:
    return (refs >> ROW_BITS).astype(np.int64)


def ref_row(refs: np.ndarray) -> np.ndarray:
    return (refs & ROW_MASK).astype(np.int64)


def save_npz(path: str, **arrays: np.ndarray) -> None:
    """Write arrays atomically (the file exists only when complete)."""
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    with atomic_open(path, "wb") as f:
        f.write(buf.getvalue())


def load_npz(path: str, what: str) -> dict[str, np.ndarray]:
    """Read arrays written by :func:`save_npz`; a missing/corrupt file is a clear error."""
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError) as e:
        raise StageError(f"{what}: intermediate file '{path}' is missing or corrupt ({e}); "
                         "delete the stage folder and rerun") from e


def save_json(path: str, obj: Any) -> None:
    with atomic_open(path, "wb") as f:
        f.write(orjson.dumps(obj))


def load_json(path: str) -> Any:
    with open(path, "rb") as f:
        return orjson.loads(f.read())


def gather_partition(stage: str, p: int, expected: int,
                     columns: dict[str, list[np.ndarray]]) -> list[np.ndarray]:
    """One partition's columns, concatenated from every shard's pieces (``columns``: dtype
    name -> pieces), checked against the entry count the writers reported: a short or
    stale piece must not silently drop duplicates."""
    out = [np.concatenate(v) if v else np.empty(0, np.dtype(k.split(":")[0]))
           for k, v in columns.items()]
    if out and out[0].shape[0] != expected:
        raise StageError(f"{stage}: partition {p} has {out[0].shape[0]} entries, expected "
                         f"{expected}; delete the stage folder and rerun")
    return out


def lookup_ids(shards: Sequence[int], rows: Sequence[int], ids_path: Callable[[int], str]
               ) -> list[str]:
    """The user ids at ``(shards[i], rows[i])``, in order. Each shard's id list is loaded once
    and dropped before the next, so memory is one shard's ids, not the corpus's (kept copies
    can be anywhere in the corpus)."""
    out: list[str] = [""] * len(shards)
    by_shard: dict[int, list[int]] = {}
    for i, s in enumerate(shards):
        by_shard.setdefault(s, []).append(i)
    for s, idx in by_shard.items():
        ids = load_json(ids_path(s))
        for i in idx:
            out[i] = ids[rows[i]]
        del ids
    return out


def removals_path(stage_dir: str, shard: str) -> str:
    return os.path.join(stage_dir, "removals", f"{shard}.json")


def write_removals(stage_dir: str, shard: str, rows: list[int], dup_of: list[str]) -> None:
    """The removal list of one input shard: rows to drop and the id each one duplicates."""
    save_json(removals_path(stage_dir, shard), {"rows": rows, "duplicate_of": dup_of})


class Remover:
    """Final phase of a dedup stage: passes one shard through, rejecting the listed rows with
    ``duplicate_of`` = the user id of the kept copy. Picklable (only paths inside)."""

    def __init__(self, stage_dir: str, reason: str) -> None:
        self.stage_dir, self.reason = stage_dir, reason

    def __call__(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        path = removals_path(self.stage_dir, ctx.shard)
        try:
            rem = load_json(path)
        except (OSError, orjson.JSONDecodeError) as e:
            raise StageError(f"removal list '{path}' is missing or corrupt; delete the stage "
                             "folder and rerun") from e
        drop = dict(zip(rem["rows"], rem["duplicate_of"]))
        reject, reason = ctx.reject, self.reason
        for row, doc in enumerate(docs):
            kept = drop.get(row)
            if kept is None:
                yield doc
            else:
                reject(doc, reason, duplicate_of=kept)
