"""Duplicate document ids across a source's shards, counted in bounded memory: each shard task
writes the sorted 64-bit hashes of its ids to a file (:func:`write_id_hashes`) and the root
counts repeats over all of them in hash ranges (:func:`count_duplicate_ids`), never holding
every id of the corpus at once.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from typing import Any

import xxhash

from curator.storage.atomic import atomic_open


def id_hashes(doc_ids: Sequence[str]) -> Any:
    """64-bit hashes (xxh3) of document ids, as a numpy array; duplicates are counted on
    these (a false match needs ~4 billion distinct ids to become likely)."""
    import numpy as np

    h = xxhash.xxh3_64_intdigest
    return np.fromiter((h(i.encode("utf-8", "surrogatepass")) for i in doc_ids),
                       dtype=np.uint64, count=len(doc_ids))


def write_id_hashes(path: str, doc_ids: Sequence[str]) -> None:
    """The sorted hashes of a source shard's ids, for :func:`count_duplicate_ids`."""
    import numpy as np

    arr = np.sort(id_hashes(doc_ids)).astype("<u8", copy=False)
    with atomic_open(path, "wb") as f:
        f.write(arr.tobytes())


#: Id hashes compared at once when counting duplicate ids (8 bytes each: 64 MB).
ID_HASH_BATCH = 8_000_000


def count_duplicate_ids(paths: Sequence[str], batch: int = ID_HASH_BATCH) -> int:
    """Documents whose id hash was already seen, over the sorted per-shard hash files, in
    hash ranges of about ``batch`` entries so memory stays bounded whatever the corpus."""
    import numpy as np

    sizes = [os.path.getsize(p) // 8 for p in paths if os.path.exists(p)]
    paths = [p for p in paths if os.path.exists(p)]
    total = sum(sizes)
    if total < 2:
        return 0
    parts = max(1, -(-total // batch))
    edges = [(i << 64) // parts for i in range(parts + 1)]
    dups = 0
    for lo, hi in itertools.pairwise(edges):
        pieces = []
        for p in paths:
            a = np.memmap(p, dtype="<u8", mode="r") if parts > 1 else np.fromfile(p, "<u8")
            if not len(a):
                continue
            i = 0 if lo == 0 else int(np.searchsorted(a, np.uint64(lo)))
            j = len(a) if hi >= 1 << 64 else int(np.searchsorted(a, np.uint64(hi)))
            if j > i:
                pieces.append(np.array(a[i:j]))
            del a
        if pieces:
            h = np.sort(np.concatenate(pieces))
            dups += int(np.count_nonzero(h[1:] == h[:-1]))
    return dups
