"""``quality_filter``: score documents with a fastText quality model and keep them by threshold
or seeded Pareto sampling (model helpers in :mod:`curator.classifiers.quality`)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Literal

import numpy as np

from curator.classifiers.quality import holdout_unit, hq_scores, load_model, normalize
from curator.core.context import ShardContext
from curator.core.document import Document
from curator.core.errors import ConfigError
from curator.core.stage import BatchStage, FilePath


class QualityFilter(BatchStage):
    """Score documents with a fastText quality model (``quality_score`` in meta) and keep them
    by threshold or by seeded Pareto sampling (GPT-3 style)."""

    name = "quality_filter"

    def __init__(self, model_path: FilePath | None = None,
                 mode: Literal["threshold", "pareto"] = "threshold", threshold: float = 0.5,
                 alpha: float = 9.0, seed: int = 0, max_chars: int = 20_000,
                 label_only: bool = False, batch_size: int = 1024) -> None:
        if model_path and "://" not in model_path and not os.path.isfile(model_path):
            raise ConfigError(f"quality_filter.model_path: '{model_path}' not found")
        if alpha <= 0:
            raise ConfigError("quality_filter.alpha must be > 0")
        self.model_path = os.path.abspath(model_path) if model_path else None
        self.mode, self.threshold, self.alpha, self.seed = mode, threshold, alpha, seed
        self.max_chars, self.label_only, self.batch_size = max_chars, label_only, batch_size

    def keep_mask(self, scores: np.ndarray, ids: list[str]) -> np.ndarray:
        if self.mode == "threshold":
            return scores >= self.threshold
        u = np.array([holdout_unit(self.seed, i) for i in ids])
        pareto = (1.0 - u) ** (-1.0 / self.alpha) - 1.0  # numpy's pareto (Lomax) by inversion
        return pareto > 1.0 - scores

    def process_batch(self, docs: list[Document], ctx: ShardContext) -> Iterable[Document]:
        path = self.model_path or ctx.artifact("quality_model")
        model = load_model(path)
        scores = hq_scores(model, [normalize(d.text, self.max_chars) for d in docs])
        keep = self.keep_mask(scores, [d.id for d in docs])
        for doc, s, k in zip(docs, scores.tolist(), keep.tolist()):
            doc.meta["quality_score"] = round(s, 4)
            if k or self.label_only:
                yield doc
            else:
                ctx.reject(doc, f"quality_filter:{self.mode}")
