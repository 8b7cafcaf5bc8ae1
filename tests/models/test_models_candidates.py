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
