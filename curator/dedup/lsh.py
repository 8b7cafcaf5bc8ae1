"""LSH banding parameters (explicit ``bands x rows`` or derived from a Jaccard threshold), and
the bucket entries that banded digests give.

The derivation is datasketch's ``_optimal_param``: choose ``(b, r)`` with ``b * r <= num_perm``
minimising the weighted area under the S-curve ``1 - (1 - s**r)**b`` on the wrong side of the
threshold (false positives below it, false negatives above it). The integrals are computed
with a fixed-grid Simpson rule in numpy, so no scipy is needed.
"""

from __future__ import annotations

import numpy as np

from curator.base.errors import ConfigError
from curator.dedup.common import pack_refs

_GRID = 2001  # odd: Simpson's rule


def _integral(f_vals: np.ndarray, lo: float, hi: float) -> np.ndarray:
    h = (hi - lo) / (_GRID - 1)
    w = np.ones(_GRID)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return (f_vals @ w) * h / 3.0


def optimal_param(threshold: float, num_perm: int, false_positive_weight: float = 0.5,
                  false_negative_weight: float = 0.5) -> tuple[int, int]:
    """``(bands, rows)`` minimising the weighted false positive + false negative probability."""
    lo = np.linspace(0.0, threshold, _GRID)
    hi = np.linspace(threshold, 1.0, _GRID)
    best, opt = float("inf"), (1, 1)
    for b in range(1, num_perm + 1):
        rs = np.arange(1, num_perm // b + 1, dtype=np.float64)[:, None]
        fp = _integral(1 - (1 - lo[None, :] ** rs) ** b, 0.0, threshold)
        fn = _integral((1 - hi[None, :] ** rs) ** b, threshold, 1.0)
        err = fp * false_positive_weight + fn * false_negative_weight
        i = int(np.argmin(err))
        if err[i] < best - 1e-12:
            best, opt = float(err[i]), (b, i + 1)
    return opt


def resolve_bands(num_perm: int, threshold: float, bands: int | None, rows: int | None,
                  weights: tuple[float, float] = (0.5, 0.5)) -> tuple[int, int]:
    """Explicit ``bands``/``rows`` win; otherwise derive them from ``threshold`` with
    ``weights`` = (false positive weight, false negative weight)."""
    if bands is None and rows is None:
        if not 0.0 < threshold < 1.0:
            raise ConfigError(f"threshold must be in (0, 1), got {threshold}")
        return optimal_param(threshold, num_perm, *weights)
    if bands is None or rows is None:
        raise ConfigError("give both 'bands' and 'rows', or neither (derived from 'threshold')")
    if bands < 1 or rows < 1 or bands * rows > num_perm:
        raise ConfigError(f"bands x rows = {bands} x {rows} must be >= 1 and at most "
                          f"num_perm ({num_perm})")
    return bands, rows


def bucket_entries(shard_idx: int, dig: np.ndarray,
                   valid: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """One shard's bucket entries: (band digest, document ref), one per band of each valid
    document (a document without a whole shingle under ``fineweb`` gets none)."""
    refs = pack_refs(shard_idx, dig.shape[0])
    if valid is not None:
        dig, refs = dig[valid], refs[valid]
    return dig.reshape(-1), np.repeat(refs, dig.shape[1])
