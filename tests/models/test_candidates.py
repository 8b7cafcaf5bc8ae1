"""curator.models.candidates: blockwise searches equal a brute-force n x n on the same vectors."""

from __future__ import annotations

import numpy as np
import pytest

from curator.models.candidates import (
    candidate_mask,
    normalize_rows,
    pairs_at,
    static_threshold_for,
)


def _clustered(n: int = 300, dim: int = 16, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(20, dim))
    x = centres[rng.integers(0, 20, n)] + rng.normal(scale=0.35, size=(n, dim))
    x[::7] = rng.normal(size=(len(x[::7]), dim)) * 3  # loners
    x[5] = 0.0  # a zero vector has no neighbour
    return x.astype(np.float32)


def _brute(x: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
    y = normalize_rows(x)
    sims = y @ y.T
    np.fill_diagonal(sims, -np.inf)
    i, j = np.nonzero(np.triu(sims >= t, 1))
    return i, j


@pytest.mark.parametrize("max_cells", [1, 997, 1 << 24])
@pytest.mark.parametrize("t", [0.5, 0.8, 0.95])
def test_pairs_and_mask_equal_brute_force(max_cells: int, t: float) -> None:
    x = _clustered()
    i, j, c = pairs_at(x, t, max_cells=max_cells)
    bi, bj = _brute(x, t)
    assert len(bi) > 0
    assert np.array_equal(i, bi) and np.array_equal(j, bj)
    y = normalize_rows(x)
    np.testing.assert_allclose(c, (y[i] * y[j]).sum(1), atol=1e-5)
    mask = candidate_mask(x, t, max_cells=max_cells)
    expect = np.zeros(len(x), bool)
    expect[bi] = expect[bj] = True
    assert np.array_equal(mask, expect)
    assert not mask[5] and 0 < mask.sum() < len(x)


def test_empty_and_single() -> None:
    assert candidate_mask(np.zeros((0, 4)), 0.9).shape == (0,)
    assert not candidate_mask(np.ones((1, 4)), 0.9).any()
    i, j, c = pairs_at(np.ones((1, 4)), 0.9)
    assert len(i) == len(j) == len(c) == 0
    # identical rows are a pair at any threshold up to 1
    i, j, _ = pairs_at(np.ones((2, 4)), 1.0 - 1e-6)
    assert list(zip(i, j)) == [(0, 1)]


def test_static_threshold_is_below_the_full_threshold() -> None:
    assert static_threshold_for(0.9) < 0.9
    assert static_threshold_for(0.95) < 0.95
    assert static_threshold_for(0.95) >= static_threshold_for(0.9)
    assert static_threshold_for(0.8) < static_threshold_for(0.9)
    with pytest.raises(ValueError):
        static_threshold_for(0.0)


def test_select_candidates_uses_the_static_cut() -> None:
    from curator.models.candidates import select_candidates

    x = _clustered(seed=2)
    s = static_threshold_for(0.9)
    idx = select_candidates(x, 0.9)
    assert np.array_equal(idx, np.nonzero(candidate_mask(x, s))[0])
    assert 0 < len(idx) < len(x)
    # a looser full threshold never selects fewer documents
    assert set(idx) <= set(select_candidates(x, 0.85))


def _brute_jaccard(texts: list[str], j: float, n: int) -> np.ndarray:
    import re

    sets = []
    for t in texts:
        w = re.findall(r"\w+", t.lower())
        sets.append({" ".join(w[k : k + n]) for k in range(max(1, len(w) - n + 1))} - {""})
    out = np.zeros(len(texts), bool)
    for a in range(len(texts)):
        for b in range(len(texts)):
            if a != b and sets[a] | sets[b]:
                out[a] |= len(sets[a] & sets[b]) / len(sets[a] | sets[b]) >= j
    return out


@pytest.mark.parametrize("ngram", [1, 2])
@pytest.mark.parametrize("max_cells", [1, 50, 1 << 24])
def test_lexical_mask_equals_brute_force_jaccard(ngram: int, max_cells: int) -> None:
    from curator.models.candidates import lexical_mask

    texts = [
        "Intel names Otellini new CEO, replacing Craig Barrett.",
        "Intel Corp names Paul Otellini new CEO replacing Craig Barrett (Reuters)",
        "Oil prices rose on Monday.",
        "Crude oil prices rose on Monday after OPEC talks.",
        "",
        "Completely unrelated text about gardening tomatoes.",
        "",
    ]
    for j in (0.2, 0.3, 0.5, 0.9):
        got = lexical_mask(texts, j, ngram=ngram, max_cells=max_cells)
        assert np.array_equal(got, _brute_jaccard(texts, j, ngram)), j
    assert lexical_mask(texts, 0.3, ngram=ngram)[:2].all()
    assert not lexical_mask(texts, 0.3, ngram=ngram)[5]


def test_select_candidates_adds_lexical_neighbours() -> None:
    from curator.models.candidates import first_pass_for, select_candidates

    rng = np.random.default_rng(3)
    emb = rng.normal(size=(4, 32))  # no static neighbours at all
    texts = ["the same wire story about the merger", "the same wire story about the merger!",
             "weather", "sports"]
    assert len(select_candidates(emb, 0.95)) == 0
    assert list(select_candidates(emb, 0.95, texts)) == [0, 1]
    assert first_pass_for(0.97) == first_pass_for(0.95)
    with pytest.raises(ValueError):
        select_candidates(emb, 0.9, texts[:2])


def _brute_first_pass(x: np.ndarray, texts: list[str], cut: float, weight: float,
                      jaccard: float, alone: float = 2.0) -> np.ndarray:
    import itertools
    import re

    y = normalize_rows(x)
    sets = [set(re.findall(r"\w+", t.lower())) for t in texts]
    out = np.zeros(len(texts), bool)
    for a, b in itertools.combinations(range(len(texts)), 2):
        union = sets[a] | sets[b]
        jac = len(sets[a] & sets[b]) / len(union) if union else 0.0
        cos = float(y[a] @ y[b])
        if (1 - weight) * cos + weight * jac >= cut or (jaccard and jac >= jaccard) \
                or cos >= alone:
            out[a] = out[b] = True
    return out


@pytest.mark.parametrize("max_cells", [1, 50, 1 << 24])
@pytest.mark.parametrize(("cut", "weight", "jaccard", "alone"),
                         [(0.82, 0.2, 0.8, 2.0), (0.7, 0.3, 0.5, 2.0), (0.9, 0.0, 0.6, 2.0),
                          (0.6, 0.5, 0.0, 2.0), (0.82, 0.2, 0.8, 0.8), (0.9, 0.0, 0.6, 0.8)])
def test_first_pass_mask_equals_brute_force(cut: float, weight: float, jaccard: float,
                                            alone: float, max_cells: int) -> None:
    """The weighted static+word score and the Jaccard-alone join (prefix filtered, pairs
    already marked skipped) mark exactly the rows a brute-force loop over all pairs marks."""
    from curator.models.candidates import first_pass_mask, word_sets

    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(30)]
    texts = [" ".join(rng.choice(vocab, int(rng.integers(0, 12)))) for _ in range(120)]
    texts += [t + " extra" for t in texts[:20]]  # boilerplate variants: Jaccard 0.5-0.92
    x = rng.normal(size=(len(texts), 8))
    x[120:] = x[:20] + rng.normal(scale=0.3, size=(20, 8))
    want = _brute_first_pass(x, texts, cut, weight, jaccard, alone)
    got = first_pass_mask(x, cut, weight=weight, jaccard=jaccard, words=word_sets(texts),
                          max_cells=max_cells, alone=alone)
    assert 0 < want.sum() < len(texts)
    assert np.array_equal(got, want)
    # without word sets it is the static cut alone
    assert np.array_equal(first_pass_mask(x, cut), candidate_mask(x, cut))


def test_paraphrases_sharing_no_word_are_candidates_by_the_static_cosine_alone() -> None:
    """The ``fast`` cuts' mixed score (0.8 x static + 0.2 x Jaccard >= 0.82) cannot be reached
    without shared words (0.8 x 1 = 0.8): a reworded copy, the case SemDeDup exists for, would
    never reach the full model. The static cosine alone (first_pass_for's ``alone``) marks it;
    the default cuts mark it either way."""
    from curator.models.candidates import first_pass_for, first_pass_mask, word_sets

    texts = ["the senate passed the budget bill on tuesday",
             "lawmakers approved spending legislation yesterday",
             "a recipe for apple pie with cinnamon"]
    x = np.array([[1.0, 0.0, 0.0], [0.97, 0.243, 0.0], [0.0, 0.0, 1.0]])
    cut = first_pass_for(0.9, "fast")
    assert cut.alone <= 0.97 < 1 / (1 - cut.weight) * cut.static  # static alone, not the score
    got = first_pass_mask(x, cut.static, weight=cut.weight, jaccard=cut.jaccard,
                          words=word_sets(texts), alone=cut.alone)
    assert got.tolist() == [True, True, False]
    # without the clause (the previous rule) the pair is missed
    old = first_pass_mask(x, cut.static, weight=cut.weight, jaccard=cut.jaccard,
                          words=word_sets(texts))
    assert old.tolist() == [False, False, False]
    rec = first_pass_for(0.9)
    got = first_pass_mask(x, rec.static, weight=rec.weight, jaccard=rec.jaccard,
                          words=word_sets(texts), alone=rec.alone)
    assert got.tolist() == [True, True, False]
