"""``sentence_span_dedup``: C4's dedup: "we discarded all but one of any three-sentence span
occurring more than once in the data set". Spans are the sliding windows of ``span``
consecutive sentences of a document; the sentences of every repeated span but its first
occurrence (input order) are cut. See :mod:`curator.dedup.subdoc` for the phases."""

from __future__ import annotations

from typing import Literal

from curator.core.context import GlobalContext
from curator.core.errors import ConfigError
from curator.core.stage import GlobalStage, Shard
from curator.dedup.normalize import resolve
from curator.dedup.subdoc import BATCH_MB, SubdocCfg, run_subdoc


class SentenceSpanDedup(GlobalStage):
    """Remove repeated spans of consecutive sentences, keeping the first (C4)."""

    name = "sentence_span_dedup"

    def __init__(self, span: int = 3, max_occurrences: int = 1, keep_first: bool = True,
                 normalize: bool | Literal["none", "basic", "fineweb"] = "fineweb",
                 language: str = "en", min_chars: int = 1, partitions: int = 0,
                 partition_mb: int = 256, batch_mb: float = BATCH_MB) -> None:
        if span < 1 or max_occurrences < 1:
            raise ConfigError("sentence_span_dedup: span and max_occurrences must be >= 1")
        self.span, self.max_occurrences, self.keep_first = span, max_occurrences, keep_first
        self.normalize = resolve(normalize, "sentence_span_dedup.normalize")
        self.language, self.min_chars = language, min_chars
        self.partitions, self.partition_mb = partitions, partition_mb
        if not batch_mb > 0:
            raise ConfigError("sentence_span_dedup.batch_mb must be > 0")
        self.batch_mb = batch_mb

    def run(self, shards: list[Shard], ctx: GlobalContext) -> list[Shard]:
        cfg = SubdocCfg("sentence_span_dedup", ctx.stage_dir, self.normalize,
                        self.max_occurrences, self.keep_first, self.min_chars, self.span,
                        self.language, self.batch_mb)
        return run_subdoc(cfg, shards, ctx, self.partitions, self.partition_mb,
                          "all_spans_duplicate")
