"""``quality_filter``: score documents with a fastText quality model and keep them by threshold
or seeded Pareto sampling (model helpers in :mod:`curator.classifiers.quality`)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Literal

import numpy as np

from curator.base.document import Document
from curator.base.errors import ConfigError
from curator.classifiers.quality import holdout_unit, hq_scores, load_model, normalize
from curator.core.context import ShardContext
from curator.core.params import PositiveFloat, PositiveInt, Ratio, StageParams
from curator.core.stage import BatchStage, FilePath


class QualityFilter(BatchStage):
    """Score documents with a fastText quality model (``quality_score`` in meta) and keep them
    by threshold or by seeded Pareto sampling (GPT-3 style)."""

    name = "quality_filter"

    class Params(StageParams):
        model_path: FilePath | None = None
        """A fastText quality model; null: the upstream ``quality_model`` artifact."""
        mode: Literal["threshold", "pareto"] = "threshold"
        """`threshold`: keep if score >= `threshold`; `pareto`: keep if `pareto(alpha) > 1 - score`
        (GPT-3, Brown et al. 2020 appendix A)."""
        threshold: Ratio = 0.5
        """Smallest P(high quality) kept by ``mode: threshold``."""
        alpha: PositiveFloat = 9.0
        """Pareto shape of ``mode: pareto``: P(keep) = (2 - score)^-alpha."""
        seed: int = 0
        """The Pareto draw is a function of `(seed, document id)`: same result for any sharding or
        rerun."""
        max_chars: PositiveInt = 20_000
        """Characters of each document scored."""
        label_only: bool = False
        """Only write ``meta.quality_score``, never reject."""
        batch_size: PositiveInt = 1024
        """Documents per model call."""

    def setup(self) -> None:
        path = self.model_path
        if path and "://" not in path and not os.path.isfile(path):
            raise ConfigError(f"quality_filter.model_path: '{path}' not found")
        self.model_path = os.path.abspath(path) if path else None

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
