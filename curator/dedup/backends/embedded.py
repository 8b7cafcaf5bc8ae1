"""Group bucket entries of one partition in memory with a sort; partitions are sized so that
one fits in memory, the rest wait on disk (that is the spill)."""

from __future__ import annotations

import numpy as np


def star_edges(digests: np.ndarray, refs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Edges ``(min ref of bucket, ref)`` for every ref that shares a bucket with a smaller one,
    sorted and unique."""
    if digests.shape[0] == 0:
        e = np.empty(0, dtype=np.uint64)
        return e, e
    order = np.lexsort((refs, digests))
    d, r = digests[order], refs[order]
    first = np.r_[True, d[1:] != d[:-1]]
    mins = r[first][np.cumsum(first) - 1]
    keep = r != mins
    return unique_edges(mins[keep], r[keep])


def unique_edges(u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if u.shape[0] == 0:
        return u, v
    pairs = np.unique(np.stack([u, v], axis=1), axis=0)
    return pairs[:, 0].copy(), pairs[:, 1].copy()
