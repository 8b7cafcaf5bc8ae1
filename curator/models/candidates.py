"""The cheap first pass of semantic dedup: a static embedding model (model2vec, distilled from the
same sentence-transformers model) decides which documents can have a near-duplicate at all, and
only those go through the full model.

Why documents, not pairs: the static model's cosines are a loose proxy (at 0.9 only a small
share of its pairs are true ones), but a document that the full model puts at ``threshold`` to
another is almost always one that the static model puts close to *some* other document. So the
first pass keeps every document with a static neighbour at ``static_threshold`` or more; the full
model embeds those, and the full-model pairs are searched among them (all of them, not only the
static pairs), so a true pair is lost only when one of its two documents has no static neighbour.

``static_threshold_for(threshold)`` is the static cut measured to keep recall >= 0.98 of the full
model's brute-force pairs (bench/bench_semantic.py, figures in bench/RESULTS.md).

Memory: similarities are computed in row blocks of at most ``max_cells`` cells, so a cluster of
n documents needs O(n * dim) for the embeddings plus one block, never n x n.
"""

from __future__ import annotations

import numpy as np

# Measured on 22,681 real documents (ag_news + dragnet articles, cut to 1,500 characters) against
# all-MiniLM-L6-v2 and its model2vec distillation (pca_dims=256): see bench/RESULTS.md.
# (full-model threshold, static threshold) pairs; between points the lower static cut is used.
STATIC_THRESHOLDS: tuple[tuple[float, float], ...] = ((0.90, 0.80), (0.95, 0.85))


def static_threshold_for(threshold: float) -> float:
    """The static-model cosine below which a document is not sent to the full model, for a
    full-model ``threshold``: the measured point at or below ``threshold``; below the lowest
    measured point, the same margin as there."""
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold {threshold}: must be in (0, 1]")
    best = None
    for full, static in STATIC_THRESHOLDS:
        if full <= threshold:
            best = static
    if best is None:
        full, static = STATIC_THRESHOLDS[0]
        best = static - (full - threshold)
    return max(best, -1.0)


def normalize_rows(emb: np.ndarray) -> np.ndarray:
    """float32 rows of unit length (a zero row stays zero)."""
    emb = np.asarray(emb, dtype=np.float32)
    norms = np.linalg.norm(emb, axis=1, keepdims=True)
    return emb / np.where(norms > 0, norms, 1.0)


def _row_block(n: int, max_cells: int) -> int:
    return max(1, min(n, max_cells // max(n, 1)))


def candidate_mask(
    emb: np.ndarray, static_threshold: float, *, max_cells: int = 1 << 24
) -> np.ndarray:
    """Boolean mask over rows: True where the row has another row at cosine >= static_threshold.

    ``emb`` is one cluster's (or any set's) static embeddings; rows are normalised here.
    """
    x = normalize_rows(emb)
    n = len(x)
    mask = np.zeros(n, dtype=bool)
    block = _row_block(n, max_cells)
    for i0 in range(0, n, block):
        i1 = min(n, i0 + block)
        sims = x[i0:i1] @ x[i0:].T  # upper triangle only: (i, j) with j >= i0
        sims[np.arange(i1 - i0), np.arange(i1 - i0)] = -np.inf  # a row is not its own neighbour
        hit = sims >= static_threshold
        mask[i0:i1] |= hit.any(axis=1)
        mask[i0:] |= hit.any(axis=0)
    return mask


def pairs_at(
    emb: np.ndarray, threshold: float, *, max_cells: int = 1 << 24
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All pairs i < j with cosine >= threshold: (i, j, cosine) arrays, sorted by (i, j)."""
    x = normalize_rows(emb)
    n = len(x)
    block = _row_block(n, max_cells)
    out_i, out_j, out_c = [], [], []
    for i0 in range(0, n, block):
        i1 = min(n, i0 + block)
        sims = x[i0:i1] @ x[i0:].T
        sims[np.tril_indices(i1 - i0, 0, sims.shape[1])] = -np.inf  # keep j > i only
        r, c = np.nonzero(sims >= threshold)
        out_i.append(r + i0)
        out_j.append(c + i0)
        out_c.append(sims[r, c])
    if not out_i:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
    return (
        np.concatenate(out_i).astype(np.int64),
        np.concatenate(out_j).astype(np.int64),
        np.concatenate(out_c).astype(np.float32),
    )
