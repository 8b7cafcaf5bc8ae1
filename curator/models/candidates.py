"""The cheap first pass of semantic dedup: a static embedding model (model2vec, distilled from the
same sentence-transformers model) and word overlap decide which documents can have a
near-duplicate at all, and only those go through the full model.

Why documents, not pairs: the static model's cosines are a loose proxy (at 0.9 only a small
share of its pairs are true ones), but a document that the full model puts at ``threshold`` to
another is almost always one that the static model puts close to *some* other document, or one
that shares most of its words with another (near-copies whose boilerplate differs, which the
static model misses). So the first pass keeps every document with a static neighbour at the
static cut or a lexical neighbour at the Jaccard cut; the full model embeds those, and the
full-model pairs are searched among all of them (not only the first pass's pairs), so a true
pair is lost only when one of its two documents has neither neighbour.

``first_pass_for(threshold)`` gives the cuts measured to keep recall >= 0.98 of the full
model's brute-force pairs (bench/bench_semantic.py, figures in bench/RESULTS.md);
``select_candidates`` applies them.

Memory: similarities are computed in row blocks of at most ``max_cells`` cells, so a cluster of
n documents needs O(n * dim) for the embeddings plus one block, never n x n.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import numpy as np

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class FirstPassCut:
    """Where the first pass cuts for one full-model threshold: a static-model cosine, and a
    Jaccard of word ``ngram`` sets (a document passes on either)."""

    threshold: float
    static: float
    ngram: int
    jaccard: float


# Chosen on 10,000 AG News stories and checked on 6,000 others (held out), against
# all-MiniLM-L6-v2 and its model2vec distillation (pca_dims=256); bench/RESULTS.md "Semantic
# first pass". Each is the cheapest cut found whose recall of the full model's pairs was >= 0.98
# on both sets: at 0.9, static 0.80 kept a third fewer documents but lost 2 of 56 held-out pairs.
# Lower thresholds are not measured: they take the 0.9 cut moved down by the same amount.
CUTS: tuple[FirstPassCut, ...] = (
    FirstPassCut(0.90, 0.75, 1, 0.3),
    FirstPassCut(0.95, 0.85, 1, 0.3),
)


def first_pass_for(threshold: float) -> FirstPassCut:
    """The measured cut at or below ``threshold``; below the lowest one, that cut with its
    static cosine lowered by the difference."""
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold {threshold}: must be in (0, 1]")
    best = None
    for cut in CUTS:
        if cut.threshold <= threshold:
            best = cut
    if best is None:
        low = CUTS[0]
        best = FirstPassCut(
            threshold, max(low.static - (low.threshold - threshold), -1.0), low.ngram, low.jaccard
        )
    return best


def static_threshold_for(threshold: float) -> float:
    """The static-model cosine of ``first_pass_for(threshold)``."""
    return first_pass_for(threshold).static


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


def _gram_hash(gram: str) -> int:
    """A stable 63-bit hash of one word n-gram (the same in every process, unlike ``hash``)."""
    return int.from_bytes(hashlib.blake2b(gram.encode("utf-8"), digest_size=8).digest(),
                          "little") >> 1


def word_sets(texts: list[str], ngram: int = 1) -> tuple[np.ndarray, np.ndarray]:
    r"""Each text's set of lowercased ``\w+`` word n-grams as sorted stable 63-bit hashes, in
    one ragged array: ``(offsets, hashes)``, text ``k`` owning ``hashes[offsets[k]:offsets[k+1]]``.

    Why hashes: the sets can be stored per shard and compared later among the members of one
    cluster gathered from any shard, without the texts (a collision merges two n-grams: at
    63 bits, never in practice). Each distinct n-gram is hashed once per call."""
    vocab: dict[str, int] = {}
    offsets = [0]
    local: list[int] = []
    for text in texts:
        words = _WORD.findall(text.lower())
        grams = {" ".join(words[k : k + ngram]) for k in range(max(1, len(words) - ngram + 1))}
        grams.discard("")
        local.extend(vocab.setdefault(g, len(vocab)) for g in grams)
        offsets.append(len(local))
    table = np.fromiter((_gram_hash(g) for g in vocab), dtype=np.int64, count=len(vocab))
    hashes = table[np.asarray(local, dtype=np.int64)] if local else np.zeros(0, np.int64)
    off = np.asarray(offsets, dtype=np.int64)
    for k in range(len(texts)):  # sorted within each set: the stored form is canonical
        hashes[off[k] : off[k + 1]].sort()
    return off, hashes


def lexical_mask_sets(
    offsets: np.ndarray, hashes: np.ndarray, jaccard: float, *, max_cells: int = 1 << 24
) -> np.ndarray:
    """Boolean mask over the sets of :func:`word_sets`: True where another set has Jaccard >=
    ``jaccard`` with it (exact, by sparse products in row blocks of at most ``max_cells``
    cells). An empty set has no neighbour."""
    import scipy.sparse as sp

    n = len(offsets) - 1
    mask = np.zeros(max(n, 0), dtype=bool)
    if n < 2 or hashes.size == 0:
        return mask
    _, cols = np.unique(hashes, return_inverse=True)
    x = sp.csr_matrix(
        (np.ones(cols.size, dtype=np.float32), cols.astype(np.int64), offsets.astype(np.int64)),
        shape=(n, int(cols.max()) + 1),
    )
    sizes = np.diff(offsets).astype(np.float64)
    xt = x.T.tocsc()
    block = _row_block(n, max_cells)
    for i0 in range(0, n, block):
        i1 = min(n, i0 + block)
        inter = (x[i0:i1] @ xt).tocoo()
        rows, cols_, shared = inter.row + i0, inter.col, inter.data
        union = sizes[rows] + sizes[cols_] - shared
        hit = (rows != cols_) & (shared >= jaccard * np.maximum(union, 1))
        mask[rows[hit]] = True
    return mask


def lexical_mask(
    texts: list[str], jaccard: float, *, ngram: int = 1, max_cells: int = 1 << 24
) -> np.ndarray:
    r"""Boolean mask over texts: True where another text shares word n-grams at Jaccard >=
    ``jaccard`` (exact Jaccard of the n-gram sets, by sparse products in row blocks).

    Why: the static model misses near-copies whose boilerplate differs (a wire story with and
    without its HTML ticker link); their words still overlap. Lowercased ``\w+`` words."""
    off, hashes = word_sets(texts, ngram)
    return lexical_mask_sets(off, hashes, jaccard, max_cells=max_cells)


def select_candidates(
    static_emb: np.ndarray, threshold: float, texts: list[str] | None = None
) -> np.ndarray:
    """Indices of the rows (documents of one cluster, say) that the full model must embed to
    find its pairs at cosine >= ``threshold``: those with a static neighbour at the static cut
    of ``first_pass_for(threshold)`` or, when ``texts`` are given, a lexical neighbour at its
    Jaccard cut. The others cannot be in a pair (up to the measured recall) and need no full
    embedding."""
    cut = first_pass_for(threshold)
    keep = candidate_mask(static_emb, cut.static)
    if texts is not None:
        if len(texts) != len(static_emb):
            raise ValueError(f"{len(texts)} texts for {len(static_emb)} embeddings")
        keep |= lexical_mask(texts, cut.jaccard, ngram=cut.ngram)
    return np.nonzero(keep)[0]
