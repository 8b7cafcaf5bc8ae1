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
model's brute-force pairs on short texts and paragraphs alike (bench/semantic_default.py,
figures in docs/dedup.md), ``first_pass_for(threshold, "fast")`` the faster cuts that hold
on short texts only;
``select_candidates`` applies them.

Memory: similarities are computed in row blocks of at most ``max_cells`` cells, so a cluster of
n documents needs O(n * dim) for the embeddings plus one block, never n x n.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class FirstPassCut:
    """Where the first pass cuts for one full-model threshold. A pair of documents makes both
    candidates when ``(1 - weight) * static cosine + weight * Jaccard >= static``, or
    ``Jaccard >= jaccard`` (Jaccard of word ``ngram`` sets; 0 turns that part off), or
    ``static cosine >= alone`` (paraphrases that share few words: with ``weight`` > 0 the
    score alone needs some shared words; above 1: off)."""

    threshold: float
    static: float
    ngram: int
    jaccard: float
    weight: float = 0.0
    alone: float = 2.0


# ``recall`` (the default) at 0.9: the word weight (0.1, 0.15, 0.2) and score cut (steps of 0.01)
# keeping the fewest documents (shares summed over both) whose pair recall reached 0.98 on two
# real corpora of the 2-core default benchmark (bench/semantic_default.py: 10,000 paragraphs
# of Python's documentation, 0.984 at 18% kept; 20,000 Debian package summaries, 0.985 at 31%);
# scored once on a third corpus held out (docs/dedup.md). Long paragraphs share fewer words
# than short texts at the same meaning, so the word weight 0.2 of ``fast`` lost 8.5% of the
# paragraphs' pairs. At 0.95: the same weight, the score cut of ``fast`` (0.9865-1.0 there).
# ``fast``: the first measured cuts, chosen on a 1e5 corpus of mostly short texts (Debian
# descriptions, AG News, SpamAssassin mails, web-extraction texts; 0.985 there,
# docs/models.md): 11% of the paragraphs through the full model at recall 0.915, 26% of the
# summaries at 0.970. In both, the Jaccard-alone cut 0.8 keeps near-copies whose boilerplate
# differs (static cosine 0.6-0.75 on AG News), the static cosine alone at 0.95 paraphrases
# sharing under ~10% of their words (the weighted score cannot reach the cut without shared
# words). Below the lowest threshold: that cut with its score lowered by the difference.
CUTS: dict[str, tuple[FirstPassCut, ...]] = {
    "recall": (
        FirstPassCut(0.90, 0.80, 1, 0.8, 0.15, 0.95),
        FirstPassCut(0.95, 0.87, 1, 0.8, 0.15, 0.95),
    ),
    "fast": (
        FirstPassCut(0.90, 0.82, 1, 0.8, 0.2, 0.95),
        FirstPassCut(0.95, 0.87, 1, 0.8, 0.2, 0.95),
    ),
}


def first_pass_for(threshold: float, cuts: str = "recall") -> FirstPassCut:
    """The measured cut of the ``cuts`` table (``recall`` or ``fast``) at or below
    ``threshold``; below the lowest one, that cut with its score lowered by the difference."""
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold {threshold}: must be in (0, 1]")
    if cuts not in CUTS:
        raise ValueError(f"cuts {cuts!r}: one of {', '.join(CUTS)}")
    table = CUTS[cuts]
    best = None
    for cut in table:
        if cut.threshold <= threshold:
            best = cut
    if best is None:
        low = table[0]
        best = FirstPassCut(
            threshold, max(low.static - (low.threshold - threshold), -1.0), low.ngram,
            low.jaccard, low.weight, low.alone,
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
    cells; the prefix-filtered join of :func:`first_pass_mask`). An empty set has no
    neighbour."""
    n = len(offsets) - 1
    mask = np.zeros(max(n, 0), dtype=bool)
    if n < 2 or hashes.size == 0:
        return mask
    _jaccard_join(_sets_matrix(offsets, hashes), np.diff(offsets).astype(np.float64), jaccard,
                  mask, max_cells)
    return mask


def _sets_matrix(offsets: np.ndarray, hashes: np.ndarray) -> Any:
    """The ragged sets as a 0/1 CSR matrix (rows = sets, columns = distinct hashes)."""
    import scipy.sparse as sp

    n = len(offsets) - 1
    if hashes.size == 0:
        return sp.csr_matrix((n, 1), dtype=np.float32)
    _, cols = np.unique(hashes, return_inverse=True)
    return sp.csr_matrix(
        (np.ones(cols.size, dtype=np.float32), cols.astype(np.int64), offsets.astype(np.int64)),
        shape=(n, int(cols.max()) + 1),
    )


def _overlap(x: Any, a: np.ndarray, b: np.ndarray, batch: int = 1 << 16) -> np.ndarray:
    """Shared elements of sets ``a[k]`` and ``b[k]`` (rows of the 0/1 matrix ``x``), in
    batches of pairs (memory: ``batch`` rows of each side)."""
    out = np.empty(a.size, dtype=np.float32)
    for s in range(0, a.size, batch):
        e = s + batch
        out[s:e] = np.asarray(x[a[s:e]].multiply(x[b[s:e]]).sum(axis=1)).ravel()
    return out


def _jaccard_join(x: Any, sizes: np.ndarray, jaccard: float, mask: np.ndarray,
                  max_cells: int) -> None:
    """Sets ``mask`` where a row has another row at Jaccard >= ``jaccard`` (> 0), exactly.

    Prefix filter (Chaudhuri et al. 2006): with the elements ordered rarest first, two sets at
    Jaccard >= t share one of the first ``|A| - ceil(t |A|) + 1`` elements of each, so only
    pairs sharing a prefix element are verified; at t = 0.8 the prefixes are a fifth of the
    sets, mostly rare words, and the product of the prefixes is sparse where that of the whole
    sets (every document has "the") is dense."""
    import scipy.sparse as sp

    n = x.shape[0]
    if n < 2 or x.nnz == 0:
        return
    df = np.bincount(x.indices, minlength=x.shape[1])
    rank = np.empty(x.shape[1], dtype=np.int64)
    rank[np.lexsort((np.arange(x.shape[1]), df))] = np.arange(x.shape[1])
    lens = np.diff(x.indptr)
    row = np.repeat(np.arange(n), lens)
    order = np.lexsort((rank[x.indices], row))  # rows stay in place, rarest first within
    pos = np.arange(x.nnz) - np.repeat(x.indptr[:-1], lens)
    plen = lens - np.ceil(jaccard * lens - 1e-9).astype(np.int64) + 1
    keep = pos < np.repeat(plen, lens)
    pre = sp.csr_matrix((np.ones(int(keep.sum()), np.float32),
                         (row[keep], x.indices[order][keep])), shape=x.shape)
    pre_t = pre.T.tocsc()
    block = _row_block(n, max_cells)
    for i0 in range(0, n, block):
        i1 = min(n, i0 + block)
        c = (pre[i0:i1] @ pre_t).tocoo()
        a, b = c.row.astype(np.int64) + i0, c.col.astype(np.int64)
        sel = (b > a) & ~(mask[a] & mask[b])  # each pair once; skip pairs already marked
        a, b = a[sel], b[sel]
        if a.size:
            inter = _overlap(x, a, b)
            hit = inter >= jaccard * np.maximum(sizes[a] + sizes[b] - inter, 1)
            mask[a[hit]] = True
            mask[b[hit]] = True


def first_pass_mask(
    emb: np.ndarray,
    score_cut: float,
    *,
    weight: float = 0.0,
    jaccard: float = 0.0,
    words: tuple[np.ndarray, np.ndarray] | None = None,
    max_cells: int = 1 << 24,
    alone: float = 2.0,
) -> np.ndarray:
    """Boolean mask over rows: True where another row reaches ``(1 - weight) * static cosine
    + weight * Jaccard >= score_cut``, or ``Jaccard >= jaccard`` (> 0), or ``static cosine >=
    alone``, with the rows' word sets ``words`` (``(offsets, hashes)`` of :func:`word_sets`).
    Without ``words`` (or with ``weight`` and ``jaccard`` 0) it is :func:`candidate_mask` at
    the lower of ``score_cut`` and ``alone``.

    Exact, and cheap where it matters: the score needs a Jaccard only for pairs whose static
    cosine could still reach the cut with Jaccard 1 (``(score_cut - weight) / (1 - weight)``),
    and only for pairs not both marked already; the Jaccard-alone part runs a prefix-filtered
    join. Memory: one row block of ``max_cells`` cells and the pairs it holds."""
    if not 0.0 <= weight < 1.0:
        raise ValueError(f"weight {weight}: must be in [0, 1)")
    if words is None or (weight == 0 and jaccard <= 0):
        return candidate_mask(emb, min(score_cut, alone), max_cells=max_cells)
    if weight == 0:
        mask = candidate_mask(emb, min(score_cut, alone), max_cells=max_cells)
    x = normalize_rows(emb)
    n = len(x)
    offsets, hashes = words
    if len(offsets) - 1 != n:
        raise ValueError(f"{len(offsets) - 1} word sets for {n} embeddings")
    sets = _sets_matrix(offsets, hashes)
    sizes = np.diff(offsets).astype(np.float64)
    if weight > 0:
        mask = np.zeros(n, dtype=bool)
        # below: unreachable even at Jaccard 1 (nor by the static cosine alone)
        s_min = min((score_cut - weight) / (1.0 - weight), alone)
        block = _row_block(n, max_cells)
        for i0 in range(0, n, block):
            i1 = min(n, i0 + block)
            sims = x[i0:i1] @ x[i0:].T  # upper triangle, as in candidate_mask
            sims[np.arange(i1 - i0), np.arange(i1 - i0)] = -np.inf
            r, c = np.nonzero(sims >= s_min)
            a, b = r + i0, c + i0
            s_rc = sims[r, c].astype(np.float64)
            base = (1.0 - weight) * s_rc
            sure = (base >= score_cut) | (s_rc >= alone)
            mask[a[sure]] = True
            mask[b[sure]] = True
            # Jaccard <= smaller set / larger set: pairs that cannot reach the cut even so
            # need no overlap (an exact bound; sets of very different sizes are common)
            lo, hi = np.minimum(sizes[a], sizes[b]), np.maximum(sizes[a], sizes[b])
            bound = base + weight * (lo / np.maximum(hi, 1))
            rest = ~sure & (bound >= score_cut) & ~(mask[a] & mask[b])
            a, b, base = a[rest], b[rest], base[rest]
            if a.size:
                inter = _overlap(sets, a, b)
                jac = inter / np.maximum(sizes[a] + sizes[b] - inter, 1)
                hit = base + weight * jac >= score_cut
                mask[a[hit]] = True
                mask[b[hit]] = True
    if jaccard > 0:
        _jaccard_join(sets, sizes, jaccard, mask, max_cells)
    return mask


def lexical_mask(
    texts: list[str], jaccard: float, *, ngram: int = 1, max_cells: int = 1 << 24
) -> np.ndarray:
    r"""Boolean mask over texts: True where another text shares word n-grams at Jaccard >=
    ``jaccard`` (exact Jaccard of the n-gram sets, :func:`lexical_mask_sets`).

    Why: the static model misses near-copies whose boilerplate differs (a wire story with and
    without its HTML ticker link); their words still overlap. Lowercased ``\w+`` words."""
    off, hashes = word_sets(texts, ngram)
    return lexical_mask_sets(off, hashes, jaccard, max_cells=max_cells)


def select_candidates(
    static_emb: np.ndarray, threshold: float, texts: list[str] | None = None
) -> np.ndarray:
    """Indices of the rows (documents of one cluster, say) that the full model must embed to
    find its pairs at cosine >= ``threshold``: with ``texts``, :func:`first_pass_mask` at the
    cuts of ``first_pass_for(threshold)``; without, a static neighbour at its score cut. The
    others cannot be in a pair (up to the measured recall) and need no full embedding."""
    cut = first_pass_for(threshold)
    if texts is None:
        return np.nonzero(candidate_mask(static_emb, cut.static))[0]
    if len(texts) != len(static_emb):
        raise ValueError(f"{len(texts)} texts for {len(static_emb)} embeddings")
    keep = first_pass_mask(static_emb, cut.static, weight=cut.weight, jaccard=cut.jaccard,
                           words=word_sets(texts, cut.ngram))
    return np.nonzero(keep)[0]
