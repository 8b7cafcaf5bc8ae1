"""The embedded bucket grouping on GPU with cuDF (RAPIDS). Imported only when the ``cudf``
backend is chosen; without RAPIDS the stage stops with one clear line."""

from __future__ import annotations

from typing import Any

import numpy as np

from curator.base.errors import ConfigError


def require_cudf() -> Any:
    try:
        import cudf  # type: ignore[import-not-found]
    except Exception as e:  # ImportError, or a CUDA runtime error raised at import
        raise ConfigError(
            "fuzzy_dedup backend 'cudf' needs RAPIDS cuDF on a machine with an NVIDIA GPU "
            f"(import failed: {type(e).__name__}: {e}); use backend 'embedded' or 'redis'"
        ) from None
    return cudf


def star_edges_gpu(digests: np.ndarray, refs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Same result as :func:`curator.dedup.backends.embedded.star_edges`, computed by cuDF."""
    cudf = require_cudf()
    df = cudf.DataFrame({"d": digests, "r": refs})
    mins = df.groupby("d").agg({"r": "min"}).rename(columns={"r": "m"}).reset_index()
    df = df.merge(mins, on="d", how="inner")
    df = df[df["r"] != df["m"]][["m", "r"]].drop_duplicates().sort_values(["m", "r"])
    return (df["m"].to_numpy().astype(np.uint64), df["r"].to_numpy().astype(np.uint64))
